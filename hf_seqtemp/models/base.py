# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The interface every diffusion-model wrapper implements ("adapter" always means a PEFT adapter)."""

from __future__ import annotations

from typing import Literal

import torch

ModelFamily = Literal["causal_lm", "masked_diffusion", "block_diffusion"]


class DiffusionLM(torch.nn.Module):
    """Wraps a masked/block diffusion LM behind one call: token ids with mask tokens in, logits for every position out.

    Subclasses set `mask_token_id`, `family` and implement [`~DiffusionLM.forward`]. Everything in hf_seqtemp that
    scores or samples a diffusion model (scorers, trainer, decoders) talks to the model only through this class.

    Attributes:
        model (`torch.nn.Module`): the wrapped model (a PEFT model is fine: adapters stay switchable).
        mask_token_id (`int`): id of the mask token.
        family (`str`): `"masked_diffusion"` or `"block_diffusion"`.
        block_size (`int` or `None`): block length of a block-diffusion model, `None` otherwise.
    """

    family: ModelFamily = "masked_diffusion"

    def __init__(self, model: torch.nn.Module, mask_token_id: int, block_size: int | None = None):
        super().__init__()
        self.model = model
        self.mask_token_id = int(mask_token_id)
        self.block_size = block_size

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Returns logits of shape `(batch, length, vocab)`: row `i` is the model's distribution for position `i`."""
        raise NotImplementedError


def wrapped_model(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a [`DiffusionLM`] wrapper, or `model` itself: the module that holds the weights, the config
    and any PEFT adapter, and that `save_pretrained` / `from_pretrained` handle.

    Example:
    ```python
    >>> linear = torch.nn.Linear(2, 2)
    >>> wrapped_model(DiffusionLM(linear, mask_token_id=0)) is linear is wrapped_model(linear)
    True
    ```
    """
    return model.model if isinstance(model, DiffusionLM) else model
