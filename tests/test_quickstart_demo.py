# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The demo measures on prompts that neither its training nor the sweeps that chose its settings ever saw, and its
verdict says plainly whether the adapter met the bar and beat token temperature."""

import importlib.util
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


@pytest.mark.parametrize(
    ("adapter", "myopic", "expected"),
    [
        ((0.52, 0.91), (0.59, 0.92), "meets the bar where token temperature 0.5 does not: it beats it here"),
        ((0.52, 0.91), (0.53, 0.95), "Both meet the bar; the adapter's T_eff is closer to T"),
        ((0.52, 0.876), (0.5755, 0.873), "(τ missed): its T_eff is closer to T than token temperature 0.5's, and its τ is above"),
        ((0.56, 0.85), (0.57, 0.86), "(T_eff and τ missed)"),
        ((0.5661, 0.857), (0.55, 1.0), "its T_eff is no closer to T than token temperature 0.5's, and its τ is not above"),
    ],
)  # fmt: skip
def test_the_verdict_against_token_temperature_is_plain(demo, adapter, myopic, expected):
    rows = {
        "tempered": {"t_eff": adapter[0], "kendall_tau": adapter[1], "nll_per_token": 5.0},
        "myopic": {"t_eff": myopic[0], "kendall_tau": myopic[1], "nll_per_token": 4.5},
    }
    text = "\n".join(demo.verdict(rows, 0.5))
    assert expected in text
    assert ("adapter MET" in text) == (abs(adapter[0] / 0.5 - 1) <= 0.1 and adapter[1] >= 0.9)
    assert "there is no best token temperature to compare" in text  # no tuned row given


@pytest.mark.parametrize(
    ("adapter", "tuned", "beats"),
    [
        ((0.52, 0.93), (0.50, 0.91), True),  # both meet, the adapter ranks better
        ((0.52, 0.91), (0.50, 0.92), False),  # both meet, the best token temperature ranks better
        ((0.52, 0.91), (0.50, 0.88), True),  # only the adapter meets
        ((0.538, 0.852), (0.502, 0.854), False),  # neither meets (the demo's run on its unseen prompts)
        ((0.538, 0.86), (0.502, 0.854), False),  # a higher τ that misses the bar does not beat it
        ((0.58, 0.95), (0.50, 0.91), False),  # the adapter misses T_eff
    ],
)
def test_the_verdict_against_the_best_token_temperature_is_plain(demo, adapter, tuned, beats):
    rows = {
        "tempered": {"t_eff": adapter[0], "kendall_tau": adapter[1], "nll_per_token": 5.0},
        "myopic": {"t_eff": 0.57, "kendall_tau": 0.86, "nll_per_token": 4.5},
        "tuned_myopic": {"t_eff": tuned[0], "kendall_tau": tuned[1], "nll_per_token": 6.0, "token_temperature": 0.44},
    }
    text = "\n".join(demo.verdict(rows, 0.5))
    assert ("The adapter beats the best token temperature here." in text) == beats
    assert ("does NOT beat the best token temperature" in text) == (not beats)
    if not beats:  # the reason given is the one that holds, with the figures it is read from
        reaches = abs(adapter[0] / 0.5 - 1) <= 0.1
        assert ("its T_eff misses the bar" in text) == (not reaches)
        if reaches and adapter[1] > tuned[1]:
            assert f"it ranks each prompt's completions better (τ {adapter[1]:.3f} > {tuned[1]:.3f})" in text
        assert ("does not rank better" in text) == (reaches and adapter[1] <= tuned[1])
    assert_consistent(text)
    assert "best token temperature 6.000" in text


def assert_consistent(text: str) -> None:
    """Every `τ a > b` / `τ a ≤ b` the verdict states holds for its own figures, and the τ it quotes for the best
    token temperature and the adapter are the ones it compares."""
    import re

    for left, sign, right in re.findall(r"τ (\d\.\d{3}) ([>≤]) (\d\.\d{3})", text):
        assert (float(left) > float(right)) == (sign == ">"), text
    quoted = re.search(r"its τ is (\d\.\d{3}), the adapter's (\d\.\d{3})", text)
    compared = re.search(r"\(τ (\d\.\d{3}) [>≤] (\d\.\d{3})\)", text)
    if quoted and compared:
        assert compared.groups() == (quoted.group(2), quoted.group(1)), text


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


def test_the_demo_uses_one_name_for_the_best_token_temperature(demo):
    rows = {
        "tempered": {"t_eff": 0.538, "kendall_tau": 0.856, "nll_per_token": 5.0},
        "myopic": {"t_eff": 0.57, "kendall_tau": 0.86, "nll_per_token": 4.5},
        "tuned_myopic": {"t_eff": 0.502, "kendall_tau": 0.854, "nll_per_token": 6.0, "token_temperature": 0.444},
    }
    text = "\n".join(demo.verdict(rows, 0.5)) + demo.DEMO_ROWS["tuned_myopic"]
    assert "tuned" not in text.lower() and "Best token temperature" not in text
    assert text.count("best token temperature") >= 3


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


def test_under_accelerate_launch_the_demo_prints_each_line_once_with_a_consistent_verdict(tmp_path):
    """Two ranks (CPU, gloo) of the demo on a tiny chat model: every line once (the main process prints), the
    table and a verdict whose stated comparisons hold for the figures it quotes."""
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
    ours = [
        line for line in output.splitlines() if line.startswith(("torch threads", "Bar (", "How to read", "Held-out:"))
    ]
    assert len(ours) == 4 and len(set(ours)) == 4, output[-3000:]
    assert "torch threads per process: 1 (OMP_NUM_THREADS" in output  # the launcher's environment sets it
    assert output.count("Hub folder:") == 1 and output.count("wall time:") == 1
    verdict = output[output.index("How to read") : output.index("Hub folder:")]
    assert_consistent(verdict)
    assert ("adapter MET" in verdict) != ("adapter NOT MET" in verdict)
