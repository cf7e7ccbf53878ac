# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Registry entries of the sequence-temperature objectives of a causal LM: the ratio loss (L_ratio / L_p) and LHTS /
autoregressive L_SSTS. Each combines the pure functions of `temperature.py` and never calls a model."""

from __future__ import annotations

from .spec import LossInputs, LossOutput, LossSpec, scale_gradient
from .temperature import lhts_loss, lhts_weights, log_ratio_h, ratio_loss, token_nll


def _ratio_objective(inputs: LossInputs, args) -> LossOutput:
    nll_weight = args.nll_weight
    h = log_ratio_h(inputs.ref_logps, inputs.policy_logps, args.target_temperature)
    pair_loss = ratio_loss(h, inputs.groups)
    nll = inputs.drift_term()
    loss = scale_gradient(pair_loss, inputs.world_size)
    if nll is None:
        return LossOutput(loss, {"loss/ratio": pair_loss.item(), "loss/nll": float("nan")})
    return LossOutput(loss + nll_weight * nll, {"loss/ratio": pair_loss.item(), "loss/nll": nll.item()})


def _ssts_objective(inputs: LossInputs, args) -> LossOutput:
    weights, ess = lhts_weights(
        inputs.ref_token_logps, inputs.completion_mask, args.target_temperature, inputs.local_groups
    )
    weighted = lhts_loss(inputs.policy_token_logps, weights, inputs.completion_mask)
    nll = token_nll(inputs.policy_token_logps, inputs.completion_mask)
    count = inputs.completion_mask.bool().sum(0)  # sequences scored at each step
    scored = count > 0
    return LossOutput(
        weighted + args.nll_weight * nll,
        {
            "loss/ssts": weighted.item(),
            "loss/nll": nll.item(),
            # per step ESS over the sequences that have the step (1 for uniform weights), as for diffusion
            "ess/fraction": (ess[scored] / count[scored]).mean().item() if scored.any() else float("nan"),
        },
    )


TEMPERATURE_LOSSES: dict[str, LossSpec] = {
    "ratio": LossSpec(
        _ratio_objective,
        paper="Eq. 19-20, 24 (L_ratio / L_p / L_k) + nll_weight * token NLL or L_diff (Eq. 4)",
        needs_groups=True,
    ),
    "ssts": LossSpec(
        _ssts_objective,
        needs_ref_token_logps=True,
        paper="Eq. 8 / 18 (LHTS, autoregressive L_SSTS)",
        needs_groups=True,
        token_mean=True,
    ),
}
