# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Scoring the completions of one prompt with one forward pass of the prompt.

A batch of prompt groups repeats each prompt once per completion (`num_generations` times), and a chat prompt is
often longer than its short answers: most of a forward pass then recomputes the same prompt. [`SharedPrompts`]
runs each distinct prompt (all its tokens but the last) once, copies its key/value cache to the rows that repeat
it, and runs every row's last prompt token and completion on that cache. The conditionals are the same ones (the
positions come from the attention mask, as in one pass; the cache copy is differentiable, so the gradient of a
prompt's tokens sums its rows' gradients, as in one pass); only the repeated prompt work is gone.

It applies to a transformers causal LM in float32, PEFT-wrapped or not, when some rows share a prompt, and never
where two forward passes would mean something else: a PEFT prompt-learning adapter (prefix tuning, prompt tuning,
p-tuning: its virtual tokens would enter each pass), a DDP, FSDP or DeepSpeed wrapper (one forward per backward),
gradient checkpointing (which turns the cache off), active dropout (the rows of a prompt would share its dropout
mask), or bf16 / fp16 weights or autocast (a split pass rounds otherwise than one pass, so a reference scored in one
batch layout would not match the policy scored in another).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


def _unwrapped(model: torch.nn.Module) -> torch.nn.Module | None:
    """The transformers model under a PEFT wrapper, or `None` for any other wrapper (DDP, DeepSpeed)."""
    from transformers import PreTrainedModel

    target = model.get_base_model() if callable(getattr(model, "get_base_model", None)) else model
    return target if isinstance(target, PreTrainedModel) else None


def prompt_learning(model: torch.nn.Module) -> bool:
    """Whether `model` carries a PEFT prompt-learning adapter (prefix tuning, prompt tuning, p-tuning, ...): one that
    adds virtual tokens, as keys and values (prefix) or as input embeddings (prompt), to every forward pass, so that
    a pass over a cache of the prompt, or a cut of the logits by position, means something else than one pass."""
    configs = getattr(model, "peft_config", None)
    if not isinstance(configs, dict):
        return False
    return any(getattr(config, "is_prompt_learning", False) for config in configs.values())


def drops_position_ids(model: torch.nn.Module) -> bool:
    """Whether `model` carries a PEFT prompt-learning adapter whose forward drops the position ids it is given
    (prompt tuning, p-tuning: every one but prefix tuning, which shifts them): its positions then count a left
    padding, and a padded row is scored right-padded instead (the same positions as the row alone)."""
    configs = getattr(model, "peft_config", None)
    if not isinstance(configs, dict):
        return False
    return any(
        getattr(config, "is_prompt_learning", False)
        and str(getattr(config, "peft_type", "")).rsplit(".", 1)[-1] not in ("PREFIX_TUNING", "CARTRIDGE")
        for config in configs.values()
    )


def can_share_prompts(model: torch.nn.Module) -> bool:
    """Whether `model` may score a batch as a forward of its distinct prompts then one of the rest (see module).

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(8).eval()
    >>> can_share_prompts(model), can_share_prompts(torch.nn.Sequential(model))
    (True, False)
    ```
    """
    target = _unwrapped(model)
    if target is None or target.config.is_encoder_decoder or prompt_learning(model):
        return False  # a prompt-learning adapter adds its virtual tokens to each of the split's passes
    checkpointing = "is_activation_checkpointing" if hasattr(target, "is_activation_checkpointing") else None
    if getattr(target, checkpointing or "is_gradient_checkpointing", False):
        return False
    if "FSDP" in type(target).__name__ or not target._supports_default_dynamic_cache():
        return False
    # in float32 the split pass computes one pass's conditionals to float32 rounding; in bf16 / fp16 its rounding
    # differs from one pass's by far more, and the reference and the policy must be scored alike
    if next(target.parameters()).dtype != torch.float32 or any(
        torch.is_autocast_enabled(device) for device in ("cpu", "cuda")
    ):
        return False
    if any(getattr(m, "_original_forward", None) is not None for m in (model, target)):
        return False  # accelerate's mixed precision wraps `forward` in autocast, which the prompt's pass would skip
    dropout = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.AlphaDropout)
    return not (model.training and any(isinstance(m, dropout) and m.p > 0 for m in model.modules()))


@dataclass
class SharedPrompts:
    """The layout of a batch scored with shared prompts: each row's prompt (but its last token) left-padded into
    `prefix_ids` of its distinct prompt, and its last prompt token and the rest of the row right-padded into
    `rest_ids`; `rows` maps each row to its distinct prompt, `starts` is where each row's rest starts in the
    original batch."""

    prefix_ids: torch.Tensor
    prefix_mask: torch.Tensor
    rows: torch.Tensor
    rest_ids: torch.Tensor
    rest_mask: torch.Tensor
    starts: list[int]
    lengths: list[int]

    @classmethod
    def of(cls, input_ids: torch.Tensor, attention_mask: torch.Tensor, completion_mask: torch.Tensor):
        """The layout, or `None` when no two rows share a prompt or a row has no prompt token before its last.

        The prompt of a row is what precedes its first scored token; the row's tokens are its attended positions
        (left or right padding alike, but contiguous).

        Example:
        ```python
        >>> ids = torch.tensor([[5, 6, 7, 1, 0], [5, 6, 7, 2, 3], [8, 9, 4, 0, 0]])
        >>> attention = (ids > 0).long()
        >>> completion = torch.tensor([[0, 0, 0, 1, 0], [0, 0, 0, 1, 1], [0, 0, 1, 0, 0]]).bool()
        >>> layout = SharedPrompts.of(ids, attention, completion)
        >>> layout.prefix_ids.tolist(), layout.rows.tolist(), layout.rest_ids.tolist()
        ([[5, 6], [0, 8]], [0, 0, 1], [[7, 1, 0], [7, 2, 3], [9, 4, 0]])
        ```
        """
        rows = _row_lists(input_ids, attention_mask, completion_mask)  # host sync: the layout is built on the host
        spans = []
        for ids, attended, scored in rows:
            positions = [i for i, a in enumerate(attended) if a]
            if not positions or not any(scored):
                return None
            first, end, prompt_end = positions[0], positions[-1] + 1, scored.index(1)
            if prompt_end - first < 2 or end - first != len(positions):
                return None  # nothing to share before the last prompt token, or holes in the row
            spans.append((first, prompt_end, end))
        prompts = [tuple(ids[first : end - 1]) for (ids, _, _), (first, end, _) in zip(rows, spans)]
        distinct = list(dict.fromkeys(prompts))
        if len(distinct) == len(prompts):
            return None
        width = max(map(len, distinct))
        prefix = [[0] * (width - len(prompt)) + list(prompt) for prompt in distinct]
        prefix_mask = [[0] * (width - len(prompt)) + [1] * len(prompt) for prompt in distinct]
        length = max(end - prompt_end + 1 for _, prompt_end, end in spans)
        rests = [ids[prompt_end - 1 : end] for (ids, _, _), (_, prompt_end, end) in zip(rows, spans)]
        slot = {prompt: k for k, prompt in enumerate(distinct)}

        def tensor(values, like):
            return torch.tensor(values, dtype=like.dtype, device=input_ids.device)

        return cls(
            tensor(prefix, input_ids),
            tensor(prefix_mask, attention_mask),
            torch.tensor([slot[prompt] for prompt in prompts], device=input_ids.device),
            tensor([rest + [0] * (length - len(rest)) for rest in rests], input_ids),
            tensor([[1] * len(rest) + [0] * (length - len(rest)) for rest in rests], attention_mask),
            [prompt_end - 1 for _, prompt_end, _ in spans],
            [end - prompt_end + 1 for _, prompt_end, end in spans],
        )

    def forward_kwargs(self, model: torch.nn.Module, with_positions: bool, cache_kwargs: Callable) -> dict:
        """Runs the distinct prompts, copies their cache to the rows, and returns the keyword arguments of the
        forward pass of `rest_ids` on it (attention mask over prefix and rest, positions, the cache)."""
        from transformers import DynamicCache

        target = _unwrapped(model)
        mask = torch.cat([self.prefix_mask[self.rows], self.rest_mask], dim=1)
        positions = (mask.long().cumsum(dim=1) - 1).clamp(min=0)
        prefix_positions = (self.prefix_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        cache = DynamicCache(config=target.config.get_text_config(decoder=True))
        extra = {"position_ids": prefix_positions} if with_positions else {}
        # the decoder without the LM head (the prompt's logits are never used); PEFT's layers are in it, in place
        decoder = target.get_decoder() if callable(getattr(target, "get_decoder", None)) else None
        runner = decoder if isinstance(decoder, torch.nn.Module) and decoder is not target else model
        if runner is model and "logits_to_keep" in _forward_parameters(target):
            extra["logits_to_keep"] = 1
        runner(input_ids=self.prefix_ids, attention_mask=self.prefix_mask, **extra, **cache_kwargs(runner, cache))
        cache.batch_select_indices(self.rows)
        kwargs = {"attention_mask": mask, **cache_kwargs(model, cache)}
        if with_positions:
            kwargs["position_ids"] = positions[:, self.prefix_ids.shape[1] :]
        return kwargs

    def place(self, rest_logps: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
        """Per-position log-probabilities of the original batch (`shape`) from those of `rest_ids` (the target of
        rest position j is rest position j + 1), 0 elsewhere."""
        out = rest_logps.new_zeros(shape)
        for row, (start, length) in enumerate(zip(self.starts, self.lengths)):
            out[row, start + 1 : start + length] = rest_logps[row, : length - 1]
        return out


def _row_lists(input_ids, attention_mask, completion_mask) -> list[tuple[list[int], list[int], list[int]]]:
    """Each row's token ids, attention mask and completion mask as Python lists (one copy to the host)."""
    return list(zip(input_ids.tolist(), attention_mask.long().tolist(), completion_mask.long().tolist()))


def _forward_parameters(model: torch.nn.Module) -> set[str]:
    import inspect

    try:
        return set(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return set()
