# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Registry entries of the objectives a masked / block diffusion model trains with (`DiffusionFamily.objectives`):
each combines the pure functions of `diffusion.py` and never calls a model.

For a diffusion model the trainer hands the objectives *per-step* values instead of per-token ones: for each
example, k unmasking orders drawn from its stored order seed, and along order j the conditional of the token
revealed at step s given the state before that step, `log q(x_{Δ_s} | x_{π_{s-1}})` (trained model, with grad) and
the same for the reference p (precomputed). Both have shape `(batch, k, steps)`, 0 at steps `s >= m_b`.
"""

from __future__ import annotations

from .diffusion import diffusion_ssts_loss, ess_fraction, reference_conditionals, step_mask_of
from .spec import LossInputs, LossOutput, LossSpec


def _diffusion_ssts_objective(inputs: LossInputs, args) -> LossOutput:
    """Eq. 18 / 28 along the seeded orders, per completion token, + nll_weight · L_diff (Eq. 4)."""
    step_logq, ref_steps, completion = inputs.policy_token_logps, inputs.ref_token_logps, inputs.completion_mask
    step_mask = step_mask_of(step_logq, completion)
    out = diffusion_ssts_loss(
        step_logq,
        reference_conditionals(ref_steps, step_mask),
        args.target_temperature,
        step_mask,
        groups=inputs.local_groups,
    )
    # diffusion_ssts_loss is a sum over steps (nats per sequence); per completion token, like L_diff and the
    # autoregressive objective, so that `nll_weight` means the same there (at T = 1 both terms estimate one thing).
    ssts = out.loss * completion.shape[0] / completion.bool().sum().clamp(min=1)
    metrics = {"loss/ssts": ssts.item(), "ess/fraction": ess_fraction(out.log_weights, step_mask).item()}
    if inputs.anti_drift is None:
        return LossOutput(ssts, {**metrics, "loss/nll": float("nan")})
    return LossOutput(ssts + args.nll_weight * inputs.anti_drift, {**metrics, "loss/nll": inputs.anti_drift.item()})


DIFFUSION_SSTS = LossSpec(
    _diffusion_ssts_objective,
    needs_ref_token_logps=True,
    paper="Eq. 18 / 28 (diffusion L_SSTS, one-order reference conditionals) + nll_weight * L_diff (Eq. 4)",
    needs_groups=True,
    token_mean=True,
)
