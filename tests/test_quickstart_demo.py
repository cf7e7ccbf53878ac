# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The demo measures on prompts that neither its training nor the sweeps that chose its settings ever saw, prints the
routes it can afford (token temperature, the token temperature tuned once on the training prompts, the adapter, the
adapter as SMC's proposal, and the in-sample oracle for reference),
what each costs per answer and once (seconds and token-forwards, every route), the SMC route's ESS, answers three
questions from its own figures (does it reach T, which route ranks most like p, routes paired with each other, at
what cost) and ends with one recommendation per goal."""

import json
import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo():
    return load_script(ROOT / "examples" / "quickstart.py", "quickstart_demo")


def test_held_out_prompts_were_never_trained_on_nor_used_to_choose_the_settings(demo):
    from hf_seqtemp.tasks.prompts import split_prompts

    train, held_out = demo.demo_prompts()
    sweep_train, sweep_held_out = split_prompts(128, 16, seed=0)
    assert train == sweep_train and len(held_out) >= 8
    assert not set(held_out) & (set(sweep_train) | set(sweep_held_out))


@pytest.fixture(scope="module")
def routes(demo):
    return sys.modules["_routes"]  # imported by the demo, from examples/


@pytest.fixture(scope="module")
def verdicts(demo):
    return sys.modules["_verdicts"]


NAMES = {
    "base": "base model p",
    "myopic": "token temperature 0.5",
    "tuned_once": "token temp 0.427 tuned once",
    "tempered": "adapter",
    "smc_adapter": "adapter-proposal SMC, N = 4",
    "tuned_myopic": "oracle: token temp 0.444",
}
COSTS = {
    "myopic": {"calls": 10, "token_forwards_per_answer": 40.0, "seconds_per_answer": 0.1},
    "tuned_myopic": {"calls": 10, "token_forwards_per_answer": 40.0, "seconds_per_answer": 0.1},
    "tuned_once": {"calls": 10, "token_forwards_per_answer": 40.0, "seconds_per_answer": 0.1},
    "tempered": {"calls": 10, "token_forwards_per_answer": 44.0, "seconds_per_answer": 0.1},
    "smc_adapter": {"calls": 20, "token_forwards_per_answer": 320.0, "seconds_per_answer": 0.5, "ess_fraction": 0.41,
                    "ess_answers": 14},
}  # fmt: skip
TRAINING = {"seconds": 92.0, "token_forwards": 30548, "per_prompt": False, "what": "32 steps"}
ONCE = {
    "myopic": {"seconds": 0.0, "token_forwards": 0, "per_prompt": False, "what": "none"},
    "tuned_myopic": {"seconds": 11.8, "token_forwards": 1038, "per_prompt": True, "what": "16 samples of p"},
    "tuned_once": {"seconds": 20.5, "token_forwards": 9120, "per_prompt": False, "what": "256 samples of p, once"},
    "tempered": TRAINING,
    "smc_adapter": {**TRAINING, "what": "the adapter's: 32 steps"},
}
NOT_SHOWN, BETTER, WORSE = (0.0, -0.02, 0.02), (0.05, 0.03, 0.07), (-0.007, -0.013, -0.002)


def _rows(**t_eff):
    rows = {
        name: {"t_eff": 0.5, "kendall_tau": 0.86, "nll_per_token": 5.0, "per_prompt_t_eff_error": 0.1}
        for name in NAMES
    }
    for name, value in t_eff.items():
        rows[name]["t_eff"] = value
    return rows


def _pairs(**readings):
    pairs = {"tempered vs tuned_once": NOT_SHOWN, "tempered vs myopic": NOT_SHOWN,
             "smc_adapter vs tempered": NOT_SHOWN, "tuned_once vs myopic": NOT_SHOWN,
             "tempered vs tuned_once (per-prompt error)": NOT_SHOWN,
             "smc_adapter vs tuned_once (per-prompt error)": NOT_SHOWN}  # fmt: skip
    return {
        **pairs,
        **{key.replace("__", " vs ").replace("_error", " (per-prompt error)"): v for key, v in readings.items()},
    }


@pytest.mark.parametrize(
    ("t_eff", "reaches"), [(0.5, True), (0.549, True), (0.551, False), (0.451, True), (0.449, False), (0.563, False)]
)
def test_the_reach_verdict_reads_t_eff_against_t(verdicts, t_eff, reaches):
    text = verdicts.reach_verdict(_rows(tempered=t_eff), NAMES, 0.5)
    assert text.startswith("Does it reach T = 0.5 (T_eff within ±10 %)?")
    assert f"adapter: {'yes' if reaches else 'no'} (T_eff {t_eff:.3f}, {100 * (t_eff / 0.5 - 1):+.1f} %)" in text, text
    assert text.count(": yes") == 4 + reaches  # the other routes sit at T exactly


@pytest.mark.parametrize(
    ("interval", "reading"),
    [((0.02, 0.01, 0.03), "better"), ((-0.02, -0.03, -0.01), "worse"), ((0.01, -0.01, 0.03), "not shown to differ"),
     ((0.005, 0.0, 0.01), "not shown to differ")],
)  # fmt: skip
def test_the_rank_verdict_compares_routes_with_each_other(verdicts, interval, reading):
    """Which ranks most like p is a question between routes: each pair's τ difference, paired over prompts, reads
    better or worse only where its interval excludes 0 (the adapter against the token temperature tuned once, too)."""
    text = verdicts.rank_verdict(_rows(), _pairs(tempered__tuned_once=interval), NAMES)
    mean, low, high = interval
    assert text.startswith("Which ranks each prompt's completions most like p")
    assert (
        f"adapter (0.860) against token temp 0.427 tuned once (0.860): {mean:+.3f} [{low:+.3f}, {high:+.3f}], {reading}"
        in text
    )
    assert "adapter-proposal SMC, N = 4 (0.860) against adapter (0.860)" in text and text.count(") against ") == 4


def test_the_cost_verdict_and_the_table_give_every_route_its_one_time_cost_in_one_unit(verdicts):
    text = verdicts.cost_verdict(COSTS, NAMES, ONCE)
    assert "token temperature 0.5: once nothing" in text
    assert "oracle: token temp 0.444: 1.0× the calls and 1.0× the token-forwards per answer, once 11.8 s and " \
        "1,038 token-forwards per new prompt" in text  # fmt: skip
    assert "token temp 0.427 tuned once: 1.0× the calls and 1.0× the token-forwards per answer, once 20.5 s and " \
        "9,120 token-forwards (256 samples of p, once)" in text  # fmt: skip
    assert (
        "adapter: 1.0× the calls and 1.1× the token-forwards per answer, once 92.0 s and 30,548 token-forwards" in text
    )
    assert "adapter-proposal SMC, N = 4: 2.0× the calls and 8.0× the token-forwards per answer" in text
    lines = verdicts.table(_rows(), COSTS, NAMES, ONCE).splitlines()
    assert lines[0].split()[-4:] == ["once:", "s", "once:", "tok-fwd"]
    smc = next(line for line in lines if line.startswith("adapter-proposal SMC")).split()
    assert smc[-4:] == ["320.0", "0.500", "92.0", "30,548"]
    tuned = next(line for line in lines if line.startswith("oracle")).split()
    assert tuned[-2:] == ["11.8/prompt", "1,038/prompt"]
    assert [line[:27].rstrip() for line in lines[2:]] == list(NAMES.values())  # base first, then the routes
    assert max(map(len, lines)) <= 100  # a docs page shows it whole
    ess = verdicts.ess_line(COSTS, NAMES, 4)
    assert "mean over its 14 answers (one per prompt) of the final weights' ESS / N = 0.41" in ess


@pytest.mark.parametrize(
    ("t_eff", "pairs", "ship", "compute", "free"),
    [
        # the adapter reaches T where token temperature T does not, and the once-tuned one ties with it: no training
        ({"myopic": 0.557, "tempered": 0.514, "smc_adapter": 0.512, "tuned_once": 0.492, "tuned_myopic": 0.502},
         {"smc_adapter__tempered": BETTER, "tuned_once__myopic": WORSE},
         "token temp 0.427 tuned once: it reaches T (T_eff 0.492", ("adapter-proposal SMC, N = 4: τ against "
         "adapter +0.050"), "token temp 0.427 tuned once: searched once on the training prompts and applied unchanged"),
        # the adapter is closer to T on each prompt than the once-tuned token temperature: ship it
        ({"myopic": 0.557, "tempered": 0.51, "tuned_once": 0.49}, {"tempered__tuned_once_error": BETTER},
         "the adapter: it reaches T (T_eff 0.510", "the adapter: its SMC route costs",
         "token temp 0.427 tuned once: searched once"),
        # the once-tuned token temperature misses T on the held-out prompts: the adapter
        ({"myopic": 0.6, "tempered": 0.52, "tuned_once": 0.58}, {}, ("the adapter: it reaches T (T_eff 0.520, +4.0 %) "
         "where token temp 0.427 tuned once does not"), "the adapter: its SMC route costs",
         "token temperature 0.5 (T_eff 0.600, +20.0 %): token temp 0.427 tuned once does not reach T"),
        # neither reaches T
        ({"myopic": 0.6, "tempered": 0.58, "tuned_once": 0.56, "smc_adapter": 0.57}, {"smc_adapter__tempered": BETTER},
         "neither reaches T here", "the adapter: its SMC route costs", "token temperature 0.5 (T_eff 0.600"),
    ],
)  # fmt: skip
def test_one_recommendation_per_goal_from_the_rows(verdicts, t_eff, pairs, ship, compute, free):
    """The baseline is the token temperature a user tunes once on the training prompts, never the oracle searched
    on the held-out completions, and nothing charges a search on each new prompt."""
    lines = verdicts.recommendations(_rows(**t_eff), _pairs(**pairs), NAMES, COSTS, ONCE, 0.5)
    assert lines[0] == "Which route, from these rows?" and len(lines) == 4
    assert lines[1].startswith("- Ship a model that samples at T at plain cost: " + ship), lines[1]
    assert lines[2].startswith("- Best answers per compute (read here as: closest to p^(1/T)): " + compute), lines[2]
    assert lines[3].startswith("- No training: " + free), lines[3]
    assert not any("each new prompt" in line or "oracle" in line for line in lines)


def test_the_per_prompt_error_verdict_pairs_routes_against_the_once_tuned_token_temperature(verdicts):
    text = verdicts.error_verdict(_rows(), _pairs(tempered__tuned_once_error=BETTER), NAMES, 0.5)
    assert text.startswith("Is each prompt tempered at T = 0.5? Per-prompt T_eff error")
    assert "adapter (0.100) against token temp 0.427 tuned once (0.100): +0.050 [+0.030, +0.070], better" in text


def test_one_time_costs_come_from_the_counted_phases(demo):
    costs = sys.modules["_costs"]
    args = SimpleNamespace(num_generations=8, max_steps=32, held_out_generations=16)
    totals = {"training: sampling": (40.0, 13000, 30.0), "training: steps": (60.0, 14000, 50.0),
              "held-out samples": (14.0, 2800, 10.0), "measurement": (30.0, 15000, 25.0)}  # fmt: skip
    once_tuned = {"scoring_passes": 6, "tuning_sequences": 256, "tuning_prompts": 32, "search_seconds": 5.0}
    once_tuned["forward_passes"] = 2
    reports = {"tuned_myopic": {"scoring_passes": 2}, "tuned_once": once_tuned}
    once = costs.one_time_costs(args, reports, totals, 14, 128)
    assert once["tempered"]["seconds"] == 100.0 and once["tempered"]["token_forwards"] == 27000
    assert once["smc_adapter"]["seconds"] == once["tempered"]["seconds"] and once["myopic"]["seconds"] == 0
    tuned = once["tuned_myopic"]  # samples of p, then 4 of the measurement's 5 passes, per prompt
    assert tuned["per_prompt"] and tuned["seconds"] == pytest.approx((14 + 0.8 * 30) / 14)
    assert tuned["token_forwards"] == pytest.approx((2800 + 0.8 * 15000) / 14)
    tuned_once = once["tuned_once"]  # paid once: its timed search, and its 32 prompts' samples of p
    assert not tuned_once["per_prompt"] and "256 samples of p of 32 training prompts" in tuned_once["what"]
    assert tuned_once["seconds"] == pytest.approx(5.0 + 32 / 128 * 40)
    tokens = 13000 / (8 * 128) * 256  # the sampled tokens of its 256 sequences, forwarded twice
    assert tuned_once["token_forwards"] == pytest.approx(2 * tokens + 32 / 128 * 13000)


def test_tau_per_prompt_and_its_paired_interval(routes):
    import torch

    from hf_seqtemp.metrics import per_prompt_kendall_tau

    ref = torch.tensor([-1.0, -2.0, -3.0, -1.0, -2.0, -3.0])
    policy = torch.tensor([-2.0, -4.0, -6.0, -6.0, -4.0, -2.0])  # prompt a in p's order, prompt b reversed
    assert per_prompt_kendall_tau(ref, policy, ["a"] * 3 + ["b"] * 3) == {"a": 1.0, "b": -1.0}
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


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads Linux's /proc/stat")
def test_the_demo_reads_the_load_of_now_not_of_a_job_that_just_ended(demo, monkeypatch):
    """`make venv` then `make demo`: the 1-minute load average still counts the finished install (1.3 on an idle
    2-core machine measured the demo at one thread, 381 s); the cores busy now bound it. A job running now counts."""
    cores = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # a job that has just ended, on any machine
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [None for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()  # one core busy now
    try:
        busy = demo.cores_in_use(0.3)
    finally:
        stop.set()
        spinner.join()
    assert 0.5 <= busy <= cores  # the spinning core is seen; the lagging 9 is not
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # quiet for a minute: a moment's burst is no job
    assert demo.cores_in_use(0.05) == 0.0


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
    starts = ("torch threads", "Held-out:", "Does it reach", "Is each prompt", "Which ranks", "At what cost", "route ", "Its answers' distance",
              "Which route, from these rows?", "- Ship a model", "- Best answers", "- No training")  # fmt: skip
    ours = [line for line in output.splitlines() if line.startswith(starts)]
    assert len(ours) == len(starts) and len(set(ours)) == len(starts), output[-3000:]
    assert "torch threads per process: 1 (OMP_NUM_THREADS" in output  # the launcher's environment sets it
    assert output.count("Hub folder:") == 1 and output.count("wall time:") == 1
    lines = output.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("route "))) + 2 :]
    t_eff = {}
    for line in table:
        if line.startswith(("token temp", "oracle", "adapter")):
            name = line[:27].rstrip()  # the route column is 27 wide
            t_eff[name] = float(line[len(name) :].split()[0])
        elif not line.startswith("base model"):
            break
    reach = next(line for line in lines if line.startswith("Does it reach"))
    assert set(t_eff) >= {"token temperature 0.5", "adapter", "adapter-proposal SMC, N = 4"}, table
    for name, value in t_eff.items():
        assert f"{name}: {'yes' if abs(value / 0.5 - 1) <= 0.1 else 'no'} (T_eff" in reach, (name, value, reach)
    # the figures it printed are written once, with what a committed result must record
    record = json.loads((tmp_path / "out" / "demo.json").read_text(encoding="utf-8"))
    assert all(record["provenance"][field] for field in ("command", "commit", "machine", "date"))
    assert reach in record["printed"] and record["wall_seconds"] > 0
    assert any(line.startswith("- No training") for line in record["printed"])
    assert record["printed"][-1].startswith("- answers of")  # the verdicts by answer length close it
    assert set(record["phases"]) >= {"training: sampling", "training: steps", "measurement"}
    assert all(phase["token_forwards"] > 0 for phase in record["phases"].values())
    shown = {record["names"][name]: row["t_eff"] for name, row in record["rows"].items() if name != "base"}
    assert {name: round(value, 3) for name, value in shown.items()} == t_eff


def test_the_smc_routes_answer_bias_is_bounded_per_prompt_from_its_pool(routes, verdicts):
    """The demo's SMC route states the bound E|Z_hat/Z - 1|/2 on one run's answer bias, per prompt from runs of
    `PARTICLES` pool draws, never mixing prompts: a prompt whose adapter is exactly p^(1/T) there (equal weights)
    reads 0 even beside another prompt with another normaliser; weights 1 and 3 in runs of 4 read by hand."""
    import torch

    n, t = routes.PARTICLES, 0.5
    ref = torch.tensor([-2.0] * 8 + [-1.0] * 8, dtype=torch.float64)
    exact = ref / t - torch.tensor([0.3] * 8 + [-5.0] * 8, dtype=torch.float64)  # log q = log p/T - const, per prompt
    assert routes.pool_bias_bounds(exact, ref, ["a"] * 8 + ["b"] * 8, t) == [0.0, 0.0]
    weights = torch.tensor([1.0, 1, 1, 1, 3, 3, 3, 3], dtype=torch.float64).log()  # runs: Z_hat 1 and 3, Z 2
    bound = routes.pool_bias_bounds(ref[:8] / t - weights, ref[:8], ["a"] * 8, t)
    assert n == 4 and bound == pytest.approx([0.25])  # (|1/2 - 1| + |3/2 - 1|) / 2 / 2
    costs = {
        **COSTS,
        "smc_adapter": {**COSTS["smc_adapter"], "answer_bias_bound": 0.31, "answer_bias_bound_prompts": 14},
    }
    line = verdicts.ess_line(costs, NAMES, 4)
    assert line.startswith("Its answers' distance to p^(1/T) is estimated at 0.31 in total variation")
    assert "reads low with few runs, not a bound" in line and "at most" not in line and "reads high" in line


def test_the_verdict_by_answer_length_reads_each_committed_interval(verdicts, tmp_path):
    """The demo's lines by answer length: one per (answers, T) of the committed comparisons, each difference read
    from its own interval ("better" only where it excludes 0), short answers and long ones; nothing without the
    files (an installed package)."""
    short = {"settings": {"max_completion_length": 10}, "comparisons": [
        {"pool": "open", "target_temperature": 0.5, "metric": "per_prompt_t_eff_error", "difference": 0.007,
         "ci95": [-0.011, 0.025]},
        {"pool": "mixed", "target_temperature": 0.5, "metric": "kendall_tau", "difference": 0.5, "ci95": [0.4, 0.6]},
    ]}  # fmt: skip
    long = {"settings": {}, "comparisons": [
        {"pool": "long", "target_temperature": 0.25, "mean_answer_tokens": 43.0, "metric": "kendall_tau",
         "difference": 0.0073, "ci95": [0.0051, 0.0096]},
        {"pool": "long", "target_temperature": 0.25, "mean_answer_tokens": 43.0, "metric": "per_prompt_t_eff_error",
         "difference": -0.004, "ci95": [-0.008, -0.001]},
    ]}  # fmt: skip
    (tmp_path / "fidelity_vs_tuned.json").write_text(json.dumps(short))
    (tmp_path / "fidelity_long.json").write_text(json.dumps(long))
    lines = verdicts.by_length(tmp_path)
    assert len(lines) == 3  # the mixed pool is not a length
    assert "answers cut at 10 tokens (open prompts), T = 0.5: per-prompt T_eff error +0.007" in lines[1]
    assert "(not shown to differ)" in lines[1] and "better" not in lines[1]
    assert "answers of 43 tokens on average (long prompts), T = 0.25" in lines[2]
    assert "Kendall τ +0.007 [+0.005, +0.010] (better)" in lines[2] and "(worse)" in lines[2]
    assert verdicts.by_length(tmp_path / "missing") == []
