# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The diffusion fidelity benchmark: its data are exact samples of p, and short L_p / L_k runs temper towards T."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
from scripts import load_script

from hf_seqtemp.generation.diffusion import diffusion_generate
from hf_seqtemp.metrics.core import effective_temperature

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
# The benchmark's task and base model, shrunk so that all 3^4 completions of a prompt can be enumerated: a prompt of
# one block of 2 tokens, then 2 blocks of 2 tokens.
TINY = {"vocab": 3, "prompt": 2, "completion": 4, "block_size": 2, "hidden": 32, "layers": 1}
PROMPTS = torch.tensor([[0, 1], [2, 2], [1, 0]])

torch.set_num_threads(1)  # the test machines share 2 cores between processes


@pytest.fixture(scope="module")
def bench():
    return load_script(BENCHMARKS / "fidelity_diffusion.py", "bench_fidelity_diffusion", on_path=True)


def _pooled_chi_square(counts: torch.Tensor, expected: torch.Tensor) -> tuple[float, int]:
    """Pearson's χ² with every cell expecting fewer than 5 draws pooled into one; returns (statistic, dof)."""
    small = expected < 5
    observed = torch.cat([counts[~small], counts[small].sum()[None]])
    wanted = torch.cat([expected[~small], expected[small].sum()[None]])
    return ((observed - wanted) ** 2 / wanted).sum().item(), len(wanted) - 1


def test_samples_follow_the_exact_dp_distribution(bench):
    """For each of three prompts, the sampler draws from the p(x | c) the DP scores (block order, uniform order
    inside a block, no mask mass).

    The model is an untrained BERT with large weights, so that orders really disagree; a left-to-right decoder of
    the same model, a different order distribution, must fail the same check."""
    settings = {**bench.mode_settings("quick"), **TINY, "base_steps": 0, "init_range": 2.0}
    base = bench.build_base(settings, torch.device("cpu"))
    completions = torch.tensor(list(itertools.product(range(3), repeat=4)))
    place, num = torch.tensor([27, 9, 3, 1]), 3000
    for index, prompt in enumerate(PROMPTS):
        ids = torch.cat([prompt.expand(len(completions), -1), completions], dim=1)
        completion = torch.zeros_like(ids, dtype=torch.bool)
        completion[:, 2:] = True
        logps, variance = bench.exact_scores(base, ids, completion, block_size=2)
        probs = logps.exp()
        assert probs.sum().item() == pytest.approx(1.0, abs=1e-6)  # the mask token gets no mass
        assert variance > 0.5  # orders really differ, so the order distribution matters below
        generator = torch.Generator().manual_seed(index)
        drawn, drawn_completion = bench.sample_completions(base, prompt.expand(num, -1), settings, generator)
        assert torch.equal(drawn[:, :2], prompt.expand(num, -1)) and drawn_completion[:, 2:].all()
        left_to_right = diffusion_generate(
            base, prompt.expand(num, -1), max_new_tokens=4, policy="left_to_right", block_length=2,
            generator=torch.Generator().manual_seed(index),
        )  # fmt: skip
        for samples, should_pass in ((drawn, True), (left_to_right, False)):
            counts = torch.bincount((samples[:, 2:] * place).sum(1), minlength=81).double()
            statistic, dof = _pooled_chi_square(counts, probs * num)
            threshold = dof + 6 * math.sqrt(2 * dof)  # about 6 standard deviations of χ²(dof)
            assert (statistic < threshold) == should_pass, (index, statistic, dof, threshold)


def test_short_runs_flatten_towards_the_target_within_prompts(bench, monkeypatch):
    """A short run of L_p and of L_k on the tiny task flattens held-out T_eff (within prompts, on prompts never
    trained on) from 1 towards T = 2, and further than the myopic baseline does.

    Flattening is the direction to test: any perturbation of log q that is not a tempering adds spread and so
    pulls T_eff below 1. Measured when written (1 thread, 15 s): myopic T_eff 1.44 / τ 0.79, L_p 2.23 / 0.79,
    L_k 2.34 / 0.79, with the base model's own τ ceiling 0.82 (duplicate completions tie)."""
    tiny_mode = {
        **TINY, "temperatures": [2.0], "train_prompts": 6, "held_out_prompts": 3, "generations": 32,
        "max_steps": 40, "base_steps": 300, "base_batch": 64,
    }  # fmt: skip
    monkeypatch.setitem(bench.DIFFUSION_MODES, "tiny", tiny_mode)
    rows, info = bench.run_diffusion("tiny", seed=0, device="cpu")
    by_method = {row["method"]: row for row in rows}
    assert list(by_method) == ["base", "myopic", "L_p", "L_k=4"]
    assert by_method["base"]["t_eff"] == pytest.approx(1.0) and info["num_held_out"] == 3 * 32
    assert len(set(info["groups"])) == 3 and info["base_logp_within_prompt_std"] > 1.0
    myopic_miss = abs(by_method["myopic"]["t_eff"] - 2.0)
    for method in ("L_p", "L_k=4"):
        row = by_method[method]
        assert abs(row["t_eff"] - 2.0) < myopic_miss and 1.7 < row["t_eff"] < 2.6, row
        assert row["kendall_tau"] > 0.9 * by_method["base"]["kendall_tau"], row
    plotted = info["plots"][2.0]
    assert plotted["L_p"].shape == (96,)  # the row's T_eff is the within-prompt slope of these log-likelihoods
    within = effective_temperature(plotted["base"], plotted["L_p"], groups=info["groups"])
    assert within == pytest.approx(by_method["L_p"]["t_eff"])
    assert effective_temperature(plotted["base"], plotted["L_p"]) != pytest.approx(within, rel=1e-3)


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
