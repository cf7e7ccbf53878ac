# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Independent Metropolis-Hastings for one-step global tempering (Sec. 4.2-4.3, Alg. 1, App. D of Fang et al.).

At a decoding state `s` and position `i`, the globally tempered conditional of `p(x)^alpha` is approximated by

    pi_i(v | s) ∝ exp(alpha * l_{i,v}(s) + Δ̂_{i,v}(s)),                                            (Eq. 8)
    Δ̂_{i,v}(s) = sum_{j in R(s')} log sum_u q(x_j = u | s')^alpha,   s' = s ⊕ (i, v),

and sampled by IMH with the independence proposal `r_i = softmax(alpha * l_i(s))` (Eq. 9), whose acceptance
ratio reduces to `min(1, exp(Δ̂_y - Δ̂_x))` (Eq. 10): the local terms cancel (App. D). This module holds the pure
tensor parts; [`diffusion_generate`] builds the candidate states and evaluates them in one batched call.
"""

from __future__ import annotations

import torch


def lookahead_correction(log_probs: torch.Tensor, remaining: torch.Tensor, alpha: float) -> torch.Tensor:
    """Mean-field suffix correction `Δ̂` of Eq. 8 for a batch of candidate states.

    Args:
        log_probs (`torch.FloatTensor` of shape `(num_states, length, vocab)`):
            float32 log-marginals `log q(x_j = u | s')` of each candidate state `s'` (mask token already excluded).
        remaining (`torch.BoolTensor` of shape `(num_states, length)`):
            positions still masked after the commit, `R(s')` (restricted to the current block when decoding in
            blocks).
        alpha (`float`): exponent `1 / T`.

    Returns:
        `torch.FloatTensor` of shape `(num_states,)`: `sum_{j in R(s')} logsumexp_u(alpha * log q(u | s'))`.
        Exactly 0 when `alpha == 1` (each inner sum is a total probability) or when `R(s')` is empty.

    Example:
    ```python
    >>> log_probs = torch.log(torch.tensor([[[0.5, 0.5], [0.9, 0.1]]]))
    >>> round(lookahead_correction(log_probs, torch.tensor([[True, True]]), 2.0).item(), 4)  # log(.5)+log(.82)
    -0.8916
    ```
    """
    per_position = torch.logsumexp(alpha * log_probs.float(), dim=-1)
    return per_position.masked_fill(~remaining, 0.0).sum(dim=-1)


def imh_chain(
    log_weights: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Runs Algorithm 1's accept/reject loop given the corrections of the initial state and the proposals.

    Candidates were drawn i.i.d. from the proposal `r_i`; column 0 is the chain's initial state `x`, columns
    `1..N` the proposals `y_1..y_N` in order. Proposal `t` replaces the current state with probability
    `min(1, exp(Δ̂_{y_t} - Δ̂_x))` (Eq. 10), compared in log space.

    Args:
        log_weights (`torch.FloatTensor` of shape `(batch, 1 + num_proposals)`): `Δ̂` of every candidate.
        generator (`torch.Generator`, *optional*): source of the uniforms.

    Returns:
        A tuple `(chosen, accepted)` of `torch.LongTensor`s of shape `(batch,)`: the column index of the final
        state and the number of accepted proposals.

    Example:
    ```python
    >>> chosen, accepted = imh_chain(torch.zeros(2, 4))  # equal weights: every proposal is accepted
    >>> chosen.tolist(), accepted.tolist()
    ([3, 3], [3, 3])
    ```
    """
    batch, width = log_weights.shape
    log_weights = log_weights.float()
    log_u = torch.rand(batch, max(width - 1, 0), generator=generator, device=log_weights.device).log()
    rows = torch.arange(batch, device=log_weights.device)
    chosen = torch.zeros(batch, dtype=torch.long, device=log_weights.device)
    accepted = torch.zeros(batch, dtype=torch.long, device=log_weights.device)
    for t in range(1, width):
        log_ratio = log_weights[:, t] - log_weights[rows, chosen]
        accept = log_u[:, t - 1] < log_ratio.clamp(max=0.0)
        chosen = torch.where(accept, torch.full_like(chosen, t), chosen)
        accepted += accept.long()
    return chosen, accepted


def imh_transition_matrix(proposal: torch.Tensor, log_weights: torch.Tensor) -> torch.Tensor:
    """Exact transition kernel of one IMH step over a finite state space (used to check the sampler).

    `K[x, y] = r(y) min(1, w(y) / w(x))` for `y != x` and the rejected mass on the diagonal, with
    `w = exp(log_weights) ∝ pi / r`. The target `pi ∝ r w` is stationary: `pi K = pi`.

    Args:
        proposal (`torch.FloatTensor` of shape `(states,)`): proposal probabilities `r`.
        log_weights (`torch.FloatTensor` of shape `(states,)`): `log w`, e.g. `Δ̂` of Eq. 8.

    Returns:
        `torch.FloatTensor` of shape `(states, states)`, rows summing to 1.

    Example:
    ```python
    >>> imh_transition_matrix(torch.tensor([0.5, 0.5]), torch.zeros(2)).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    ```
    """
    proposal = proposal.double()
    log_weights = log_weights.double()
    accept = (log_weights[None, :] - log_weights[:, None]).clamp(max=0.0).exp()
    kernel = proposal[None, :] * accept
    kernel.fill_diagonal_(0.0)
    kernel += torch.diag(1.0 - kernel.sum(dim=1))
    return kernel
