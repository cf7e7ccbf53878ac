# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The diffusion objective L_diff (Eq. 4), the negative ELBO of a masked / block diffusion LM: its continuous-time
MDLM form ([`mdlm_elbo_loss`], a pure function of log-probabilities) and a one-forward Monte-Carlo estimate that
calls the model ([`diffusion_elbo_loss`], the trainer's anti-drift term for diffusion models)."""

from __future__ import annotations

from typing import Literal

import torch

from ..models.layout import block_index, real_token_log_softmax

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
    Later blocks are hidden by the wrapper ([`~hf_seqtemp.models.diffusion.BlockDiffusionWrapper`]); prompt
    positions stay visible and padding absent. Blocks follow [`block_index`] and conditionals are renormalised over
    the real tokens, as in the scorers and the decoder. The sum over rows is divided by the number of completion tokens of
    the batch, like the autoregressive token NLL.

    Args:
        model ([`~hf_seqtemp.models.base.DiffusionLM`]): wrapper with `mask_token_id`; called once.
        input_ids, attention_mask, completion_mask (`torch.Tensor` of shape `(batch, length)`): the batch.
        block_size (`int`, *optional*): B of a block-diffusion model; `None` for masked diffusion (one block).
        generator (`torch.Generator`, *optional*): CPU generator for t, the masks and the blocks.
        min_time (`float`, *optional*, defaults to `1e-3`): lower end of t, in (0, 1).

    Returns:
        `torch.Tensor`: scalar, differentiable in the model's parameters.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import MaskedLMWrapper, tiny_masked_lm
    >>> model = MaskedLMWrapper(tiny_masked_lm(), mask_token_id=5)
    >>> ids = torch.tensor([[1, 2, 3, 4]])
    >>> g = torch.Generator().manual_seed(1)  # t and the masks are random: 0 when no completion position is masked
    >>> diffusion_elbo_loss(model, ids, torch.ones_like(ids), ids > 1, generator=g).item() > 0
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
    where = generator.device if generator is not None else input_ids.device  # drawn where the generator lives
    t = torch.rand(batch, generator=generator, device=where) * (1.0 - min_time) + min_time
    noise = torch.rand(batch, length, generator=generator, device=where)
    t, noise = t.to(input_ids.device), noise.to(input_ids.device)
    masked = in_block & (noise < t[:, None])
    states = torch.where(masked, torch.full_like(input_ids, model.mask_token_id), input_ids)
    logits = model(states, attention_mask).float()
    logps = real_token_log_softmax(logits, model.mask_token_id).gather(-1, input_ids[..., None]).squeeze(-1)
    logps = torch.where(masked, logps, torch.zeros_like(logps))  # a pad id equal to the mask id has log-prob -inf
    per_row = mdlm_elbo_loss(logps, masked, t, reduction="none") * num_blocks
    return per_row.sum() / completion.sum().clamp(min=1)
