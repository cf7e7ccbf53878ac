# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Registry entries of the objectives a masked / block diffusion model trains with (`DiffusionFamily.objectives`).

For a diffusion model the trainer hands the objectives *per-step* values instead of per-token ones: for each
example, k unmasking orders drawn from its stored order seed, and along order j the conditional of the token
revealed at step s given the state before that step, `log q(x_{Δ_s} | x_{π_{s-1}})` (trained model, with grad) and
the same for the reference p (precomputed). Both have shape `(batch, k, steps)`, 0 at steps `s >= m_b`.
"""

from __future__ import annotations

import torch

from .diffusion import diffusion_ssts_loss
from .spec import LossInputs, LossOutput, LossSpec
from .temperature import effective_sample_size


def reference_conditionals(ref_step_logps: torch.Tensor, step_mask: torch.Tensor) -> torch.Tensor:
    """`log p(x | x_{π_{s-1}})` along each order: suffix sums of the reference's per-step conditionals.

    Along one order π the product of the reference's conditionals from step s on is `p(x; π | x_{π_{s-1}})`, the
    likelihood of the not yet revealed tokens given the state before step s when they are revealed in π's order.
    Eq. 18 asks for `p(x | x_{π_{s-1}}) = E_σ[p(x; σ | x_{π_{s-1}})]`, the mean over all orders σ through that state
    (Section 5.2.1); the suffix of the sampled order is one uniform draw of σ, so this is a one-order estimate.
    Its bias: the weight is `p^{(1-T)/T}` of it. Averaged over the uniform rest of the order, the weight is
    exactly `p(x | x_{π_{s-1}})^{(1-T)/T}` when `(1-T)/T = 1` (T = 1/2); for other T Jensen's inequality biases it
    up (T < 1/2, convex power) or down (1/2 < T < 1, concave power), and the bias shrinks as the suffix orders
    agree. The weight multiplies the term of the position revealed next, and given that position its mean is
    `p(x_{π_s} | x_{π_{s-1}}) p(x | x_{π_s})` rather than `p(x | x_{π_{s-1}})`: the two agree for a model whose
    conditionals are those of one joint distribution (then every order through a state gives the same value and
    the estimate is exact), so beyond the Jensen bias only the order-inconsistency of p biases the target.

    Args:
        ref_step_logps (`torch.Tensor` of shape `(batch, k, steps)`): reference log-conditionals per step.
        step_mask (`torch.BoolTensor` of the same shape): steps that exist (`s < m_b`).

    Returns:
        `torch.Tensor` of shape `(batch, k, steps)`.

    Example:
    ```python
    >>> steps = torch.tensor([[[-1.0, -2.0, 0.0]]])
    >>> reference_conditionals(steps, torch.tensor([[[True, True, False]]])).tolist()
    [[[-3.0, -2.0, 0.0]]]
    ```
    """
    values = ref_step_logps.float().masked_fill(~step_mask.bool(), 0.0)
    return values.flip(-1).cumsum(-1).flip(-1)


def step_mask_of(step_logps: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """`(batch, k, steps)` mask of the steps that exist: row b has one step per completion position.

    Example:
    ```python
    >>> step_mask_of(torch.zeros(2, 1, 2), torch.tensor([[0, 1, 1], [0, 1, 0]])).tolist()
    [[[True, True]], [[True, False]]]
    ```
    """
    m = completion_mask.bool().sum(dim=1)
    steps = torch.arange(step_logps.shape[-1], device=step_logps.device)
    return (steps[None, :] < m[:, None])[:, None, :].expand_as(step_logps)


def ess_fraction(log_weights: torch.Tensor, step_mask: torch.Tensor) -> torch.Tensor:
    """Kish's `(Σw)² / Σw²` of each step over the (row, order) samples that have it, divided by their number,
    averaged over the steps: 1 for uniform weights, → 1/n when one sample carries all the weight.

    Example:
    ```python
    >>> log_w = torch.log(torch.tensor([[[1.0, 2.0]], [[1.0, 0.0]]]))
    >>> ess_fraction(log_w, torch.tensor([[[True, True]], [[True, False]]])).item()
    1.0
    ```
    """
    weights = log_weights.exp().masked_fill(~step_mask, 0.0)
    count = step_mask.sum(dim=(0, 1))
    ess = effective_sample_size(weights, dim=(0, 1))
    active = count > 0
    return (ess[active] / count[active]).mean() if active.any() else torch.tensor(float("nan"))


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
)
