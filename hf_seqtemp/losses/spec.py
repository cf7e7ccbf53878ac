# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The contract between the trainer and the registered objectives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .temperature import token_nll


@dataclass
class LossInputs:
    """What the trainer scored for one batch.

    Attributes:
        policy_logps (`torch.Tensor` of shape `(n,)`): sequence log q_T(x), with grad. Under several processes every
            value here is gathered from all ranks, in rank order (grad flows through the local rows only), so that an
            objective sees the whole global batch and whole prompt groups, as one process would.
        ref_logps (`torch.Tensor` of shape `(n,)`): sequence log p(x) of the same sequences (no grad).
        policy_token_logps (`torch.Tensor` of shape `(batch, length)`, *optional*): per-token log q (of every rank's
            rows, like every tensor here), with grad. Diffusion models have no per-token factorisation: `None`, or,
            for an objective over unmasking steps (`DIFFUSION_LOSSES["ssts"]`), the per-step conditionals
            `(batch, k, steps)` along k orders.
        completion_mask (`torch.Tensor` of shape `(batch, length)`): scored positions.
        ref_token_logps (`torch.Tensor` of shape `(batch, length)`, *optional*): per-token log p; for a
            diffusion objective over steps, the reference's per-step conditionals `(batch, k, steps)` along the
            same orders.
        world_size (`int`, *optional*, defaults to 1): the factor the *gradient* of a pair loss is multiplied by (its
            value kept), for inputs of which this rank back-propagates only its own share while data parallelism
            averages the ranks' gradients. The trainer passes 1: it scales the gradient of the whole loss itself.
        anti_drift (`torch.Tensor`, *optional*): the model's own training objective (its token mean over every
            rank's batch), added with weight `nll_weight` against likelihood drift (e.g. the diffusion ELBO L_diff,
            Eq. 4). `None`: the token NLL of `policy_token_logps` (autoregressive).
        state (`dict`, *optional*): kept by the trainer across steps, for objectives with memory (TruncR's rolling
            quantile of recent sequence log-likelihoods).
        groups (`torch.LongTensor` of shape `(n,)`, *optional*): dense prompt-group codes of the gathered sequences
            (aligned with `policy_logps`); `None`: one group.
        local_groups (`torch.LongTensor` of shape `(batch,)`, *optional*): dense codes of the rows of the per-token
            tensors (under the trainer, the gathered rows: the same as `groups`); `None`: one group.
        local_group_ids (`torch.LongTensor` of shape `(batch,)`, *optional*): the stable `group_id` of the rows, for
            objectives that remember a prompt across steps (TruncR's per-prompt quantile).
        log_weights (`torch.Tensor` of shape `(n,)`, *optional*): the SMC particles' log-weights towards
            `p^(1/T)` (`smc_log_weight` column, aligned with `policy_logps`), for `loss_type="smc_distill"`.
        token_scale (`float`, *optional*, defaults to 1): the factor of the token-mean anti-drift term
            ([`drift_term`]): under gradient accumulation, `tokens here × steps / tokens of all steps`, so that the
            steps' token means add up to the token mean of the whole accumulated batch (as transformers does with
            `num_items_in_batch`).
    """

    policy_logps: torch.Tensor
    ref_logps: torch.Tensor
    policy_token_logps: torch.Tensor | None
    completion_mask: torch.Tensor
    ref_token_logps: torch.Tensor | None = None
    world_size: int = 1
    anti_drift: torch.Tensor | None = None
    state: dict = field(default_factory=dict)
    groups: torch.Tensor | None = None
    local_groups: torch.Tensor | None = None
    local_group_ids: torch.Tensor | None = None
    log_weights: torch.Tensor | None = None
    token_scale: float = 1.0

    def drift_term(self) -> torch.Tensor | None:
        """`anti_drift` if given, else the token NLL of `policy_token_logps`, else `None` (nothing to add)."""
        if self.anti_drift is not None:
            return self.anti_drift * self.token_scale
        if self.policy_token_logps is None:
            return None
        return token_nll(self.policy_token_logps, self.completion_mask) * self.token_scale


@dataclass
class LossOutput:
    loss: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LossSpec:
    """A registered objective and the reference values it needs precomputed."""

    compute: Callable[[LossInputs, Any], LossOutput]
    needs_ref_token_logps: bool = False
    paper: str = ""
    needs_groups: bool = False
    """Compares completions of one prompt (pairs, self-normalisation): batches must hold whole prompt groups."""
    token_mean: bool = False
    """The whole loss is a mean over completion tokens: under gradient accumulation the trainer rescales it by the
    steps' token counts (`num_items_in_batch`); otherwise only the anti-drift term is (`LossInputs.token_scale`)."""
    draws_particles: bool = False
    """Trains on SMC particles of `p^(1/T)` that the trainer draws per prompt (prompt-only data), with their
    log-weights in the `smc_log_weight` column."""


def scale_gradient(value: torch.Tensor, factor: float) -> torch.Tensor:
    """`value` unchanged, with its gradient multiplied by `factor`."""
    return value if factor == 1 else value * factor - value.detach() * (factor - 1)
