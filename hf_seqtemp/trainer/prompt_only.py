# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Completing a prompt-only dataset with `num_generations` samples of the reference p per prompt: once before
training ([`complete_prompts`]), or afresh every `sample_every_steps` steps ([`CompletionPool`])."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from accelerate.utils import gather_object
from datasets import Dataset
from tqdm.auto import tqdm
from transformers import TrainerCallback

from ..data import EXAMPLE_ID, GROUP_ID, PROMPT_IDS, eos_ids_of, sample_completions
from ..data.cells import TRUNCATED
from ..progress import get_logger, progress_disabled
from .distributed import sampling_seed, seeded

logger = get_logger(__name__)


def pad_token_id_of(processing_class, model) -> int:
    """The id used for padding: the tokenizer's pad, else its EOS, else the model's, else 0."""
    for source in (processing_class, getattr(model, "generation_config", None), getattr(model, "config", None)):
        for name in ("pad_token_id", "eos_token_id"):
            value = getattr(source, name, None)
            value = value[0] if isinstance(value, list) and value else value
            if isinstance(value, int):
                return value
    return 0


def sampled_row(
    prompt: list[int], completion: list[int], max_length: int | None, eos_ids: set[int]
) -> tuple[dict, bool]:
    """The row of a prompt and its sampled completion, the completion cut to fit `max_length` tokens in all, and
    whether it was cut. The row's `truncated` is `True` when the completion does not end with EOS (cut here, or at
    `max_completion_length`): it is then the event "these tokens first", not a completed answer.

    Example:
    ```python
    >>> sampled_row([0, 1], [5, 6, 2], 4, {2})
    ({'input_ids': [0, 1, 5, 6], 'completion_mask': [0, 0, 1, 1], 'truncated': True}, True)
    ```
    """
    room = len(completion) if max_length is None else max(max_length - len(prompt), 0)
    cut = len(completion) > room
    completion = list(completion[:room])
    row = {
        "input_ids": list(prompt) + completion,
        "completion_mask": [0] * len(prompt) + [1] * len(completion),
        TRUNCATED: not completion or completion[-1] not in eos_ids,
    }
    return row, cut


def warn_cut(cut: int, total: int, max_length: int, where: str) -> None:
    """One warning giving how many sampled completions were cut to fit `max_length`."""
    if cut:
        logger.warning(
            f"{where}: cut {cut} of {total} sampled completions so that prompt + completion fits max_length="
            f"{max_length} (marked truncated: the event is then their first tokens, without an end). Raise "
            "`max_length` or lower `max_completion_length` to keep whole completions."
        )


def rows_per_sampling_call(args, prompt_ids) -> int:
    """Rows of one sampling call: as many as `args.sampling_batch_tokens` holds at `longest prompt +
    max_completion_length` tokens each (at least one), so that many prompts share a `generate` call.

    Example:
    ```python
    >>> from types import SimpleNamespace
    >>> rows_per_sampling_call(SimpleNamespace(sampling_batch_tokens=8192, max_completion_length=64), [[1] * 32] * 500)
    85
    ```
    """
    longest = max((len(ids) for ids in prompt_ids), default=0)
    return max(1, args.sampling_batch_tokens // (longest + args.max_completion_length))


def complete_prompts(
    reference,
    prompts: Dataset,
    args,
    processing_class,
    split: str,
    accelerator=None,
    return_logps: bool = False,
    draw=None,
) -> Dataset | tuple[Dataset, list[list[float]]]:
    """`args.num_generations` (for the eval split `args.num_generations_eval` when set) completions of every prompt,
    drawn exactly from `reference` (no grad, eval mode,
    token temperature 1, no top-k / top-p, ending at EOS or after `args.max_completion_length` tokens), each cut
    to fit `args.max_length` tokens with its prompt ([`sampled_row`], warned once with their number).

    The rows are drawn in chunks of [`rows_per_sampling_call`] rows, chunk `i` from its own stream seeded by
    `args.seed`, the split and `i` (forked, so the training run's own randomness is untouched). Under several
    processes ([`accelerate.Accelerator`] `accelerator`) the chunks are divided across ranks and gathered, so the
    work is divided and the completions are those one process draws.

    With `return_logps`, also the sampler's log p of every kept completion token ([`sample_completions`]), for
    [`reference_from_sampler`]: the reference values without a second forward pass.

    With `draw` (an engine sampler, [`~hf_seqtemp.trainer.engine_sampling.EngineDraws`]: `draw(reference, prompts,
    eos_ids, seed) -> (completions, logps)`) the completions come from the engine, each rank's share in one call
    (the engine batches it), seeded by `args.seed`, the split and the share's first row.

    Returns:
        [`~datasets.Dataset`] of `input_ids`, `completion_mask`, `example_id` and the prompt's `group_id`; with
        `return_logps`, a tuple of it and the per-row token log-probabilities (cut as the rows are).
    """
    repeats = args.num_generations
    if split == "eval" and getattr(args, "num_generations_eval", None) is not None:
        repeats = args.num_generations_eval
    prompt_ids = [ids for ids in prompts[PROMPT_IDS] for _ in range(repeats)]
    groups = [g for g in prompts[GROUP_ID] for _ in range(repeats)]
    rank, world = (accelerator.process_index, accelerator.num_processes) if accelerator is not None else (0, 1)
    size = rows_per_sampling_call(args, prompt_ids) if draw is None else max(1, -(-len(prompt_ids) // world))
    chunks = list(range(0, len(prompt_ids), size))
    was_training = reference.training
    reference.eval()
    drawn = []
    eos_ids, pad = eos_ids_of(reference, processing_class), pad_token_id_of(processing_class, reference)
    desc = f"Sampling {repeats} completions per prompt from the reference ({split})"
    for start in tqdm(
        chunks[rank::world],
        desc=desc,
        disable=len(chunks) < 2 or rank > 0 or progress_disabled(getattr(args, "disable_tqdm", False)),
        leave=False,
    ):
        seed = sampling_seed(args.seed, 0 if split == "train" else 1, start)
        chunk = prompt_ids[start : start + size]
        if draw is not None:
            completions, logps = draw(reference, chunk, eos_ids, seed)
            drawn.append((start, completions, logps if return_logps else [None] * len(completions)))
            continue
        with seeded(seed):
            out = sample_completions(
                reference, chunk, args.max_completion_length, eos_ids, pad, size, None, return_logps=return_logps
            )
            drawn.append((start, *(out if return_logps else (out, [None] * len(out)))))
    if world > 1:
        drawn = sorted(gather_object(drawn))
    completions = [completion for _, chunk, _ in drawn for completion in chunk]
    token_logps = [values for _, _, chunk in drawn for values in chunk]
    reference.train(was_training)
    rows, kept_logps, cut = [], [], 0
    for index, (prompt, completion, group) in enumerate(zip(prompt_ids, completions, groups)):
        row, was_cut = sampled_row(prompt, completion, args.max_length, eos_ids)
        rows.append({**row, EXAMPLE_ID: index, GROUP_ID: group})
        if return_logps:
            kept_logps.append(token_logps[index][: sum(row["completion_mask"])])
        cut += was_cut
    warn_cut(cut, len(rows), args.max_length, f"{split}_dataset")
    return (Dataset.from_list(rows), kept_logps) if return_logps else Dataset.from_list(rows)


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
        values.append((torch.tensor(logps, dtype=torch.float32, device="cpu").sum().item(), per_token))
    return values


class CompletionPool(torch.utils.data.Dataset):
    """`num_generations` completion slots per prompt, refilled with fresh samples of the reference during training.

    Slot `i` belongs to prompt `i // num_generations` forever, so its prompt group (and a [`GroupSampler`] built on
    [`group_ids`]) never changes; only its completion does. Batch b (counted on this process, from the start of
    training) belongs to generation `b // batches_per_generation`, and a slot drawn in an earlier generation is
    resampled the next time a batch reads it. A batch's generation follows from its index, not from when the
    dataloader happens to collate it (one batch ahead within an epoch), so a resumed run ([`FreshSamples`] restarts
    the count at the checkpoint's step) collates every batch in the generation the uninterrupted run did. The
    collator ([`FreshCollator`]) does the sampling and the reference scoring for the whole batch at once, so a
    generation costs what sampling the batches it feeds costs.

    Args:
        prompts ([`~datasets.Dataset`]): a prepared prompt-only dataset (`prompt_ids`, `group_id`).
        num_generations (`int`): slots per prompt.
        batches_per_generation (`int`, *optional*, defaults to 1): `sample_every_steps` × gradient accumulation.
    """

    def __init__(self, prompts: Dataset, num_generations: int, batches_per_generation: int | None = 1):
        self.num_generations = num_generations
        self.prompt_ids = [ids for ids in prompts[PROMPT_IDS] for _ in range(num_generations)]
        self.group_ids = [g for g in prompts[GROUP_ID] for _ in range(num_generations)]
        self.rows: list[dict | None] = [None] * len(self.prompt_ids)
        self.drawn_in = [-1] * len(self.prompt_ids)
        self.batches_per_generation = batches_per_generation  # None: one generation, drawn once
        self.batches = 0  # batches collated so far (from the checkpoint's step on, in a resumed run)
        self.generation = 0

    def __len__(self) -> int:
        return len(self.prompt_ids)

    def __getitem__(self, index: int) -> dict[str, int]:
        return {"pool_index": int(index)}

    def next_batch(self) -> None:
        """Moves to the next batch, and to its generation."""
        self.generation = 0 if self.batches_per_generation is None else self.batches // self.batches_per_generation
        self.batches += 1

    def stale(self, indices: list[int], whole_prompts: bool = False) -> list[int]:
        """The slots of `indices` drawn in an earlier generation; with `whole_prompts`, every stale slot of their
        prompts too (in slot order), for draws that make a prompt's `num_generations` slots together."""
        stale = [i for i in indices if self.drawn_in[i] < self.generation]
        if not whole_prompts:
            return stale
        n = self.num_generations
        prompts = sorted({i // n for i in stale})
        return [i for p in prompts for i in range(p * n, (p + 1) * n) if self.drawn_in[i] < self.generation]

    def state_dict(self) -> dict:
        """What a checkpoint keeps of the pool: every slot's row and the generation it was drawn in (the rows of the
        batch after the checkpoint included, when the dataloader collated it ahead)."""
        return {"rows": self.rows, "drawn_in": self.drawn_in}

    def load_state_dict(self, state: dict) -> None:
        if len(state["rows"]) != len(self.rows):
            raise ValueError(
                f"the checkpoint's pool of fresh samples has {len(state['rows'])} slots but this run's has "
                f"{len(self.rows)}: resume with the same prompts and `num_generations`."
            )
        self.rows, self.drawn_in = list(state["rows"]), list(state["drawn_in"])


@dataclass
class DrawnParticles:
    """What a draw of SMC particles gives the pool: each slot's completion and its extra columns
    (`smc_log_weight`)."""

    completions: list[list[int]]
    columns: list[dict]


class FreshCollator:
    """Collates slots of a [`CompletionPool`], first drawing fresh completions for the stale ones (and their
    reference log-probabilities, which `score_reference` adds to the collated batch of new rows). A completion is
    cut to fit `max_length` tokens with its prompt ([`sampled_row`]); the first cut is warned about with the number
    of cut completions of that draw, and `cut` counts them all. `draw` returns the completions, or
    `(completions, their per-token log p)` when the sampler's logits give the reference, passed on to
    `score_reference` (cut with their completions)."""

    def __init__(
        self,
        pool: CompletionPool,
        collator,
        draw,
        score_reference,
        max_length=None,
        eos_ids=frozenset(),
        whole_prompts: bool = False,
    ):
        self.pool, self.collator, self.draw, self.score_reference = pool, collator, draw, score_reference
        self.max_length, self.eos_ids, self.cut = max_length, set(eos_ids), 0
        self.whole_prompts = whole_prompts  # SMC particles: a prompt's slots are drawn together

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        if "pool_index" not in examples[0]:  # an evaluation batch of stored completions
            return self.collator(examples)
        indices = [e["pool_index"] for e in examples]
        self.pool.next_batch()
        stale = self.pool.stale(indices, self.whole_prompts)
        if stale:
            drawn = self.draw([self.pool.prompt_ids[i] for i in stale], stale)
            columns = [{}] * len(stale)
            if isinstance(drawn, DrawnParticles):
                completions, sampler_logps, columns = drawn.completions, None, drawn.columns
            else:
                completions, sampler_logps = drawn if isinstance(drawn, tuple) else (drawn, None)
            rows, cut = [], 0
            for i, completion, extra in zip(stale, completions, columns):
                row, was_cut = sampled_row(self.pool.prompt_ids[i], completion, self.max_length, self.eos_ids)
                rows.append({**row, EXAMPLE_ID: i, GROUP_ID: self.pool.group_ids[i], **extra})
                cut += was_cut
            if cut and not self.cut:
                warn_cut(cut, len(rows), self.max_length, "fresh samples (further cuts are counted, not warned)")
            self.cut += cut
            if sampler_logps is None:
                scored = self.score_reference(rows)
            else:
                kept = [logps[: sum(row["completion_mask"])] for row, logps in zip(rows, sampler_logps)]
                scored = self.score_reference(rows, kept)
            for i, row in zip(stale, scored):
                self.pool.rows[i], self.pool.drawn_in[i] = row, self.pool.generation
        return self.collator([self.pool.rows[i] for i in indices])


class FreshSamples(TrainerCallback):
    """Starts the pool's count of batches at the step training starts from (0, or a resumed checkpoint's step)."""

    def __init__(self, pool: CompletionPool):
        self.pool = pool

    def on_train_begin(self, args, state, control, **kwargs):
        self.pool.batches = state.global_step * args.gradient_accumulation_steps
