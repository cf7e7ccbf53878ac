# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The fidelity benchmark's bookkeeping: modes, the ±10 % / τ flags and the per-method summary (no model runs)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def fidelity():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_fidelity", BENCHMARKS / "fidelity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(**overrides) -> argparse.Namespace:
    values = {"quick": False, "full": False, "temperatures": None, "max_steps": None, "plots": None, "seed": 0}
    return argparse.Namespace(**{**values, **overrides})


def test_modes_pick_sizes_and_plot_default(fidelity):
    quick = fidelity.resolve_settings(_args(quick=True))
    assert quick["mode"] == "quick" and quick["temperatures"] == [0.5, 2.0] and quick["plots"] is False
    default = fidelity.resolve_settings(_args())
    assert default["temperatures"] == [0.25, 0.5, 0.8, 2.0] and default["max_steps"] == 40 and default["plots"]
    full = fidelity.resolve_settings(_args(full=True, plots=False, temperatures=[0.8], max_steps=7))
    assert full["samples_per_prompt"] * full["prompts"] == 8192 and full["plots"] is False
    assert full["temperatures"] == [0.8] and full["max_steps"] == 7
    assert default["learning_rate"] == 2e-4 and default["nll_weight"] == 0.1 and default["lora_r"] == 16


def test_flags_and_summary(fidelity):
    rows = [
        {"method": "myopic", "target": 0.5, "t_eff": 0.56, "kendall_tau": 0.95, "nll_per_token": 3.0},
        {"method": "myopic", "target": 2.0, "t_eff": 1.0, "kendall_tau": 0.8, "nll_per_token": 5.0},
        {"method": "ssts", "target": 0.5, "t_eff": 0.54, "kendall_tau": 0.9, "nll_per_token": 2.0},
        {"method": "ratio", "target": 0.5, "t_eff": 0.45, "kendall_tau": 0.89, "nll_per_token": 4.0},
    ]
    fidelity.add_flags(rows)
    assert [r["within_10pct"] for r in rows] == [False, False, True, True]
    assert [r["tau_ok"] for r in rows] == [True, False, True, False]
    assert rows[0]["rel_error"] == pytest.approx(0.12) and rows[1]["rel_error"] == pytest.approx(0.5)
    summary = fidelity.summarise(rows)
    assert summary["myopic_within_10pct"] == "0/2" and summary["ssts_within_10pct"] == "1/1"
    assert summary["myopic_mean_rel_t_eff_error"] == pytest.approx(0.31)
    assert summary["myopic_min_kendall_tau"] == 0.8 and summary["myopic_mean_nll_per_token"] == 4.0
    assert summary["ratio_min_kendall_tau"] == 0.89
