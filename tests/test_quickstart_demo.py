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
    assert "no best one to compare" in text  # no tuned row given


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
    if not beats:  # the reason given is the one that holds
        reaches = abs(adapter[0] / 0.5 - 1) <= 0.1
        assert ("it reaches the temperature but does not rank" in text) == reaches
        assert ("its T_eff misses the bar" in text) == (not reaches)
    assert "best token temperature 6.000" in text
