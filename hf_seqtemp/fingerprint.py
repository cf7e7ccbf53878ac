# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Which base p an adapter was tempered against: a fingerprint of the base weights, recorded when the adapter is
saved and checked when it is loaded.

The fingerprint has two parts:

- `weights_sha256`: SHA-256 over the base model's weights, each cast to float32, in sorted parameter-name order
  (adapter weights excluded: LoRA layers count as their base layer, `modules_to_save` copies as the original
  module). It decides *whether* the base is the same. The check is exact on purpose: the same weights in another
  dtype (bfloat16, a re-quantised copy, the Hub checkpoint instead of a dequantised GGUF) are another p, and the
  warning says so with the size of the difference.
- `canary_logps`: the base model's log-probabilities of a fixed 16-token canary sequence (causal LMs only). When the
  hashes differ they say *how much* p differs: the warning reports max |Δ log p| over the canary tokens, in nats.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import warnings
from typing import Any

import torch

METHOD = "sha256-float32+canary-v1"
CANARY_LENGTH = 16
_LCG = (1664525, 1013904223, 2**32)  # a fixed linear congruential generator: the canary needs no RNG library


class BaseModelMismatchWarning(UserWarning):
    """The base model an adapter is loaded on is not the one it was tempered against."""


def canary_token_ids(vocab_size: int, length: int = CANARY_LENGTH) -> list[int]:
    """A fixed pseudo-random token sequence over `vocab_size` tokens (the same on every machine).

    Example:
    ```python
    >>> canary_token_ids(4, length=6)
    [0, 2, 2, 2, 1, 1]
    ```
    """
    a, c, m = _LCG
    state, ids = 12345, []
    for _ in range(length):
        state = (a * state + c) % m
        ids.append((state >> 8) % vocab_size)
    return ids


def _base_tensors(module: torch.nn.Module, prefix: str = ""):
    """`(name, tensor)` of every persistent parameter and buffer of the base model, named as in the model without
    PEFT: a tuner layer is replaced by its base layer, an auxiliary wrapper (`modules_to_save`, trainable tokens) by
    its original module."""
    from peft.tuners.tuners_utils import BaseTunerLayer
    from peft.utils.other import AuxiliaryTrainingWrapper

    if isinstance(module, BaseTunerLayer):
        yield from _base_tensors(module.get_base_layer(), prefix)
        return
    if isinstance(module, AuxiliaryTrainingWrapper):
        yield from _base_tensors(module.original_module, prefix)
        return
    yield from ((prefix + name, value) for name, value in module.named_parameters(recurse=False))
    for name, value in module.named_buffers(recurse=False):
        if name not in module._non_persistent_buffers_set:
            yield prefix + name, value
    for name, child in module.named_children():
        yield from _base_tensors(child, f"{prefix}{name}.")


def _inner(model):
    """The transformers model holding the base weights: inside a `DiffusionLM` wrapper and a `PeftModel`."""
    from .models.base import wrapped_model

    model = wrapped_model(model)
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if callable(get_base_model) else model


def weights_sha256(model: torch.nn.Module) -> tuple[str, int]:
    """SHA-256 of the base weights of `model` (float32, sorted names; see the module docstring) and their count."""
    hasher, count = hashlib.sha256(), 0
    for name, value in sorted(_base_tensors(_inner(model)), key=lambda item: item[0]):
        value = value.detach()
        value = value.to("cpu", torch.float32) if value.is_floating_point() else value.cpu()
        hasher.update(f"{name}:{tuple(value.shape)};".encode())
        hasher.update(value.contiguous().view(torch.uint8).numpy().tobytes() if value.numel() else b"")
        count += value.numel()
    return hasher.hexdigest(), count


def _adapters_off(model):
    from .generation.adapters import active_adapter
    from .peft_compat import is_peft_model

    peft = is_peft_model(model) or bool(getattr(model, "_hf_peft_config_loaded", False))
    return active_adapter(model, None) if peft else contextlib.nullcontext()


@torch.no_grad()
def canary_logps(model, token_ids: list[int]) -> list[float]:
    """log p(token_t | tokens_<t) of the base model (adapters off) for t = 1 .. len(token_ids) − 1, in float64."""
    device = next(model.parameters()).device
    ids = torch.tensor([token_ids], device=device)
    training = model.training
    model.eval()
    try:
        with _adapters_off(model):
            logits = model(input_ids=ids).logits[0, :-1].double()
    finally:
        model.train(training)
    return logits.log_softmax(-1).gather(-1, ids[0, 1:, None]).squeeze(-1).tolist()


def _vocab_size(model) -> int | None:
    embeddings = getattr(_inner(model), "get_input_embeddings", lambda: None)()
    return None if embeddings is None else int(embeddings.weight.shape[0])


def base_fingerprint(model, model_family: str = "causal_lm") -> dict[str, Any]:
    """The fingerprint of `model`'s base weights (adapters excluded) recorded in `seqtemp_config.json`.

    Args:
        model: the base model, or a `PeftModel` / transformers model with adapters (their weights are left out and
            they are switched off for the canary).
        model_family (`str`, *optional*, defaults to `"causal_lm"`): the canary log-probabilities are taken for
            causal LMs only; other families record the weight hash alone.

    Returns:
        `dict` with `method`, `weights_sha256`, `num_parameters`, `dtype`, `canary_token_ids` and `canary_logps`.

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> fingerprint = base_fingerprint(tiny_causal_lm())
    >>> len(fingerprint["weights_sha256"]), len(fingerprint["canary_logps"])
    (64, 15)
    ```
    """
    digest, count = weights_sha256(model)
    dtype = next(iter(_inner(model).parameters())).dtype
    record = {"method": METHOD, "weights_sha256": digest, "num_parameters": count, "dtype": str(dtype)}
    vocab = _vocab_size(model)
    ids = logps = None
    if model_family == "causal_lm" and vocab:
        positions = getattr(getattr(_inner(model), "config", None), "max_position_embeddings", None)
        ids = canary_token_ids(vocab, min(CANARY_LENGTH, positions or CANARY_LENGTH))
        logps = canary_logps(model, ids)
    return {**record, "canary_token_ids": ids, "canary_logps": logps}


def base_record(model, model_family: str = "causal_lm") -> tuple[dict[str, Any], str | None]:
    """`(base_model_fingerprint, base_model_source)` for `seqtemp_config.json`: the fingerprint of `model`'s base
    weights, and what they are when the model says (the embedded model records that it is dequantised from GGUF)."""
    from .models.default import BASE_SOURCE_ATTRIBUTE

    return base_fingerprint(model, model_family), getattr(_inner(model), BASE_SOURCE_ATTRIBUTE, None)


def fingerprint_difference(recorded: dict[str, Any], model, model_family: str = "causal_lm") -> str | None:
    """`None` when `model`'s base weights hash as `recorded`; else a sentence giving the size of the difference."""
    digest, _ = weights_sha256(model)
    if digest == recorded["weights_sha256"]:
        return None
    dtype = str(next(iter(_inner(model).parameters())).dtype)
    parts = [f"weights SHA-256 {digest[:12]}… here, {recorded['weights_sha256'][:12]}… recorded"]
    if recorded.get("dtype") and recorded["dtype"] != dtype:
        parts.append(f"dtype {dtype} here, {recorded['dtype']} recorded")
    ids, vocab = recorded.get("canary_token_ids"), _vocab_size(model)
    if model_family == "causal_lm" and ids and vocab and max(ids) < vocab:
        here = canary_logps(model, ids)
        deltas = [abs(a - b) for a, b in zip(here, recorded["canary_logps"])]
        size = max(deltas) if all(math.isfinite(d) for d in deltas) else math.inf
        parts.append(f"max |Δ log p| = {size:.3g} nats over the {len(ids)}-token canary sequence")
    elif ids:
        parts.append("the canary sequence cannot be scored here (another vocabulary or model family)")
    return "; ".join(parts)


def warn_if_base_differs(config, model, source: str) -> str | None:
    """Warns ([`BaseModelMismatchWarning`]) when `model` is not the base recorded in `config` (a
    [`SequenceTemperatureConfig`]); silent on the same base or when nothing was recorded. Returns the difference."""
    recorded = getattr(config, "base_model_fingerprint", None)
    if not recorded:
        return None
    difference = fingerprint_difference(recorded, model, config.model_family)
    if difference is not None:
        named = config.base_model_source or config.base_model_id or "the recorded base"
        warnings.warn(
            f"{source} was tempered against other base weights than the model it is loaded on ({difference}): "
            f"q ∝ p^(1/T) and the figures of its card hold for {named}, not for this base. Load that base, or "
            "retrain the adapter on this one.",
            BaseModelMismatchWarning,
            stacklevel=3,
        )
    return difference
