# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Datasets for sequence-temperature training: tokenisation, padding, and samples drawn from the base model."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

EXAMPLE_ID = "example_id"
RAGGED_COLUMNS = frozenset({"ref_step_logps"})
"""Reference columns whose length is not the token count (diffusion: k orders × m steps), padded to the longest."""


def _tokenize_text(tokenizer, text: str) -> tuple[list[int], list[int]]:
    ids = tokenizer(text)["input_ids"]
    return ids, [0] + [1] * (len(ids) - 1)


def _tokenize_prompt_completion(tokenizer, prompt: str, completion: str) -> tuple[list[int], list[int]]:
    prompt_ids = tokenizer(prompt)["input_ids"]
    if not prompt_ids:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if start is None:
            raise ValueError("an empty `prompt` needs a BOS or EOS token to condition the first completion token on.")
        prompt_ids = [start]
    completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    return prompt_ids + completion_ids, [0] * len(prompt_ids) + [1] * len(completion_ids)


def _tokenize_row(row: dict[str, Any], tokenizer, text_field: str) -> tuple[list[int], list[int]]:
    if "input_ids" in row:
        ids = list(row["input_ids"])
        mask = list(row["completion_mask"]) if "completion_mask" in row else [0] + [1] * (len(ids) - 1)
        return ids, mask
    if tokenizer is None:
        raise ValueError("text datasets need a tokenizer: pass `processing_class=` to the trainer.")
    if "prompt" in row and "completion" in row:
        return _tokenize_prompt_completion(tokenizer, row["prompt"], row["completion"])
    return _tokenize_text(tokenizer, row[text_field])


def prepare_dataset(dataset: Dataset, tokenizer, text_field: str, max_length: int, name: str) -> Dataset:
    """Tokenises a dataset into `input_ids`, `completion_mask` and a stable `example_id` column.

    Accepted layouts, in order of precedence: pre-tokenised `input_ids` (+ optional `completion_mask`),
    `prompt`/`completion` text (only completion tokens scored), or plain text in `text_field` (every token but the
    first scored). Examples longer than `max_length` are dropped with a warning giving their number; examples with
    no scored token likewise.

    Raises:
        ValueError: naming `name` when the dataset is empty or has none of those columns, and naming `max_length`
            when it would drop every example.
    """
    if dataset is None or len(dataset) == 0:
        raise ValueError(f"`{name}` is empty: pass a dataset with at least two examples.")
    columns = set(dataset.column_names)
    if not ({"input_ids"} <= columns or {"prompt", "completion"} <= columns or text_field in columns):
        raise ValueError(
            f"`{name}` has columns {sorted(columns)} but needs a text column `{text_field}` (set "
            "`dataset_text_field`), `prompt` and `completion` columns, or pre-tokenised `input_ids`."
        )
    rows, too_long, empty, longest_seen = [], 0, 0, 0
    for index, row in enumerate(tqdm(dataset, desc=f"Tokenizing {name}", leave=False)):
        ids, mask = _tokenize_row(row, tokenizer, text_field)
        longest_seen = max(longest_seen, len(ids))
        if len(ids) > max_length:
            too_long += 1
        elif len(mask) < 2 or not any(mask[1:]) or mask[0]:
            empty += 1
        else:
            rows.append({"input_ids": ids, "completion_mask": mask, EXAMPLE_ID: index})
    if too_long:
        logger.warning(f"{name}: dropped {too_long} of {len(dataset)} examples longer than max_length={max_length}.")
    if empty:
        logger.warning(f"{name}: dropped {empty} examples with no scored completion token after the first token.")
    if not rows:
        if too_long:
            raise ValueError(
                f"`max_length`={max_length} is shorter than every example of `{name}` (the shortest has more "
                f"tokens; the longest has {longest_seen}): raise `max_length`."
            )
        raise ValueError(f"`{name}` has no example with a completion token to score.")
    return Dataset.from_list(rows)


@dataclass
class SeqTempCollator:
    """Right-pads token columns and stacks the reference columns of a batch of prepared examples.

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


def _format_prompts(tokenizer, prompts: Sequence[str], chat_template: bool, system_prompt: str | None) -> list[str]:
    if not (chat_template and getattr(tokenizer, "chat_template", None)):
        return list(prompts)
    system = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return [
        tokenizer.apply_chat_template(
            system + [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
        )
        for p in prompts
    ]


def _strip_completion(tokens: list[int], eos_ids: set[int], pad_token_id: int | None) -> list[int]:
    out = []
    for token in tokens:
        out.append(token)
        if token in eos_ids:
            break
    while out and pad_token_id is not None and out[-1] == pad_token_id and pad_token_id not in eos_ids:
        out.pop()
    return out


@torch.no_grad()
def sample_dataset(
    model,
    tokenizer,
    prompts: Sequence[str],
    num_samples: int = 1,
    max_new_tokens: int = 32,
    seed: int = 0,
    batch_size: int = 16,
    chat_template: bool = True,
    system_prompt: str | None = None,
) -> Dataset:
    """Builds a dataset by sampling completions from the model itself (exact ancestral sampling, no truncation).

    Sequence temperature tempers the model's own distribution p, so the natural training data are samples of p:
    each prompt gets `num_samples` completions drawn with `do_sample=True, temperature=1, top_k=0, top_p=1`. A
    completion stops at EOS (kept, since ending is part of the event) or after `max_new_tokens`.

    Args:
        model: a causal LM (`GenerationMixin`).
        tokenizer: its tokenizer.
        prompts (`list` of `str`): prompts; wrapped in the tokenizer's chat template when it has one and
            `chat_template=True`.
        num_samples (`int`, *optional*, defaults to 1): completions per prompt.
        max_new_tokens (`int`, *optional*, defaults to 32): longest completion.
        seed (`int`, *optional*, defaults to 0): seeds the sampling.
        batch_size (`int`, *optional*, defaults to 16): sequences generated at once.
        chat_template (`bool`, *optional*, defaults to `True`): apply the chat template to prompts.
        system_prompt (`str`, *optional*): system message put before each prompt in the chat template (a short one
            replaces a template's long default system prompt, which makes every sequence cheaper to score).

    Returns:
        [`~datasets.Dataset`] with `prompt`, `completion` (text) and the exact sampled tokens as `input_ids` and
        `completion_mask`, so that scoring never depends on re-tokenising text.

    Example:
    ```python
    >>> from hf_seqtemp import load_default_model, sample_dataset
    >>> model, tokenizer = load_default_model()  # doctest: +SKIP
    >>> data = sample_dataset(model, tokenizer, ["Name a colour."], num_samples=4, max_new_tokens=8)  # doctest: +SKIP
    ```
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"`num_samples` must be a positive integer, got {num_samples!r}.")
    if not prompts:
        raise ValueError("`prompts` is empty: give at least one prompt.")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"`max_new_tokens` must be a positive integer, got {max_new_tokens!r}.")
    texts = _format_prompts(tokenizer, prompts, chat_template, system_prompt)
    jobs = [(p, t) for p, t in zip(prompts, texts) for _ in range(num_samples)]
    eos = tokenizer.eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(eos_ids), 0)
    torch.manual_seed(seed)
    rows, side = [], tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        for start in tqdm(range(0, len(jobs), batch_size), desc="Sampling dataset from the model"):
            chunk = jobs[start : start + batch_size]
            enc = tokenizer([t for _, t in chunk], return_tensors="pt", padding=True).to(model.device)
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                max_new_tokens=max_new_tokens,
                pad_token_id=pad_id,
            )
            width = enc["input_ids"].shape[1]
            for row, (prompt, _) in enumerate(chunk):
                prompt_ids = enc["input_ids"][row][enc["attention_mask"][row].bool()].tolist()
                completion = _strip_completion(out[row, width:].tolist(), eos_ids, pad_id)
                if not completion:
                    continue
                rows.append(
                    {
                        "prompt": prompt,
                        "completion": tokenizer.decode(completion, skip_special_tokens=True),
                        "input_ids": prompt_ids + completion,
                        "completion_mask": [0] * len(prompt_ids) + [1] * len(completion),
                    }
                )
    finally:
        tokenizer.padding_side = side
    return Dataset.from_list(rows)
