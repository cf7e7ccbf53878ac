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
        ((0.52, 0.91), (0.59, 0.92), "it beats token temperature here"),
        ((0.52, 0.91), (0.53, 0.95), "Both meet the bar; the adapter's T_eff is closer to T"),
        ((0.52, 0.876), (0.5755, 0.873), "T_eff is closer to T than token temperature's and its τ above token"),
        ((0.52, 0.876), (0.5755, 0.873), "but τ miss the bar, so this run does not show it beating"),
        ((0.56, 0.85), (0.57, 0.86), "but T_eff and τ miss the bar"),
        (
            (0.5661, 0.857),
            (0.55, 1.0),
            "no closer to T than token temperature's and its τ not above token temperature's, and",
        ),
    ],
)
def test_the_verdict_is_plain(demo, adapter, myopic, expected):
    rows = {
        "tempered": {"t_eff": adapter[0], "kendall_tau": adapter[1], "nll_per_token": 5.0},
        "myopic": {"t_eff": myopic[0], "kendall_tau": myopic[1], "nll_per_token": 4.5},
    }
    text = "\n".join(demo.verdict(rows, 0.5))
    assert expected in text
    assert ("adapter MET" in text) == (abs(adapter[0] / 0.5 - 1) <= 0.1 and adapter[1] >= 0.9)
