# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""One up-front check that a model is a kind hf_seqtemp can score, with an error that says what to do instead."""

from __future__ import annotations

import functools

import torch

from .base import DiffusionLM
from .diffusion import is_raw_diffusion_model

SUPPORTED = (
    "hf_seqtemp supports causal LMs with a language-model head (e.g. `LlamaForCausalLM`) and masked/block "
    "diffusion models wrapped as a `DiffusionLM` (`hf_seqtemp.wrap_diffusion_model`)"
)


@functools.cache
def _causal_lm_class_names() -> frozenset[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    names = set()
    for value in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        names.update([value] if isinstance(value, str) else value)
    return frozenset(names)


def _unsupported(model, allow_diffusion: bool) -> tuple[str, str] | None:
    """`(what the model is, the fix)` when it cannot be scored as asked, else `None`."""
    name = getattr(getattr(model, "config", None), "_name_or_path", "") or "<model id or folder>"
    load_causal = f'load it with `AutoModelForCausalLM.from_pretrained("{name}")`'
    if getattr(model.config, "is_encoder_decoder", False):
        return "an encoder-decoder model", f"use a decoder-only model; {load_causal}"
    if is_raw_diffusion_model(model):
        if allow_diffusion:
            return None
        return "a masked (diffusion) language model", "score it with `MaskedDiffusionScorer` or `BlockDiffusionScorer`"
    if type(model).__name__ in _causal_lm_class_names():
        return None
    head = getattr(model, "get_output_embeddings", None)
    if callable(head) and head() is None:
        return "a model without a language-model head (its outputs have no `.logits` over the vocabulary)", (
            f"{load_causal} instead of `AutoModel` or a task class"
        )
    return None  # a custom model with an LM head: its outputs are checked where it is called


def check_model_kind(model, allow_diffusion: bool = True, argument: str = "model") -> None:
    """Raises a `TypeError` that names the fix unless `model` is a kind hf_seqtemp can score.

    Accepted: a causal LM with a language-model head (also inside a `PeftModel`), and, with `allow_diffusion`, a
    [`DiffusionLM`] or a raw masked/block diffusion model. A plain `torch.nn.Module` without a `config` is accepted
    here; whoever calls it checks that its output has `.logits`.

    Args:
        model: the model a user passed.
        allow_diffusion (`bool`, *optional*, defaults to `True`): `False` where only a causal LM works (the
            autoregressive scorer).
        argument (`str`, *optional*, defaults to `"model"`): the parameter name used in the error.

    Example:
    ```python
    >>> from transformers import LlamaModel
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> causal_lm = tiny_causal_lm()
    >>> check_model_kind(causal_lm)
    >>> check_model_kind(LlamaModel(causal_lm.config))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: `model` is a LlamaModel, a model without a language-model head ... load it with \
`AutoModelForCausalLM.from_pretrained(...)` instead of `AutoModel` or a task class.
    ```
    """
    if isinstance(model, DiffusionLM):
        if allow_diffusion:
            return
        raise TypeError(
            f"`{argument}` is a {type(model).__name__} (a diffusion model), but this needs a causal LM: score it with "
            "`MaskedDiffusionScorer` or `BlockDiffusionScorer`."
        )
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"`{argument}` must be a model (a `torch.nn.Module`, e.g. from `AutoModelForCausalLM.from_pretrained`), "
            f"got {type(model).__name__}."
        )
    base = model.get_base_model() if callable(getattr(model, "get_base_model", None)) else model  # a PeftModel
    if getattr(base, "config", None) is None:
        return
    problem = _unsupported(base, allow_diffusion)
    if problem is not None:
        what, fix = problem
        raise TypeError(f"`{argument}` is a {type(base).__name__}, {what}. {SUPPORTED}: {fix}.")
