# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The diffusion L_SSTS objective of the trainer registry against a loop-by-loop oracle of Eq. 18."""

import math
from types import SimpleNamespace

import pytest
import torch
from precision import float32_tolerance

from hf_seqtemp.losses import DIFFUSION_LOSSES, LossInputs, reference_conditionals


def test_reference_conditionals_are_suffix_sums_ignoring_missing_steps():
    steps = torch.tensor([[[-1.0, -2.0, -4.0], [-0.5, -0.25, 9.0]]])
    mask = torch.tensor([[[True, True, True], [True, True, False]]])
    assert reference_conditionals(steps, mask).tolist() == [[[-7.0, -6.0, -4.0], [-0.75, -0.25, 0.0]]]


def oracle(step_logq, ref_steps, lengths, temperature, anti_drift, nll_weight):
    """Eq. 18 with self-normalised per-step weights over every (row, order) sample that has the step."""
    batch, k, steps = step_logq.shape
    total, ess = 0.0, []
    for s in range(steps):
        samples = [(b, j) for b in range(batch) for j in range(k) if s < lengths[b]]
        if not samples:
            continue
        raw = torch.stack(
            [(1 - temperature) / temperature * ref_steps[b, j, s : lengths[b]].sum() for b, j in samples]
        )
        weights = raw.exp() / raw.exp().mean()
        ess.append((weights.sum() ** 2 / (weights**2).sum()).item() / len(samples))
        total = total - sum(w * step_logq[b, j, s] for w, (b, j) in zip(weights, samples))
    loss = total / (batch * k) * batch / sum(lengths) + nll_weight * anti_drift
    return loss, sum(ess) / len(ess)


@pytest.mark.parametrize("temperature", [0.5, 0.3, 1.0])
def test_diffusion_ssts_objective_matches_the_oracle(temperature):
    generator = torch.Generator().manual_seed(0)
    lengths = [3, 2]
    completion = torch.tensor([[False, True, True, True], [False, True, True, False]])
    valid = torch.arange(3)[None, None, :] < torch.tensor(lengths)[:, None, None]
    step_logq = (-torch.rand(2, 2, 3, generator=generator) * 3).masked_fill(~valid, 0.0).requires_grad_()
    ref_steps = (-torch.rand(2, 2, 3, generator=generator) * 3).masked_fill(~valid, 0.0)
    args = SimpleNamespace(target_temperature=temperature, nll_weight=0.2)
    inputs = LossInputs(
        policy_logps=torch.zeros(2),
        ref_logps=torch.zeros(2),
        policy_token_logps=step_logq,
        completion_mask=completion,
        ref_token_logps=ref_steps,
        anti_drift=torch.tensor(0.7),
    )
    out = DIFFUSION_LOSSES["ssts"].compute(inputs, args)
    expected, ess = oracle(step_logq, ref_steps, lengths, temperature, 0.7, 0.2)
    assert out.loss.item() == pytest.approx(expected.item(), abs=1e-5)
    assert out.metrics["ess/fraction"] == pytest.approx(ess, abs=1e-5)
    assert out.metrics["loss/nll"] == pytest.approx(0.7)
    (grad,) = torch.autograd.grad(out.loss, step_logq)
    (expected_grad,) = torch.autograd.grad(expected, step_logq)
    torch.testing.assert_close(grad, expected_grad, **float32_tolerance(expected_grad))
    if temperature == 1.0:  # every weight 1: the order NLL per completion token, averaged over the k = 2 orders
        assert out.loss.item() == pytest.approx(-step_logq.sum().item() / (2 * 5) + 0.2 * 0.7, abs=1e-5)
        assert out.metrics["ess/fraction"] == pytest.approx(1.0)  # also at step 3, which only row 0 has
    no_drift = DIFFUSION_LOSSES["ssts"].compute(LossInputs(**{**inputs.__dict__, "anti_drift": None}), args)
    assert math.isnan(no_drift.metrics["loss/nll"])
    assert no_drift.loss.item() == pytest.approx(expected.item() - 0.2 * 0.7, abs=1e-5)
