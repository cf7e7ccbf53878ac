# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The work a training run will do, and how long it should take on this machine, said before it starts.

[`work_plan`] counts it from the arguments and the data (prompts × completions × tokens sampled from p, sampling
calls, optimisation steps, the held-out measurement); [`estimate_seconds`] times a few forward passes of the model
as it is loaded (a probe of several seconds) and scales them to that work. The estimate is an upper bound for
sampling (every completion is taken at `max_completion_length` tokens; most end earlier at EOS) and, for the steps
and the measurement, counts of forward passes calibrated on SmolLM2-135M-Instruct with LoRA on a 2-core CPU
([`FORWARDS_PER_STEP`], [`HELD_OUT_PASSES`], [`TUNING_PASSES`]): within about 20 % of that run's time there
(`benchmarks/results/first_hour_owndata.json`), a rough figure elsewhere.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

FORWARDS_PER_STEP = 1.5
"""A training step (forward and backward of the batch, the adapter's weights only) counted as this many forward
passes of its rows at full length. Measured on SmolLM2-135M-Instruct with LoRA on a 2-core CPU: 3.1 s a step of 16
rows where the probe's forward pass of 16 full-length rows took 2.2 s (completions ending early at EOS make the
step's rows shorter than the probe's)."""
PROBE_ROWS = 16
"""Rows of the probe's smaller batches (the larger have twice as many)."""
HELD_OUT_PASSES = 4.0
"""The measurement's work over each held-out row, in the probe's full-length forward passes: the evaluation loss,
log p under the base, token temperature T, the token temperature tuned on them (its search), the one tuned once and
the adapter. Measured on SmolLM2-135M-Instruct on a 2-core CPU: about 18 s for 32 held-out samples of at most 16
tokens, where the probe's forward pass of 16 full-length rows took 2.2 s."""
TUNING_PASSES = 2.0
"""The tuned-once baseline's work over the training samples, in the probe's forward passes: their log p, then the
search's scoring at each trial temperature. Measured as above: 25.5 s for 96 samples."""


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
        return len(self.call_rows())

    def call_rows(self) -> list[int]:
        """The rows of every sampling call: the training completions, then the held-out ones, `rows_per_call` each
        (the last of each split takes the rest).

        Example:
        ```python
        >>> WorkPlan(24, 8, 4, 4, 30, 32, 40, 30, 8).call_rows()  # 96 training rows, then 32 held-out rows
        [40, 40, 16, 32]
        ```
        """
        sizes = []
        for total in (self.train_prompts * self.completions_per_prompt,
                      self.held_out_prompts * self.held_out_completions_per_prompt):  # fmt: skip
            full, rest = divmod(total, self.rows_per_call)
            sizes += [self.rows_per_call] * full + ([rest] if rest else [])
        return sizes

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
            f"optimisation step{'s' if self.steps != 1 else ''} of {self.rows_per_step} rows"
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
    """Times the loaded `model` on batches of the plan's shapes (several seconds) and scales to the plan's work.

    Sampling: calls of 1 and 5 new tokens at [`PROBE_ROWS`] and twice as many rows give the prompt's cost (linear in
    rows) and the cost of a decoding step (affine in rows: a batched step costs less per row as rows grow), taken to
    the rows of each of the plan's calls; every call is counted at `completion_tokens` tokens (an upper bound: most
    completions end earlier). Training: a forward pass of a step's rows at `prompt_tokens +
    completion_tokens`, times [`FORWARDS_PER_STEP`], per step. Measuring: [`HELD_OUT_PASSES`] such passes over the
    held-out rows and, for the tuned-once baseline, [`TUNING_PASSES`] over the training samples. Each shape is warmed
    up before it is timed. Returns seconds per part, `total` and the `probe`'s.
    """
    from ..data.ancestral import exact_generate

    start = time.perf_counter()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    rows = max(1, min(plan.rows_per_call, plan.sampled_rows))
    vocab = model.get_input_embeddings().weight.shape[0]
    generator = torch.Generator(device="cpu").manual_seed(0)

    def timed(call) -> float:
        begin = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - begin

    def decode_costs(size: int, warm: bool) -> tuple[float, float]:
        """(seconds of the prompt's forward pass, seconds per decoding step) at `size` rows."""
        ids = torch.randint(0, vocab, (size, plan.prompt_tokens), generator=generator, device="cpu").to(device)
        mask = torch.ones_like(ids)
        if warm:
            timed(lambda: exact_generate(model, ids, mask, 1, set(), pad_token_id))
        one = timed(lambda: exact_generate(model, ids, mask, 1, set(), pad_token_id))
        five = timed(lambda: exact_generate(model, ids, mask, 5, set(), pad_token_id))
        step = max(five - one, 0.0) / 4
        return max(one - step, 0.0), step

    small = min(rows, PROBE_ROWS)
    large = min(rows, 2 * PROBE_ROWS)
    prompt_large, step_large = decode_costs(large, warm=True)
    _, step_small = decode_costs(small, warm=False) if large > small else (prompt_large, step_large)
    slope = max(step_large - step_small, 0.0) / (large - small) if large > small else 0.0

    def call_seconds(size: int) -> float:
        """A sampling call of `size` rows: the prompt's pass (linear in rows) and `completion_tokens` steps (affine)."""
        per_token = step_large + slope * (size - large) if size > large else step_large * size / large
        return prompt_large * size / large + plan.completion_tokens * per_token

    sampling = sum(call_seconds(size) for size in plan.call_rows())
    width = plan.prompt_tokens + plan.completion_tokens
    step = max(1, plan.rows_per_step)
    step_rows = torch.randint(0, vocab, (min(step, PROBE_ROWS), width), generator=generator, device="cpu")
    step_rows = step_rows.to(device)
    forward = timed(lambda: model(input_ids=step_rows)) * step / min(step, PROBE_ROWS)
    training = plan.steps * FORWARDS_PER_STEP * forward
    held_rows = plan.held_out_prompts * plan.held_out_completions_per_prompt
    train_rows = plan.train_prompts * plan.completions_per_prompt if plan.held_out_prompts else 0
    measuring = forward * (HELD_OUT_PASSES * held_rows + TUNING_PASSES * train_rows) / step
    model.train(was_training)
    seconds = {"sampling": sampling, "training": training, "measuring": measuring}
    seconds["total"] = sum(seconds.values())
    seconds["probe"] = time.perf_counter() - start
    return seconds
