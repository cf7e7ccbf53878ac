# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Registry entries for the recall-oriented losses of `recall.py` (c-Div, TruncR, λ-PR).

The data distribution P of these divergences is the distribution the training sequences were drawn from. With a
self-sampled dataset (`sample_dataset`) that is the reference model p itself, so P's per-token conditionals and
sequence log-likelihoods are the precomputed reference columns.
"""

from __future__ import annotations

import torch

from .recall import RollingQuantile, c_div_loss, lambda_pr_loss, trunc_r_loss
from .spec import LossInputs, LossOutput, LossSpec
from .temperature import token_nll


def _with_nll(inputs: LossInputs, args, loss, diagnostics: dict, name: str) -> LossOutput:
    """The recall loss (a mean over the batch's sequences) plus `nll_weight` times the NLL (a mean over its tokens,
    scaled by `inputs.token_scale` so that gradient accumulation adds up to one big batch's token mean)."""
    nll = token_nll(inputs.policy_token_logps, inputs.completion_mask)
    metrics = {f"loss/{name}": float(loss.detach()), "loss/nll": nll.item()}
    metrics.update({f"{name}/{key}": float(value) for key, value in diagnostics.items() if key != "nll"})
    return LossOutput(loss + args.nll_weight * nll * inputs.token_scale, metrics)


def _c_div_objective(inputs: LossInputs, args) -> LossOutput:
    loss, diagnostics = c_div_loss(
        inputs.policy_token_logps,
        inputs.completion_mask,
        alpha=args.c_div_alpha,
        data_token_logps=inputs.ref_token_logps,
    )
    return _with_nll(inputs, args, loss, diagnostics, "c_div")


def _trunc_r_objective(inputs: LossInputs, args) -> LossOutput:
    """TruncR with one rolling quantile per prompt group: sequence log-likelihoods of different prompts live on
    different scales (log Z(c) differs), so each prompt's threshold is a quantile of its own recent completions."""
    buffers = inputs.state.setdefault("trunc_r_thresholds", {})
    mask = inputs.completion_mask.bool()
    sequence_logps = inputs.policy_token_logps.detach().masked_fill(~mask, 0.0).sum(dim=1)
    ids = inputs.local_group_ids
    ids = ids.tolist() if ids is not None else [0] * sequence_logps.shape[0]
    thresholds = torch.empty_like(sequence_logps)
    for group in dict.fromkeys(ids):
        rows = torch.tensor([i for i, g in enumerate(ids) if g == group], device=sequence_logps.device)
        buffer = buffers.setdefault(group, RollingQuantile(quantile=args.trunc_r_quantile, capacity=256))
        buffer.update(sequence_logps[rows])
        thresholds[rows] = buffer.value()
    loss, diagnostics = trunc_r_loss(inputs.policy_token_logps, inputs.completion_mask, threshold=thresholds)
    return _with_nll(inputs, args, loss, diagnostics, "trunc_r")


def _lambda_pr_objective(inputs: LossInputs, args) -> LossOutput:
    mask = inputs.completion_mask.bool()
    data_logps = inputs.ref_token_logps.masked_fill(~mask, 0.0).sum(dim=1)
    loss, diagnostics = lambda_pr_loss(
        inputs.policy_token_logps, inputs.completion_mask, data_logps=data_logps, lam=args.lambda_pr_lambda
    )
    return _with_nll(inputs, args, loss, diagnostics, "lambda_pr")


RECALL_LOSSES: dict[str, LossSpec] = {
    "c_div": LossSpec(_c_div_objective, needs_ref_token_logps=True, paper="arXiv 2508.09654 (c-Div, Tsallis α)"),
    "trunc_r": LossSpec(_trunc_r_objective, paper="arXiv 2508.09654 (TruncR, rolling quantile)"),
    "lambda_pr": LossSpec(_lambda_pr_objective, needs_ref_token_logps=True, paper="arXiv 2508.09654 (λ-PR)"),
}
