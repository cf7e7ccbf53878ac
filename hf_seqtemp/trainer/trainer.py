# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`SeqTempTrainer`: fine-tunes a model (LoRA or full) to a target *sequence* temperature."""

from __future__ import annotations

import copy
import os
from typing import ClassVar

from datasets import Dataset
from transformers import Trainer
from transformers.trainer_utils import enable_full_determinism, set_seed

from .. import hub
from ..config import SequenceTemperatureConfig
from ..data import (
    GROUP_ID,
    GroupSampler,
    SeqTempCollator,
    check_group_batching,
    eos_ids_of,
    is_prompt_only,
    prepare_dataset,
)
from ..data.split import warn_on_shared_prompts
from ..groups import group_codes, within_group_pairs
from ..hub import save_weights
from ..losses import LossInputs, scale_gradient
from ..models.base import wrapped_model
from ..models.dropout import disable_dropout
from ..models.fit import check_prepared_fits, check_tokenizer_fits, tokenizer_sha256
from ..peft_compat import peft_model_of
from ..staging import staged_save
from .accumulation import TokenAccumulationMixin
from .checkpoints import CheckpointMixin
from .config import SeqTempConfig
from .distributed import check_launch, exit_with_launcher, gather_rows, rows_to_keep, token_mean_over_ranks
from .eval_sets import EvaluationMixin, each_eval
from .families import family_for
from .hub_mixin import HubMixin
from .metric_log import MetricLog, completion_metrics
from .model_setup import add_adapter, default_args, load_processing_class, prepare_model
from .particles import SMC_LOG_WEIGHT, check_particle_setup, draw_particles
from .prompt_only import CompletionPool, FreshCollator, FreshSamples, pad_token_id_of
from .reference import ReferenceMixin
from .trl_names import refusing_trainer_arguments


class SeqTempTrainer(HubMixin, CheckpointMixin, ReferenceMixin, EvaluationMixin, TokenAccumulationMixin, Trainer):
    """
    Trainer for sequence-level temperature scaling (Scheufele, Blohm, Garg, *Temperature Scaling in Discrete Sequence
    (Language) Models*, Section 5.2): fits q_T ∝ p^{1/T} over whole sequences, where p is the model before training.

    With a `peft_config` the reference p is the same model with the adapter disabled (no second copy of the
    weights); without one, full fine-tuning uses a frozen copy only when reference values are not precomputed.
    Reference log-probabilities are computed once before training and stored per example.

    The model family picks the scoring ([`~hf_seqtemp.trainer.families`]): a causal LM is scored exactly; a
    [`~hf_seqtemp.models.base.DiffusionLM`] wrapper (or a raw masked LM, wrapped with
    [`~hf_seqtemp.models.diffusion.wrap_diffusion_model`] using the tokenizer's mask token) by the exact block DP
    (L_p) or the k-order estimate (L_k, Eq. 24), see `SeqTempConfig.likelihood_method`, with the diffusion ELBO
    L_diff (Eq. 4) as the `nll_weight` term. LoRA is then applied to the wrapper's inner `.model`.

    Args:
        model (`str`, `PreTrainedModel` or `DiffusionLM`): the model to temper, or a Hub id / path loaded with
            `AutoModelForCausalLM.from_pretrained`.
        args ([`SeqTempConfig`], *optional*): training configuration; defaults to `SeqTempConfig("<name>-SeqTemp")`.
        data_collator (*optional*): defaults to [`~hf_seqtemp.trainer.data.SeqTempCollator`].
        train_dataset ([`~datasets.Dataset`]): text, prompt/completion, or pre-tokenised `input_ids`.
        eval_dataset ([`~datasets.Dataset`] or `dict`, *optional*): held-out sequences (a dict of named sets is
            evaluated set by set, as by `Trainer`); `evaluate()` logs T_eff, τ, h_std. The held-out figures of the
            model card are measured on the first set of a dict.
        processing_class (*optional*): the tokenizer (needed for text datasets).
        compute_metrics (*optional*): called after each evaluation, as in [`~transformers.Trainer`], with an
            `EvalPrediction` whose `predictions` `(n, 2)` hold each held-out sequence's `(log q, log p)` (the trained
            model, the reference) and whose `label_ids` `(n,)` are its prompt group ids; what it returns is added to
            the metrics, beside `eval_temp/t_eff`, `eval_temp/kendall_tau`, ... (which `on_evaluate` callbacks such
            as `EarlyStoppingCallback` see). `eval_dataset` may be a dict of named eval sets.
        callbacks, optimizers: as in [`~transformers.Trainer`].
        peft_config (`peft.PeftConfig`, *optional*): wraps the model with this adapter (e.g. `LoraConfig`).
        scorer ([`SequenceScorer`], *optional*): sequence-likelihood estimator of a causal LM; defaults to
            [`AutoregressiveScorer`] (exact). Diffusion models take theirs from `args` instead.
        quantization_config (*optional*): as TRL's trainers take it, passed to `from_pretrained` when `model` is a
            Hub id or a path (e.g. `trl.get_quantization_config(model_args)`); `None` loads unquantised.

    Example:
    ```python
    >>> from peft import LoraConfig
    >>> from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, sample_dataset
    >>> model, tokenizer = load_default_model()  # doctest: +SKIP
    >>> data = sample_dataset(model, tokenizer, ["Tell me a fact."], num_samples=64)  # doctest: +SKIP
    >>> trainer = SeqTempTrainer(model, SeqTempConfig("out", target_temperature=0.5), train_dataset=data,
    ...                          processing_class=tokenizer, peft_config=LoraConfig(r=8))  # doctest: +SKIP
    >>> trainer.train()  # doctest: +SKIP
    ```
    """

    _tag_names: ClassVar[list[str]] = ["hf_seqtemp", "seqtemp"]
    _name = "SeqTemp"
    _paper: ClassVar[dict[str, str]] = {
        "title": "Temperature Scaling in Discrete Sequence (Language) Models",
        "authors": "Hannah Scheufele, Peter Blohm, Vikas Garg",
    }

    @refusing_trainer_arguments
    def __init__(
        self,
        model,
        args: SeqTempConfig | None = None,
        data_collator=None,
        train_dataset: Dataset | None = None,
        eval_dataset: Dataset | None = None,
        processing_class=None,
        compute_metrics=None,
        callbacks=None,
        optimizers=(None, None),
        peft_config=None,
        scorer=None,
        quantization_config=None,
    ):
        args = default_args(model) if args is None else args
        if not isinstance(args, SeqTempConfig):
            raise TypeError(f"`args` must be a SeqTempConfig, got {type(args).__name__}.")
        if args.push_to_hub:  # as transformers' Trainer: an upload that cannot succeed fails before any training
            hub.check_can_push(args.hub_token)
        processing_class = load_processing_class(model, processing_class, args)
        model = prepare_model(model, processing_class, args, quantization_config)
        self.family = family_for(model, args, scorer)
        # seeded before the adapter is made, so that one seed gives one adapter (Trainer seeds only after)
        enable_full_determinism(args.seed) if args.full_determinism else set_seed(args.seed)
        model = self._add_adapter(model, peft_config, args)
        if args.disable_dropout:  # after the adapter is added, as TRL does: LoRA's own dropout included
            disable_dropout(model)
        self.objective = self._objective(args)
        # a completion also ends at the model's own EOS ids (an end-of-turn token the tokenizer's EOS is not)
        model_eos = eos_ids_of(model) if self.family.samples_completions else set()
        self._completion_eos = eos_ids_of(model, processing_class)  # what `completions/clipped_ratio` counts
        check_tokenizer_fits(model, processing_class)
        # TRL's prompt-completion data (trl-lib/tldr) is trained on its completions: said if no group is then whole
        self._completion_column = "completion" in (getattr(train_dataset, "column_names", None) or [])
        train_dataset = self._prepare_dataset(train_dataset, processing_class, args, "train_dataset", model_eos)
        check_prepared_fits(model, train_dataset, args.max_completion_length, "train_dataset")
        if eval_dataset is not None:
            eval_dataset = each_eval(
                eval_dataset,
                lambda name, dataset: self._prepare_dataset(dataset, processing_class, args, name, model_eos),
            )
            each_eval(eval_dataset, lambda n, d: check_prepared_fits(model, d, args.max_completion_length, n))
            each_eval(eval_dataset, lambda name, dataset: warn_on_shared_prompts(train_dataset, dataset))
        if data_collator is None:
            data_collator = SeqTempCollator(pad_token_id=pad_token_id_of(processing_class, model))
        self._pool = None
        particles = self.objective.draws_particles
        if particles:
            check_particle_setup(train_dataset, model, args)
        if is_prompt_only(train_dataset) and (args.sample_every_steps is not None or particles):
            # samples drawn during training: slots per prompt, refilled every `sample_every_steps` steps (fresh
            # samples of p, or SMC particles of p^(1/T) for `smc_distill`, drawn once when it is None)
            per_generation = args.sample_every_steps
            per_generation = None if per_generation is None else per_generation * args.gradient_accumulation_steps
            self._pool = train_dataset = CompletionPool(train_dataset, args.num_generations, per_generation)
            eos_ids = eos_ids_of(model, processing_class)
            draw = self._draw_particles if particles else self._draw
            data_collator = FreshCollator(
                self._pool, data_collator, draw, self._score_rows, args.max_length, eos_ids, whole_prompts=particles
            )
        self._ref_model = None
        if peft_model_of(model) is None and (not args.precompute_ref_log_probs or self._pool is not None):
            self._ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        super().__init__(
            model=model,
            args=args,
            data_collator=data_collator,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            compute_metrics=compute_metrics,
            callbacks=callbacks,
            optimizers=optimizers,
        )
        check_launch(self.accelerator)
        exit_with_launcher()  # a SIGKILLed torchrun agent takes its ranks with it
        # Our loss is a batch mean, so Trainer must divide it by the accumulation steps (see test_trainer.py).
        self.loss_is_scaled_for_ga = False
        if hasattr(self.model, "add_model_tags"):
            self.model.add_model_tags(self._tag_names)
        self._metric_log = MetricLog()
        self._loss_state: dict = {}  # objectives with memory (TruncR's rolling quantile)
        self.last_eval_metrics: dict[str, float] = {}
        if self.objective.needs_groups:
            check_group_batching(
                args.num_generations, args.per_device_train_batch_size, self.accelerator.num_processes, True
            )
        if self._pool is not None:
            self.add_callback(FreshSamples(self._pool))
        self._complete_prompt_only_datasets()
        self._prepare_reference()

    # ------------------------------------------------------------------ preparation
    def _add_adapter(self, model, peft_config, args: SeqTempConfig):
        """`model` with the PEFT adapter of `peft_config` (where the family puts it), or `model` itself."""
        return add_adapter(model, peft_config, args, self.family)

    def _objective(self, args: SeqTempConfig):
        """The registered objective of `args.loss_type` for this family ([`~hf_seqtemp.losses.LOSSES`])."""
        if args.loss_type not in self.family.objectives:
            raise ValueError(
                f"`loss_type={args.loss_type!r}` is not available for {self.family.name} models (it is defined on "
                f"autoregressive per-token conditionals). Use one of {list(self.family.losses)}."
            )
        return self.family.objectives[args.loss_type]

    @staticmethod
    def _prepare_dataset(dataset, processing_class, args: SeqTempConfig, name: str, eos_ids=None):
        if dataset is None:
            raise ValueError(f"`{name}` is None: pass a dataset of sequences to temper.")
        from datasets import IterableDataset

        if isinstance(dataset, IterableDataset):
            raise TypeError(
                f"`{name}` is a datasets.IterableDataset: SeqTempTrainer stores the reference log-probabilities of "
                "every example and groups completions by prompt, which needs a map-style `datasets.Dataset` (load "
                "it without `streaming=True`, or `Dataset.from_generator(...)`)."
            )
        return prepare_dataset(
            dataset, processing_class, args.dataset_text_field, args.max_length, name, args.prompt_id_column, eos_ids
        )

    def _draw_particles(self, prompts: list[list[int]], slots: list[int]):
        """SMC particles of p^(1/T) for the pool's stale slots, a prompt's `num_generations` slots together
        ([`~hf_seqtemp.trainer.particles.draw_particles`])."""
        return draw_particles(
            self.model, self._reference_model, prompts, slots, self.args, self._pool.generation, self.processing_class
        )

    def _get_train_sampler(self, train_dataset=None):
        """Runs of `num_generations` completions of one prompt (for objectives that compare them), else Trainer's."""
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if not self.objective.needs_groups:
            return super()._get_train_sampler(train_dataset)
        groups = dataset.group_ids if isinstance(dataset, CompletionPool) else dataset[GROUP_ID]
        try:
            return GroupSampler(groups, self.args.num_generations, shuffle=True, seed=self.args.seed)
        except ValueError as error:
            if not getattr(self, "_completion_column", False) or "No prompt group" not in str(error):
                raise
            raise ValueError(
                f"{error} The `train_dataset` has a `completion` column (TRL's prompt-completion format, e.g. "
                "trl-lib/tldr), so its given completions are what is trained on. To have `num_generations` "
                "completions of each prompt sampled from the base model instead, keep only the prompts: "
                '`train_dataset=dataset.select_columns(["prompt"])`.'
            ) from None

    # ------------------------------------------------------------------ loss
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The objective on the whole global batch: every per-sequence and per-token value is gathered across ranks
        (the gradient flows through this rank's rows, scaled by the world size, so that data parallelism's average
        is the one-process gradient), and every pair, self-normalisation and token mean is taken over whole prompt
        groups exactly as one process holding the global batch would. Evaluation batches drop accelerate's padding
        duplicates."""
        if return_outputs:
            raise ValueError(
                "SeqTempTrainer.compute_loss does not return model outputs; call it with return_outputs=False."
            )
        mode = "train" if self.model.training else "eval"
        # 1. score the batch under the trained model and fetch (or compute) the reference
        policy_logps, extra = self.family.score(model, inputs)
        mask = extra["completion_mask"]
        anti_drift = self.family.anti_drift_loss(model, inputs, extra) if self.args.nll_weight > 0 else None
        if "ref_logps" in inputs:
            ref_logps, ref_token_logps = inputs["ref_logps"], self.family.stored_reference(inputs)
        else:
            ref_logps, ref_token_logps = self._reference_logps(inputs)
        # 2. the loss, on the values of every rank, within prompt groups
        keep = rows_to_keep(self.accelerator, inputs[GROUP_ID].shape[0], mode == "train")
        group_ids = gather_rows(self.accelerator, inputs[GROUP_ID], keep)
        groups = group_codes(group_ids, group_ids.numel(), device=policy_logps.device)
        pairs = within_group_pairs(groups)
        if pairs == 0 and mode == "train" and self.objective.needs_groups:
            raise ValueError(
                f"This batch of {groups.numel()} sequences has no two completions of one prompt, so `loss_type="
                f"{self.args.loss_type!r}` has nothing to compare. Keep `per_device_train_batch_size` × processes a "
                "multiple of `num_generations` ≥ 2 and give each prompt at least `num_generations` completions."
            )
        loss_inputs = LossInputs(
            policy_logps=gather_rows(self.accelerator, policy_logps, keep),
            ref_logps=gather_rows(self.accelerator, ref_logps.float(), keep),
            policy_token_logps=gather_rows(self.accelerator, extra.get("token_logps"), keep),
            completion_mask=gather_rows(self.accelerator, mask, keep),
            ref_token_logps=gather_rows(self.accelerator, ref_token_logps, keep),
            anti_drift=token_mean_over_ranks(self.accelerator, anti_drift, mask.sum()),
            state=self._loss_state,
            groups=groups,
            local_groups=groups,
            local_group_ids=group_ids,
            log_weights=gather_rows(self.accelerator, inputs.get(SMC_LOG_WEIGHT), keep),
        )
        scale = self._token_scale(loss_inputs.completion_mask, num_items_in_batch) if mode == "train" else 1.0
        if not self.objective.token_mean:
            loss_inputs.token_scale = scale
        output = self.objective.compute(loss_inputs, self.args)
        if self.objective.token_mean:
            output.loss = output.loss * scale
        # 3. record what log() reports
        metrics = {"groups/pairs": pairs, **output.metrics, **self._completion_metrics(inputs, keep, mode)}
        tokens = loss_inputs.completion_mask.sum(1)
        self._metric_log.record(mode, loss_inputs.policy_logps, loss_inputs.ref_logps, tokens, group_ids, metrics)
        if mode == "eval":  # this rank's rows, for `compute_metrics` (Trainer gathers them across ranks)
            self._eval_rows = (policy_logps.detach().float(), ref_logps.detach().float(), inputs[GROUP_ID])
        return scale_gradient(output.loss, self.accelerator.num_processes)

    def _completion_metrics(self, inputs, keep, mode: str) -> dict:
        """GRPO's `completions/*` of the batch (every rank's rows) and, in training, its running `num_tokens`."""
        if not {"input_ids", "attention_mask", "completion_mask"} <= inputs.keys():
            return {}
        rows = completion_metrics(
            inputs["input_ids"], inputs["attention_mask"], inputs["completion_mask"], self._completion_eos
        )
        rows = {key: gather_rows(self.accelerator, values, keep) for key, values in rows.items()}
        tokens = rows.pop("tokens")
        if mode == "train":
            self.state.num_input_tokens_seen += int(tokens.sum())  # host sync: once per micro-batch, not per token
            rows["num_tokens"] = self.state.num_input_tokens_seen
        return rows

    # ------------------------------------------------------------------ saving
    def sequence_temperature_config(self) -> SequenceTemperatureConfig:
        """The config saved beside the adapter, with the figures of the last `evaluate()` (if any)."""
        model = wrapped_model(self.model)
        base = getattr(getattr(model, "peft_config", {}).get("default"), "base_model_name_or_path", None)
        base = base or getattr(model.config, "_name_or_path", None)
        measured = self.last_eval_metrics
        peft_config = getattr(model, "peft_config", {}).get("default")
        hyper = {
            "nll_weight": self.args.nll_weight,
            "learning_rate": self.args.learning_rate,
            "max_steps": self.state.global_step if self.state else None,
            **self.family.hyperparameters(),
        }
        if peft_config is not None:
            hyper.update(lora_r=getattr(peft_config, "r", None), lora_alpha=getattr(peft_config, "lora_alpha", None))
        return SequenceTemperatureConfig(
            target_temperature=self.args.target_temperature,
            base_model_id=base,
            model_family=self.family.name,
            loss_type=self.args.loss_type,
            training_hyperparameters=hyper,
            eval_t_eff=measured.get("eval_temp/t_eff"),
            eval_kendall_tau=measured.get("eval_temp/kendall_tau"),
            eval_nll=measured.get("eval_nll/policy_per_token"),
            tokenizer_sha256=tokenizer_sha256(self.processing_class) if self.processing_class is not None else None,
        )

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """[`~transformers.Trainer.save_model`], then waits for every rank: the writer's folder is complete before
        any rank goes on to read it (e.g. `load_tempered`). Call it on every process, as `Trainer` asks."""
        super().save_model(output_dir, _internal_call)
        self.accelerator.wait_for_everyone()

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        """Saves what `from_pretrained` reloads, in safetensors and JSON only: the weights of the model (for a
        `DiffusionLM` wrapper, of the model inside it; the wrapper is rebuilt from `seqtemp_config.json`'s
        `model_family`), the tokenizer, the training arguments as JSON (not a pickled `training_args.bin`), and
        `seqtemp_config.json` with the model card ([`HubMixin`]). The folder is left plain: the save's regular files,
        `seqtemp_config.json` listing them with their SHA-256. The save is staged beside the folder and moved in
        under its lock ([`~hf_seqtemp.staging.staged_save`]): a kill or a full disk at any moment leaves the old save
        whole or the new one (finished by the next save or load), never a mix; files it did not write are never
        removed. A checkpoint is written into its own new folder, which the checkpoint's manifest, written last
        ([`CheckpointMixin`]), makes whole.
        """
        if not self.args.should_save:
            return
        output_dir = output_dir or self.args.output_dir
        if self._saving_checkpoint:
            os.makedirs(output_dir, exist_ok=True)
            self._write_save(output_dir, state_dict)
            return
        with staged_save(output_dir, owner=self) as staging:  # the old save stays whole until it is committed
            self._write_save(staging, state_dict, shown_as=output_dir)

    def _write_save(self, folder: str, state_dict=None, shown_as: str | None = None) -> None:
        model = wrapped_model(self.accelerator.unwrap_model(self.model, keep_torch_compile=False))
        save_weights(model, folder, state_dict)
        if self.processing_class is not None:
            self.processing_class.save_pretrained(folder)
        with open(os.path.join(folder, "training_args.json"), "w", encoding="utf-8") as handle:
            handle.write(self.args.to_json_string())
        self._save_card(folder, shown_as=shown_as)
        self._write_hub_files(folder)
