# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Holding out whole prompts: a train / held-out split in which no held-out prompt appears in training."""

from __future__ import annotations

import json
import random
from typing import Any, NamedTuple

from ..progress import get_logger
from .formats import detect_format
from .prepare import GROUP_ID

logger = get_logger(__name__)


class PromptSplit(NamedTuple):
    """`(train, held_out, unseen_prompts)` of [`split_by_prompt`]; `unseen_prompts` is `False` for a plain-text
    corpus, whose held-out rows are unseen sequences of its one (empty) prompt, not unseen prompts."""

    train: Any
    held_out: Any
    unseen_prompts: bool


def prompt_key(row: dict[str, Any], fmt: str) -> str | None:
    """The prompt of one row as a string, the same for every completion of that prompt; `None` for a plain-text row
    (an unconditional corpus has one prompt).

    The prompt is `prompt` (text or messages), or every turn before the last assistant turn of `messages`, or the
    tokens before the completion (`completion_mask`) of a pre-tokenised row, as the trainer reads them.

    Example:
    ```python
    >>> chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    >>> prompt_key({"messages": chat}, "messages")
    '[{"content": "Hi", "role": "user"}]'
    ```
    """
    if fmt == "input_ids":
        ids = list(row["input_ids"])
        mask = row.get("completion_mask")
        start = next((i for i, m in enumerate(mask) if m), len(ids)) if mask is not None else 1
        value = ids[:start]
    elif fmt == "messages":
        messages = list(row["messages"])
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=len(messages))
        value = messages[:last]
    elif fmt == "text":
        return None
    else:
        value = row["prompt"]
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def split_by_prompt(dataset, fraction: float, seed: int = 0, text_field: str = "text", name: str = "eval_fraction"):
    """Splits `dataset` (any of TRL's formats) into training rows and held-out rows by **prompt**: every completion
    of a held-out prompt is held out, so no held-out prompt appears in training.

    Prompts come from a `prompt_id` column when there is one, else from [`prompt_key`]. A plain-text corpus has no
    prompt (the trainer treats it as one unconditional group), so its rows are split one by one and the result says
    `unseen_prompts=False`: its held-out figures are on unseen sequences of one prompt, not on unseen prompts.

    Args:
        dataset ([`~datasets.Dataset`]): rows in one of TRL's formats ([`~hf_seqtemp.data.formats`]).
        fraction (`float`): share of the prompts held out, in (0, 1); at least one prompt is held out and one kept.
        seed (`int`, *optional*, defaults to 0): seeds which prompts are held out.
        text_field (`str`, *optional*, defaults to `"text"`): the text column of a plain-text corpus.
        name (`str`, *optional*): the parameter named in errors.

    Returns:
        [`PromptSplit`]: `(train, held_out, unseen_prompts)`.

    Example:
    ```python
    >>> from datasets import Dataset
    >>> data = Dataset.from_dict({"prompt": ["a", "a", "b", "b", "c", "c"], "completion": ["x", "y"] * 3})
    >>> train, held_out, unseen = split_by_prompt(data, 1 / 3)
    >>> set(train["prompt"]) & set(held_out["prompt"]), len(held_out), unseen
    (set(), 2, True)
    ```
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"`{name}` must be in (0, 1), got {fraction}.")
    fmt = detect_format(dataset.column_names, text_field, "dataset")
    if "prompt_id" in dataset.column_names:
        keys = [json.dumps(v, sort_keys=True) for v in dataset["prompt_id"]]
    elif fmt == "text":
        split = dataset.train_test_split(test_size=fraction, seed=seed)
        logger.warning(
            f"`{name}`: a plain-text corpus has no prompts (it is one unconditional group), so {len(split['test'])} "
            "rows are held out one by one: the held-out figures are on unseen sequences, not unseen prompts."
        )
        return PromptSplit(split["train"], split["test"], False)
    else:
        keys = [prompt_key(row, fmt) for row in dataset]
    distinct = sorted(set(keys))
    if len(distinct) < 2:
        raise ValueError(
            f"`{name}` {fraction} needs at least 2 distinct prompts to hold one out, but the data has "
            f"{len(distinct)}: give more prompts, or train without `{name}` (0) and measure afterwards on other "
            "prompts with `hf-seqtemp eval`."
        )
    random.Random(seed).shuffle(distinct)
    held = set(distinct[: min(len(distinct) - 1, max(1, round(fraction * len(distinct))))])
    marks = [key in held for key in keys]
    train = dataset.select([i for i, m in enumerate(marks) if not m])
    return PromptSplit(train, dataset.select([i for i, m in enumerate(marks) if m]), True)


def warn_on_shared_prompts(train_dataset, eval_dataset) -> int:
    """Warns when prepared training and evaluation sets share prompt groups (their figures are then not on unseen
    prompts); returns how many held-out prompts also appear in training. An unconditional corpus (one group in all)
    has no prompts to hold out, and is not warned about."""
    held, trained = set(eval_dataset[GROUP_ID]), set(train_dataset[GROUP_ID])
    shared = held & trained
    if shared and len(held | trained) > 1:  # one group in all: an unconditional corpus, which has no prompts
        logger.warning(
            f"{len(shared)} of the {len(held)} prompts of `eval_dataset` also appear in `train_dataset`, so its figures "
            "are not on unseen prompts: hold out whole prompts with `hf_seqtemp.data.split_by_prompt`."
        )
    return len(shared)
