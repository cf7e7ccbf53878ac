# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The reference p of [`SeqTempTrainer`]: which model it is, and its log-probabilities computed once per example."""

from __future__ import annotations

import contextlib

import torch
from datasets import Dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from ..data import EXAMPLE_ID, GROUP_ID, eos_ids_of, is_prompt_only, sample_completions
from ..groups import group_codes, require_pairs
from ..likelihood.autoregressive import AutoregressiveScorer
from ..peft_compat import peft_model_of
from ..progress import get_logger, progress_disabled
from .distributed import sampling_seed, seeded
from .engine_sampling import EngineDraws
from .eval_sets import each_eval, split_of
from .prompt_only import CompletionPool, complete_prompts, pad_token_id_of, reference_from_sampler

logger = get_logger(__name__)


class ReferenceMixin:
    """The reference p of a [`SeqTempTrainer`] and its precomputed values.

    p is the model with its adapter disabled (PEFT), a frozen copy (`_ref_model`, full fine-tuning that needs one),
    or the untouched model before training. With `precompute_ref_log_probs` its sequence log-probabilities (and the
    per-token or per-step values the objective needs, [`~hf_seqtemp.trainer.families`]) are stored as dataset
    columns keyed by example, as TRL's DPO does, so shuffling keeps working.
    """

    _ref_model = None
    _engine_draws: EngineDraws | None = None  # `use_vllm=True`: samples of p from an engine server
    _scored_by_sampler: frozenset[str] = frozenset()  # splits whose sampled rows took their reference from the sampler

    @contextlib.contextmanager
    def _reference_model(self):
        """Yields the reference p: the adapter disabled, the frozen copy, or the untouched model before training."""
        model, peft = self.model, peft_model_of(self.model)
        if peft is not None:
            with peft.disable_adapter():
                yield model
        else:
            yield self._ref_model if self._ref_model is not None else model

    @torch.no_grad()
    def _reference_logps(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """p's log-probabilities of a batch, in the precision the policy is scored in: under `bf16`/`fp16` the
        reference runs under the same autocast as training (a float32 reference against a bf16 policy reads an
        untrained adapter's T_eff 0.9956, not 1)."""
        with self._reference_model() as reference, self._policy_precision():
            was_training = reference.training
            reference.eval()
            seq_logps, token_logps = self.family.reference(reference, batch)
            reference.train(was_training)
        return seq_logps, token_logps

    def _policy_precision(self):
        """The autocast the policy is scored under (`bf16` / `fp16`), or nothing."""
        if (self.args.bf16 or self.args.fp16) and getattr(self, "accelerator", None) is not None:
            return self.accelerator.autocast()
        return contextlib.nullcontext()

    def _reference_from_sampler(self) -> bool:
        """Whether the reference values are p's log-probabilities of the completion tokens themselves (exact
        autoregressive scoring at token temperature 1), which the sampler's logits hold: not under `bf16`/`fp16`,
        whose policy is scored under autocast while the sampler's logits are float32 (the reference is then scored
        again, in the policy's precision)."""
        scorer = getattr(self.family, "scorer", None)
        return (
            not (self.args.bf16 or self.args.fp16)
            and getattr(self.family, "reference_column", None) == "ref_token_logps"
            and isinstance(scorer, AutoregressiveScorer)
            and scorer.token_temperature == 1.0
        )

    def _draw(
        self, prompts: list[list[int]], slots: list[int]
    ) -> list[list[int]] | tuple[list[list[int]], list[list[float]]]:
        """One fresh completion of each prompt from the reference p (exact sampling), for the completion pool, with
        their per-token log p from the sampler's logits when they are the reference values. A stream of its own,
        seeded by the run's seed, this rank, the pool's generation and the first slot drawn, so ranks draw
        independently and a draw is reproducible (it does not depend on what ran before)."""
        seed = sampling_seed(self.args.seed, self.accelerator.process_index, self._pool.generation, slots[0])
        with self._reference_model() as reference, seeded(seed):
            was_training = reference.training
            reference.eval()
            eos, pad = eos_ids_of(reference, self.processing_class), pad_token_id_of(self.processing_class, reference)
            if self.args.use_vllm:  # the engine's log p are the reference values whenever the sampler's logits are
                completions, logps = self._engine_draws_of()(reference, prompts, eos, seed)
                out = (completions, logps) if self._reference_from_sampler() else completions
            else:
                args = (reference, prompts, self.args.max_completion_length, eos, pad, len(prompts), None)
                out = sample_completions(*args, return_logps=self._reference_from_sampler())
            reference.train(was_training)
        return out

    def _engine_draws_of(self) -> EngineDraws:
        """The engine sampler of `use_vllm=True` (one per trainer: it checks its first draw against the scorer)."""
        if self._engine_draws is None:
            self._engine_draws = EngineDraws(self.args)
        return self._engine_draws

    def _sampling_state(self) -> dict | None:
        """What a checkpoint keeps of the fresh samples of this process: the pool (its completions and when each was
        drawn). The draws need no saved random state: each is seeded by (seed, rank, generation, first slot)."""
        if self._pool is None:
            return None
        return {"pool": self._pool.state_dict()}

    def _load_sampling_state(self, state: dict) -> None:
        """Restores what [`_sampling_state`] saved."""
        self._pool.load_state_dict(state["pool"])

    def _reference_values(self, batch: dict[str, torch.Tensor]) -> list[tuple[float, list[float] | None]]:
        """`(ref_logps, stored per-token or per-step values)` of every row of a collated batch."""
        batch = {k: v.to(self.args.device) for k, v in batch.items()}
        seq, values = self._reference_logps(batch)
        stored = self.family.reference_rows(values, batch) if values is not None else [None] * len(seq)
        return list(zip(seq.tolist(), stored))

    def _score_rows(self, rows: list[dict], sampler_logps: list[list[float]] | None = None) -> list[dict]:
        """`rows` with their reference columns (`ref_logps`, and per-token values when the objective needs them),
        from the sampler's log-probabilities when given, else from a forward pass of the reference."""
        if sampler_logps is not None:
            values = reference_from_sampler(rows, sampler_logps)
        else:
            values = self._reference_values(self.data_collator.collator(rows))
        for row, (value, per_token) in zip(rows, values):
            row["ref_logps"] = value
            if self.objective.needs_ref_token_logps:
                row[self.family.reference_column] = per_token
        return rows

    def _prepare_reference(self):
        if not self.args.precompute_ref_log_probs:
            return
        # a completion pool scores its fresh rows as it draws them; sampled prompt-only rows took theirs from the sampler
        if self._pool is None and "train" not in self._scored_by_sampler:
            self.train_dataset = self._add_reference_columns(self.train_dataset, "train")
        if self.eval_dataset is not None:

            def scored(name, dataset):
                split = split_of(name)
                return dataset if split in self._scored_by_sampler else self._add_reference_columns(dataset, split)

            self.eval_dataset = each_eval(self.eval_dataset, scored)

    def _reference_column_names(self) -> set[str]:
        token = {self.family.reference_column} if self.objective.needs_ref_token_logps else set()
        return {"ref_logps"} | token | set(self.family.extra_reference_columns([]))

    def _add_sampler_reference_columns(self, dataset: Dataset, token_logps: list[list[float]]) -> Dataset:
        """The reference columns of completions sampled from p, from the sampler's own log-probabilities
        ([`~hf_seqtemp.trainer.prompt_only.reference_from_sampler`]), as [`_add_reference_columns`] adds them."""
        values = reference_from_sampler(dataset.to_list(), token_logps)
        dataset = dataset.add_column("ref_logps", [value for value, _ in values])
        if self.objective.needs_ref_token_logps:
            dataset = dataset.add_column(self.family.reference_column, [per_token for _, per_token in values])
        for name, column in self.family.extra_reference_columns(dataset[EXAMPLE_ID]).items():
            dataset = dataset.add_column(name, column)
        return dataset

    def _add_reference_columns(self, dataset: Dataset, split: str) -> Dataset:
        """Scores the dataset under the reference once; each rank scores its share, then all ranks gather."""
        stale = [name for name in self._reference_column_names() if name in dataset.column_names]
        if stale:  # the reference is this trainer's p: values a dataset brings are computed again, not trusted
            logger.warning(f"{split}_dataset: replacing its columns {sorted(stale)} by the reference's own values.")
            dataset = dataset.remove_columns(stale)
        indices = list(range(len(dataset)))
        with self.accelerator.split_between_processes(indices) as mine:
            loader = DataLoader(
                dataset.select(mine), batch_size=self.args.per_device_eval_batch_size, collate_fn=self.data_collator
            )
            rows = []
            for batch in tqdm(
                loader,
                desc=f"Reference log-probs ({split})",
                disable=progress_disabled(self.args.disable_tqdm) or not self.is_local_process_zero(),
            ):
                rows.extend(self._reference_values(batch))
        rows = [(i, *row) for i, row in zip(mine, rows)]
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            rows = sorted(gather_object(rows))
        dataset = dataset.add_column("ref_logps", [row[1] for row in rows])
        if self.objective.needs_ref_token_logps:
            dataset = dataset.add_column(self.family.reference_column, [row[2] for row in rows])
        for name, values in self.family.extra_reference_columns(dataset[EXAMPLE_ID]).items():
            dataset = dataset.add_column(name, values)
        return dataset

    def _complete_prompt_only_datasets(self):
        """Samples `num_generations` completions per prompt from the reference for prompt-only datasets, and checks
        that an eval set has completions of one prompt to compare."""
        self.train_dataset = self._complete_split(self.train_dataset, "train")
        if self.eval_dataset is not None:
            self.eval_dataset = each_eval(
                self.eval_dataset, lambda name, data: self._complete_split(data, split_of(name))
            )
            each_eval(
                self.eval_dataset,
                lambda name, data: require_pairs(
                    group_codes(data[GROUP_ID], len(data)),
                    name,
                    "give at least two completions of each held-out prompt (a prompt-only eval set has "
                    "`num_generations_eval` or `num_generations` sampled per prompt), or a shared `prompt_id` column",
                ),
            )

    def _complete_split(self, dataset, split: str):
        """`dataset` with its prompts' completions sampled from the reference, when it holds prompts only."""
        online = isinstance(dataset, CompletionPool)
        if dataset is None or not (online or is_prompt_only(dataset)):
            return dataset
        if not self.family.samples_completions:
            raise ValueError(
                f"`{split}_dataset` holds prompts only: completions are sampled for causal LMs only. Give a "
                f"{self.family.name} model its completions (`prompt`/`completion` or `input_ids`)."
            )
        if online:
            return dataset
        from_sampler = self.args.precompute_ref_log_probs and self._reference_from_sampler()
        draw = self._engine_draws_of() if self.args.use_vllm else None
        with self._reference_model() as reference:
            dataset = complete_prompts(
                reference, dataset, self.args, self.processing_class, split, self.accelerator, from_sampler, draw
            )
        if from_sampler:  # the sampler's logits are p's: no second forward pass to score the rows
            dataset = self._add_sampler_reference_columns(*dataset)
            self._scored_by_sampler = self._scored_by_sampler | {split}
        return dataset
