# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The diffusion objective L_diff (Eq. 4) as a one-forward Monte-Carlo estimate: the anti-drift term for diffusion."""

from __future__ import annotations

import torch

from ..models.layout import block_index, real_token_log_softmax
from .diffusion import mdlm_elbo_loss


def _pick_blocks(block: torch.Tensor, completion: torch.Tensor, generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One block per row, uniformly among the blocks holding completion positions; returns it and their count."""
    num_blocks = int(block.max().item()) + 1 if block.numel() else 1
    counts = torch.zeros(block.shape[0], max(num_blocks, 1), device=block.device)
    counts = counts.scatter_add(1, block.clamp(min=0), completion.float())
    has = counts > 0
    weights = has.float()
    weights[~has.any(dim=1), 0] = 1.0  # a row with nothing to score: any block, it contributes 0
    chosen = torch.multinomial(weights.cpu(), 1, generator=generator).to(block.device).squeeze(1)
    return chosen, has.sum(dim=1).clamp(min=1)


def diffusion_elbo_loss(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_mask: torch.Tensor,
    block_size: int | None = None,
    generator: torch.Generator | None = None,
    min_time: float = 1e-3,
) -> torch.Tensor:
    """Negative ELBO of a masked / block diffusion LM (L_diff, Eq. 4), one model call per batch, token-mean.

    For a masked-diffusion model (one block): draw t ~ U(min_time, 1) per row, mask each completion position
    independently with probability t, and score `(1/t) Σ_{masked i} −log p(x_i | x_t)` ([`mdlm_elbo_loss`]). Its
    expectation over t and the masks is the order ELBO `E_π Σ_t −log p(x_{π_t} | x_{π_<t})` of Eq. 4 (a set S of
    k masked positions has weight `∫ t^{k-1} (1-t)^{m-k} dt = (k-1)!(m-k)!/m!`, the probability that a uniform
    order reaches S and reveals a given i ∈ S next), up to the O(`min_time`) truncation that keeps 1/t bounded.

    For a block-diffusion model the ELBO is the sum over blocks of that term with earlier blocks clean: each row
    draws one of its n blocks holding completion positions uniformly and the term is multiplied by n (unbiased).
    Later blocks are hidden by the adapter ([`~hf_seqtemp.models.diffusion.BlockDiffusionAdapter`]); prompt
    positions stay visible and padding absent. Blocks follow [`block_index`] and conditionals are renormalised over
    the real tokens, as in the scorers and the decoder. The sum over rows is divided by the number of completion tokens of
    the batch, like the autoregressive token NLL.

    Args:
        model ([`~hf_seqtemp.models.base.DiffusionLM`]): adapter with `mask_token_id`; called once.
        input_ids, attention_mask, completion_mask (`torch.Tensor` of shape `(batch, length)`): the batch.
        block_size (`int`, *optional*): B of a block-diffusion model; `None` for masked diffusion (one block).
        generator (`torch.Generator`, *optional*): CPU generator for t, the masks and the blocks.
        min_time (`float`, *optional*, defaults to `1e-3`): lower end of t, in (0, 1).

    Returns:
        `torch.Tensor`: scalar, differentiable in the model's parameters.

    Example:
    ```python
    >>> import torch
    >>> from transformers import BertConfig, BertForMaskedLM
    >>> from hf_seqtemp.models.diffusion import MaskedLMAdapter
    >>> model = MaskedLMAdapter(BertForMaskedLM(BertConfig(vocab_size=6, hidden_size=16, num_hidden_layers=1,
    ...                         num_attention_heads=2, intermediate_size=32)), mask_token_id=5)
    >>> ids = torch.tensor([[1, 2, 3, 4]])
    >>> diffusion_elbo_loss(model, ids, torch.ones_like(ids), ids > 1).item() > 0
    True
    ```
    """
    if not (isinstance(min_time, float) and 0.0 < min_time < 1.0):
        raise ValueError(f"`min_time` must be a float in (0, 1), got {min_time!r}.")
    completion = completion_mask.bool() & attention_mask.bool()
    block = block_index(attention_mask, block_size)
    chosen, num_blocks = _pick_blocks(block, completion, generator)
    in_block = completion & (block == chosen[:, None])
    batch, length = input_ids.shape
    t = torch.rand(batch, generator=generator) * (1.0 - min_time) + min_time
    noise = torch.rand(batch, length, generator=generator)
    t, noise = t.to(input_ids.device), noise.to(input_ids.device)
    masked = in_block & (noise < t[:, None])
    states = torch.where(masked, torch.full_like(input_ids, model.mask_token_id), input_ids)
    logits = model(states, attention_mask).float()
    logps = real_token_log_softmax(logits, model.mask_token_id).gather(-1, input_ids[..., None]).squeeze(-1)
    logps = torch.where(masked, logps, torch.zeros_like(logps))  # a pad id equal to the mask id has log-prob -inf
    per_row = mdlm_elbo_loss(logps, masked, t, reduction="none") * num_blocks
    return per_row.sum() / completion.sum().clamp(min=1)
