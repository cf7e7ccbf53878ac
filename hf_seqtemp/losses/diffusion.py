# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Pure, differentiable losses for masked and block diffusion LMs.

Equation numbers refer to Scheufele, Blohm & Garg, *Temperature Scaling in Discrete Sequence (Language) Models*.

Every function here takes tensors of log-probabilities and returns a scalar; none calls a model. The caller runs
the model (or a [`SequenceScorer`]) and hands the per-position or per-step log-probabilities in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import torch

from ..checks import check_temperature
from ..groups import group_log_mean_exp
from ..likelihood.elbo import mdlm_elbo_loss  # noqa: F401  (re-exported: L_diff of Eq. 4 is a loss too)
from ..likelihood.masked_diffusion import monte_carlo_log_likelihood
from .temperature import effective_sample_size
from .temperature import ratio_loss as pairwise_ratio_loss


class SSTSLossOutput(NamedTuple):
    """What [`diffusion_ssts_loss`] returns: the scalar loss and two detached diagnostics."""

    loss: torch.Tensor
    effective_sample_size: torch.Tensor
    log_weights: torch.Tensor


def _ssts_log_weights(
    ref_cond_logp: torch.Tensor,
    step_mask: torch.Tensor,
    temperature: float,
    normalization: str,
    groups: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-step log importance weights, normalised across the (row, order) samples of each step *within each prompt
    group* (normalising across prompts would mix their partition functions Z_T(c))."""
    step_mask = step_mask.bool()
    if groups is None:
        groups = torch.zeros(step_mask.shape[0], dtype=torch.long, device=step_mask.device)
    groups = groups.to(step_mask.device)
    if temperature == 1.0:  # every weight is exactly 1, even where the reference gives -inf
        raw = torch.zeros_like(ref_cond_logp, dtype=torch.float32)
    else:
        raw = (1.0 - temperature) / temperature * ref_cond_logp.detach().float()
    raw = raw.masked_fill(~step_mask, float("-inf"))
    if normalization == "self":
        baseline = group_log_mean_exp(raw, step_mask, groups)
    elif normalization == "baseline":  # Eq. 18's baseline: the group's mean log-weight at the step
        codes = torch.arange(int(groups.max()) + 1, device=groups.device)
        member = (groups[None, :] == codes[:, None]).to(raw.dtype)
        total = torch.einsum("gb,bks->gs", member, raw.masked_fill(~step_mask, 0.0))
        count = torch.einsum("gb,bks->gs", member, step_mask.to(raw.dtype))
        baseline = (total / count.clamp(min=1))[groups][:, None, :]
    else:
        raise ValueError(f"`normalization` must be 'self' or 'baseline', got {normalization!r}.")
    log_weights = raw - baseline.masked_fill(~torch.isfinite(baseline), 0.0)
    return log_weights.masked_fill(~step_mask, float("-inf"))


def diffusion_ssts_loss(
    step_logq: torch.Tensor,
    ref_cond_logp: torch.Tensor,
    temperature: float,
    step_mask: torch.Tensor | None = None,
    normalization: Literal["self", "baseline"] = "self",
    groups: torch.Tensor | None = None,
) -> SSTSLossOutput:
    """Importance-sampled diffusion objective `L_SSTS` for sequence-level temperature `T` (Eq. 18, Eq. 28).

    For sequences `x ~ p` (the frozen reference) and sampled unmasking orders `pi`, each step `s` contributes
    `-w_s * log q_T(x_{Delta_s} | x_{pi_{s-1}})`, with the importance weight

        log w_s = (1 - T) / T * log p(x | x_{pi_{s-1}}) - mu_s,

    where `log p(x | x_{pi_{s-1}})` is the reference's log-likelihood of every token not yet revealed, given the state
    that step `s` conditions on (at the first step, `log p(x)`), and `mu_s` the per-step baseline. With
    `normalization="self"` the weights of each step are self-normalised in log space over the `(row, order)`
    samples of one prompt group (their mean is 1: `mu_s` is the group's log-mean-exp); with `"baseline"`, `mu_s` is
    the mean of the group's log-weights (Eq. 18 as written, per prompt). Weights are constants (no gradient flows
    through them). At `T = 1` every weight is 1 and the loss is the plain diffusion objective `L_Diff` (Eq. 4) over the sampled orders.

    Args:
        step_logq (`torch.FloatTensor` of shape `(batch, num_orders, steps)`):
            `log q_T(x_{Delta_s} | x_{pi_{s-1}})` of the trained model, with gradient.
        ref_cond_logp (`torch.FloatTensor` of shape `(batch, num_orders, steps)`):
            `log p(x | x_{pi_{s-1}})` of the reference (precomputed, e.g. by the exact block-diffusion DP).
        temperature (`float`): the target sequence temperature `T > 0`.
        step_mask (`torch.BoolTensor` of shape `(batch, num_orders, steps)`, *optional*):
            false for padding steps (rows with fewer steps). Defaults to all true.
        normalization (`str`, *optional*, defaults to `"self"`): `"self"` or `"baseline"`, see above.
        groups (`torch.LongTensor` of shape `(batch,)`, *optional*): dense prompt-group codes of the rows; weights
            are normalised within each group (and step). `None`: one group.

    Returns:
        [`SSTSLossOutput`]: `loss` (scalar: sum over steps, mean over batch and orders), `effective_sample_size`
        (Kish's `(sum w)^2 / sum w^2` per step over the `batch * num_orders` samples, averaged over steps; equals
        `batch * num_orders` for uniform weights) and `log_weights` `(batch, num_orders, steps)`.

    Example:
    ```python
    >>> step_logq = torch.log(torch.tensor([[[0.5, 1.0]], [[0.25, 1.0]]]))
    >>> ref = torch.log(torch.tensor([[[0.4, 1.0]], [[0.1, 1.0]]]))
    >>> out = diffusion_ssts_loss(step_logq, ref, temperature=0.5)
    >>> round(out.loss.item(), 4), round(out.effective_sample_size.item(), 4)
    (0.8318, 1.7353)
    ```
    """
    temperature = check_temperature(temperature)
    if step_logq.dim() != 3 or ref_cond_logp.shape != step_logq.shape:
        raise ValueError(
            "`step_logq` and `ref_cond_logp` must both have shape (batch, num_orders, steps), got "
            f"{tuple(step_logq.shape)} and {tuple(ref_cond_logp.shape)}."
        )
    if step_mask is None:
        step_mask = torch.ones_like(step_logq, dtype=torch.bool)
    if step_mask.shape != step_logq.shape:
        raise ValueError(
            f"`step_mask` must have the shape of `step_logq` {tuple(step_logq.shape)}, got {tuple(step_mask.shape)}."
        )
    step_mask = step_mask.bool()
    log_weights = _ssts_log_weights(ref_cond_logp, step_mask, temperature, normalization, groups)
    weights = log_weights.exp()
    terms = (weights * step_logq.float()).masked_fill(~step_mask, 0.0)
    loss = -terms.sum(dim=2).mean()
    with torch.no_grad():
        ess_per_step = effective_sample_size(weights, dim=(0, 1))
        active = step_mask.any(dim=0).any(dim=0)
        ess = ess_per_step[active].mean() if active.any() else torch.zeros((), device=weights.device)
    return SSTSLossOutput(loss, ess, log_weights.detach())


def monte_carlo_ratio_loss(
    ref_order_logps: torch.Tensor,
    order_logq: torch.Tensor,
    temperature: float,
    ratio_loss: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """`L_k`: the pairwise ratio loss on Monte-Carlo likelihood estimates (Eq. 23-24).

    Computes `h(x) = log p~(x) - T log q~_T(x)` with [`monte_carlo_log_likelihood`] on each side (the two sides may
    use different numbers of orders `k`) and hands it to the pairwise ratio loss `ratio_loss(h)` of
    `hf_seqtemp.losses.temperature` (mean over distinct pairs of `(h_i - h_j)^2`).

    Args:
        ref_order_logps (`torch.FloatTensor` of shape `(batch, k_p)`): `log p(x; pi)` of the reference per order.
        order_logq (`torch.FloatTensor` of shape `(batch, k_q)`): `log q_T(x; pi)` of the trained model, with grad.
        temperature (`float`): the target temperature `T > 0`.
        ratio_loss (`Callable`, *optional*): the pair loss of `h`; defaults to
            `hf_seqtemp.losses.temperature.ratio_loss`.

    Returns:
        `torch.FloatTensor`: a scalar.

    Example:
    ```python
    >>> pair = lambda h: (h[:, None] - h[None, :]).pow(2).sum() / (h.numel() * (h.numel() - 1))
    >>> ref = torch.log(torch.tensor([[0.2, 0.4], [0.1, 0.1]]))
    >>> logq = torch.log(torch.tensor([[0.3], [0.2]]))
    >>> round(monte_carlo_ratio_loss(ref, logq, 1.0, ratio_loss=pair).item(), 4)
    0.4805
    ```
    """
    temperature = check_temperature(temperature)
    if ref_order_logps.dim() != 2 or order_logq.dim() != 2 or ref_order_logps.shape[0] != order_logq.shape[0]:
        raise ValueError(
            "`ref_order_logps` and `order_logq` must have shapes (batch, k_p) and (batch, k_q) with the same batch, "
            f"got {tuple(ref_order_logps.shape)} and {tuple(order_logq.shape)}."
        )
    ratio_loss = pairwise_ratio_loss if ratio_loss is None else ratio_loss
    h = monte_carlo_log_likelihood(ref_order_logps.detach()) - temperature * monte_carlo_log_likelihood(order_logq)
    return ratio_loss(h)


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
    return (ess[active] / count[active]).mean() if active.any() else torch.tensor(float("nan"), device=ess.device)
