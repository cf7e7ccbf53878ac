# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Tiny randomly initialised models of native transformers classes, for the docstring examples and the tests.

They run in milliseconds on a CPU; their outputs mean nothing, but every shape, mask and interface is that of a real
checkpoint of the same class, which is what an example or an exactness test needs.
"""

from __future__ import annotations

import torch


def tiny_causal_lm(vocab_size: int = 8, seed: int | None = None, hidden_size: int = 16, **config):
    """A one-layer `LlamaForCausalLM` in eval mode.

    Args:
        vocab_size (`int`, *optional*, defaults to 8): vocabulary size.
        seed (`int`, *optional*): seeds the global torch RNG before the weights are drawn (`None`: leave it alone).
        hidden_size (`int`, *optional*, defaults to 16): hidden size; the MLP is twice as wide.
        config: any other `LlamaConfig` field (e.g. `initializer_range=0.6` for conditionals far from uniform).

    Example:
    ```python
    >>> tiny_causal_lm(vocab_size=4, seed=0)(input_ids=torch.tensor([[1, 2]])).logits.shape
    torch.Size([1, 2, 4])
    ```
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    values = {"intermediate_size": 2 * hidden_size, "num_hidden_layers": 1, "num_attention_heads": 2}
    values.update(num_key_value_heads=2, **config)
    if seed is not None:
        torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab_size, hidden_size=hidden_size, **values)).eval()


def tiny_masked_lm(vocab_size: int = 6, seed: int | None = None, hidden_size: int = 16, **config):
    """A one-layer `BertForMaskedLM` in eval mode: the raw model of a masked-diffusion example (wrap it with a
    [`~hf_seqtemp.models.diffusion.MaskedLMWrapper`] and a mask token id, e.g. `vocab_size - 1`).

    Args:
        vocab_size (`int`, *optional*, defaults to 6): vocabulary size, the mask token included.
        seed (`int`, *optional*): seeds the global torch RNG before the weights are drawn (`None`: leave it alone).
        hidden_size (`int`, *optional*, defaults to 16): hidden size; the MLP is twice as wide.
        config: any other `BertConfig` field (e.g. `max_position_embeddings=16`).

    Example:
    ```python
    >>> tiny_masked_lm(seed=0)(input_ids=torch.tensor([[1, 5, 2]])).logits.shape
    torch.Size([1, 3, 6])
    ```
    """
    from transformers import BertConfig, BertForMaskedLM

    values = {"num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 2 * hidden_size, **config}
    if seed is not None:
        torch.manual_seed(seed)
    return BertForMaskedLM(BertConfig(vocab_size=vocab_size, hidden_size=hidden_size, **values)).eval()
