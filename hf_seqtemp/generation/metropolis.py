# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Metropolis acceptance for single-site updates on an energy: the plain Metropolis-Hastings ratio and multiple-try
Metropolis over candidate tokens (the refinement steps of [`~hf_seqtemp.generation.glauber`])."""

from __future__ import annotations

import torch


def mh_acceptance(energies: torch.Tensor, log_q: torch.Tensor, current: torch.Tensor, proposed: torch.Tensor):
    """Metropolis-Hastings acceptance probability of replacing token `current` by `proposed` at one site.

    `min(1, exp(E(current) - E(proposed)) * q(current) / q(proposed))` for an independent site proposal `q`.

    Args:
        energies (`torch.Tensor` of shape `(rows, vocab)`): energy of each substitution at the site.
        log_q (`torch.Tensor` of shape `(rows, vocab)`): log proposal probabilities at the site.
        current (`torch.LongTensor` of shape `(rows,)`): the current token.
        proposed (`torch.LongTensor` of shape `(rows,)`): the proposed token.

    Example:
    ```python
    >>> energies, log_q = torch.tensor([[0.0, 1.0]]), torch.log(torch.tensor([[0.5, 0.5]]))
    >>> mh_acceptance(energies, log_q, torch.tensor([0]), torch.tensor([1])).tolist()  # exp(-1)
    [0.3678794503211975]
    ```
    """
    pick = lambda t, i: t.gather(1, i[:, None]).squeeze(1)
    log_ratio = pick(energies, current) - pick(energies, proposed) + pick(log_q, current) - pick(log_q, proposed)
    return log_ratio.clamp(max=0.0).exp()


def mtm_probabilities(log_w_candidates: torch.Tensor, log_w_current: torch.Tensor):
    """Selection and acceptance probabilities of an independent-proposal multiple-try Metropolis step.

    With `N` candidates `y_j ~ q` and importance weights `w(y) = pi(y) / q(y)`, candidate `j` is selected with
    probability `w(y_j) / W`, `W = sum_j w(y_j)`, and accepted with `min(1, W / (W - w(y_j) + w(x)))`, the other
    candidates serving as the reference set. For `N = 1` this is Metropolis-Hastings.

    Args:
        log_w_candidates (`torch.Tensor` of shape `(rows, N)`): `log w(y_j)`.
        log_w_current (`torch.Tensor` of shape `(rows,)`): `log w(x)` of the current sequence.

    Returns:
        A tuple `(select, accept)` of tensors of shape `(rows, N)`.

    Example:
    ```python
    >>> select, accept = mtm_probabilities(torch.log(torch.tensor([[1.0, 3.0]])), torch.log(torch.tensor([2.0])))
    >>> select.tolist(), [round(a, 6) for a in accept[0].tolist()]
    ([[0.25, 0.75]], [0.8, 1.0])
    ```
    """
    log_total = log_w_candidates.logsumexp(dim=1, keepdim=True)
    select = (log_w_candidates - log_total).exp()
    others = torch.log1p(-select.clamp(max=1.0 - 1e-12)) + log_total  # log(W - w(y_j))
    log_reverse = torch.logaddexp(others, log_w_current[:, None].expand_as(others))
    accept = (log_total - log_reverse).clamp(max=0.0).exp()
    # no candidate has target mass (every one banned by a processor, W = 0): any is selected, none accepted
    feasible = torch.isfinite(log_total)
    select = torch.where(feasible, select, 1.0 / log_w_candidates.shape[1])
    return select, torch.where(feasible, accept, 0.0)
