# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Prepared examples: token ids, the scored completion positions, a stable example id and a prompt group id."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset
from tqdm.auto import tqdm

from ..groups import prompt_group_id, value_group_id
from .formats import detect_format, tokenize_example

logger = logging.getLogger(__name__)

EXAMPLE_ID = "example_id"
GROUP_ID = "group_id"
PROMPT_IDS = "prompt_ids"
RAGGED_COLUMNS = frozenset({"ref_step_logps"})
"""Reference columns whose length is not the token count (diffusion: k orders × m steps), padded to the longest."""


def _group_id(row: dict[str, Any], prompt_ids: list[int], fmt: str, prompt_id_column: str | None) -> int:
    if prompt_id_column is not None and prompt_id_column in row:
        return value_group_id(row[prompt_id_column])
    if fmt == "text":
        return 0  # an unconditional corpus is one group
    return prompt_group_id(prompt_ids)


def is_prompt_only(dataset: Dataset) -> bool:
    """Whether a prepared dataset holds prompts without completions (to be sampled from the reference)."""
    return PROMPT_IDS in dataset.column_names


def prepare_dataset(
    dataset: Dataset,
    tokenizer,
    text_field: str,
    max_length: int,
    name: str,
    prompt_id_column: str | None = "prompt_id",
) -> Dataset:
    """Tokenises a dataset in any of TRL's formats ([`~hf_seqtemp.data.formats`]) and gives every example its
    prompt group.

    Each row becomes `input_ids`, `completion_mask` (1 on the scored completion), a stable `example_id` and a
    `group_id`: the value of the `prompt_id_column` when the dataset has it, 0 for a plain-text corpus (one group),
    otherwise a hash of the prompt's token ids, so that identical prompts share a group whatever the layout. A
    prompt-only dataset becomes `prompt_ids`, `example_id` and `group_id`. Examples longer than `max_length` are
    dropped with a warning giving their number; examples with no scored token likewise.

    Raises:
        ValueError: naming `name` when the dataset is empty or in no known format, and naming `max_length` when it
            would drop every example.
    """
    if dataset is None or len(dataset) == 0:
        raise ValueError(f"`{name}` is empty: pass a dataset with at least two examples.")
    fmt = detect_format(dataset.column_names, text_field, name)
    rows, too_long, empty, longest_seen = [], 0, 0, 0
    for index, row in enumerate(tqdm(dataset, desc=f"Tokenizing {name}", leave=False)):
        prompt, completion = tokenize_example(row, tokenizer, fmt, text_field)
        group = _group_id(row, prompt, fmt, prompt_id_column)
        longest_seen = max(longest_seen, len(prompt) + len(completion))
        if len(prompt) + len(completion) > max_length:
            too_long += 1
        elif fmt == "prompt_only":
            rows.append({PROMPT_IDS: prompt, EXAMPLE_ID: index, GROUP_ID: group})
        elif not prompt or not completion:
            empty += 1
        else:
            mask = [0] * len(prompt) + [1] * len(completion)
            rows.append(
                {"input_ids": prompt + completion, "completion_mask": mask, EXAMPLE_ID: index, GROUP_ID: group}
            )
    if too_long:
        logger.warning(f"{name}: dropped {too_long} of {len(dataset)} examples longer than max_length={max_length}.")
    if empty:
        logger.warning(f"{name}: dropped {empty} examples with no prompt token or no completion token to score.")
    if not rows:
        if too_long:
            raise ValueError(
                f"`max_length`={max_length} is shorter than every example of `{name}` (the longest has "
                f"{longest_seen} tokens): raise `max_length`."
            )
        raise ValueError(f"`{name}` has no example with a completion token to score.")
    prepared = Dataset.from_list(rows)
    _warn_on_singletons(prepared, name)
    return prepared


def _warn_on_singletons(prepared: Dataset, name: str) -> None:
    if is_prompt_only(prepared) or len(prepared) < 2:
        return
    sizes = Counter(prepared[GROUP_ID])
    singletons = sum(1 for size in sizes.values() if size == 1)
    if singletons == len(sizes):
        logger.warning(
            f"{name}: all {singletons} prompt groups hold a single completion, so there is no pair of completions "
            "of one prompt to temper. Give several completions per prompt (a prompt-only dataset has them sampled), "
            "or a shared `prompt_id` column for completions of one prompt."
        )


@dataclass
class SeqTempCollator:
    """Right-pads token columns and stacks the reference and group columns of a batch of prepared examples.

    Args:
        pad_token_id (`int`): id written into padded positions (never attended nor scored).
    """

    pad_token_id: int = 0

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        length = max(len(e["input_ids"]) for e in examples)
        batch = {
            "input_ids": torch.full((len(examples), length), self.pad_token_id, dtype=torch.long),
            "attention_mask": torch.zeros(len(examples), length, dtype=torch.long),
            "completion_mask": torch.zeros(len(examples), length, dtype=torch.bool),
            EXAMPLE_ID: torch.tensor([e[EXAMPLE_ID] for e in examples], dtype=torch.long),
            GROUP_ID: torch.tensor([e.get(GROUP_ID, 0) for e in examples], dtype=torch.long),
        }
        if "ref_token_logps" in examples[0]:
            batch["ref_token_logps"] = torch.zeros(len(examples), length, dtype=torch.float32)
        for row, example in enumerate(examples):
            n = len(example["input_ids"])
            batch["input_ids"][row, :n] = torch.as_tensor(example["input_ids"])
            batch["attention_mask"][row, :n] = 1
            batch["completion_mask"][row, :n] = torch.as_tensor(example["completion_mask"], dtype=torch.bool)
            if "ref_token_logps" in batch:
                batch["ref_token_logps"][row, :n] = torch.as_tensor(example["ref_token_logps"])
        for key in RAGGED_COLUMNS & examples[0].keys():  # per-example lists of their own lengths, 0-padded
            batch[key] = torch.zeros(len(examples), max(len(e[key]) for e in examples), dtype=torch.float32)
            for row, example in enumerate(examples):
                batch[key][row, : len(example[key])] = torch.as_tensor(example[key])
        if "ref_logps" in examples[0]:
            batch["ref_logps"] = torch.tensor([e["ref_logps"] for e in examples], dtype=torch.float32)
        return batch
