# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Block layout and token support of diffusion models: one definition for decoders, scorers, losses and wrappers."""

from __future__ import annotations

import math

import torch


def real_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of each token among the real tokens of its row (padding gets -1); blocks are counted on this index."""
    mask = attention_mask.bool()
    return torch.where(mask, mask.long().cumsum(dim=1) - 1, torch.full_like(mask, -1, dtype=torch.long))


def block_index(attention_mask: torch.Tensor, block_size: int | None) -> torch.Tensor:
    """The block layout shared by every diffusion scorer, loss, wrapper and decoder: the block of each position.

    Blocks are runs of `block_size` *real* tokens counted from the first real token of the row, prompt included, so
    padding never shifts a boundary and a prompt of `P` tokens leaves `P % block_size` of its tokens in the first
    block that holds completion positions. `block_size=None` is one block (masked diffusion).

    Returns:
        `torch.LongTensor` of shape `(batch, length)`: `real_position // block_size`, `-1` on padding.

    Example:
    ```python
    >>> block_index(torch.tensor([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]]), 2).tolist()
    [[-1, 0, 0, 1, 1], [0, 0, 1, 1, 2]]
    ```
    """
    pos = real_positions(attention_mask)
    if block_size is None:
        return torch.where(pos >= 0, torch.zeros_like(pos), pos)
    return torch.where(pos >= 0, pos // block_size, pos)


def real_token_log_softmax(logits: torch.Tensor, mask_token_id: int) -> torch.Tensor:
    """The token support shared by the diffusion scorers and decoders: float32 log-probabilities over real tokens.

    A diffusion decoder never writes the mask token into a sequence (it would stay masked), so the distribution it
    samples from at a position is the model's softmax renormalised over the other tokens. The scorers use the same
    renormalised conditionals, so `log p(x)` is the log-probability of what the decoder samples, whatever mass the
    model gives the mask token. A `mask_token_id` outside the logits' vocabulary removes nothing.

    Args:
        logits (`torch.Tensor` of shape `(..., vocab)`): model logits (already divided by a token temperature).
        mask_token_id (`int`): id of the mask token.

    Returns:
        `torch.FloatTensor` of shape `(..., vocab)`, `-inf` at the mask token.

    Example:
    ```python
    >>> real_token_log_softmax(torch.log(torch.tensor([0.25, 0.25, 0.5])), 2).exp().tolist()
    [0.5, 0.5, 0.0]
    ```
    """
    logits = logits.float()
    if 0 <= mask_token_id < logits.shape[-1]:
        is_mask = torch.arange(logits.shape[-1], device=logits.device) == mask_token_id
        logits = logits.masked_fill(is_mask, -math.inf)
    return logits.log_softmax(dim=-1)
