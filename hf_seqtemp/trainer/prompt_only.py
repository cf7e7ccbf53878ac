# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Completing a prompt-only dataset with `num_generations` samples of the reference p per prompt."""

from __future__ import annotations

import torch
from datasets import Dataset

from ..data import EXAMPLE_ID, GROUP_ID, PROMPT_IDS, eos_ids_of, sample_completions


def pad_token_id_of(processing_class, model) -> int:
    """The id used for padding: the tokenizer's pad, else its EOS, else the model's, else 0."""
    for source in (processing_class, getattr(model, "generation_config", None), getattr(model, "config", None)):
        for name in ("pad_token_id", "eos_token_id"):
            value = getattr(source, name, None)
            value = value[0] if isinstance(value, list) and value else value
            if isinstance(value, int):
                return value
    return 0


def complete_prompts(reference, prompts: Dataset, args, processing_class, split: str) -> Dataset:
    """`args.num_generations` completions of every prompt, drawn exactly from `reference` (no grad, eval mode,
    token temperature 1, no top-k / top-p, ending at EOS or after `args.max_completion_length` tokens).

    The draw is seeded by `args.seed` (and the split) inside a forked RNG, so it is the same on every process and
    does not change the training run's own randomness.

    Returns:
        [`~datasets.Dataset`] of `input_ids`, `completion_mask`, `example_id` and the prompt's `group_id`.
    """
    repeats = args.num_generations
    prompt_ids = [ids for ids in prompts[PROMPT_IDS] for _ in range(repeats)]
    groups = [g for g in prompts[GROUP_ID] for _ in range(repeats)]
    was_training = reference.training
    reference.eval()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(args.seed + (0 if split == "train" else 1))
        completions = sample_completions(
            reference,
            prompt_ids,
            args.max_completion_length,
            eos_ids_of(reference, processing_class),
            pad_token_id_of(processing_class, reference),
            args.per_device_eval_batch_size,
            desc=f"Sampling {repeats} completions per prompt from the reference ({split})",
        )
    reference.train(was_training)
    rows = [
        {
            "input_ids": list(prompt) + completion,
            "completion_mask": [0] * len(prompt) + [1] * len(completion),
            EXAMPLE_ID: index,
            GROUP_ID: group,
        }
        for index, (prompt, completion, group) in enumerate(zip(prompt_ids, completions, groups))
    ]
    return Dataset.from_list(rows)
