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
from ..likelihood.masked_diffusion import monte_carlo_log_likelihood
from .temperature import effective_sample_size
from .temperature import ratio_loss as pairwise_ratio_loss

Reduction = Literal["mean", "sum", "none"]


def _reduce(values: torch.Tensor, reduction: Reduction) -> torch.Tensor:
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    if reduction == "none":
        return values
    raise ValueError(f"`reduction` must be one of 'mean', 'sum', 'none', got {reduction!r}.")


def mdlm_elbo_loss(
    token_logps: torch.Tensor, masked: torch.Tensor, t: torch.Tensor, reduction: Reduction = "mean"
) -> torch.Tensor:
    """Negative ELBO of a masked diffusion LM with the linear schedule, in nats per sequence (Eq. 4).

    With `t ~ U(0, 1]` and every completion token masked independently with probability `t`, the continuous-time
    MDLM bound is `E_t[(1/t) * sum_{i masked} -log p(x_i | x_unmasked)]`; its expectation over `t` equals the
    diffusion objective `L_Diff` of Eq. 4, the average over uniformly random unmasking orders of the negative
    log-likelihood. Prompt and padding positions must never be in `masked`.

    Args:
        token_logps (`torch.FloatTensor` of shape `(batch, length)`):
            log-probability the model gives the true token at each position, from the masked input.
        masked (`torch.BoolTensor` of shape `(batch, length)`): positions that were masked in the model input.
        t (`torch.FloatTensor` of shape `(batch,)`): the masking rate of each row, in `(0, 1]`.
        reduction (`str`, *optional*, defaults to `"mean"`): `"mean"` or `"sum"` over the batch, or `"none"`.

    Returns:
        `torch.FloatTensor`: a scalar, or shape `(batch,)` with `reduction="none"`.

    Example:
    ```python
    >>> logps = torch.log(torch.tensor([[0.5, 0.25, 1.0]]))
    >>> round(mdlm_elbo_loss(logps, torch.tensor([[True, True, False]]), torch.tensor([0.5])).item(), 4)
    4.1589
    ```
    """
    if token_logps.dim() != 2 or masked.shape != token_logps.shape:
        raise ValueError(
            "`token_logps` and `masked` must both have shape (batch, length), got "
            f"{tuple(token_logps.shape)} and {tuple(masked.shape)}."
        )
    if t.shape != token_logps.shape[:1]:
        raise ValueError(f"`t` must have shape (batch,) = {tuple(token_logps.shape[:1])}, got {tuple(t.shape)}.")
    if ((t <= 0) | (t > 1)).any():
        raise ValueError(f"`t` must lie in (0, 1], got values in [{t.min().item()}, {t.max().item()}].")
    masked_nll = -(token_logps.float() * masked.to(torch.float32)).sum(dim=1)
    return _reduce(masked_nll / t.float(), reduction)


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
    groups = torch.zeros(step_mask.shape[0], dtype=torch.long) if groups is None else groups
    if temperature == 1.0:  # every weight is exactly 1, even where the reference gives -inf
        raw = torch.zeros_like(ref_cond_logp, dtype=torch.float32)
    else:
        raw = (1.0 - temperature) / temperature * ref_cond_logp.detach().float()
    raw = raw.masked_fill(~step_mask, float("-inf"))
    if normalization == "self":
        baseline = group_log_mean_exp(raw, step_mask, groups)
    elif normalization == "baseline":  # Eq. 18's baseline: the group's mean log-weight at the step
        member = (groups[None, :] == torch.arange(int(groups.max()) + 1)[:, None]).to(raw.dtype)
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
    the mean of the group's log-weights (Eq. 18 as written, per prompt). Weights are constants (no gradient flows through them). At `T = 1` every
    weight is 1 and the loss is the plain diffusion objective `L_Diff` (Eq. 4) over the sampled orders.

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
