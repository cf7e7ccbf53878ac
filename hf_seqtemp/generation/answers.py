# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Where a sampled answer ends: the first EOS token of the completion, after which everything is padding.

The samplers of causal LMs target `p(answer)^(1/T)` over *complete answers*: a completion ends at its first EOS
token (included), and `p(answer)` is the product of the conditionals up to and including that EOS. A completion
with no EOS within `max_new_tokens` tokens is the *truncated* event "no EOS in the first `max_new_tokens` tokens",
whose probability is the product of its `max_new_tokens` conditionals. These events partition the model's
sequences, so `p` sums to 1 over them and `p^(1/T)` is a distribution over a finite set.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def resolve_eos_and_pad(
    model: torch.nn.Module, eos_token_id: int | Sequence[int] | torch.Tensor | None, pad_token_id: int | None
) -> tuple[torch.Tensor, int]:
    """EOS ids (a 1-D tensor, possibly empty) and the pad id written after an answer's EOS.

    `eos_token_id=None` reads `model.generation_config.eos_token_id` (no EOS when the model has none); an empty
    list means no EOS at all (fixed-length completions in which EOS is an ordinary token). `pad_token_id=None` reads
    the generation config's pad id, then falls back to the first EOS id, as `generate` does.

    Example:
    ```python
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[2, 7], pad_token_id=None))
    >>> eos, pad = resolve_eos_and_pad(model, None, None)
    >>> eos.tolist(), pad
    ([2, 7], 2)
    ```
    """
    config = getattr(model, "generation_config", None)
    if eos_token_id is None:
        eos_token_id = getattr(config, "eos_token_id", None)
    if eos_token_id is None:
        eos_token_id = []
    eos = torch.as_tensor(eos_token_id, dtype=torch.long, device="cpu").flatten()  # callers move it to their ids
    if pad_token_id is None:
        pad_token_id = getattr(config, "pad_token_id", None)
    if pad_token_id is None:
        pad_token_id = int(eos[0]) if eos.numel() else 0
    if isinstance(pad_token_id, torch.Tensor):
        pad_token_id = int(pad_token_id.flatten()[0])
    return eos, int(pad_token_id)


def answer_mask(input_ids: torch.Tensor, completion_mask: torch.Tensor, eos: torch.Tensor) -> torch.Tensor:
    """Completion positions that belong to the answer: up to and including the first EOS of the completion.

    Args:
        input_ids (`torch.LongTensor` of shape `(..., length)`): sequences.
        completion_mask (`torch.BoolTensor` broadcastable to `input_ids`): the completion positions.
        eos (`torch.LongTensor` of shape `(num_eos,)`): EOS ids; empty for fixed-length answers.

    Returns:
        `torch.BoolTensor` of the shape of `input_ids`.

    Example:
    ```python
    >>> ids = torch.tensor([[5, 1, 2, 1, 3]])
    >>> answer_mask(ids, torch.tensor([[False, True, True, True, True]]), torch.tensor([2])).int().tolist()
    [[0, 1, 1, 0, 0]]
    ```
    """
    completion_mask = completion_mask.bool().expand_as(input_ids)
    is_eos = torch.isin(input_ids, eos.to(input_ids.device)) & completion_mask
    eos_before = (is_eos.long().cumsum(dim=-1) - is_eos.long()) > 0
    return completion_mask & ~eos_before


def pad_after_answer(input_ids: torch.Tensor, completion_mask: torch.Tensor, eos: torch.Tensor, pad: int):
    """`input_ids` with every completion position after the answer's EOS set to `pad`."""
    after = completion_mask.bool() & ~answer_mask(input_ids, completion_mask, eos)
    return input_ids.masked_fill(after, pad)
