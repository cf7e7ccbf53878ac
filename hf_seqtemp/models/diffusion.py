# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Concrete [`DiffusionLM`] wrappers: masked LMs, LLaDA, Dream-style shifted logits and block diffusion.

Every wrapper makes padding *absent*: before the wrapped model runs, the real tokens of each row (attention mask 1)
are moved to the front of the row, in order, and the padding to the back, where the attention mask hides it. A model
with absolute position embeddings therefore sees a left-padded row exactly as the same row without padding, and the
logits are moved back to the original positions afterwards. Logits at padding positions are meaningless.

No wrapper loads code: nothing here calls `from_pretrained`, so `trust_remote_code` never comes into play. Load a
checkpoint yourself (native transformers classes, or a local copy whose code you have read) and wrap the module.
"""

from __future__ import annotations

import inspect

import torch

from ..checks import check_int
from .base import DiffusionLM
from .layout import block_index

# Config `model_type`s whose logits at position i predict token i (no shift) and that are not *ForMaskedLM classes.
_UNSHIFTED_TYPES = {"llada", "llada_moe", "mdlm", "bd3lm", "radd"}
# Config `model_type`s whose logits at position i predict token i + 1, like an AR model (Dream).
_SHIFTED_TYPES = {"dream"}
_BLOCK_TYPES = {"bd3lm"}


def _logits_of(output) -> torch.Tensor:
    if isinstance(output, torch.Tensor):
        return output
    if getattr(output, "logits", None) is not None:
        return output.logits
    if isinstance(output, (tuple, list)):
        return output[0]
    raise TypeError(
        f"The wrapped model returned {type(output).__name__}; expected a tensor or an output with `.logits`."
    )


def _accepts(model: torch.nn.Module, name: str) -> bool:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _front_permutation(attention_mask: torch.Tensor) -> torch.Tensor | None:
    """Per-row permutation moving real tokens to the front (stable), or `None` when rows are already right-padded."""
    mask = attention_mask.bool()
    if mask.all() or not (mask[:, 1:] & ~mask[:, :-1]).any():
        return None
    return torch.sort((~mask).int(), dim=1, stable=True).indices


class _WrapperBase(DiffusionLM):
    """Shared forward: compact padding to the right, call [`~_WrapperBase._run`], restore positions, shift if asked."""

    shift_logits: bool = False

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        perm = _front_permutation(attention_mask)
        if perm is not None:
            input_ids, attention_mask = input_ids.gather(1, perm), attention_mask.gather(1, perm)
        logits = self._run(input_ids, attention_mask)
        if self.shift_logits:
            # Position i reads output i - 1; position 0 (no left neighbour) reads its own output, as Dream does.
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        if perm is not None:
            index = perm[..., None].expand(-1, -1, logits.shape[-1])
            logits = torch.empty_like(logits).scatter(1, index, logits)
        return logits

    def _run(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        kwargs = {}
        if not attention_mask.bool().all() or _accepts(self.model, "attention_mask"):
            kwargs["attention_mask"] = attention_mask
        return _logits_of(self.model(input_ids=input_ids, **kwargs))


class MaskedLMWrapper(_WrapperBase):
    """[`DiffusionLM`] for any bidirectional `AutoModelForMaskedLM` (BERT, RoBERTa, ModernBERT, ...) or MDLM-style
    model.

    The logits at position `i` are the model's distribution for token `i` given every unmasked, non-padding token.

    Args:
        model (`torch.nn.Module`): a model whose `forward(input_ids=..., attention_mask=...)` returns logits.
        mask_token_id (`int`): id of the mask token (`tokenizer.mask_token_id`).

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import MaskedLMWrapper, tiny_masked_lm
    >>> MaskedLMWrapper(tiny_masked_lm(), mask_token_id=5)(torch.tensor([[1, 5, 2]])).shape
    torch.Size([1, 3, 6])
    ```
    """

    family = "masked_diffusion"


class LLaDAWrapper(_WrapperBase):
    """[`DiffusionLM`] for LLaDA-style models: `forward(input_ids)` returns logits for every position, no shift.

    LLaDA's reference code takes `input_ids` alone; the attention mask is passed only when a row has padding, and
    then only if the model's `forward` accepts `attention_mask` (otherwise padding could not be made absent and a
    `ValueError` is raised).

    Args:
        model (`torch.nn.Module`): the LLaDA model (loaded from a local copy whose code you trust).
        mask_token_id (`int`): required; LLaDA-8B uses 126336. There is no tokenizer-level mask token to read.

    Example:
    ```python
    >>> import torch
    >>> class Toy(torch.nn.Module):
    ...     def forward(self, input_ids):
    ...         return torch.nn.functional.one_hot(input_ids, 4).float()
    >>> LLaDAWrapper(Toy(), mask_token_id=3)(torch.tensor([[0, 3]])).argmax(-1).tolist()
    [[0, 3]]
    ```
    """

    family = "masked_diffusion"

    def __init__(self, model: torch.nn.Module, mask_token_id: int):
        if mask_token_id is None:
            raise ValueError("`mask_token_id` is required for LLaDAWrapper, got None. LLaDA-8B uses 126336.")
        super().__init__(model, mask_token_id)

    def _run(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if attention_mask.bool().all():
            return _logits_of(self.model(input_ids=input_ids))
        if not _accepts(self.model, "attention_mask"):
            raise ValueError(
                "`attention_mask` has padding, but the wrapped model's forward takes no `attention_mask`, so padding "
                "would be attended. Score rows of equal length without padding."
            )
        return _logits_of(self.model(input_ids=input_ids, attention_mask=attention_mask))


class ShiftedLogitsWrapper(_WrapperBase):
    """[`DiffusionLM`] for Dream-style models, trained from an AR checkpoint, whose output `i - 1` predicts token `i`.

    The returned logits are aligned so that row `i` is the distribution of token `i`: it is read from the model's
    output at position `i - 1` (the previous *real* token, padding being compacted away first). Position 0 has no
    left neighbour; it reads the model's own output at position 0, the convention of Dream's reference sampler. That
    row is not a trained prediction, so the scorers refuse to score the first real token of a row under this wrapper
    (it is a prompt/BOS token in practice).

    Args:
        model (`torch.nn.Module`): a model whose `forward(input_ids=..., attention_mask=...)` returns logits.
        mask_token_id (`int`): id of the mask token (Dream-7B uses 151666).

    Example:
    ```python
    >>> import torch
    >>> class Toy(torch.nn.Module):
    ...     def forward(self, input_ids, attention_mask=None):
    ...         return torch.nn.functional.one_hot(input_ids, 4).float()
    >>> ShiftedLogitsWrapper(Toy(), mask_token_id=3)(torch.tensor([[0, 1, 2]])).argmax(-1).tolist()
    [[0, 0, 1]]
    ```
    """

    family = "masked_diffusion"
    shift_logits = True


class BlockDiffusionWrapper(_WrapperBase):
    """[`DiffusionLM`] that runs a masked LM as a block-diffusion model with block size `block_size`.

    Blocks are consecutive runs of `block_size` *real* tokens counted from the first real token of the row (so padding
    never shifts block boundaries). The *current block* of a row is the block of its first mask token; every block
    after it is made invisible by zeroing its attention mask before the model runs. The logits of the current block
    and of the blocks before it are then exactly those of feeding only the prefix up to the end of the current block:
    a masked key gets zero attention weight in every layer, and the positions of the visible tokens are unchanged.
    (An attention mask was chosen over truncation so rows with different current blocks share one forward call.)
    Logits at positions after the current block are computed from a hidden context and must not be used.

    Args:
        model (`torch.nn.Module`): a model whose `forward(input_ids=..., attention_mask=...)` returns logits.
        mask_token_id (`int`): id of the mask token.
        block_size (`int`): block length B >= 1.
        shift_logits (`bool`, *optional*, defaults to `False`): read position i from output i - 1 (Dream-style).

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import tiny_masked_lm
    >>> BlockDiffusionWrapper(tiny_masked_lm(), mask_token_id=5, block_size=2)(torch.tensor([[1, 2, 5, 5]])).shape
    torch.Size([1, 4, 6])
    ```
    """

    family = "block_diffusion"

    def __init__(self, model: torch.nn.Module, mask_token_id: int, block_size: int, shift_logits: bool = False):
        super().__init__(model, mask_token_id, check_int(block_size, "block_size"))
        self.shift_logits = bool(shift_logits)

    def _run(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        block = block_index(attention_mask, self.block_size)  # -1 on padding, which the mask hides anyway
        masked = (input_ids == self.mask_token_id) & attention_mask.bool()
        first_masked = torch.where(masked, block, block.new_full((), length)).min(dim=1).values
        visible = block <= first_masked[:, None]
        return super()._run(input_ids, attention_mask * visible.to(attention_mask.dtype))


def is_raw_diffusion_model(model) -> bool:
    """Whether `model` is a masked/block diffusion model that [`wrap_diffusion_model`] can wrap (not yet wrapped).

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_masked_lm
    >>> bert = tiny_masked_lm()
    >>> is_raw_diffusion_model(bert), is_raw_diffusion_model(MaskedLMWrapper(bert, mask_token_id=5))
    (True, False)
    ```
    """
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    known = _BLOCK_TYPES | _SHIFTED_TYPES | _UNSHIFTED_TYPES
    return model_type in known or type(model).__name__.endswith("ForMaskedLM")


def _detect_mask_token_id(model, tokenizer, mask_token_id):
    if mask_token_id is not None:
        return int(mask_token_id)
    from_tokenizer = getattr(tokenizer, "mask_token_id", None) if tokenizer is not None else None
    from_config = getattr(getattr(model, "config", None), "mask_token_id", None)
    if from_tokenizer is not None and from_config is not None and from_tokenizer != from_config:
        raise ValueError(
            f"`mask_token_id` is ambiguous: the tokenizer says {from_tokenizer}, the model config {from_config}. "
            "Pass `mask_token_id=` explicitly."
        )
    found = from_tokenizer if from_tokenizer is not None else from_config
    if found is None:
        raise ValueError(
            "`mask_token_id` could not be found: neither the tokenizer nor the model config defines one. Pass "
            "`mask_token_id=` (e.g. the id of the [MASK] token the model was trained with)."
        )
    return int(found)


def _detect_shift(model, model_type, shift_logits):
    if shift_logits is not None:
        return bool(shift_logits)
    if model_type in _SHIFTED_TYPES:
        return True
    if model_type in _UNSHIFTED_TYPES or type(model).__name__.endswith("ForMaskedLM"):
        return False
    raise ValueError(
        f"`shift_logits` is needed: cannot tell whether {type(model).__name__} (model_type={model_type!r}) predicts "
        "token i at output i (masked LM, LLaDA: `shift_logits=False`) or at output i - 1 (Dream: `shift_logits=True`)."
    )


def wrap_diffusion_model(
    model: torch.nn.Module,
    tokenizer=None,
    mask_token_id: int | None = None,
    family: str | None = None,
    block_size: int | None = None,
    shift_logits: bool | None = None,
) -> DiffusionLM:
    """Wraps a loaded model in the right [`DiffusionLM`] wrapper, detecting what the config makes unambiguous.

    Args:
        model (`torch.nn.Module`): the loaded model; a [`DiffusionLM`] is returned unchanged.
        tokenizer (*optional*): read for `mask_token_id`.
        mask_token_id (`int`, *optional*): overrides detection (tokenizer, then `config.mask_token_id`).
        family (`str`, *optional*): `"masked_diffusion"` or `"block_diffusion"`; defaults to `"block_diffusion"` when a
            block size is given or found in the config (`config.block_size` of a BD3LM), else `"masked_diffusion"`.
        block_size (`int`, *optional*): block length; falls back to `config.block_size`.
        shift_logits (`bool`, *optional*): `True` for Dream-style models; detected from `config.model_type`.

    Returns:
        [`DiffusionLM`]: `LLaDAWrapper`, `ShiftedLogitsWrapper`, `BlockDiffusionWrapper` or `MaskedLMWrapper`.

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_masked_lm
    >>> type(wrap_diffusion_model(tiny_masked_lm(), mask_token_id=5)).__name__
    'MaskedLMWrapper'
    ```
    """
    if isinstance(model, DiffusionLM):
        return model
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type == "diffusion_gemma":
        raise ValueError(
            "`model` is a DiffusionGemma encoder-decoder, which these single-stack wrappers do not cover."
        )
    if family not in (None, "masked_diffusion", "block_diffusion"):
        raise ValueError(f"`family` must be 'masked_diffusion' or 'block_diffusion', got {family!r}.")
    if block_size is None and family != "masked_diffusion":
        block_size = getattr(config, "block_size", None) if model_type in _BLOCK_TYPES or family else None
    if family is None:
        family = "block_diffusion" if block_size is not None else "masked_diffusion"
    if family == "block_diffusion" and block_size is None:
        raise ValueError("`block_size` is needed for family='block_diffusion' and the model config has none.")
    mask_token_id = _detect_mask_token_id(model, tokenizer, mask_token_id)
    shift = _detect_shift(model, model_type, shift_logits)
    if family == "block_diffusion":
        return BlockDiffusionWrapper(model, mask_token_id, block_size, shift_logits=shift)
    if shift:
        return ShiftedLogitsWrapper(model, mask_token_id)
    if model_type in ("llada", "llada_moe"):
        return LLaDAWrapper(model, mask_token_id)
    return MaskedLMWrapper(model, mask_token_id)


# Names of the first releases, when "adapter" meant both a PEFT adapter and a model-family wrapper.
MaskedLMAdapter = MaskedLMWrapper
LLaDAAdapter = LLaDAWrapper
ShiftedLogitsAdapter = ShiftedLogitsWrapper
BlockDiffusionAdapter = BlockDiffusionWrapper
