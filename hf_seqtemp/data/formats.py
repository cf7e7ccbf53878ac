# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""TRL's dataset formats, tokenised into a prompt and a completion, with chat templates applied one way everywhere.

Accepted layouts, in order of precedence:

- pre-tokenised `input_ids` (+ optional `completion_mask`; without it every token but the first is scored);
- `prompt` + `completion` (standard text, or conversational lists of `{"role", "content"}` messages);
- `messages` (conversational language modelling: the last assistant turn is the completion, the rest the prompt);
- a text column (`dataset_text_field`, default `text`): one unconditional group, scored from the second token;
- `prompt` only (text or conversational): completions are sampled from the reference model.

Chat templates are applied the way TRL does (`trl.data_utils.is_conversational`): to conversational examples only,
the prompt rendered with `add_generation_prompt=True` and the completion being what the full conversation adds
after the longest common prefix. A completion ends at its first EOS token (kept: ending is part of the event), as a
completion sampled from the model does, so template tokens after the end of turn are not scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trl.data_utils import is_conversational

FORMATS = ("input_ids", "prompt_completion", "messages", "text", "prompt_only")


def detect_format(columns: Sequence[str], text_field: str, name: str) -> str:
    """The dataset format from its column names (see the module docstring for the precedence).

    Example:
    ```python
    >>> detect_format(["prompt", "completion"], "text", "train_dataset")
    'prompt_completion'
    ```
    """
    columns = set(columns)
    if "input_ids" in columns:
        return "input_ids"
    if {"prompt", "completion"} <= columns:
        return "prompt_completion"
    if "messages" in columns:
        return "messages"
    if text_field in columns:
        return "text"
    if "prompt" in columns:
        return "prompt_only"
    raise ValueError(
        f"`{name}` has columns {sorted(columns)} but needs one of TRL's formats: `prompt` and `completion`, "
        f"`messages`, a text column `{text_field}` (set `dataset_text_field`), `prompt` only (completions are then "
        "sampled from the model), or pre-tokenised `input_ids` (+ `completion_mask`)."
    )


def _eos_ids(tokenizer) -> set[int]:
    eos = getattr(tokenizer, "eos_token_id", None)
    return set(eos if isinstance(eos, list) else [eos]) - {None}


def _render(tokenizer, messages: list[dict], generation_prompt: bool) -> list[int]:
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "a conversational example needs a tokenizer with a chat template (`tokenizer.chat_template` is not set): "
            "set one, or give the prompts and completions as plain text."
        )
    out = tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=generation_prompt, return_dict=True
    )
    return list(out["input_ids"])


def _common_prefix(ids: list[int], other: list[int]) -> int:
    length = 0
    for a, b in zip(ids, other):
        if a != b:
            break
        length += 1
    return length


def end_at_eos(tokens: list[int], eos_ids: set[int]) -> list[int]:
    """`tokens` up to and including the first EOS token.

    Example:
    ```python
    >>> end_at_eos([5, 6, 2, 7, 8], {2})
    [5, 6, 2]
    ```
    """
    for index, token in enumerate(tokens):
        if token in eos_ids:
            return tokens[: index + 1]
    return list(tokens)


def tokenize_prompt(tokenizer, prompt: str | list[dict]) -> list[int]:
    """Token ids of a prompt as the model sees it before its completion: the chat template with the generation
    prompt for a conversational prompt, the tokenizer's own special tokens for text.

    An empty text prompt becomes the BOS (or EOS) token, so that the first completion token has a context.
    """
    if isinstance(prompt, list):
        return _render(tokenizer, prompt, generation_prompt=True)
    if not isinstance(prompt, str):
        raise TypeError(f"`prompt` must be a string or a list of chat messages, got {type(prompt).__name__}.")
    ids = list(tokenizer(prompt)["input_ids"])
    if ids:
        return ids
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if start is None:
        raise ValueError("an empty `prompt` needs a BOS or EOS token to condition the first completion token on.")
    return [start]


def _prompt_completion(tokenizer, prompt, completion) -> tuple[list[int], list[int]]:
    conversational = is_conversational({"prompt": prompt, "completion": completion})
    if conversational != isinstance(completion, list):
        raise ValueError(
            "`prompt` and `completion` must both be text or both be lists of chat messages, got "
            f"{type(prompt).__name__} and {type(completion).__name__}."
        )
    prompt_ids = tokenize_prompt(tokenizer, prompt)
    if conversational:
        full = _render(tokenizer, list(prompt) + list(completion), generation_prompt=False)
    else:
        full = list(tokenizer(prompt + completion)["input_ids"])
    # the completion starts where prompt and prompt + completion diverge (tokens can merge across the boundary)
    start = _common_prefix(prompt_ids, full)
    if start == 0:  # an empty text prompt, replaced by the BOS token that the full text does not start with
        return prompt_ids, end_at_eos(full, _eos_ids(tokenizer))
    return full[:start], end_at_eos(full[start:], _eos_ids(tokenizer))


def _split_messages(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    if not messages or messages[-1].get("role") != "assistant":
        roles = [m.get("role") for m in messages]
        raise ValueError(
            f"a `messages` example must end with an assistant turn (the completion that is scored), got roles {roles}."
        )
    return list(messages[:-1]), [messages[-1]]


def tokenize_example(row: dict[str, Any], tokenizer, fmt: str, text_field: str) -> tuple[list[int], list[int]]:
    """`(prompt_ids, completion_ids)` of one example in format `fmt` ([`detect_format`]).

    For `prompt_only` the completion is empty; for `text` the prompt is the first token.
    """
    if fmt == "input_ids":
        ids = list(row["input_ids"])
        mask = list(row["completion_mask"]) if row.get("completion_mask") is not None else [0] + [1] * (len(ids) - 1)
        if len(mask) != len(ids):
            raise ValueError(f"`completion_mask` has {len(mask)} values but `input_ids` has {len(ids)} tokens.")
        start = next((i for i, m in enumerate(mask) if m), len(ids))
        if any(mask[start:]) and not all(mask[start:]):
            raise ValueError("`completion_mask` must be 0 on the prompt and 1 on the completion that follows it.")
        return ids[:start], ids[start:]
    if tokenizer is None:
        raise ValueError("text and conversational datasets need a tokenizer: pass `processing_class=` to the trainer.")
    if fmt == "prompt_completion":
        return _prompt_completion(tokenizer, row["prompt"], row["completion"])
    if fmt == "messages":
        return _prompt_completion(tokenizer, *_split_messages(row["messages"]))
    if fmt == "prompt_only":
        return tokenize_prompt(tokenizer, row["prompt"]), []
    ids = list(tokenizer(row[text_field])["input_ids"])
    return ids[:1], ids[1:]
