# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature losses of Section 5.2: pure functions of per-sequence and per-token log-probabilities."""

from __future__ import annotations

import math

import torch

from ..groups import group_log_mean_exp, group_means


def log_ratio_h(ref_logps: torch.Tensor, policy_logps: torch.Tensor, temperature: float) -> torch.Tensor:
    """The temperature log-ratio `h(x) = log p(x) − T · log q(x)` of Eq. 16 as a tensor, differentiable in
    `policy_logps` (the metric [`~hf_seqtemp.metrics.core.temperature_log_ratio`] reports its statistics).

    Args:
        ref_logps (`torch.Tensor` of shape `(batch,)`): sequence log-likelihoods under the reference p.
        policy_logps (`torch.Tensor` of shape `(batch,)`): sequence log-likelihoods under the trained q_T.
        temperature (`float`): target temperature T.

    Returns:
        `torch.Tensor` of shape `(batch,)`.
    """
    return ref_logps.to(policy_logps.dtype) - temperature * policy_logps


def ratio_loss(h: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
    """Likelihood-ratio variance loss L_ratio / L_p (Eq. 19-20): mean over distinct pairs *of one prompt group* of
    `(h_i − h_j)²`.

    For a prompted model h(x, c) = T log Z_T(c) at the optimum, constant within a prompt only, so pairs never cross
    groups. Uses `Σ_{i≠j∈g} (h_i − h_j)² = 2 n_g Σ_{i∈g} (h_i − h̄_g)²`, so it is O(n), divided by the number of
    ordered within-group pairs `Σ_g n_g (n_g − 1)`; with no such pair the loss is 0 (still attached to the graph).
    Sampling the pairs from the data rather than from p_T gives L_p = Var_p[h], the paper's practical form.

    Args:
        h (`torch.Tensor` of shape `(n,)`): temperature log-ratios of Eq. 16.
        groups (`torch.LongTensor` of shape `(n,)`, *optional*): dense group codes
            ([`~hf_seqtemp.groups.group_codes`]); `None`: one group.

    Returns:
        `torch.Tensor`: scalar.

    Example:
    ```python
    >>> ratio_loss(torch.tensor([0.0, 1.0, 2.0])).item()  # pairs (0,1),(0,2),(1,2): (1 + 4 + 1) / 3
    2.0
    >>> ratio_loss(torch.tensor([0.0, 1.0, 5.0, 5.0]), torch.tensor([0, 0, 1, 1])).item()  # pairs (0,1), (2,3)
    0.5
    ```
    """
    groups = torch.zeros_like(h, dtype=torch.long) if groups is None else groups.to(h.device)
    counts = torch.bincount(groups).to(h.dtype)
    pairs = (counts * (counts - 1)).sum()
    if pairs == 0:
        return h.sum() * 0.0
    centred = h - group_means(h, groups)
    size = counts[groups]
    return 2.0 * (size * centred * centred).sum() / pairs


def suffix_logps(token_logps: torch.Tensor) -> torch.Tensor:
    """`log p(x_{≥i} | x_{<i})` at every position: reverse cumulative sums of per-token log-probs.

    Args:
        token_logps (`torch.Tensor` of shape `(batch, length)`): per-token log-probs, 0 at unscored positions.

    Returns:
        `torch.Tensor` of shape `(batch, length)`.

    Example:
    ```python
    >>> suffix_logps(torch.tensor([[-1.0, -2.0, -3.0]])).tolist()
    [[-6.0, -5.0, -3.0]]
    ```
    """
    return token_logps.flip(1).cumsum(1).flip(1)


def effective_sample_size(weights: torch.Tensor, dim: int | tuple[int, ...] = 0) -> torch.Tensor:
    """Kish's effective sample size `(Σ w)² / Σ w²` of importance weights, reduced over `dim`.

    It equals the number of samples for uniform weights and 1 when a single sample carries all the weight; weights
    of 0 (masked samples) do not count. A reduction over nothing but zeros gives 0.

    Example:
    ```python
    >>> effective_sample_size(torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]])).tolist()
    [3.0, 1.0]
    ```
    """
    return weights.sum(dim) ** 2 / (weights * weights).sum(dim).clamp(min=1e-30)


def lhts_weights(
    ref_token_logps: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float,
    groups: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-normalised importance weights of LHTS / autoregressive L_SSTS (Eq. 8 and 18), in log space.

    At step i the weight of sequence b is `exp((1−T)/T · log p(x_{≥i} | x_{<i}))`, normalised over the sequences
    *of b's prompt group* that are scored at step i so that their mean weight is 1 (the baseline μ_i of Eq. 18
    cancels in the normalisation). Normalising across prompts would mix their partition functions Z_T(c).

    Args:
        ref_token_logps (`torch.Tensor` of shape `(batch, length)`): reference log-probs per token (0 elsewhere).
        completion_mask (`torch.Tensor` of shape `(batch, length)`): positions that are scored.
        temperature (`float`): target temperature T.
        groups (`torch.LongTensor` of shape `(batch,)`, *optional*): dense group codes; `None`: one group.

    Returns:
        A tuple `(weights, ess)`: `weights` of shape `(batch, length)` (0 at unscored positions, detached) and
        `ess` of shape `(length,)`: the effective sample size `(Σw)² / Σw²` of each step's weights, summed over the
        groups.

    Example:
    ```python
    >>> ref = torch.log(torch.tensor([[0.5], [0.25], [0.9], [0.1]]))
    >>> weights, _ = lhts_weights(ref, torch.ones(4, 1), 0.5, torch.tensor([0, 0, 1, 1]))
    >>> [round(w, 4) for w in weights.flatten().tolist()]  # p^((1-T)/T) = p, mean 1 within each prompt
    [1.3333, 0.6667, 1.8, 0.2]
    ```
    """
    mask = completion_mask.bool()
    groups = torch.zeros(mask.shape[0], dtype=torch.long, device=mask.device) if groups is None else groups
    log_w = (1.0 - temperature) / temperature * suffix_logps(ref_token_logps.float() * mask)
    log_w = log_w.masked_fill(~mask, -math.inf)
    weights = (log_w - group_log_mean_exp(log_w, mask, groups)).exp().masked_fill(~mask, 0.0)
    ess = torch.zeros(mask.shape[1], dtype=weights.dtype, device=weights.device)
    for code in torch.unique(groups).tolist():
        member = weights[groups.to(weights.device) == code]
        ess += effective_sample_size(member)
    return weights.detach(), ess.detach()


def lhts_loss(policy_token_logps: torch.Tensor, weights: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """Importance-weighted token NLL of LHTS / autoregressive L_SSTS (Eq. 8, Eq. 18 with the AR schedule).

    `L = −Σ_{b,i} w_{b,i} log q(x_i | x_{<i}) / Σ_{b,i} mask_{b,i}`: with T = 1 every weight is 1 and this is
    the standard token-mean NLL.

    Args:
        policy_token_logps (`torch.Tensor` of shape `(batch, length)`): log q(x_i | x_<i), with grad.
        weights (`torch.Tensor` of shape `(batch, length)`): from [`lhts_weights`].
        completion_mask (`torch.Tensor` of shape `(batch, length)`): positions that are scored.

    Returns:
        `torch.Tensor`: scalar.

    Example:
    ```python
    >>> lp = torch.log(torch.tensor([[0.5, 0.25]]))
    >>> round(lhts_loss(lp, torch.ones(1, 2), torch.ones(1, 2)).item(), 4)  # (log 2 + log 4) / 2
    1.0397
    ```
    """
    mask = completion_mask.bool()
    return -(weights * policy_token_logps).masked_fill(~mask, 0.0).sum() / mask.sum().clamp(min=1)


def token_nll(policy_token_logps: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """Standard token-mean negative log-likelihood over completion positions (the λ term against drift)."""
    mask = completion_mask.bool()
    return -policy_token_logps.masked_fill(~mask, 0.0).sum() / mask.sum().clamp(min=1)
