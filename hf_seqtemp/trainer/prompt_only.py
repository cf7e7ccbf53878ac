# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Completing a prompt-only dataset with `num_generations` samples of the reference p per prompt: once before
training ([`complete_prompts`]), or afresh every `steps_per_generation` steps ([`CompletionPool`])."""

from __future__ import annotations

import torch
from datasets import Dataset
from transformers import TrainerCallback

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


def reference_from_sampler(rows: list[dict], completion_logps: list[list[float]]) -> list[tuple[float, list[float]]]:
    """`(ref_logps, ref_token_logps)` of each row from the sampler's own log-probabilities of its completion tokens.

    The completions are drawn from the reference p at token temperature 1 with no truncation of the distribution,
    so the logits `generate` computed while drawing them are p's conditionals of exactly these tokens: their
    log-softmax is what scoring the rows again would give (up to float rounding of the cached forward passes), at
    no extra forward pass. The per-token values are aligned with `input_ids` (0 on the prompt), as the scorer's.
    """
    values = []
    for row, logps in zip(rows, completion_logps):
        per_token = [0.0] * (len(row["input_ids"]) - len(logps)) + list(logps)
        values.append((torch.tensor(logps, dtype=torch.float32).sum().item(), per_token))
    return values


class CompletionPool(torch.utils.data.Dataset):
    """`num_generations` completion slots per prompt, refilled with fresh samples of the reference during training.

    Slot `i` belongs to prompt `i // num_generations` forever, so its prompt group (and a [`GroupSampler`] built on
    [`group_ids`]) never changes; only its completion does. Every `steps_per_generation` optimisation steps the pool
    moves to a new generation ([`FreshSamples`]), and a slot drawn in an earlier generation is resampled the next
    time a batch reads it. The collator ([`FreshCollator`]) does the sampling and the reference scoring for the
    whole batch at once, so a generation costs what sampling the batches it feeds costs.

    Args:
        prompts ([`~datasets.Dataset`]): a prepared prompt-only dataset (`prompt_ids`, `group_id`).
        num_generations (`int`): slots per prompt.
    """

    def __init__(self, prompts: Dataset, num_generations: int):
        self.prompt_ids = [ids for ids in prompts[PROMPT_IDS] for _ in range(num_generations)]
        self.group_ids = [g for g in prompts[GROUP_ID] for _ in range(num_generations)]
        self.rows: list[dict | None] = [None] * len(self.prompt_ids)
        self.drawn_in = [-1] * len(self.prompt_ids)
        self.generation = 0

    def __len__(self) -> int:
        return len(self.prompt_ids)

    def __getitem__(self, index: int) -> dict[str, int]:
        return {"pool_index": int(index)}

    def stale(self, indices: list[int]) -> list[int]:
        return [i for i in indices if self.drawn_in[i] < self.generation]


class FreshCollator:
    """Collates slots of a [`CompletionPool`], first drawing fresh completions for the stale ones (and their
    reference log-probabilities, which `score_reference` adds to the new rows). `draw` returns the completions, or
    `(completions, their per-token log p)` when the sampler's logits give the reference, passed on to
    `score_reference`."""

    def __init__(self, pool: CompletionPool, collator, draw, score_reference):
        self.pool, self.collator, self.draw, self.score_reference = pool, collator, draw, score_reference

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        if "pool_index" not in examples[0]:  # an evaluation batch of stored completions
            return self.collator(examples)
        indices = [e["pool_index"] for e in examples]
        stale = self.pool.stale(indices)
        if stale:
            drawn = self.draw([self.pool.prompt_ids[i] for i in stale])
            completions, sampler_logps = drawn if isinstance(drawn, tuple) else (drawn, None)
            rows = [
                {
                    "input_ids": list(self.pool.prompt_ids[i]) + completion,
                    "completion_mask": [0] * len(self.pool.prompt_ids[i]) + [1] * len(completion),
                    EXAMPLE_ID: i,
                    GROUP_ID: self.pool.group_ids[i],
                }
                for i, completion in zip(stale, completions)
            ]
            scored = self.score_reference(rows) if sampler_logps is None else self.score_reference(rows, sampler_logps)
            for i, row in zip(stale, scored):
                self.pool.rows[i], self.pool.drawn_in[i] = row, self.pool.generation
        return self.collator([self.pool.rows[i] for i in indices])


class FreshSamples(TrainerCallback):
    """Starts a new generation of the pool every `steps_per_generation` optimisation steps."""

    def __init__(self, pool: CompletionPool, steps_per_generation: int):
        self.pool, self.steps = pool, steps_per_generation

    def on_step_begin(self, args, state, control, **kwargs):
        self.pool.generation = state.global_step // self.steps
