# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact sequence likelihoods of block-diffusion LMs by the subset dynamic program of Prop. 4.6 / Algorithm 1."""

from __future__ import annotations

import math

import torch

from ..checks import check_int
from ..models.layout import block_index, real_positions, real_token_log_softmax
from .masked_diffusion import MaskedDiffusionScorer, check_diffusion_inputs

MAX_EXACT_BLOCK_SIZE = 16
"""Largest block size the exact DP accepts: it runs 2^B - 1 partial states per block (65535 at B = 16) and keeps a
`(blocks, 2^B, B)` table of conditionals; beyond that use `method="mc"`."""


def block_subsets(scorable: int) -> list[int]:
    """Every revealed subset S ⊊ M of a block, as bitmasks over the block's slots (bit s = slot s), M excluded.

    Example:
    ```python
    >>> block_subsets(0b101)
    [4, 1, 0]
    ```
    """
    subsets, s = [], scorable
    while s:
        s = (s - 1) & scorable
        subsets.append(s)
    return subsets


def block_layout(attention_mask: torch.Tensor, completion_mask: torch.Tensor, block_size: int):
    """Places every real token in a (block, slot): block = its index among real tokens // B, slot = index % B.

    Returns:
        A tuple `(pos_block, pos_slot, scorable)`: `(batch, length)` block and slot of each position (-1 for padding),
        and `(batch, num_blocks)` the bitmask M of completion slots in each block. A position that is padding or
        prompt is simply absent from M, so a block with m completion positions has m! orders.
    """
    pos = real_positions(attention_mask)
    pos_block = block_index(attention_mask, block_size)
    pos_slot = torch.where(pos >= 0, pos % block_size, pos)
    num_blocks = max(int(pos_block.max().item()) + 1, 1)
    bits = torch.where(completion_mask.bool(), 1 << pos_slot.clamp(min=0), torch.zeros_like(pos_slot))
    scorable = torch.zeros(attention_mask.shape[0], num_blocks, dtype=torch.long, device=attention_mask.device)
    scorable = scorable.scatter_add(1, pos_block.clamp(min=0), bits)
    return pos_block, pos_slot, scorable


def block_states(scorable: torch.Tensor) -> torch.Tensor:
    """All partial states the DP needs, one row `(batch row, block, revealed subset S)` per state, `S ⊊ M`."""
    states = [
        (b, j, s) for b, row in enumerate(scorable.tolist()) for j, bits in enumerate(row) for s in block_subsets(bits)
    ]
    return torch.tensor(states, dtype=torch.long, device=scorable.device).view(-1, 3)


def block_logp_table(model, input_ids, attention_mask, completion_mask, block_size, token_temperature, max_batch):
    """Runs every partial state through the model; returns the DP's table of conditionals and the layout.

    Returns:
        A tuple `(table, scorable)`: `table` of shape `(batch * num_blocks, 2^B, B)` with
        `table[b * num_blocks + j, S, s] = log p(x_slot s | earlier blocks, block j's prompt tokens and slots S)` for
        every `S ⊊ M` and completion slot `s ∉ S` (zero elsewhere, never read); `scorable` as in [`block_layout`].
    """
    pos_block, pos_slot, scorable = block_layout(attention_mask, completion_mask, block_size)
    batch, num_blocks = scorable.shape
    states = block_states(scorable)
    slot_index = torch.zeros(batch, num_blocks, block_size, dtype=torch.long, device=input_ids.device)
    real = pos_block >= 0
    rows = torch.arange(batch, device=input_ids.device)[:, None].expand_as(pos_block)
    slot_index[rows[real], pos_block[real], pos_slot[real]] = torch.nonzero(real, as_tuple=True)[1]
    values = []
    for start in range(0, states.shape[0], max_batch):
        b, j, s = states[start : start + max_batch].unbind(dim=1)
        blk, slot = pos_block[b], pos_slot[b]
        hidden = (blk > j[:, None]) | ((blk == j[:, None]) & (((s[:, None] >> slot.clamp(min=0)) & 1) == 0))
        ids = input_ids[b]
        inputs = torch.where(completion_mask[b] & hidden, torch.full_like(ids, model.mask_token_id), ids)
        logits = model(inputs, attention_mask[b])
        where = slot_index[b, j]  # (n, B)
        slot_logits = logits.gather(1, where[..., None].expand(-1, -1, logits.shape[-1])).float() / token_temperature
        slot_logps = real_token_log_softmax(slot_logits, model.mask_token_id)
        values.append(slot_logps.gather(-1, ids.gather(1, where)[..., None]).squeeze(-1))
    table = torch.zeros(batch * num_blocks * (1 << block_size), block_size, device=input_ids.device)
    if values:
        flat = (states[:, 0] * num_blocks + states[:, 1]) * (1 << block_size) + states[:, 2]
        table = table.index_copy(0, flat, torch.cat(values))
    return table.view(batch * num_blocks, 1 << block_size, block_size), scorable


def _transitions(scorable: torch.Tensor, subsets: torch.Tensor, block_size: int):
    """For subsets S (one popcount level), the successors S | {s} and which (block, S, s) moves are legal."""
    slots = torch.arange(block_size, device=scorable.device)
    successors = subsets[:, None] | (1 << slots)  # (n, B)
    in_m = ((scorable[:, None, None] >> slots) & 1) == 1  # (R, 1, B)
    not_in_s = ((subsets[:, None] >> slots) & 1) == 0  # (n, B)
    s_within_m = (subsets[None, :] & ~scorable[:, None]) == 0  # (R, n)
    return successors, in_m & not_in_s[None] & s_within_m[..., None]


def _levels(block_size: int, device) -> list[torch.Tensor]:
    masks = torch.arange(1 << block_size, device=device)
    counts = sum((masks >> i) & 1 for i in range(block_size)) if block_size else torch.zeros_like(masks)
    return [masks[counts == c] for c in range(block_size - 1, -1, -1)]


def log_space_dp(table: torch.Tensor, scorable: torch.Tensor, block_size: int) -> torch.Tensor:
    """Eq. 12 in log space: `log p(x_block | x_<block)` for each (row, block) under a uniform order within the block.

    `g(S) = logsumexp_{s ∈ M \\ S} [table[S, s] + g(S ∪ {s})]`, `g(M) = 0`, summed over all m! orders, then
    normalised by `-log m!`. Illegal moves never enter a logsumexp (a state with no legal move keeps a finite dummy
    input that `torch.where` discards), so gradients stay finite.

    Args:
        table (`torch.Tensor` of shape `(R, 2^B, B)`), scorable (`torch.LongTensor` of shape `(R,)`): from
            [`block_logp_table`], flattened over (row, block).

    Returns:
        `torch.FloatTensor` of shape `(R,)`.
    """
    masks = torch.arange(1 << block_size, device=table.device)
    g = torch.where(masks[None, :] == scorable[:, None], 0.0, -math.inf).to(table.dtype)
    for subsets in _levels(block_size, table.device):
        successors, legal = _transitions(scorable, subsets, block_size)
        terms = table[:, subsets, :] + g[:, successors]  # (R, n, B)
        has_move = legal.any(dim=-1)
        safe = torch.where(legal, terms, -math.inf)
        safe = torch.where(has_move[..., None], safe, torch.zeros_like(safe))
        level = torch.where(has_move, torch.logsumexp(safe, dim=-1), -math.inf)
        level = torch.where(subsets[None, :] == scorable[:, None], 0.0, level)
        g = g.index_copy(1, subsets, level)
    m = sum((scorable >> i) & 1 for i in range(block_size)) if block_size else torch.zeros_like(scorable)
    return g[:, 0] - torch.lgamma(m.to(table.dtype) + 1)


class BlockDiffusionScorer(MaskedDiffusionScorer):
    """[`SequenceScorer`] that computes `log p(x)` of a block-diffusion LM, exactly (Prop. 4.6) or by Eq. 23.

    Blocks are runs of `block_size` real tokens counted from each row's first real token; they are unmasked one after
    the other and, within a block, in a uniformly random order of its completion positions (Cor. 4.4:
    `Pr(π) = 1 / Π_j m_j!`). Prompt positions are visible from the start and padding is absent, so a block with m
    completion positions has m! orders; a completion shorter than a block is just such a block (no error). Every
    conditional is renormalised over the real tokens ([`real_token_log_softmax`]): the mask token is never sampled,
    so `log p(x)` is the log-probability of what `diffusion_generate` samples with the same blocks ([`block_index`]).

    With `method="exact"` the dynamic program of Algorithm 1 marginalises over revealed subsets: one model call per
    (block, revealed subset), all stacked `max_batch` at a time, `O(L 2^B)` states, then a log-space DP
    ([`log_space_dp`]). It is differentiable and usable as a training loss. With `method="mc"` it is Eq. 23
    restricted to block-respecting orders: the [`MaskedDiffusionScorer`] estimate, whose options this scorer takes.

    Args:
        block_size (`int`): B. The exact method accepts B <= `MAX_EXACT_BLOCK_SIZE` (16).
        method (`str`, *optional*, defaults to `"exact"`): `"exact"` or `"mc"`.
        options: the options of [`MaskedDiffusionScorer`]: `token_temperature` and `max_batch` for both methods,
            `num_orders`, `estimator` and `seed` for `method="mc"`.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import BlockDiffusionWrapper, tiny_masked_lm
    >>> wrapper = BlockDiffusionWrapper(tiny_masked_lm(), mask_token_id=5, block_size=2)
    >>> BlockDiffusionScorer(block_size=2)(wrapper, torch.tensor([[1, 2, 3, 4]])).shape
    torch.Size([1])
    ```
    """

    def __init__(self, block_size: int, method: str = "exact", **options):
        super().__init__(**options)
        self.block_size = check_int(block_size, "block_size")
        if method not in ("exact", "mc"):
            raise ValueError(f"`method` must be 'exact' or 'mc', got {method!r}.")
        if method == "exact" and block_size > MAX_EXACT_BLOCK_SIZE:
            raise ValueError(
                f"`block_size` {block_size} is above {MAX_EXACT_BLOCK_SIZE}, the largest the exact DP accepts"
                f' (it needs 2^B - 1 model calls per block). Use `method="mc"` to estimate with sampled orders.'
            )
        self.method = method
        self._block_size = self.block_size  # the k-order estimate samples block-respecting orders

    @property
    def mc(self) -> MaskedDiffusionScorer:
        """The k-order estimator of `method="mc"`: this scorer itself, with block-respecting orders."""
        return self

    def _check_model(self, model) -> None:
        model_block = getattr(model, "block_size", None)
        if model_block is not None and model_block != self.block_size:
            raise ValueError(
                f"`block_size` is {self.block_size} but the model's wrapper uses block_size={model_block}; score with "
                f"`BlockDiffusionScorer(block_size={model_block})`."
            )

    def block_logps(self, model, input_ids, attention_mask=None, completion_mask=None) -> torch.Tensor:
        """Exact `log p(x_block | x_<block)` per row and block, shape `(batch, num_blocks)`."""
        input_ids, attention_mask, completion_mask = self._check_inputs(input_ids, attention_mask, completion_mask)
        check_diffusion_inputs(model, input_ids, attention_mask, completion_mask)
        self._check_model(model)
        table, scorable = block_logp_table(
            model, input_ids, attention_mask, completion_mask, self.block_size, self.token_temperature, self.max_batch
        )
        return log_space_dp(table, scorable.view(-1), self.block_size).view(scorable.shape)

    def score(self, model, input_ids, attention_mask, completion_mask):
        if self.method == "mc":
            self._check_model(model)
            return super().score(model, input_ids, attention_mask, completion_mask)
        return self.block_logps(model, input_ids, attention_mask, completion_mask).sum(dim=1)
