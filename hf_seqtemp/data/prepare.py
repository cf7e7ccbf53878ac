# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Prepared examples: token ids, the scored completion positions, a stable example id and a prompt group id."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset
from tqdm.auto import tqdm

from ..groups import prompt_group_id, value_group_id
from ..progress import get_logger, progress_disabled
from .cells import check_cells
from .formats import detect_format, has_start_token, scored_event

logger = get_logger(__name__)

EXAMPLE_ID = "example_id"
GROUP_ID = "group_id"
PROMPT_IDS = "prompt_ids"
RAGGED_COLUMNS = frozenset({"ref_step_logps"})
"""Reference columns whose length is not the token count (diffusion: k orders × m steps), padded to the longest."""


def _group_id(row: dict[str, Any], prompt_ids: list[int], unconditional: bool, prompt_id_column: str | None) -> int:
    if prompt_id_column is not None and prompt_id_column in row and row[prompt_id_column] is not None:
        return value_group_id(row[prompt_id_column])
    if unconditional:
        return 0  # a corpus whose rows have no common start token to condition on is one group
    return prompt_group_id(prompt_ids)


class _PromptIds:
    """Checks that one `prompt_id` value names one prompt (else the rows it joins are compared as one prompt's)."""

    def __init__(self, column: str | None, tokenizer, name: str):
        self.column, self.tokenizer, self.name, self.seen = column, tokenizer, name, {}

    def _show(self, ids: list[int]) -> str:
        return repr(self.tokenizer.decode(ids)) if self.tokenizer is not None else str(ids)

    def check(self, row: dict[str, Any], index: int, prompt_ids: list[int]) -> None:
        if self.column is None or row.get(self.column) is None:
            return
        key = (type(row[self.column]).__name__, repr(row[self.column]))
        first, first_ids = self.seen.setdefault(key, (index, prompt_ids))
        if first_ids != prompt_ids:
            raise ValueError(
                f"`{self.name}` rows {first} and {index} share `{self.column}`={row[self.column]!r} but have different "
                f"prompts: {self._show(first_ids)} and {self._show(prompt_ids)}. Completions of one prompt id are "
                f"compared as completions of one prompt: give each prompt its own `{self.column}`, or drop the column "
                "(prompts are then grouped by their tokens)."
            )


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
    eos_ids: set[int] | None = None,
) -> Dataset:
    """Tokenises a dataset in any of TRL's formats ([`~hf_seqtemp.data.formats`]) and gives every example its
    prompt group.

    Each row becomes the scored event of [`~hf_seqtemp.data.formats.scored_event`] (a completion ends with EOS,
    appended unless the row's `truncated` is `True`; the prompt is what generation conditions on): `input_ids`,
    `completion_mask` (1 on the scored completion), a stable `example_id` and a `group_id`: the value of the
    `prompt_id_column` when the row has one, otherwise a hash of the prompt's token ids, so that identical prompts
    share a group whatever the layout (a plain-text corpus, whose rows all start from the start token, is one
    group). A prompt-only dataset becomes `prompt_ids`, `example_id` and `group_id`. Examples longer than
    `max_length` (a prompt alone: with no room for one completion token) are dropped with a warning giving their
    number; examples with no scored token likewise. Rows whose prompt tokens are not a prefix of their prompt +
    completion tokens are scored as written, with one warning giving their number and an example.

    Args:
        eos_ids (`set` of `int`, *optional*): tokens that end a completion besides the tokenizer's EOS (the model's
            generation config may list more, e.g. an end-of-turn token).

    Raises:
        TypeError: naming the row, the column and the expected type for a cell of the wrong type.
        ValueError: naming `name` when the dataset is empty or in no known format, naming both prompts when one
            `prompt_id` joins different prompts, and naming `max_length` when it would drop every example.
    """
    if dataset is None or len(dataset) == 0:
        raise ValueError(f"`{name}` is empty: pass a dataset with at least two examples.")
    fmt = detect_format(dataset.column_names, text_field, name)
    unconditional = fmt == "text" and not has_start_token(tokenizer) if tokenizer is not None else False
    prompt_ids = _PromptIds(prompt_id_column, tokenizer, name)
    rows, too_long, empty, longest_seen, as_written, example = [], 0, 0, 0, 0, None
    for index, row in enumerate(tqdm(dataset, desc=f"Tokenizing {name}", leave=False, disable=progress_disabled())):
        check_cells(row, fmt, text_field, name, index)
        prompt, completion, written = scored_event(row, tokenizer, fmt, text_field, eos_ids)
        prompt_ids.check(row, index, prompt)
        if written:
            as_written, example = as_written + 1, example or (index, row, prompt, completion)
        group = _group_id(row, prompt, unconditional, prompt_id_column)
        length = len(prompt) + (1 if fmt == "prompt_only" else len(completion))  # room for a sampled token
        longest_seen = max(longest_seen, length)
        if length > max_length:
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
    if as_written:
        _warn_as_written(as_written, len(dataset), example, tokenizer, name)
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


def _warn_as_written(count: int, total: int, example: tuple, tokenizer, name: str) -> None:
    """One warning for all rows whose prompt tokens are not a prefix of their prompt + completion tokens."""
    index, row, prompt, completion = example
    shown = {k: row[k] for k in ("prompt", "completion", "messages") if k in row}
    logger.warning(
        f"{name}: in {count} of {total} examples the tokens of prompt + completion do not start with the "
        "prompt's own tokens (tokens merge across the boundary, or the chat template's generation prompt is not "
        "rendered in the full conversation). Each is scored as written: the prompt exactly as generation conditions "
        f"on it, then the completion. Example, row {index}: {shown} is scored as prompt "
        f"{tokenizer.decode(prompt)!r} + completion {tokenizer.decode(completion)!r}. To silence this, end text "
        "prompts on a token boundary (e.g. a completion that starts with a space)."
    )


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
        return
    distinct: dict[int, set] = {}
    for group, ids in zip(prepared[GROUP_ID], prepared["input_ids"]):
        distinct.setdefault(group, set()).add(tuple(ids))
    same = [g for g, seen in distinct.items() if sizes[g] > 1 and len(seen) == 1]
    if same and len(same) == len(sizes) - singletons:
        raise ValueError(
            f"`{name}`: in every prompt group of several completions the completions are one and the same sequence "
            "(e.g. every completion an empty string, rendered as the same end-of-turn tokens), so no pair of "
            "different completions of a prompt exists: T_eff and τ are undefined (and a training loss would be 0). "
            "Give distinct completions per prompt, or a prompt-only dataset (completions are then sampled from the "
            "model)."
        )
    if same:
        logger.warning(
            f"{name}: {len(same)} of {len(sizes)} prompt groups hold one completion several times and nothing else; "
            "they add no pair to temper."
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
            "input_ids": torch.full((len(examples), length), self.pad_token_id, dtype=torch.long, device="cpu"),
            "attention_mask": torch.zeros(len(examples), length, dtype=torch.long, device="cpu"),
            "completion_mask": torch.zeros(len(examples), length, dtype=torch.bool, device="cpu"),
            EXAMPLE_ID: torch.tensor([e[EXAMPLE_ID] for e in examples], dtype=torch.long, device="cpu"),
            GROUP_ID: torch.tensor([e.get(GROUP_ID, 0) for e in examples], dtype=torch.long, device="cpu"),
        }
        if "ref_token_logps" in examples[0]:
            batch["ref_token_logps"] = torch.zeros(len(examples), length, dtype=torch.float32, device="cpu")
        for row, example in enumerate(examples):
            n = len(example["input_ids"])
            batch["input_ids"][row, :n] = torch.as_tensor(example["input_ids"], device="cpu")
            batch["attention_mask"][row, :n] = 1
            batch["completion_mask"][row, :n] = torch.as_tensor(
                example["completion_mask"], dtype=torch.bool, device="cpu"
            )
            if "ref_token_logps" in batch:
                batch["ref_token_logps"][row, :n] = torch.as_tensor(example["ref_token_logps"], device="cpu")
        for key in RAGGED_COLUMNS & examples[0].keys():  # per-example lists of their own lengths, 0-padded
            batch[key] = torch.zeros(
                len(examples), max(len(e[key]) for e in examples), dtype=torch.float32, device="cpu"
            )
            for row, example in enumerate(examples):
                batch[key][row, : len(example[key])] = torch.as_tensor(example[key], device="cpu")
        for key in ("ref_logps", "smc_log_weight"):  # per-sequence values (the latter: SMC particles' weights)
            if key in examples[0]:
                batch[key] = torch.tensor([e[key] for e in examples], dtype=torch.float32, device="cpu")
        return batch
