# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Registry entry of SMC distillation (`loss_type="smc_distill"`): the trained model fits the SMC particles of
`p^alpha`, weighted within each prompt ([`distill`]). It never calls a model: the trainer draws the particles."""

from __future__ import annotations

from .distill import particle_ess_fraction, particle_weights, proposal_ess_fraction, weighted_sequence_nll
from .spec import LossInputs, LossOutput, LossSpec


def particle_log_weights(inputs: LossInputs, temperature: float):
    """The rows' log-weights towards `p^(1/T)`: the SMC particles' own, or, for rows that are samples of `p`
    (an evaluation set of stored completions), the importance weights `p^(1/T) / p = p^(1/T - 1)`."""
    if inputs.log_weights is not None:
        return inputs.log_weights
    return (1.0 / temperature - 1.0) * inputs.ref_logps.float()


def _smc_distill_objective(inputs: LossInputs, args) -> LossOutput:
    weights = particle_weights(particle_log_weights(inputs, args.target_temperature), inputs.groups)
    tokens = inputs.completion_mask.sum(1)
    distill = weighted_sequence_nll(inputs.policy_logps, weights, tokens)
    metrics = {"loss/smc_distill": distill.item(), "ess/fraction": particle_ess_fraction(weights, inputs.groups)}
    if inputs.log_weights is not None:  # SMC particles: how good a proposal q is now (see proposal_ess_fraction)
        alpha = 1.0 / args.target_temperature
        metrics["ess/proposal_fraction"] = proposal_ess_fraction(
            inputs.log_weights, inputs.ref_logps, inputs.policy_logps, alpha, inputs.groups
        )
    if args.nll_weight == 0:
        return LossOutput(distill, metrics)
    nll = inputs.drift_term()
    return LossOutput(distill + args.nll_weight * nll, {**metrics, "loss/nll": nll.item()})


DISTILL_LOSSES: dict[str, LossSpec] = {
    "smc_distill": LossSpec(
        _smc_distill_objective,
        paper="forward KL to the SMC estimate of p^(1/T) per prompt (Power-SMC particles, self-normalised weights)",
        needs_groups=True,
        draws_particles=True,
        token_mean=True,
    ),
}
