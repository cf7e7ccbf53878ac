# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import itertools
import math

import pytest
import torch

from hf_seqtemp.losses import LOSSES, LossInputs
from hf_seqtemp.losses.temperature import lhts_loss, lhts_weights, log_ratio_h, ratio_loss, suffix_logps
from hf_seqtemp.trainer import SeqTempConfig


def test_ratio_loss_is_the_mean_over_distinct_pairs_and_its_gradient_matches():
    h = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    pairs = [(i, j) for i, j in itertools.product(range(7), repeat=2) if i != j]
    direct = sum((h[i] - h[j]) ** 2 for i, j in pairs) / len(pairs)
    fast = ratio_loss(h)
    torch.testing.assert_close(fast, direct)
    torch.testing.assert_close(torch.autograd.grad(fast, h)[0], torch.autograd.grad(direct, h)[0])
    assert ratio_loss(h[:1]).item() == 0.0 and ratio_loss(h[:1]).requires_grad


def test_ratio_loss_is_zero_exactly_for_a_tempered_model():
    logp = torch.tensor([-1.0, -2.5, -7.0, -3.2], dtype=torch.float64)
    logq = logp / 0.5 - 0.7  # q ∝ p^2 up to any normaliser
    assert ratio_loss(log_ratio_h(logp, logq, 0.5)).item() == pytest.approx(0.0, abs=1e-24)


def test_lhts_weights_equal_their_self_normalised_definition():
    gen = torch.Generator().manual_seed(1)
    ref = -torch.rand(5, 4, generator=gen, dtype=torch.float64) * 3
    mask = torch.ones(5, 4, dtype=torch.bool)
    mask[0, 3] = mask[1, 2:] = False  # shorter rows
    mask[:, 0] = False  # first token is never scored
    weights, ess = lhts_weights(ref * mask, mask, temperature=0.5)
    suffix = suffix_logps(ref * mask)
    for step in range(1, 4):
        rows = mask[:, step]
        raw = torch.exp((1 - 0.5) / 0.5 * suffix[rows, step])
        expected = raw / raw.mean()
        torch.testing.assert_close(weights[rows, step].double(), expected, rtol=1e-6, atol=1e-6)
        assert ess[step].item() == pytest.approx((expected.sum() ** 2 / (expected**2).sum()).item())
    assert (weights[~mask] == 0).all()


def test_lhts_with_unit_temperature_is_the_token_nll():
    lp = torch.log(torch.tensor([[0.5, 0.25, 0.5], [0.1, 0.2, 0.4]]))
    mask = torch.tensor([[0, 1, 1], [0, 1, 0]], dtype=torch.bool)
    weights, _ = lhts_weights(lp, mask, temperature=1.0)
    assert torch.equal(weights, mask.double() if weights.dtype == torch.float64 else mask.float())
    assert lhts_loss(lp, weights, mask).item() == pytest.approx(-(math.log(0.25) + math.log(0.5) + math.log(0.2)) / 3)


def test_ssts_objective_reports_ess_fraction_one_for_uniform_weights(tmp_path):
    lp = torch.log(torch.full((4, 3), 0.5))
    mask = torch.tensor([[0, 1, 1], [0, 1, 1], [0, 1, 0], [0, 1, 1]], dtype=torch.bool)
    args = SeqTempConfig(str(tmp_path), target_temperature=0.5)
    out = LOSSES["ssts"].compute(
        LossInputs(
            policy_logps=lp.sum(1),
            ref_logps=lp.sum(1),
            policy_token_logps=lp,
            completion_mask=mask,
            ref_token_logps=torch.zeros(4, 3),
        ),
        args,
    )
    # a reference with log p = 0 everywhere gives every suffix the same weight, whatever the row lengths: the
    # ESS of each step is the number of sequences scored there (4 at step 1, 3 at step 2), a fraction of 1
    assert out.metrics["ess/fraction"] == pytest.approx(1.0)
