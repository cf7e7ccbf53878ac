# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Training objectives, selected by name from a registry (no `if/elif` on `loss_type` anywhere).

Each registered objective is a small function `(inputs: LossInputs, temperature, nll_weight) -> LossOutput` that
only combines the pure loss functions of its module; it never calls a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .temperature import lhts_loss, lhts_weights, ratio_loss, suffix_logps, temperature_log_ratio, token_nll


@dataclass
class LossInputs:
    """What the trainer scored for one batch.

    Attributes:
        policy_logps (`torch.Tensor` of shape `(n,)`): sequence log q_T(x), with grad. Under several processes these
            are gathered from every rank (grad flows through the local part only).
        ref_logps (`torch.Tensor` of shape `(n,)`): sequence log p(x) of the same sequences (no grad).
        policy_token_logps (`torch.Tensor` of shape `(batch, length)`, *optional*): local per-token log q, with
            grad; `None` for diffusion models, whose sequence likelihood has no per-token factorisation.
        completion_mask (`torch.Tensor` of shape `(batch, length)`): local scored positions.
        ref_token_logps (`torch.Tensor` of shape `(batch, length)`, *optional*): local per-token log p.
        world_size (`int`, *optional*, defaults to 1): number of processes. The *gradient* of a pair loss over
            gathered values is multiplied by it (its value is kept), because data-parallel training averages the
            per-rank gradients while each rank only back-propagates through its local part of the pairs.
        anti_drift (`torch.Tensor`, *optional*): the model's own training objective on the local batch, added with
            weight `nll_weight` against likelihood drift (e.g. the diffusion ELBO L_diff, Eq. 4). `None`: the token
            NLL of `policy_token_logps` (autoregressive).
    """

    policy_logps: torch.Tensor
    ref_logps: torch.Tensor
    policy_token_logps: torch.Tensor | None
    completion_mask: torch.Tensor
    ref_token_logps: torch.Tensor | None = None
    world_size: int = 1
    anti_drift: torch.Tensor | None = None

    def drift_term(self) -> torch.Tensor | None:
        """`anti_drift` if given, else the token NLL of `policy_token_logps`, else `None` (nothing to add)."""
        if self.anti_drift is not None:
            return self.anti_drift
        if self.policy_token_logps is None:
            return None
        return token_nll(self.policy_token_logps, self.completion_mask)


@dataclass
class LossOutput:
    loss: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LossSpec:
    """A registered objective and the reference values it needs precomputed."""

    compute: Callable[[LossInputs, float, float], LossOutput]
    needs_ref_token_logps: bool = False
    paper: str = ""


def _scale_gradient(value: torch.Tensor, factor: float) -> torch.Tensor:
    """`value` unchanged, with its gradient multiplied by `factor`."""
    return value if factor == 1 else value * factor - value.detach() * (factor - 1)


def _ratio_objective(inputs: LossInputs, temperature: float, nll_weight: float) -> LossOutput:
    h = temperature_log_ratio(inputs.ref_logps, inputs.policy_logps, temperature)
    pair_loss = ratio_loss(h)
    nll = inputs.drift_term()
    if nll is None:
        return LossOutput(_scale_gradient(pair_loss, inputs.world_size), {"loss/ratio": pair_loss.item(), "loss/nll": float("nan")})
    return LossOutput(_scale_gradient(pair_loss, inputs.world_size) + nll_weight * nll, {"loss/ratio": pair_loss.item(), "loss/nll": nll.item()})


def _ssts_objective(inputs: LossInputs, temperature: float, nll_weight: float) -> LossOutput:
    weights, ess = lhts_weights(inputs.ref_token_logps, inputs.completion_mask, temperature)
    weighted = lhts_loss(inputs.policy_token_logps, weights, inputs.completion_mask)
    nll = token_nll(inputs.policy_token_logps, inputs.completion_mask)
    scored = inputs.completion_mask.bool().any(0)
    batch = inputs.completion_mask.shape[0]
    return LossOutput(
        weighted + nll_weight * nll,
        {
            "loss/ssts": weighted.item(),
            "loss/nll": nll.item(),
            "ess/fraction": (ess[scored].mean() / batch).item() if scored.any() else float("nan"),
        },
    )


LOSSES: dict[str, LossSpec] = {
    "ratio": LossSpec(
        _ratio_objective, paper="Eq. 19-20, 24 (L_ratio / L_p / L_k) + nll_weight * token NLL or L_diff (Eq. 4)"
    ),
    "ssts": LossSpec(_ssts_objective, needs_ref_token_logps=True, paper="Eq. 8 / 18 (LHTS, autoregressive L_SSTS)"),
}


__all__ = [
    "LOSSES",
    "LossInputs",
    "LossOutput",
    "LossSpec",
    "lhts_loss",
    "lhts_weights",
    "ratio_loss",
    "suffix_logps",
    "temperature_log_ratio",
    "token_nll",
]
