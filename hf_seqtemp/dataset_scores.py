# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Scoring a whole dataset under a model: the sequence log-likelihoods that every measurement starts from."""

from __future__ import annotations

import torch
from datasets import Dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from .data import GROUP_ID, SeqTempCollator, prepare_dataset
from .likelihood import AutoregressiveScorer, SequenceScorer
from .models.validation import check_model_kind
from .progress import progress_disabled


@torch.no_grad()
def score_dataset(
    model,
    dataset: Dataset,
    scorer: SequenceScorer | None = None,
    tokenizer=None,
    batch_size: int = 16,
    max_length: int = 4096,
    desc: str = "Scoring",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sequence log-likelihoods of every example of a dataset, in dataset order.

    Args:
        model: the model to score under.
        dataset ([`~datasets.Dataset`]): pre-tokenised `input_ids` (+ `completion_mask`), prompt/completion or text.
        scorer ([`SequenceScorer`], *optional*): defaults to the exact [`AutoregressiveScorer`].
        tokenizer (*optional*): needed for text datasets.
        batch_size (`int`, *optional*, defaults to 16): sequences per forward pass.
        max_length (`int`, *optional*, defaults to 4096): longer examples are dropped with a warning.
        desc (`str`, *optional*): progress-bar label.

    Returns:
        A tuple `(logps, lengths)`: float32 log-likelihoods of shape `(n,)` and scored-token counts of shape `(n,)`.

    Example:
    ```python
    >>> logps, lengths = score_dataset(model, held_out)  # doctest: +SKIP
    ```
    """
    scorer = scorer or AutoregressiveScorer()
    check_model_kind(model, allow_diffusion=not isinstance(scorer, AutoregressiveScorer))
    prepared = prepare_dataset(dataset, tokenizer, "text", max_length, "dataset")
    device = next(model.parameters()).device
    loader = DataLoader(prepared, batch_size=batch_size, collate_fn=SeqTempCollator())
    was_training = model.training
    model.eval()
    logps, lengths = [], []
    for batch in tqdm(loader, desc=desc, disable=progress_disabled()):
        batch = {k: v.to(device) for k, v in batch.items()}
        logps.append(
            scorer(model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"]).float().cpu()
        )
        lengths.append(batch["completion_mask"].sum(1).cpu())
    model.train(was_training)
    return torch.cat(logps), torch.cat(lengths)


def dataset_groups(dataset: Dataset, tokenizer=None, max_length: int = 4096) -> list[int]:
    """The prompt group of every sequence [`score_dataset`] scores, in the same order (see
    [`~hf_seqtemp.data.prepare_dataset`]: a `prompt_id` column, else the prompt's tokens, one group for a corpus)."""
    return prepare_dataset(dataset, tokenizer, "text", max_length, "dataset")[GROUP_ID]
