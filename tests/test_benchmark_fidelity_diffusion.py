# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The diffusion fidelity benchmark: its data are exact samples of p, and short L_p / L_k runs temper towards T."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path

import pytest
import torch

from hf_seqtemp.generation.diffusion import diffusion_generate
from hf_seqtemp.metrics.core import effective_temperature

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
# The benchmark's base model, shrunk so that all 3^4 completions can be enumerated: 2 blocks of 2 tokens.
TINY = {"vocab": 3, "completion": 4, "block_size": 2}

torch.set_num_threads(1)  # the test machines share 2 cores between processes


@pytest.fixture(scope="module")
def bench():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_fidelity_diffusion", BENCHMARKS / "fidelity_diffusion.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pooled_chi_square(counts: torch.Tensor, expected: torch.Tensor) -> tuple[float, int]:
    """Pearson's χ² with every cell expecting fewer than 5 draws pooled into one; returns (statistic, dof)."""
    small = expected < 5
    observed = torch.cat([counts[~small], counts[small].sum()[None]])
    wanted = torch.cat([expected[~small], expected[small].sum()[None]])
    return ((observed - wanted) ** 2 / wanted).sum().item(), len(wanted) - 1


def test_samples_follow_the_exact_dp_distribution(bench):
    """The sampler draws from the p(x) the DP scores (block order, uniform order inside a block, no mask mass).

    A left-to-right decoder of the same model, a different order distribution, must fail the same check."""
    settings = {**bench.mode_settings("quick"), **TINY}
    base = bench.build_base(settings, torch.device("cpu"))
    completions = torch.tensor(list(itertools.product(range(3), repeat=4)))
    prompt = bench.prompt_ids(settings)
    ids = torch.cat([prompt.expand(len(completions), -1), completions], dim=1)
    completion = torch.zeros_like(ids, dtype=torch.bool)
    completion[:, prompt.shape[1] :] = True
    logps, variance = bench.exact_scores(base, ids, completion, block_size=2)
    probs = logps.exp()
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-6)  # the mask token gets no mass
    assert variance > 0.5  # orders really differ, so the order distribution matters below
    num = 4000
    drawn, drawn_completion = bench.sample_completions(base, settings, num, torch.Generator().manual_seed(0))
    assert torch.equal(drawn[:, :2], prompt.expand(num, -1)) and drawn_completion[:, 2:].all()
    left_to_right = diffusion_generate(
        base, prompt.expand(num, -1), max_new_tokens=4, policy="left_to_right", block_length=2,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    place = torch.tensor([27, 9, 3, 1])
    for samples, should_pass in ((drawn, True), (left_to_right, False)):
        counts = torch.bincount((samples[:, 2:] * place).sum(1), minlength=81).double()
        statistic, dof = _pooled_chi_square(counts, probs * num)
        threshold = dof + 6 * math.sqrt(2 * dof)  # about 6 standard deviations of χ²(dof)
        assert (statistic < threshold) == should_pass, (statistic, dof, threshold)


def test_short_runs_flatten_towards_the_target(bench, monkeypatch):
    """30 steps of L_p and of L_k on the tiny model flatten held-out T_eff from 1 to most of T = 2.

    Flattening is the direction to test: any perturbation of log q that is not a tempering adds spread and so
    pulls T_eff below 1 (one step gives T_eff 0.27, τ 0.08; 10 steps 1.36); measured at 30 steps: L_p 1.76
    (τ 0.85), L_k 1.98 (τ 0.89) before batches were built from prompt groups and the mask token was renormalised
    away; since then L_k reaches T_eff 1.91 with τ 0.70 (to be investigated: see the closing note of that change)."""
    tiny_mode = {**TINY, "temperatures": [2.0], "num_train": 256, "num_held_out": 128, "max_steps": 30}
    monkeypatch.setitem(bench.DIFFUSION_MODES, "tiny", tiny_mode)
    rows, info = bench.run_diffusion("tiny", seed=0, device="cpu")
    by_method = {row["method"]: row for row in rows}
    assert list(by_method) == ["base", "myopic", "L_p", "L_k=4"]
    assert by_method["base"]["t_eff"] == pytest.approx(1.0) and info["num_held_out"] == 128
    assert info["base_logp_std"] > 1.0
    for method in ("L_p", "L_k=4"):
        assert by_method[method]["t_eff"] > 1.5 and by_method[method]["kendall_tau"] > 0.65, by_method[method]
    plotted = info["plots"][2.0]
    assert plotted["L_p"].shape == (128,)  # the row's T_eff is the slope of these held-out log-likelihoods
    assert effective_temperature(plotted["base"], plotted["L_p"]) == pytest.approx(by_method["L_p"]["t_eff"])


def test_flags_and_summary(bench):
    rows = bench.add_flags(
        [
            {"method": "L_p", "target": 0.5, "t_eff": 0.56, "kendall_tau": 0.95, "nll_per_token": 1.0,
             "schedule_variance": 2.0},
            {"method": "L_p", "target": 2.0, "t_eff": 1.85, "kendall_tau": 0.85, "nll_per_token": 3.0,
             "schedule_variance": 4.0},
        ]
    )  # fmt: skip
    assert [r["within_10pct"] for r in rows] == [False, True] and [r["tau_ok"] for r in rows] == [True, False]
    summary = bench.summarise(rows)
    assert summary["L_p_within_10pct"] == "1/2" and summary["L_p_min_kendall_tau"] == 0.85
    assert summary["L_p_mean_rel_t_eff_error"] == pytest.approx((0.12 + 0.075) / 2)
    assert summary["L_p_mean_schedule_variance"] == 3.0
    with pytest.raises(ValueError, match=r"`mode` must be one of \['default', 'full', 'quick'\], got 'fast'"):
        bench.mode_settings("fast")
