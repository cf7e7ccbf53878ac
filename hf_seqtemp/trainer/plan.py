# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The work a training run will do, and how long it should take on this machine, said before it starts.

[`work_plan`] counts it from the arguments and the data (prompts × completions × tokens sampled from p, sampling
calls, optimisation steps, the held-out measurement); [`estimate_seconds`] times a few forward passes of the model
as it is loaded (a probe of a few seconds) and scales them to that work. The estimate is an upper bound for
sampling (every completion is taken at `max_completion_length` tokens; most end earlier at EOS) and a rough figure
for the steps (a training step is counted as three forward passes of its batch).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

FORWARDS_PER_STEP = 3.0
"""A training step (forward and backward of the batch) counted as this many forward passes of it."""
PROBE_ROWS = 16
"""Rows of the probe's batches; its times are scaled linearly to the plan's batch sizes."""
MEASURED_MODELS = 3
"""Forward passes over each held-out row when the adapter is measured (base, token temperature, adapter)."""


@dataclass
class WorkPlan:
    """What a run will do. `seconds` is filled by [`estimate_seconds`] (`None`: not estimated)."""

    train_prompts: int
    held_out_prompts: int
    completions_per_prompt: int
    held_out_completions_per_prompt: int
    prompt_tokens: int
    completion_tokens: int
    rows_per_call: int
    steps: int
    rows_per_step: int
    seconds: dict | None = None

    @property
    def sampled_rows(self) -> int:
        return self.train_prompts * self.completions_per_prompt + (
            self.held_out_prompts * self.held_out_completions_per_prompt
        )

    @property
    def sampling_calls(self) -> int:
        return math.ceil(self.train_prompts * self.completions_per_prompt / self.rows_per_call) + math.ceil(
            self.held_out_prompts * self.held_out_completions_per_prompt / self.rows_per_call
        )

    def describe(self, name: str = "hf-seqtemp train") -> str:
        """The plan in words, as `hf-seqtemp train` prints it before it starts.

        Example:
        ```python
        >>> print(WorkPlan(24, 8, 4, 4, 30, 32, 120, 30, 8).describe())  # doctest: +NORMALIZE_WHITESPACE
        hf-seqtemp train: the plan: sample 4 completions of at most 32 tokens for each of 24 training prompts and 4 of
        each of 8 held-out prompts (128 completions, 2 sampling calls), then 30 optimisation steps of 8 rows, then
        measure the adapter on the held-out prompts.
        ```
        """
        held = (
            f" and {self.held_out_completions_per_prompt} of each of {self.held_out_prompts} held-out prompts"
            if self.held_out_prompts
            else ""
        )
        text = (
            f"{name}: the plan: sample {self.completions_per_prompt} completions of at most {self.completion_tokens} "
            f"tokens for each of {self.train_prompts} training prompts{held} ({self.sampled_rows} completions, "
            f"{self.sampling_calls} sampling call{'s' if self.sampling_calls != 1 else ''}), then {self.steps} "
            f"optimisation steps of {self.rows_per_step} rows"
            + (", then measure the adapter on the held-out prompts." if self.held_out_prompts else ".")
        )
        if self.seconds:
            s = self.seconds
            text += (
                f" Estimated on this machine (a probe of the loaded model, {s['probe']:.0f} s): sampling at most "
                f"{_minutes(s['sampling'])}, training about {_minutes(s['training'])}, measuring about "
                f"{_minutes(s['measuring'])}: about {_minutes(s['total'])} in all (loading and saving not counted). "
                "On a 2-core CPU keep it to minutes with fewer prompts, `--num_generations 4`, a shorter "
                "`--max_completion_length` and fewer `--max_steps`; on a GPU raise them (and `--sampling_batch_tokens`)."
            )
        return text


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def work_plan(args, train_prompts: int, held_out_prompts: int, prompt_tokens: int, world_size: int = 1) -> WorkPlan:
    """The work of a run of `args` ([`~hf_seqtemp.SeqTempConfig`]) on prompt-only data: `train_prompts` and
    `held_out_prompts` distinct prompts whose longest is `prompt_tokens` tokens.

    Example:
    ```python
    >>> from types import SimpleNamespace
    >>> args = SimpleNamespace(num_generations=8, num_generations_eval=None, max_completion_length=64,
    ...                        sampling_batch_tokens=8192, max_steps=-1, num_train_epochs=3,
    ...                        per_device_train_batch_size=8, gradient_accumulation_steps=1)
    >>> plan = work_plan(args, 30, 10, 30)
    >>> plan.steps, plan.sampling_calls
    (90, 4)
    ```
    """
    from .prompt_only import rows_per_sampling_call

    generations = args.num_generations
    held_generations = args.num_generations_eval or generations
    rows_per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * world_size
    if args.max_steps is not None and args.max_steps > 0:
        steps = args.max_steps
    else:
        steps = math.ceil(train_prompts * generations / rows_per_step) * math.ceil(args.num_train_epochs)
    rows = rows_per_sampling_call(args, [[0] * prompt_tokens])
    return WorkPlan(
        train_prompts,
        held_out_prompts,
        generations,
        held_generations,
        prompt_tokens,
        args.max_completion_length,
        rows,
        steps,
        args.per_device_train_batch_size * args.gradient_accumulation_steps,
    )


@torch.no_grad()
def estimate_seconds(model, plan: WorkPlan, pad_token_id: int = 0) -> dict:
    """Times the loaded `model` on batches of the plan's shapes (a few seconds) and scales to the plan's work.

    Sampling: two calls of `min(rows_per_call, sampled_rows)` rows, 1 and 5 new tokens, give the prompt's cost and
    the cost per token; every call is counted at `completion_tokens` tokens. Training: one forward pass of a step's
    rows at `prompt_tokens + completion_tokens`, times [`FORWARDS_PER_STEP`], per step. Measuring:
    [`MEASURED_MODELS`] forward passes over the held-out rows. Returns seconds per part, `total` and the `probe`'s.
    """
    from ..data.ancestral import exact_generate

    start = time.perf_counter()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    rows = max(1, min(plan.rows_per_call, plan.sampled_rows))
    probe_rows = min(rows, PROBE_ROWS)  # scaled to `rows` below: linear in rows, an upper bound on a GPU
    vocab = model.get_input_embeddings().weight.shape[0]
    generator = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, vocab, (probe_rows, plan.prompt_tokens), generator=generator, device="cpu").to(device)
    mask = torch.ones_like(ids)

    def timed(call) -> float:
        begin = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - begin

    timed(lambda: exact_generate(model, ids[:1], mask[:1], 1, set(), pad_token_id))  # warm-up
    one = timed(lambda: exact_generate(model, ids, mask, 1, set(), pad_token_id))
    five = timed(lambda: exact_generate(model, ids, mask, 5, set(), pad_token_id))
    per_token = max(five - one, 0.0) / 4 * rows / probe_rows
    prompt = max(one * rows / probe_rows - per_token, 0.0)
    sampling = plan.sampling_calls * (prompt + plan.completion_tokens * per_token)  # a call of the probe's rows
    width = plan.prompt_tokens + plan.completion_tokens
    step = max(1, plan.rows_per_step)
    step_rows = torch.randint(0, vocab, (min(step, PROBE_ROWS), width), generator=generator, device="cpu")
    step_rows = step_rows.to(device)
    forward = timed(lambda: model(input_ids=step_rows)) * step / min(step, PROBE_ROWS)
    training = plan.steps * FORWARDS_PER_STEP * forward
    held_rows = plan.held_out_prompts * plan.held_out_completions_per_prompt
    measuring = MEASURED_MODELS * forward * held_rows / max(1, plan.rows_per_step)
    model.train(was_training)
    seconds = {"sampling": sampling, "training": training, "measuring": measuring}
    seconds["total"] = sum(seconds.values())
    seconds["probe"] = time.perf_counter() - start
    return seconds
