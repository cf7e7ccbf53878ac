# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Recall-oriented training losses: TruncR, c-Div and lambda-PR as weighted negative log-likelihoods.

Plain NLL minimises KL(P || Q), and a model trained with it is *precision-locked*: raising the sampling temperature
afterwards spreads mass onto invalid outputs faster than onto missing valid ones ("Improving Diversity in Language
Models: When Temperature Fails, Change the Loss", https://huggingface.co/papers/2508.09654). The losses below
replace KL by divergences that favour recall. Each is implemented as

    loss = sum_b s_b * sum_t w_bt * (-log Q(x_bt | x_b,<t)),        w detached (computed from the model itself),

so that the gradient of the loss, in expectation over data `x ~ P` (`s_b` = 1/batch, or P(x_b) for an exact
expectation), equals the gradient of the divergence. The derivations are written out in each docstring. All inputs
are per-token log-probabilities of the *model* (with grad) and a completion mask; prompt and padding positions
never count, and every sum over tokens is a plain sum (no per-token mean).
"""

from __future__ import annotations

import math
from collections import deque

import torch

from ..checks import check_int


def _check_inputs(token_logps: torch.Tensor, completion_mask: torch.Tensor, sample_weights: torch.Tensor | None):
    if not isinstance(token_logps, torch.Tensor) or token_logps.dim() != 2:
        raise ValueError(
            f"`token_logps` must be a 2-D tensor (batch, length), got {getattr(token_logps, 'shape', token_logps)}."
        )
    if completion_mask.shape != token_logps.shape:
        raise ValueError(
            f"`completion_mask` must have the shape of `token_logps` {tuple(token_logps.shape)}, "
            f"got {tuple(completion_mask.shape)}."
        )
    batch = token_logps.shape[0]
    if sample_weights is None:
        sample_weights = token_logps.new_full((batch,), 1.0 / batch)
    elif sample_weights.shape != (batch,):
        raise ValueError(f"`sample_weights` must have shape ({batch},), got {tuple(sample_weights.shape)}.")
    return completion_mask.bool(), sample_weights.to(token_logps.dtype)


def _check_positive(name: str, value: float, lower: float, strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise TypeError(f"`{name}` must be a float, got {value!r}.")
    if (value <= lower if strict else value < lower) or math.isinf(value):
        raise ValueError(f"`{name}` must be finite and {'>' if strict else '>='} {lower}, got {value}.")
    return float(value)


def _weighted_nll(token_logps, mask, token_weights, sample_weights):
    """`sum_b s_b sum_t w_bt (-log q_bt)` with the weights detached and masked positions dropped."""
    token_weights = token_weights.detach().masked_fill(~mask, 0.0)
    per_sequence = -(token_weights * token_logps.masked_fill(~mask, 0.0)).sum(dim=1)
    return (sample_weights * per_sequence).sum()


def c_div_loss(
    token_logps: torch.Tensor,
    completion_mask: torch.Tensor,
    alpha: float = 1.4,
    data_token_logps: torch.Tensor | None = None,
    sample_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """c-Div: the conditional Tsallis alpha-divergence (alpha > 1) as a token-weighted NLL.

    Derivation. For one context `c` (prompt + completion prefix) with data conditional `p = P(.|c)` and model
    conditional `q = Q(.|c)`, the Tsallis divergence is `D_alpha(p || q) = (sum_v p(v)^alpha q(v)^(1-alpha) - 1) /
    (alpha - 1)`. Differentiating, `grad D_alpha = sum_v p^alpha (1 - alpha) q^(-alpha) grad q / (alpha - 1)
    = -sum_v p(v) (p(v)/q(v))^(alpha-1) grad log q(v) = E_{v~p}[-w(v) grad log q(v)]` with
    `w(v) = (p(v)/q(v))^(alpha-1)`. Summing over positions, contexts drawn from the data, the conditional divergence
    `D = sum_t E_{c_t~P} D_alpha(P(.|c_t) || Q(.|c_t))` has gradient `E_{x~P}[sum_t -w_t grad log Q(x_t|c_t)]`: the
    expected gradient of this loss, **constant factor 1**. As `alpha -> 1`, `w -> 1` and the loss is NLL; for
    `alpha > 1`, tokens the model under-predicts (`q < p`) get weight > 1: the recall direction.

    In practice `P(.|c)` is unknown and `data_token_logps=None` uses the one-hot empirical conditional of the
    observed token (`p(x_t) = 1`), giving `w_t = Q(x_t|c_t)^(1-alpha)`. The expected loss is then the power
    cross-entropy `sum_t E_P[(Q(x_t|c_t)^(1-alpha) - 1) / (alpha - 1)]` (same gradient, factor 1), whose minimiser
    is `Q(.|c) proportional to P(.|c)^(1/alpha)`: the data conditionals at token temperature `alpha`, same support,
    flatter.

    Args:
        token_logps (`torch.Tensor` of shape `(batch, length)`): `log Q(x_t | x_<t)` of the model, with grad.
        completion_mask (`torch.Tensor` of shape `(batch, length)`): 1 on the completion tokens that count.
        alpha (`float`, *optional*, defaults to `1.4`): Tsallis order, > 1 for recall (the paper's best is ~1.4).
        data_token_logps (`torch.Tensor` of shape `(batch, length)`, *optional*): `log P(x_t | x_<t)` of the data
            where known (toy tasks); defaults to the one-hot empirical conditional.
        sample_weights (`torch.Tensor` of shape `(batch,)`, *optional*): weight of each sequence; defaults to
            `1/batch` (a Monte-Carlo mean). Pass `P(x)` to get an exact expectation over an enumerated support.

    Returns:
        A tuple `(loss, diagnostics)`: scalar loss and a dict with `nll`, `weight_mean`, `weight_max`.

    Example:
    ```python
    >>> logps = torch.log(torch.tensor([[1.0, 0.5, 0.25]])).requires_grad_()
    >>> loss, info = c_div_loss(logps, torch.tensor([[0, 1, 1]]), alpha=2.0)
    >>> info["weight_max"]  # 1 / 0.25
    4.0
    ```
    """
    mask, sample_weights = _check_inputs(token_logps, completion_mask, sample_weights)
    alpha = _check_positive("alpha", alpha, 1.0)
    log_ratio = -token_logps.detach()
    if data_token_logps is not None:
        if data_token_logps.shape != token_logps.shape:
            raise ValueError(
                f"`data_token_logps` must have the shape of `token_logps` {tuple(token_logps.shape)}, "
                f"got {tuple(data_token_logps.shape)}."
            )
        log_ratio = log_ratio + data_token_logps.detach().to(token_logps.dtype)
    weights = torch.exp((alpha - 1.0) * log_ratio).masked_fill(~mask, 0.0)
    loss = _weighted_nll(token_logps, mask, weights, sample_weights)
    counted = weights[mask]
    return loss, {
        "nll": float(-(sample_weights * token_logps.detach().masked_fill(~mask, 0.0).sum(1)).sum()),
        "weight_mean": float(counted.mean()) if counted.numel() else 0.0,
        "weight_max": float(counted.max()) if counted.numel() else 0.0,
    }


class RollingQuantile:
    """Quantile of the last `capacity` values pushed, the truncation threshold of [`trunc_r_loss`].

    Args:
        quantile (`float`, *optional*, defaults to `0.8`): level in `(0, 1]`; samples whose sequence
            log-likelihood is below this quantile of recent ones are trained on.
        capacity (`int`, *optional*, defaults to `1024`): number of recent values kept.

    Example:
    ```python
    >>> buffer = RollingQuantile(quantile=0.5, capacity=4)
    >>> buffer.update(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))  # keeps 2, 3, 4, 5
    >>> buffer.value()
    3.5
    ```
    """

    def __init__(self, quantile: float = 0.8, capacity: int = 1024):
        quantile = _check_positive("quantile", quantile, 0.0)
        if quantile > 1.0:
            raise ValueError(f"`quantile` must be in (0, 1], got {quantile}.")
        check_int(capacity, "capacity")
        self.quantile = quantile
        self.capacity = capacity
        self._values: deque[float] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self._values)

    def update(self, values: torch.Tensor) -> None:
        """Pushes a batch of sequence log-likelihoods (detached; the oldest values drop out)."""
        self._values.extend(values.detach().reshape(-1).double().tolist())

    def state_dict(self) -> dict:
        """The buffer as plain values (kept in a checkpoint, so that a resumed run truncates as the uninterrupted
        one)."""
        return {"quantile": self.quantile, "capacity": self.capacity, "values": list(self._values)}

    @classmethod
    def from_state_dict(cls, state: dict) -> RollingQuantile:
        buffer = cls(state["quantile"], state["capacity"])
        buffer._values.extend(state["values"])
        return buffer

    def value(self) -> float:
        """The current quantile (linear interpolation between order statistics, as `torch.quantile`)."""
        if not self._values:
            raise ValueError("`RollingQuantile.value()` called on an empty buffer: call `update(...)` first.")
        values = torch.tensor(list(self._values), dtype=torch.float64, device="cpu")  # a host buffer of floats
        return float(torch.quantile(values, self.quantile))


def trunc_r_loss(
    token_logps: torch.Tensor,
    completion_mask: torch.Tensor,
    threshold: float | RollingQuantile | torch.Tensor,
    sample_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """TruncR: NLL on the sequences the model finds *least* likely, those with `log Q(x) < threshold`.

    Derivation. With the threshold `tau` held fixed, consider the coverage divergence
    `D_tau(P || Q) = E_{x~P}[(tau - log Q(x))_+]`, which is 0 exactly when every data sequence has `Q(x) >= e^tau`
    and otherwise measures how far the model is from covering the data at that level. Almost everywhere
    `grad (tau - log Q)_+ = -1[log Q(x) < tau] grad log Q(x)`, so `grad D_tau = E_P[-w(x) grad log Q(x)]` with
    `w(x) = 1[log Q(x) < tau]` (detached): the expected gradient of this loss, **constant factor 1**. Sequences the
    model already fits above the threshold stop pulling mass toward themselves, which leaves it to the rest (the
    opposite of loss truncation for precision, which drops the *high*-loss samples). In training `tau` is a quantile
    of a rolling buffer of recent sequence log-likelihoods: pass a [`RollingQuantile`], which this function updates
    with the batch before reading the threshold.

    Args:
        token_logps (`torch.Tensor` of shape `(batch, length)`): `log Q(x_t | x_<t)` of the model, with grad.
        completion_mask (`torch.Tensor` of shape `(batch, length)`): 1 on the completion tokens that count.
        threshold (`float`, [`RollingQuantile`] or `torch.Tensor` of shape `(batch,)`): `tau`, on the sequence
            log-likelihood scale (sum over tokens); a tensor gives each sequence its own threshold (its prompt's
            quantile: log-likelihoods of different prompts are not comparable).
        sample_weights (`torch.Tensor` of shape `(batch,)`, *optional*): as in [`c_div_loss`].

    Returns:
        A tuple `(loss, diagnostics)` with `nll`, `kept_fraction` and `threshold`.

    Example:
    ```python
    >>> logps = torch.tensor([[0.0, -1.0], [0.0, -3.0]], requires_grad=True)
    >>> loss, info = trunc_r_loss(logps, torch.tensor([[0, 1], [0, 1]]), threshold=-2.0)
    >>> float(loss), info["kept_fraction"]  # only the second sequence (log Q = -3) is trained on
    (1.5, 0.5)
    ```
    """
    mask, sample_weights = _check_inputs(token_logps, completion_mask, sample_weights)
    sequence_logps = token_logps.masked_fill(~mask, 0.0).sum(dim=1)
    if isinstance(threshold, RollingQuantile):
        threshold.update(sequence_logps)
        threshold = threshold.value()
    elif isinstance(threshold, torch.Tensor):
        if threshold.shape != sequence_logps.shape:
            raise ValueError(
                f"a tensor `threshold` needs one value per sequence, shape {tuple(sequence_logps.shape)}, got "
                f"{tuple(threshold.shape)}."
            )
        threshold = threshold.to(sequence_logps.device, sequence_logps.dtype)
    elif isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold):
        raise TypeError(f"`threshold` must be a float, a `RollingQuantile` or a tensor, got {threshold!r}.")
    kept = (sequence_logps.detach() < threshold).to(token_logps.dtype)
    loss = _weighted_nll(token_logps, mask, kept[:, None].expand_as(token_logps), sample_weights)
    return loss, {
        "nll": float(-(sample_weights * sequence_logps.detach()).sum()),
        "kept_fraction": float(kept.mean()),
        "threshold": float(threshold.mean()) if isinstance(threshold, torch.Tensor) else float(threshold),
    }


def lambda_pr_loss(
    token_logps: torch.Tensor,
    completion_mask: torch.Tensor,
    data_logps: torch.Tensor,
    lam: float = 0.5,
    sample_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """lambda-PR: the precision-recall divergence at one point `lambda` of the PR curve, as a weighted NLL.

    Derivation. The PR curve of `Q` against `P` is `alpha_lambda = sum_x min(lambda P(x), Q(x))` (precision) and
    `beta_lambda = alpha_lambda / lambda` (recall). Since `sum_x max(lambda P, Q) = lambda + 1 - alpha_lambda`, the
    PR-divergence `D_lambda = sum_x max(lambda P, Q) - max(lambda, 1) = min(lambda, 1) - alpha_lambda >= 0`.
    This loss targets the normalised `D'_lambda = 1 - alpha_lambda / min(lambda, 1)`, i.e. `1 - beta_lambda` (one
    minus recall) for `lambda <= 1` and `1 - alpha_lambda` for `lambda >= 1`. Almost everywhere
    `grad alpha_lambda = sum_x 1[Q(x) < lambda P(x)] grad Q(x) = E_{x~P}[r(x) 1[r(x) < lambda] grad log Q(x)]`
    with the density ratio `r = Q/P`, so `grad D'_lambda = E_P[-w(x) grad log Q(x)]` with
    `w(x) = r(x) 1[r(x) < lambda] / min(lambda, 1)` (detached, in `[0, max(1, lambda))`): the expected gradient of
    this loss, **constant factor 1** with respect to `D'_lambda` (factor `1/min(lambda, 1)` with respect to
    `D_lambda`). Only sequences the model under-covers (`Q < lambda P`) are trained on; small `lambda` favours
    recall.

    Args:
        token_logps (`torch.Tensor` of shape `(batch, length)`): `log Q(x_t | x_<t)` of the model, with grad.
        completion_mask (`torch.Tensor` of shape `(batch, length)`): 1 on the completion tokens that count.
        data_logps (`torch.Tensor` of shape `(batch,)`): sequence log-likelihood `log P(x)` of each completion under
            the data distribution: exact on toy tasks with a known answer set, otherwise an estimate (for instance
            a reference model trained with NLL).
        lam (`float`, *optional*, defaults to `0.5`): the trade-off `lambda > 0`.
        sample_weights (`torch.Tensor` of shape `(batch,)`, *optional*): as in [`c_div_loss`].

    Returns:
        A tuple `(loss, diagnostics)` with `nll`, `kept_fraction` and `weight_mean`.

    Example:
    ```python
    >>> logps = torch.log(torch.tensor([[1.0, 0.1], [1.0, 0.4]])).requires_grad_()
    >>> loss, info = lambda_pr_loss(logps, torch.tensor([[0, 1], [0, 1]]), torch.log(torch.tensor([0.5, 0.5])))
    >>> info["kept_fraction"]  # ratios Q/P = 0.2 (kept) and 0.8 (>= lambda, dropped)
    0.5
    ```
    """
    mask, sample_weights = _check_inputs(token_logps, completion_mask, sample_weights)
    lam = _check_positive("lam", lam, 0.0)
    if not isinstance(data_logps, torch.Tensor) or data_logps.shape != (token_logps.shape[0],):
        raise ValueError(
            f"`data_logps` must be a tensor of shape ({token_logps.shape[0]},) with log P(x) per sequence, "
            f"got {getattr(data_logps, 'shape', data_logps)}."
        )
    sequence_logps = token_logps.masked_fill(~mask, 0.0).sum(dim=1)
    ratio = torch.exp(sequence_logps.detach() - data_logps.detach().to(token_logps.dtype))
    kept = ratio < lam
    weights = torch.where(kept, ratio, torch.zeros_like(ratio)) / min(lam, 1.0)
    loss = _weighted_nll(token_logps, mask, weights[:, None].expand_as(token_logps), sample_weights)
    return loss, {
        "nll": float(-(sample_weights * sequence_logps.detach()).sum()),
        "kept_fraction": float(kept.double().mean()),
        "weight_mean": float(weights.mean()),
    }
