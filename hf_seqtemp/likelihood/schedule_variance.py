# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Schedule variance `Var_π log p(x; π)` under the uniform unmasking schedule (Sec. 6, Tables 4-5 "Variance")."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..checks import check_int
from .base import SequenceScorer
from .block_diffusion import MAX_EXACT_BLOCK_SIZE, _levels, _transitions, block_logp_table
from .masked_diffusion import MaskedDiffusionScorer, check_diffusion_inputs


def moment_dp(table: torch.Tensor, scorable: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance of a block's `log p(x_block; π)` over a uniform order within the block, in float64.

    With `A(S)` and `Q(S)` the first two moments of the log-probability still to come from revealed set S, and the
    next slot uniform over the n = |M \\ S| hidden ones: `A(S) = mean_s [l + A(S ∪ s)]`,
    `Q(S) = mean_s [l² + 2 l A(S ∪ s) + Q(S ∪ s)]` with `l = table[S, s]`, `A(M) = Q(M) = 0`.

    Args:
        table (`torch.Tensor` of shape `(R, 2^B, B)`), scorable (`torch.LongTensor` of shape `(R,)`): as for
            [`~hf_seqtemp.likelihood.block_diffusion.log_space_dp`].

    Returns:
        A tuple `(mean, variance)` of float64 tensors of shape `(R,)`.
    """
    table = table.detach().double()
    a = torch.zeros(table.shape[0], 1 << block_size, dtype=torch.float64, device=table.device)
    q = torch.zeros_like(a)
    for subsets in _levels(block_size, table.device):
        successors, legal = _transitions(scorable, subsets, block_size)
        count = legal.sum(dim=-1).clamp(min=1)
        lp = torch.where(legal, table[:, subsets, :], 0.0)
        a_next, q_next = a[:, successors], q[:, successors]
        a_level = torch.where(legal, lp + a_next, 0.0).sum(-1) / count
        q_level = torch.where(legal, lp * lp + 2 * lp * a_next + q_next, 0.0).sum(-1) / count
        a, q = a.index_copy(1, subsets, a_level), q.index_copy(1, subsets, q_level)
    return a[:, 0], q[:, 0] - a[:, 0] ** 2


def order_logp_variance(
    order_logps: torch.Tensor | Sequence[Sequence[float]], unbiased: bool = True
) -> torch.DoubleTensor:
    """Per-sequence variance of given per-order log-likelihoods `log p(x; π_j)`, in float64.

    The aggregation step of the sampled (`method="mc"`) branch of [`schedule_variance`], usable on values computed
    elsewhere (e.g. [`~hf_seqtemp.likelihood.MaskedDiffusionScorer.order_logps`] on several machines). Rows may hold
    different numbers of orders when given as a list of lists.

    Args:
        order_logps (`torch.Tensor` of shape `(batch, k)` or a list of per-sequence lists of `float`): the values.
        unbiased (`bool`, *optional*, defaults to `True`): divisor `k - 1` (needs `k >= 2`); `False` divides by `k`.

    Returns:
        `torch.DoubleTensor` of shape `(batch,)`.

    Example:
    ```python
    >>> order_logp_variance([[-1.0, -3.0], [-2.0, -2.0, -2.0]]).tolist()
    [2.0, 0.0]
    ```
    """
    rows = list(order_logps) if not isinstance(order_logps, torch.Tensor) or order_logps.dim() == 2 else None
    if rows is None or not rows:
        shape = getattr(order_logps, "shape", None)
        raise ValueError(f"`order_logps` must be a non-empty (batch, k) tensor or list of lists, got shape {shape}.")
    minimum = 2 if unbiased else 1
    variances = []
    for index, row in enumerate(rows):
        values = torch.as_tensor(row, dtype=torch.float64, device="cpu").reshape(-1)
        if values.numel() < minimum:
            raise ValueError(
                f"`order_logps[{index}]` holds {values.numel()} value(s); the {'unbiased ' if unbiased else ''}"
                f"variance needs at least {minimum}. Score more orders per sequence or pass `unbiased=False`."
            )
        variances.append(values.var(unbiased=unbiased))
    return torch.stack(variances)


def schedule_variance(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    completion_mask: torch.Tensor | None = None,
    block_size: int | None = None,
    method: str = "exact",
    num_orders: int = 64,
    seed: int | None = None,
    token_temperature: float = 1.0,
    max_batch: int = 64,
) -> torch.Tensor:
    """`Var_π log p(x; π)` per sequence, π uniform over block-respecting orders (or over all orders).

    With `block_size` and `method="exact"` the variance is exact: the blocks' orders are independent and a block's
    log-probability depends only on its own order (earlier blocks are fully revealed), so the variance is the sum over
    blocks of the per-block variances from [`moment_dp`] (float64, same model calls as the exact likelihood DP).
    Otherwise (`block_size=None`: unrestricted masked diffusion, or `method="mc"`) `num_orders` uniform orders are
    sampled and the unbiased sample variance (divisor k - 1) of `log p(x; π_j)` is returned.

    Args:
        model (`DiffusionLM`): the wrapped model. input_ids, attention_mask, completion_mask: as for a scorer.
        block_size (`int`, *optional*): B for block diffusion; `None` for unrestricted masked diffusion.
        method (`str`, *optional*, defaults to `"exact"`): `"exact"` (needs `block_size` <= 16) or `"mc"`.
        num_orders (`int`, *optional*, defaults to `64`): k >= 2 for sampled variances.
        seed (`int`, *optional*): seeds the order sampler.
        token_temperature (`float`, *optional*, defaults to `1.0`): logits / T at every step.
        max_batch (`int`, *optional*, defaults to `64`): partial states per forward call.

    Returns:
        `torch.DoubleTensor` of shape `(batch,)`.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import BlockDiffusionWrapper, tiny_masked_lm
    >>> wrapper = BlockDiffusionWrapper(tiny_masked_lm(), mask_token_id=5, block_size=2)
    >>> schedule_variance(wrapper, torch.tensor([[1, 2, 3, 4]]), block_size=2).dtype
    torch.float64
    ```
    """
    if method not in ("exact", "mc"):
        raise ValueError(f"`method` must be 'exact' or 'mc', got {method!r}.")
    if block_size is not None:
        check_int(block_size, "block_size")
    if method == "exact" and block_size is not None and block_size > MAX_EXACT_BLOCK_SIZE:
        raise ValueError(
            f"`block_size` {block_size} is above {MAX_EXACT_BLOCK_SIZE}, the largest the exact DP accepts. Use "
            '`method="mc"` to estimate the variance from sampled orders.'
        )
    if method == "exact" and block_size is not None:
        checker = SequenceScorer(token_temperature)
        input_ids, attention_mask, completion_mask = checker._check_inputs(input_ids, attention_mask, completion_mask)
        check_diffusion_inputs(model, input_ids, attention_mask, completion_mask)
        with torch.no_grad():
            table, scorable = block_logp_table(
                model, input_ids, attention_mask, completion_mask, block_size, checker.token_temperature, max_batch
            )
        _, variance = moment_dp(table, scorable.view(-1), block_size)
        return variance.view(scorable.shape).sum(dim=1)
    check_int(num_orders, "num_orders", 2)
    sampler = MaskedDiffusionScorer(num_orders, "elbo", seed, token_temperature, max_batch)
    sampler._block_size = block_size
    with torch.no_grad():
        logps = sampler.order_logps(model, input_ids, attention_mask, completion_mask)
    return order_logp_variance(logps)
