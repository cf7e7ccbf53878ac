# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`SeqTempTrainer`: fine-tunes a model (LoRA or full) to a target *sequence* temperature."""

from __future__ import annotations

import contextlib
import copy
import math
import os
from collections import defaultdict
from typing import ClassVar

import torch
from datasets import Dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, Trainer

from ..config import SequenceTemperatureConfig
from ..data import (
    EXAMPLE_ID,
    GROUP_ID,
    GroupSampler,
    SeqTempCollator,
    check_group_batching,
    eos_ids_of,
    is_prompt_only,
    prepare_dataset,
    sample_completions,
)
from ..groups import group_codes, require_pairs, within_group_pairs
from ..hub import save_weights
from ..losses import LossInputs
from ..metrics.core import effective_temperature, kendall_tau, temperature_log_ratio
from ..models.base import DiffusionLM, wrapped_model
from ..models.diffusion import wrap_diffusion_model
from ..models.validation import check_model_kind, is_raw_diffusion_model
from ..peft_compat import peft_deprecations_silenced, peft_model_of
from .config import SeqTempConfig
from .families import DiffusionFamily, family_for, order_seed
from .hub_mixin import HubMixin
from .prompt_only import CompletionPool, FreshCollator, FreshSamples, complete_prompts, pad_token_id_of
from .token_temperature_init import fold_token_temperature, with_trainable_final_norm


class SeqTempTrainer(HubMixin, Trainer):
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
        eval_dataset ([`~datasets.Dataset`], *optional*): held-out sequences; `evaluate()` logs T_eff, τ, h_std.
        processing_class (*optional*): the tokenizer (needed for text datasets).
        compute_metrics, callbacks, optimizers: as in [`~transformers.Trainer`].
        peft_config (`peft.PeftConfig`, *optional*): wraps the model with this adapter (e.g. `LoraConfig`).
        scorer ([`SequenceScorer`], *optional*): sequence-likelihood estimator of a causal LM; defaults to
            [`AutoregressiveScorer`] (exact). Diffusion models take theirs from `args` instead.

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
    ):
        if args is None:
            inner = wrapped_model(model)
            name = model if isinstance(model, str) else getattr(getattr(inner, "config", None), "_name_or_path", "")
            name = name or type(inner).__name__
            args = SeqTempConfig(f"{str(name).split('/')[-1]}-SeqTemp")
        if not isinstance(args, SeqTempConfig):
            raise TypeError(f"`args` must be a SeqTempConfig, got {type(args).__name__}.")
        model = self._prepare_model(model, peft_config, processing_class, args)
        self.family = family_for(model, args, scorer)
        if args.loss_type not in self.family.objectives:
            raise ValueError(
                f"`loss_type={args.loss_type!r}` is not available for {self.family.name} models (it is defined on "
                f"autoregressive per-token conditionals). Use one of {list(self.family.losses)}."
            )
        self.objective = self.family.objectives[args.loss_type]
        train_dataset = self._prepare_dataset(train_dataset, processing_class, args, "train_dataset")
        if eval_dataset is not None:
            eval_dataset = self._prepare_dataset(eval_dataset, processing_class, args, "eval_dataset")
        if data_collator is None:
            data_collator = SeqTempCollator(pad_token_id=pad_token_id_of(processing_class, model))
        self._pool = None
        if is_prompt_only(train_dataset) and args.steps_per_generation is not None:
            # fresh samples of p during training: slots per prompt, refilled every `steps_per_generation` steps
            self._pool = train_dataset = CompletionPool(train_dataset, args.num_generations)
            data_collator = FreshCollator(self._pool, data_collator, self._draw, self._score_rows)
        self._ref_model = None
        if peft_model_of(model) is None and (not args.precompute_ref_logps or self._pool is not None):
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
        # Our loss is a batch mean, so Trainer must divide it by the accumulation steps (see test_trainer.py).
        self.loss_is_scaled_for_ga = False
        if hasattr(self.model, "add_model_tags"):
            self.model.add_model_tags(self._tag_names)
        self._buffers = {mode: defaultdict(list) for mode in ("train", "eval")}
        self._loss_state: dict = {}  # objectives with memory (TruncR's rolling quantile)
        self.last_eval_metrics: dict[str, float] = {}
        if self.objective.needs_groups:
            check_group_batching(
                args.num_generations, args.per_device_train_batch_size, self.accelerator.num_processes, True
            )
        if self._pool is not None:
            self.add_callback(FreshSamples(self._pool, args.steps_per_generation))
        self._complete_prompt_only_datasets()
        self._prepare_reference()

    # ------------------------------------------------------------------ preparation
    @staticmethod
    def _prepare_model(model, peft_config, processing_class, args: SeqTempConfig):
        if isinstance(model, str):
            model = AutoModelForCausalLM.from_pretrained(model)
        check_model_kind(model)
        if not isinstance(model, DiffusionLM) and is_raw_diffusion_model(model):
            model = wrap_diffusion_model(model, processing_class)
        if args.init_from_token_temperature and (peft_config is None or isinstance(model, DiffusionLM)):
            raise ValueError(
                "`init_from_token_temperature=True` needs a causal LM and a `peft_config` (e.g. LoraConfig)."
            )
        if peft_config is None:
            return model
        if peft_model_of(model) is not None:
            raise ValueError("`model` is already a PeftModel; pass `peft_config=None` to train its adapter.")
        from peft import get_peft_model

        inner = wrapped_model(model)
        if args.init_from_token_temperature:
            peft_config = with_trainable_final_norm(peft_config, inner)
        with peft_deprecations_silenced():
            peft_model = get_peft_model(inner, peft_config)
        if args.init_from_token_temperature:
            fold_token_temperature(peft_model, args.target_temperature)
        name = getattr(getattr(inner, "config", None), "_name_or_path", None)
        for adapter_config in peft_model.peft_config.values():
            # PEFT leaves this empty for models built from a config; AutoPeftModel needs it to find the base.
            if not adapter_config.base_model_name_or_path and name:
                adapter_config.base_model_name_or_path = name
        if isinstance(model, DiffusionLM):
            model.model = peft_model
            return model
        return peft_model

    @staticmethod
    def _prepare_dataset(dataset, processing_class, args: SeqTempConfig, name: str):
        if dataset is None:
            raise ValueError(f"`{name}` is None: pass a dataset of sequences to temper.")
        return prepare_dataset(
            dataset, processing_class, args.dataset_text_field, args.max_length, name, args.prompt_id_column
        )

    def _complete_prompt_only_datasets(self):
        """Samples `num_generations` completions per prompt from the reference for prompt-only datasets, and checks
        that an eval set has completions of one prompt to compare."""
        for split in ("train", "eval"):
            dataset = getattr(self, f"{split}_dataset")
            online = isinstance(dataset, CompletionPool)
            if dataset is not None and (online or is_prompt_only(dataset)):
                if self.family.name != "causal_lm":
                    raise ValueError(
                        f"`{split}_dataset` holds prompts only: completions are sampled for causal LMs only. Give a "
                        f"{self.family.name} model its completions (`prompt`/`completion` or `input_ids`)."
                    )
                if online:
                    continue
                with self._reference_model() as reference:
                    dataset = complete_prompts(reference, dataset, self.args, self.processing_class, split)
                setattr(self, f"{split}_dataset", dataset)
        if self.eval_dataset is not None:
            require_pairs(
                group_codes(self.eval_dataset[GROUP_ID], len(self.eval_dataset)),
                "eval_dataset",
                "give at least two completions of each held-out prompt (a prompt-only eval set has "
                "`num_generations` sampled per prompt), or a shared `prompt_id` column",
            )

    def _get_train_sampler(self, train_dataset=None):
        """Runs of `num_generations` completions of one prompt (for objectives that compare them), else Trainer's."""
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if not self.objective.needs_groups:
            return super()._get_train_sampler(train_dataset)
        groups = dataset.group_ids if isinstance(dataset, CompletionPool) else dataset[GROUP_ID]
        return GroupSampler(groups, self.args.num_generations, shuffle=True, seed=self.args.seed)

    def _draw(self, prompts: list[list[int]]) -> list[list[int]]:
        """One fresh completion of each prompt from the reference p (exact sampling), for the completion pool."""
        with self._reference_model() as reference:
            was_training = reference.training
            reference.eval()
            eos, pad = eos_ids_of(reference, self.processing_class), pad_token_id_of(self.processing_class, reference)
            out = sample_completions(reference, prompts, self.args.max_completion_length, eos, pad, len(prompts), None)
            reference.train(was_training)
        return out

    def _score_rows(self, rows: list[dict]) -> list[dict]:
        """`rows` with their reference columns (`ref_logps`, and per-token values when the objective needs them)."""
        batch = {k: v.to(self.args.device) for k, v in self.data_collator.collator(rows).items()}
        seq, values = self._reference_logps(batch)
        stored = self.family.reference_rows(values, batch) if values is not None else [None] * len(rows)
        for row, value, per_token in zip(rows, seq.tolist(), stored):
            row["ref_logps"] = value
            if self.objective.needs_ref_token_logps:
                row[self.family.reference_column] = per_token
        return rows

    def _prepare_reference(self):
        if not self.args.precompute_ref_logps:
            return
        if self._pool is None:  # a completion pool scores its fresh rows as it draws them
            self.train_dataset = self._add_reference_columns(self.train_dataset, "train")
        if self.eval_dataset is not None:
            self.eval_dataset = self._add_reference_columns(self.eval_dataset, "eval")

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
        with self._reference_model() as reference:
            was_training = reference.training
            reference.eval()
            seq_logps, token_logps = self.family.reference(reference, batch)
            reference.train(was_training)
        return seq_logps, token_logps

    def _add_reference_columns(self, dataset: Dataset, split: str) -> Dataset:
        """Scores the dataset under the reference once; each rank scores its share, then all ranks gather."""
        indices = list(range(len(dataset)))
        with self.accelerator.split_between_processes(indices) as mine:
            loader = DataLoader(
                dataset.select(mine), batch_size=self.args.per_device_eval_batch_size, collate_fn=self.data_collator
            )
            rows = []
            for batch in tqdm(loader, desc=f"Reference log-probs ({split})", disable=not self.is_local_process_zero()):
                batch = {k: v.to(self.args.device) for k, v in batch.items()}
                seq, values = self._reference_logps(batch)
                stored = self.family.reference_rows(values, batch) if values is not None else [None] * len(seq)
                rows.extend(zip(seq.tolist(), stored))
        rows = [(i, *row) for i, row in zip(mine, rows)]
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            rows = sorted(gather_object(rows))
        dataset = dataset.add_column("ref_logps", [row[1] for row in rows])
        if self.objective.needs_ref_token_logps:
            dataset = dataset.add_column(self.family.reference_column, [row[2] for row in rows])
        if isinstance(self.family, DiffusionFamily) and self.family.method == "mc":
            seeds = [order_seed(self.args.seed, i) for i in dataset[EXAMPLE_ID]]
            dataset = dataset.add_column("ref_order_seed", seeds)
        return dataset

    # ------------------------------------------------------------------ loss
    def _gather_with_grad(self, values: torch.Tensor) -> torch.Tensor:
        """Concatenates a per-rank vector over all ranks; gradients flow through this rank's part only."""
        world = self.accelerator.num_processes
        if world == 1:
            return values
        sizes = self.accelerator.gather(torch.tensor([values.shape[0]], device=values.device)).tolist()
        padded = values.new_zeros(max(sizes))
        padded[: values.shape[0]] = values.detach()
        everything = self.accelerator.gather(padded).view(world, -1)
        rank = self.accelerator.process_index
        parts = [values if r == rank else everything[r, : sizes[r]] for r in range(world)]
        return torch.cat(parts)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
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
        # 2. the loss, on sequence values gathered over ranks so that pairs cross devices, within prompt groups
        group_ids = self._gather_with_grad(inputs[GROUP_ID])
        groups = group_codes(group_ids, group_ids.numel()).to(policy_logps.device)
        pairs = within_group_pairs(groups)
        if pairs == 0 and mode == "train" and self.objective.needs_groups:
            raise ValueError(
                f"This batch of {groups.numel()} sequences has no two completions of one prompt, so `loss_type="
                f"{self.args.loss_type!r}` has nothing to compare. Keep `per_device_train_batch_size` × processes a "
                "multiple of `num_generations` ≥ 2 and give each prompt at least `num_generations` completions."
            )
        loss_inputs = LossInputs(
            policy_logps=self._gather_with_grad(policy_logps),
            ref_logps=self._gather_with_grad(ref_logps.float()),
            policy_token_logps=extra.get("token_logps"),
            completion_mask=mask,
            ref_token_logps=ref_token_logps,
            world_size=self.accelerator.num_processes,
            anti_drift=anti_drift,
            state=self._loss_state,
            groups=groups,
            local_groups=group_codes(inputs[GROUP_ID], inputs[GROUP_ID].numel()),
            local_group_ids=inputs[GROUP_ID],
        )
        output = self.objective.compute(loss_inputs, self.args)
        # 3. record what log() reports
        buffer = self._buffers[mode]
        buffer["policy"].append(loss_inputs.policy_logps.detach().float().cpu())
        buffer["ref"].append(loss_inputs.ref_logps.detach().float().cpu())
        buffer["tokens"].append(self.accelerator.gather(mask.sum(1)).float().cpu())
        buffer["groups"].append(group_ids.detach().cpu())
        buffer["groups/pairs"].append(torch.tensor([float(pairs)]))
        for key, value in output.metrics.items():
            buffer[key].append(torch.tensor([value]))
        return output.loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

    # ------------------------------------------------------------------ logging and saving
    def _temperature_metrics(self, mode: str) -> dict[str, float]:
        buffer = self._buffers[mode]
        if not buffer["policy"]:
            return {}
        policy, ref = torch.cat(buffer["policy"]).double(), torch.cat(buffer["ref"]).double()
        tokens = torch.cat(buffer["tokens"]).double()
        groups = group_codes(torch.cat(buffer["groups"]), policy.numel())
        metrics = {
            "logps/policy": policy.mean().item(),
            "logps/ref": ref.mean().item(),
            "nll/policy_per_token": (-policy.sum() / tokens.sum()).item(),
            "temp/h_std": math.nan,
        }
        if within_group_pairs(groups) > 0:  # within prompts: h is constant within a prompt, not across prompts
            ratio = temperature_log_ratio(ref, policy, self.args.target_temperature, groups=groups)
            metrics["temp/h_std"] = math.sqrt(ratio["variance"])
            metrics["temp/t_eff"] = effective_temperature(ref, policy, groups=groups)
            metrics["temp/kendall_tau"] = kendall_tau(ref, policy, groups=groups)
        metrics["temp/prompts"] = float(torch.unique(groups).numel())
        for key, values in buffer.items():
            if key not in ("policy", "ref", "tokens", "groups"):
                stacked = torch.cat(values)
                stacked = stacked[~stacked.isnan()]
                metrics[key] = stacked.mean().item() if stacked.numel() else math.nan
        return metrics

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "eval" if any(key.startswith("eval_") for key in logs) else "train"
        metrics = self._temperature_metrics(mode)
        if mode == "eval":
            metrics = {f"eval_{key}": value for key, value in metrics.items()}
            self.last_eval_metrics = {**logs, **metrics}
        logs = {**logs, **metrics}
        self._buffers[mode].clear()
        super().log(logs, start_time)

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
        """Runs [`~transformers.Trainer.evaluate`] and adds the temperature metrics over the whole eval set."""
        metrics = super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        return {**metrics, **self.last_eval_metrics}

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
        )

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        """Saves what `from_pretrained` reloads, in safetensors and JSON only: the weights of the model (for a
        `DiffusionLM` wrapper, of the model inside it; the wrapper is rebuilt from `seqtemp_config.json`'s
        `model_family`), the tokenizer, the training arguments as JSON (not a pickled `training_args.bin`), and
        `seqtemp_config.json` with the model card ([`HubMixin`]).
        """
        if not self.args.should_save:
            return
        output_dir = output_dir or self.args.output_dir
        os.makedirs(output_dir, exist_ok=True)
        model = wrapped_model(self.accelerator.unwrap_model(self.model, keep_torch_compile=False))
        save_weights(model, output_dir, state_dict)
        if self.processing_class is not None:
            self.processing_class.save_pretrained(output_dir)
        with open(os.path.join(output_dir, "training_args.json"), "w", encoding="utf-8") as handle:
            handle.write(self.args.to_json_string())
        self._save_card(output_dir)
