# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The demo measures on prompts that neither its training nor the sweeps that chose its settings ever saw, prints the
routes it can afford (token temperature, the best token temperature, the adapter, the adapter as SMC's proposal) and
answers three questions per route from its own figures: does it reach T, does it rank like p, at what cost."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo():
    spec = importlib.util.spec_from_file_location("quickstart_demo", ROOT / "examples" / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_held_out_prompts_were_never_trained_on_nor_used_to_choose_the_settings(demo):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _prompts import split_prompts

    train, held_out = demo.demo_prompts()
    sweep_train, sweep_held_out = split_prompts(128, 16, seed=0)
    assert train == sweep_train and len(held_out) >= 8
    assert not set(held_out) & (set(sweep_train) | set(sweep_held_out))


@pytest.fixture(scope="module")
def routes(demo):
    return sys.modules["_routes"]  # imported by the demo, from examples/


NAMES = {
    "base": "base model p",
    "myopic": "token temperature 0.5",
    "tuned_myopic": "best token temperature 0.444",
    "tempered": "adapter",
    "smc_adapter": "adapter as SMC's proposal, N = 4",
}
COSTS = {
    "myopic": {"calls": 10, "token_forwards_per_answer": 40.0, "seconds_per_answer": 0.1},
    "tuned_myopic": {"calls": 10, "token_forwards_per_answer": 40.0, "seconds_per_answer": 0.1},
    "tempered": {"calls": 10, "token_forwards_per_answer": 44.0, "seconds_per_answer": 0.1},
    "smc_adapter": {"calls": 20, "token_forwards_per_answer": 320.0, "seconds_per_answer": 0.5},
}


@pytest.mark.parametrize(
    ("t_eff", "reaches"), [(0.5, True), (0.549, True), (0.551, False), (0.451, True), (0.449, False), (0.563, False)]
)
def test_the_reach_verdict_reads_t_eff_against_t(routes, t_eff, reaches):
    rows = {name: {"t_eff": 0.5, "kendall_tau": 0.9} for name in routes.ROUTES}
    rows["tempered"]["t_eff"] = t_eff
    text = routes.reach_verdict(rows, NAMES, 0.5)
    assert text.startswith("Does it reach T = 0.5 (T_eff within ±10 %)?")
    assert f"adapter: {'yes' if reaches else 'no'} (T_eff {100 * (t_eff / 0.5 - 1):+.1f} %)" in text, text
    assert text.count(": yes") == 3 + reaches  # the other routes sit at T exactly


@pytest.mark.parametrize(
    ("interval", "reading"),
    [((0.02, 0.01, 0.03), "better"), ((-0.02, -0.03, -0.01), "worse"), ((0.01, -0.01, 0.03), "not shown to differ"),
     ((0.005, 0.0, 0.01), "not shown to differ")],
)  # fmt: skip
def test_the_rank_verdict_says_better_or_worse_only_where_the_interval_excludes_zero(routes, interval, reading):
    rows = {name: {"t_eff": 0.5, "kendall_tau": 0.86} for name in routes.ROUTES}
    for name in routes.ROUTES[1:]:
        rows[name]["tau_minus_myopic"] = (0.0, -0.02, 0.02)
    rows["smc_adapter"]["tau_minus_myopic"] = interval
    text = routes.rank_verdict(rows, NAMES)
    mean, low, high = interval
    assert f"adapter as SMC's proposal, N = 4: τ 0.860, {mean:+.3f} [{low:+.3f}, {high:+.3f}], {reading}" in text
    assert "Against token temperature 0.5 (τ 0.860)" in text and text.count("not shown to differ") >= 2


def test_the_cost_verdict_and_the_table_read_the_measured_costs(routes):
    once = {"tempered": "training 92 s (32 steps)", "smc_adapter": "the adapter's training 92 s (32 steps)"}
    text = routes.cost_verdict(COSTS, NAMES, once)
    assert "adapter: 1.0× the calls and 1.1× the token-forwards per answer of token temperature 0.5, once: " in text
    assert "adapter as SMC's proposal, N = 4: 2.0× the calls and 8.0× the token-forwards per answer" in text
    rows = {name: {"t_eff": 0.5, "kendall_tau": 0.9, "nll_per_token": 5.0} for name in NAMES}
    lines = routes.table(rows, COSTS, NAMES, once).splitlines()
    smc = next(line for line in lines if line.startswith("adapter as SMC"))
    assert smc.endswith(once["smc_adapter"]) and smc[: -len(once["smc_adapter"])].split()[-3:] == [
        "20",
        "320.0",
        "0.500",
    ]
    assert [line.split("  ")[0] for line in lines[2:]] == list(NAMES.values())  # base first, then the routes


def test_tau_per_prompt_and_its_paired_interval(routes):
    import torch

    ref = torch.tensor([-1.0, -2.0, -3.0, -1.0, -2.0, -3.0])
    policy = torch.tensor([-2.0, -4.0, -6.0, -6.0, -4.0, -2.0])  # prompt a in p's order, prompt b reversed
    assert routes.per_prompt_tau(ref, policy, ["a"] * 3 + ["b"] * 3) == [1.0, -1.0]
    assert routes.paired_interval([0.1] * 10) == pytest.approx((0.1, 0.1, 0.1))
    mean, low, high = routes.paired_interval([-0.2, 0.2] * 8)
    assert mean == pytest.approx(0.0) and low < 0 < high


@pytest.mark.parametrize(
    ("environ", "cpus", "load", "processes", "threads"),
    [
        ({}, 2, 0.0, 1, 2),  # idle: every core
        ({}, 2, 1.6, 1, 1),  # one core busy
        ({}, 2, 7.9, 1, 1),  # a shared machine: one thread, never zero
        ({}, 16, 4.0, 2, 6),  # 12 free cores shared by two ranks
        ({"OMP_NUM_THREADS": "3"}, 2, 7.9, 1, 3),  # the user's choice wins
        ({"OMP_NUM_THREADS": "x"}, 4, 0.0, 1, 4),  # an unreadable value is ignored
    ],
)
def test_the_demo_picks_threads_from_the_free_cores(demo, environ, cpus, load, processes, threads):
    count, why = demo.torch_threads(environ, cpus, load, processes)
    assert count == threads and why


def _tiny_chat_model(folder: Path) -> None:
    from tiny_models import tiny_causal_lm
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "a": 1, "b": 2, "c": 3, "</s>": 4, "<pad>": 5}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="a"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['content'] }} {% endfor %}{% if add_generation_prompt %}b {% endif %}"
    )
    model = tiny_causal_lm(6, seed=1)
    model.config.pad_token_id, model.config.eos_token_id = 5, 4
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = 5, 4
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def test_under_accelerate_launch_the_demo_prints_each_line_once_with_consistent_verdicts(tmp_path):
    """Two ranks (CPU, gloo) of the demo on a tiny chat model: every line once (the main process prints), the route
    table, and a reach verdict that agrees with the T_eff the table prints for each route."""
    import re

    from launching import free_port, run_ranks

    _tiny_chat_model(tmp_path / "tiny")
    accelerate = Path(sys.executable).with_name("accelerate")
    launch = [str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1"]
    launch += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", free_port()]
    demo_flags = ["--model_name_or_path", str(tmp_path / "tiny"), "--output_dir", str(tmp_path / "out")]
    demo_flags += ["--train_prompts", "8", "--held_out_prompts", "3", "--num_generations", "4"]
    demo_flags += ["--held_out_generations", "4", "--max_completion_length", "3", "--max_steps", "2"]
    demo_flags += ["--batch_size", "8"]
    output = run_ranks([*launch, str(ROOT / "examples" / "quickstart.py"), *demo_flags], timeout=600).stdout
    starts = ("torch threads", "Held-out:", "Does it reach", "Does it rank", "At what cost", "route ")
    ours = [line for line in output.splitlines() if line.startswith(starts)]
    assert len(ours) == len(starts) and len(set(ours)) == len(starts), output[-3000:]
    assert "torch threads per process: 1 (OMP_NUM_THREADS" in output  # the launcher's environment sets it
    assert output.count("Hub folder:") == 1 and output.count("wall time:") == 1
    lines = output.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("route "))) + 2 :]
    t_eff = {}
    for line in table:
        if line.startswith(("token temperature", "best token temperature", "adapter")):
            name = re.split(r"\s{2,}", line)[0]
            t_eff[name] = float(line[len(name) :].split()[0])
        elif not line.startswith("base model"):
            break
    reach = next(line for line in lines if line.startswith("Does it reach"))
    assert set(t_eff) >= {"token temperature 0.5", "adapter", "adapter as SMC's proposal, N = 4"}, table
    for name, value in t_eff.items():
        assert f"{name}: {'yes' if abs(value / 0.5 - 1) <= 0.1 else 'no'} (T_eff" in reach, (name, value, reach)
    # the figures it printed are written once, with what a committed result must record
    record = json.loads((tmp_path / "out" / "demo.json").read_text(encoding="utf-8"))
    assert all(record["provenance"][field] for field in ("command", "commit", "machine", "date"))
    assert record["printed"][-3] == reach and record["wall_seconds"] > 0
    shown = {record["names"][name]: row["t_eff"] for name, row in record["rows"].items() if name != "base"}
    assert {name: round(value, 3) for name, value in shown.items()} == t_eff
