# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""SMC distillation: the forward KL from the SMC estimate of `p^alpha(·|c)` to the trained model, per prompt.

For a prompt c with particles `x_1..x_N` of sequential Monte Carlo targeting `p(·|c)^alpha` (`alpha = 1/T`) and
log-weights `log w_i`, the self-normalised estimate of `E_{p_T(·|c)}[f]` is `sum_i w̄_i f(x_i)` with
`w̄_i = w_i / sum_{j of c} w_j`. Hence

    KL(p_T(·|c) ‖ q(·|c)) = - E_{p_T(·|c)}[log q(x|c)] + const  ≈  - sum_i w̄_i log q(x_i|c) + const,

minimised by `q(·|c) = p_T(·|c)` whatever the normaliser `Z_T(c)`. The weights are normalised *within each prompt*:
normalised over a batch of prompts, each prompt's particles would carry its SMC estimate of `Z_T(c)`, and prompts
whose tempered mass is small would hardly train (the oracle test shows it). The weights carry no gradient.
"""

from __future__ import annotations

import torch

from ..groups import group_log_mean_exp
from .temperature import effective_sample_size


def particle_weights(log_weights: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
    """Self-normalised particle weights with mean 1 within each prompt group (detached).

    Args:
        log_weights (`torch.Tensor` of shape `(n,)`): unnormalised log-weights (any constant per prompt).
        groups (`torch.LongTensor` of shape `(n,)`, *optional*): dense group codes; `None`: one group.

    Returns:
        `torch.Tensor` of shape `(n,)`: `n_g · w_i / sum_{j in g} w_j` for `i` in group `g`.

    Example:
    ```python
    >>> particle_weights(torch.log(torch.tensor([1.0, 3.0, 5.0, 5.0])), torch.tensor([0, 0, 1, 1])).tolist()
    [0.5, 1.5, 1.0, 1.0]
    ```
    """
    log_w = log_weights.detach().double()
    groups = torch.zeros(log_w.shape[0], dtype=torch.long, device=log_w.device) if groups is None else groups
    mask = torch.ones(log_w.shape[0], 1, dtype=torch.bool, device=log_w.device)
    centre = group_log_mean_exp(log_w[:, None], mask, groups)[:, 0]
    return (log_w - centre).exp().to(log_weights.dtype)


def particle_ess_fraction(weights: torch.Tensor, groups: torch.Tensor | None = None) -> float:
    """Mean over prompt groups of `ESS_g / n_g` (Kish) of the particle weights: 1 for equal weights."""
    if groups is None:
        groups = torch.zeros(weights.shape[0], dtype=torch.long, device=weights.device)
    groups = groups.to(weights.device)
    fractions = [
        (effective_sample_size(weights[groups == g]) / int((groups == g).sum())).item()
        for g in torch.unique(groups).tolist()
    ]
    return sum(fractions) / len(fractions)


def proposal_ess_fraction(
    log_weights: torch.Tensor,
    ref_logps: torch.Tensor,
    policy_logps: torch.Tensor,
    alpha: float,
    groups: torch.Tensor | None = None,
) -> float:
    """How good `q` is as an importance-sampling proposal for `p^alpha`, estimated from SMC particles of `p^alpha`:
    the mean over prompt groups of `ESS/N = 1 / E_{pi}[pi(x) / q(x)]` (the large-`N` fraction of effective samples of
    importance sampling from `q(·|c)`, `pi = p^alpha / Z` the target; 1 when `q = pi`).

    With `w(x) = p(x)^alpha / q(x)`, `E_q[w^2] / E_q[w]^2 = E_pi[w] / Z`: the particles' self-normalised weights give
    `E_pi[w]`, and their own normaliser estimate gives `Z` (the mean of `exp(log_weights)` within the prompt, as the
    trainer stores them). An estimate from few particles, never clamped: it can exceed 1, and it is optimistic where
    `q`'s tails are lighter than the target's (the particles rarely hold the answers where `pi / q` is large; on the
    enumerable toy with 16 particles, 0.43 where the exact figure is 0.21 at `T = 2`, 0.76 for 0.75 at `T = 0.5`).
    Unlike the particles' own ESS (after resampling), it says how far the proposal is from the target, without
    drawing from `q`.

    Args:
        log_weights (`torch.Tensor` of shape `(n,)`): the particles' log-weights, whose mean `exp` within a prompt is
            the SMC estimate of `Z(c)` (the trainer's `smc_log_weight` column).
        ref_logps (`torch.Tensor` of shape `(n,)`): `log p(x_i | c_i)`.
        policy_logps (`torch.Tensor` of shape `(n,)`): `log q(x_i | c_i)`.
        alpha (`float`): the exponent `1/T`.
        groups (`torch.LongTensor` of shape `(n,)`, *optional*): dense group codes; `None`: one group.

    Example:
    ```python
    >>> lp = torch.log(torch.tensor([0.5, 0.25]))
    >>> log_w = 2 * lp + torch.log(torch.tensor(2.0))  # both answers, proposed uniformly: exact weights and Z
    >>> round(proposal_ess_fraction(log_w, lp, torch.log(torch.tensor([0.8, 0.2])), 2.0), 4)  # q = p^2 / Z
    1.0
    >>> round(proposal_ess_fraction(log_w, lp, torch.log(torch.tensor([0.5, 0.5])), 2.0), 4)  # q uniform
    0.7353
    ```
    """
    log_w = log_weights.detach().double()
    log_ratio = alpha * ref_logps.detach().double() - policy_logps.detach().double()
    if groups is None:
        groups = torch.zeros(log_w.shape[0], dtype=torch.long, device=log_w.device)
    groups = groups.to(log_w.device)
    fractions = []
    for g in torch.unique(groups).tolist():
        member = groups == g
        normalised = log_w[member] - log_w[member].logsumexp(0)
        log_z = log_w[member].logsumexp(0) - torch.log(member.sum().double())
        fractions.append(torch.exp(log_z - (normalised + log_ratio[member]).logsumexp(0)).item())
    return sum(fractions) / len(fractions)


def weighted_sequence_nll(policy_logps: torch.Tensor, weights: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """`- sum_i w_i log q(x_i) / sum_i tokens_i`: the weighted sequence NLL per scored token (with all weights 1,
    the token-mean NLL), so its scale matches the other objectives'.

    Args:
        policy_logps (`torch.Tensor` of shape `(n,)`): sequence log q(x_i | c_i), with grad.
        weights (`torch.Tensor` of shape `(n,)`): from [`particle_weights`] (no grad).
        tokens (`torch.Tensor` of shape `(n,)`): scored tokens of each sequence.

    Example:
    ```python
    >>> lq = torch.log(torch.tensor([0.5, 0.25]))
    >>> round(weighted_sequence_nll(lq, torch.tensor([1.5, 0.5]), torch.tensor([1, 1])).item(), 4)
    0.8664
    ```
    """
    weights = weights.to(policy_logps.dtype).detach()
    return -(weights * policy_logps).sum() / tokens.sum().clamp(min=1).to(policy_logps.dtype)
