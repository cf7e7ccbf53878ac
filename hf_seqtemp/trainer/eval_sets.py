# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What evaluation and logging report, as `Trainer` and TRL users expect: several eval sets
(`eval_dataset={"name": dataset}`), the temperature metrics in the evaluation's own metrics (which `on_evaluate`
callbacks and `metric_for_best_model` read), and `compute_metrics` with each sequence's `(log q, log p)`."""

from __future__ import annotations

import torch

from ..data import EXAMPLE_ID, GROUP_ID, eos_ids_of
from ..groups import group_codes, require_pairs
from ..models.fit import check_prepared_fits


def each_eval(eval_dataset, fn):
    """`fn(name, dataset)` for the eval set, or for each of a dict of them (TRL's and Trainer's several eval sets,
    `eval_dataset={"name": dataset}`), keeping the dict; `name` is what errors call it."""
    if isinstance(eval_dataset, dict):
        return {key: fn(f"eval_dataset[{key!r}]", dataset) for key, dataset in eval_dataset.items()}
    return fn("eval_dataset", eval_dataset)


def split_of(name: str) -> str:
    """The split name of an eval set for seeds and progress bars: `eval`, or `eval_<key>` for a dict's entry."""
    return "eval" if name == "eval_dataset" else "eval_" + name[len("eval_dataset['") : -2]


class EvaluationMixin:
    """`evaluate`, `predict`, `prediction_step`, `evaluation_loop` and `log` of [`SeqTempTrainer`]."""

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"):
        """[`~transformers.Trainer.evaluate`]; a raw `eval_dataset` (any of TRL's layouts, prompt-only included, or a
        dict of them) is prepared as the constructor prepares its `eval_dataset`: tokenised, completions of p
        sampled for prompts alone, the reference scored."""
        if eval_dataset is not None:
            eval_dataset = each_eval(eval_dataset, self._prepared_for_eval)
        return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)

    def predict(self, test_dataset, ignore_keys=None, metric_key_prefix: str = "test"):
        """[`~transformers.Trainer.predict`] of a raw or prepared dataset (prepared as in [`evaluate`]): predictions
        `(n, 2)` of `(log q, log p)` per sequence, labels the prompt group ids, metrics `test_temp/*`."""
        return super().predict(self._prepared_for_eval("test_dataset", test_dataset), ignore_keys, metric_key_prefix)

    def _prepared_for_eval(self, name: str, dataset):
        """`dataset` as the constructor leaves an eval set, unless it is one already (prepared by this trainer)."""
        if dataset is None or isinstance(dataset, str) or EXAMPLE_ID in getattr(dataset, "column_names", ()):
            return dataset  # nothing, the name of one of the constructor's eval sets, or a prepared set
        args, tokenizer = self.args, self.processing_class
        eos = eos_ids_of(self.model) if self.family.samples_completions else set()
        prepared = self._prepare_dataset(dataset, tokenizer, args, name, eos)
        check_prepared_fits(self.model, prepared, args.max_completion_length, name)
        split = split_of(name) if name.startswith("eval_dataset") else "test"
        prepared = self._complete_split(prepared, split)
        require_pairs(
            group_codes(prepared[GROUP_ID], len(prepared)),
            name,
            "give at least two completions of each prompt (a prompt-only set has `num_generations_eval` or "
            "`num_generations` sampled per prompt), or a shared `prompt_id` column",
        )
        if args.precompute_ref_log_probs and split not in self._scored_by_sampler:
            prepared = self._add_reference_columns(prepared, split)
        return prepared

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """The loss; unless `prediction_loss_only`, also what `compute_metrics` receives per sequence: predictions
        `(batch, 2)` of `(log q, log p)` (policy, reference) and labels `(batch,)` the prompt group ids."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        if prediction_loss_only:
            return loss.detach(), None, None
        policy, ref, groups = self._eval_rows
        return loss.detach(), torch.stack([policy, ref], dim=-1), groups

    def evaluation_loop(self, dataloader, description, prediction_loss_only=None, ignore_keys=None, **kwargs):
        """[`~transformers.Trainer.evaluation_loop`], with the temperature metrics of the whole eval set in its
        metrics (`eval_temp/t_eff`, `eval_temp/kendall_tau`, ...; `eval_<name>_...` for a dict of eval sets), so
        that `on_evaluate` callbacks (`EarlyStoppingCallback`), `metric_for_best_model` and the logs see them."""
        prefix = kwargs.get("metric_key_prefix", "eval")
        output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys, **kwargs)
        summary = self._metric_log.summary("eval", self.args.target_temperature)
        self._metric_log.clear("eval")
        output.metrics.update({f"{prefix}_{key}": value for key, value in summary.items()})
        return output

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Adds the training metrics since the last log (an evaluation's own are in its metrics already)."""
        if any(key.startswith("eval_") for key in logs):
            self.last_eval_metrics = dict(logs)
        else:
            logs = {**logs, **self._metric_log.summary("train", self.args.target_temperature)}
            self._metric_log.clear("train")
        super().log(logs, start_time)
