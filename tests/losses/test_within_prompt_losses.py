# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Losses see two prompts whose log-likelihoods live on different scales: nothing may be compared across them."""

import pytest
import torch

from hf_seqtemp.losses import LOSSES, LossInputs, lhts_weights, ratio_loss
from hf_seqtemp.trainer import SeqTempConfig


def _inputs(sequence_logps: list[float], group_ids: list[int]) -> LossInputs:
    token = torch.tensor(sequence_logps)[:, None] * torch.tensor([[0.0, 0.5, 0.5]])  # first position unscored
    mask = torch.tensor([[0, 1, 1]] * len(sequence_logps))
    ids = torch.tensor(group_ids)
    codes = torch.unique(ids, return_inverse=True)[1]
    return LossInputs(token, token, token, mask, token, groups=codes, local_groups=codes, local_group_ids=ids)


def test_trunc_r_thresholds_are_quantiles_of_each_prompt():
    args = SeqTempConfig("unused", loss_type="trunc_r", trunc_r_quantile=0.5, use_cpu=True)
    # prompt 7 around -2, prompt 9 around -12: a pooled median would keep all of prompt 9 and none of prompt 7
    inputs = _inputs([-1.0, -2.0, -3.0, -4.0, -11.0, -12.0, -13.0, -14.0], [7, 7, 7, 7, 9, 9, 9, 9])
    out = LOSSES["trunc_r"].compute(inputs, args)
    assert out.metrics["trunc_r/kept_fraction"] == 0.5
    assert out.metrics["trunc_r/threshold"] == pytest.approx((-2.5 - 12.5) / 2)  # the two prompts' own medians


def test_ratio_loss_and_lhts_weights_ignore_the_offset_between_prompts():
    h = torch.tensor([0.0, 1.0, 50.0, 51.0])
    groups = torch.tensor([0, 0, 1, 1])
    assert ratio_loss(h, groups).item() == pytest.approx(1.0)  # (h0 - h1)² and (h2 - h3)², never across
    assert ratio_loss(h).item() > 100  # pooled, the offset between prompts dominates
    ref = torch.log(torch.tensor([[0.5], [0.25], [1e-4], [5e-5]]))
    weights, _ = lhts_weights(ref, torch.ones(4, 1), 0.5, groups)
    assert weights.flatten().tolist() == pytest.approx([4 / 3, 2 / 3, 4 / 3, 2 / 3])  # mean 1 within each prompt
    pooled, _ = lhts_weights(ref, torch.ones(4, 1), 0.5)
    assert pooled[2:].sum() < 1e-3  # pooled, the unlikely prompt's completions get almost no weight
