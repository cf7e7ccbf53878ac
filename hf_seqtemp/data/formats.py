# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""TRL's dataset formats, tokenised into a prompt and a completion, with chat templates applied one way everywhere.

Accepted layouts, in order of precedence:

- pre-tokenised `input_ids` (+ optional `completion_mask`; without it every token but the first is scored; the EOS
  rule below applies with the tokenizer's EOS when a tokenizer is given);
- `prompt` + `completion` (standard text, or conversational lists of `{"role", "content"}` messages);
- `messages` (conversational language modelling: the last assistant turn is the completion, the rest the prompt);
- a text column (`dataset_text_field`, default `text`): one unconditional group, the whole text scored after the
  start token (the tokenizer's own, else BOS or EOS), as an empty prompt + the text as completion;
- `prompt` only (text or conversational): completions are sampled from the reference model.

One rule for the scored event in every layout:

- the prompt is exactly what generation conditions on: the chat template with its generation prompt for a
  conversational prompt (as TRL applies templates: to conversational examples only), the tokenizer's own special
  tokens for text, the BOS (or EOS) token for an empty prompt and for a `text` row (an unconditional event);
- the completion is what prompt + completion adds after the prompt's tokens, and ends at its first EOS token (kept:
  ending is part of the event, and template tokens after the end of turn are not scored). When it holds no EOS the
  tokenizer's EOS token is appended, as TRL's SFT does, unless the row's `truncated` column is `True` (a completion
  cut before its end: the event "these tokens first", without EOS).

When the tokens of prompt + completion do not start with the prompt's tokens (tokens merging across the boundary, as
`"Hello wor"` + `"ld!"`, or a generation prompt the full conversation does not render, as `<think>\n\n</think>\n\n`),
the event is scored as the user wrote it: the prompt's own tokens (the full generation prompt), then the completion's
tokens (for text, the completion tokenised alone; for a conversation, what the full conversation renders after the
point where the two diverge). [`~hf_seqtemp.data.prepare_dataset`] warns once with the number of such rows.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, NamedTuple

from .cells import TRUNCATED

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
    preference = sorted(columns & {"chosen", "rejected"})
    if preference and "completion" not in columns:
        raise ValueError(
            f"`{name}` has the columns {preference} of TRL's preference format (DPO's), which SeqTempTrainer does "
            "not train on: it tempers the model's own distribution per prompt. Keep the prompts only "
            "(`dataset.select_columns(['prompt'])`, completions are then sampled from the model), or train on one "
            "answer per row (`dataset.rename_column('chosen', 'completion').remove_columns('rejected')`)."
        )
    if {"prompt", "completion", "label"} <= columns:
        raise ValueError(
            f"`{name}` has TRL's unpaired preference format (KTO's `prompt`/`completion`/`label`), whose `label=False` "
            "rows are answers to avoid: SeqTempTrainer would temper toward them too. Keep the desirable answers "
            "(`dataset.filter(lambda row: row['label']).remove_columns('label')`), or the prompts only "
            "(`dataset.select_columns(['prompt'])`, completions are then sampled from the model)."
        )
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
        f"sampled from the model), or pre-tokenised `input_ids` (+ `completion_mask`).{_rename_hint(columns)}"
    )


def _rename_hint(columns: set[str]) -> str:
    """A rename that would fix a near miss (`Prompt`, `completions`, `message`), or nothing.

    Example:
    ```python
    >>> _rename_hint({"Prompt", "completions"})
    " Rename the near misses: `dataset.rename_columns({'Prompt': 'prompt', 'completions': 'completion'})`."
    ```
    """
    expected = ("prompt", "completion", "messages", "text", "input_ids")
    renames = {}
    for column in sorted(columns):
        close = difflib.get_close_matches(column.lower(), expected, n=1, cutoff=0.7)
        if close and close[0] not in columns and close[0] not in renames.values():
            renames[column] = close[0]
    return f" Rename the near misses: `dataset.rename_columns({renames})`." if renames else ""


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


class ScoredEvent(NamedTuple):
    """The tokens of one scored event: `prompt` (conditioned on) and `completion` (scored), and whether the prompt's
    tokens were not a prefix of prompt + completion's, so that the event was assembled as written."""

    prompt: list[int]
    completion: list[int]
    as_written: bool = False


def end_event(completion: list[int], eos_ids: set[int], eos_token_id: int | None, truncated: bool) -> list[int]:
    """`completion` up to and including its first EOS; with `eos_token_id` appended when it holds none, unless it is
    `truncated` (or there is no EOS token to append).

    Example:
    ```python
    >>> end_event([5, 6], {2}, 2, False), end_event([5, 2, 7], {2}, 2, False), end_event([5, 6], {2}, 2, True)
    ([5, 6, 2], [5, 2], [5, 6])
    ```
    """
    ended = end_at_eos(completion, eos_ids)
    if truncated or eos_token_id is None or (ended and ended[-1] in eos_ids):
        return ended
    return ended + [eos_token_id]


def _split(tokenizer, prompt, completion) -> ScoredEvent:
    """The prompt's tokens and the completion's, before the EOS rule (see the module docstring)."""
    prompt_ids = tokenize_prompt(tokenizer, prompt)
    conversational = isinstance(prompt, list)
    if conversational:
        full = _render(tokenizer, list(prompt) + list(completion), generation_prompt=False)
    else:
        full = list(tokenizer(prompt + completion)["input_ids"])
    if full[: len(prompt_ids)] == prompt_ids:
        return ScoredEvent(prompt_ids, full[len(prompt_ids) :])
    if conversational:  # the generation prompt is not rendered in the full conversation: keep it, then the answer
        return ScoredEvent(prompt_ids, full[_common_prefix(prompt_ids, full) :], as_written=True)
    # tokens merged across the boundary, or an empty prompt replaced by the start token that the text lacks
    completion_ids = list(tokenizer(completion, add_special_tokens=False)["input_ids"])
    return ScoredEvent(prompt_ids, completion_ids, as_written=bool(tokenizer(prompt)["input_ids"]))


def _split_messages(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    if not messages or messages[-1].get("role") != "assistant":
        roles = [m.get("role") for m in messages]
        raise ValueError(
            f"a `messages` example must end with an assistant turn (the completion that is scored), got roles {roles}. "
            "For prompts without completions (sampled from the base model, `num_generations` per prompt) use TRL's "
            "prompt-only conversational format: a `prompt` column of message lists, e.g. "
            '`dataset.rename_column("messages", "prompt")` or `{"prompt": [{"role": "user", "content": "..."}]}`.'
        )
    return list(messages[:-1]), [messages[-1]]


def has_start_token(tokenizer) -> bool:
    """Whether an empty text prompt has a token to condition on (the tokenizer's own, else its BOS or EOS)."""
    return bool(tokenizer("")["input_ids"]) or tokenizer.bos_token_id is not None or tokenizer.eos_token_id is not None


def _pre_tokenised(row: dict[str, Any]) -> tuple[list[int], list[int]]:
    ids = list(row["input_ids"])
    mask = list(row["completion_mask"]) if row.get("completion_mask") is not None else [0] + [1] * (len(ids) - 1)
    if len(mask) != len(ids):
        raise ValueError(f"`completion_mask` has {len(mask)} values but `input_ids` has {len(ids)} tokens.")
    start = next((i for i, m in enumerate(mask) if m), len(ids))
    if any(mask[start:]) and not all(mask[start:]):
        raise ValueError("`completion_mask` must be 0 on the prompt and 1 on the completion that follows it.")
    return ids[:start], ids[start:]


def scored_event(
    row: dict[str, Any], tokenizer, fmt: str, text_field: str, eos_ids: set[int] | None = None
) -> ScoredEvent:
    """The scored event of one example in format `fmt` ([`detect_format`]), by the rule of the module docstring.

    Args:
        row (`dict`): the example (its cell types checked by [`~hf_seqtemp.data.cells.check_cells`]).
        tokenizer: the tokenizer (`None` for pre-tokenised rows: no EOS is then appended).
        fmt (`str`), text_field (`str`): the format and the text column.
        eos_ids (`set` of `int`, *optional*): further tokens that end a completion (e.g. the model's generation
            config's), besides the tokenizer's EOS.

    For `prompt_only` the completion is empty. A `text` row is the event "the text, then EOS" given the start token
    (with a tokenizer that has no BOS, EOS or own start token, given its first token).
    """
    eos_token_id = getattr(tokenizer, "eos_token_id", None)
    ends = (eos_ids or set()) | _eos_ids(tokenizer)
    truncated = bool(row.get(TRUNCATED))
    if fmt == "input_ids":
        prompt, completion = _pre_tokenised(row)
        return ScoredEvent(prompt, end_event(completion, ends, eos_token_id, truncated))
    if tokenizer is None:
        raise ValueError("text and conversational datasets need a tokenizer: pass `processing_class=` to the trainer.")
    if fmt == "prompt_only":
        return ScoredEvent(tokenize_prompt(tokenizer, row["prompt"]), [])
    if fmt == "prompt_completion":
        event = _split(tokenizer, row["prompt"], row["completion"])
    elif fmt == "messages":
        event = _split(tokenizer, *_split_messages(row["messages"]))
    elif has_start_token(tokenizer):
        event = _split(tokenizer, "", row[text_field])
    else:
        ids = list(tokenizer(row[text_field])["input_ids"])
        event = ScoredEvent(ids[:1], ids[1:])
    return event._replace(completion=end_event(event.completion, ends, eos_token_id, truncated))


def tokenize_example(row: dict[str, Any], tokenizer, fmt: str, text_field: str) -> tuple[list[int], list[int]]:
    """`(prompt_ids, completion_ids)` of one example in format `fmt` ([`detect_format`]): [`scored_event`]."""
    event = scored_event(row, tokenizer, fmt, text_field)
    return event.prompt, event.completion
