# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The Hub side of [`SeqTempTrainer`]: one upload of the adapter with its measured model card."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import hub, measure
from ..card import write_card
from ..fingerprint import base_record
from ..generation.custom_generate import write_custom_generate
from ..models.base import wrapped_model
from ..peft_compat import is_peft_model

# training prompts the once-tuned token temperature is searched on (their samples of p, each scored at every step of
# the search): the baseline a user builds once, measured on the held-out prompts beside the adapter
TUNING_PROMPTS = 32
TUNING_SEQUENCES = 256  # the same for an unconditional corpus (one group, held out by sequence)

if TYPE_CHECKING:
    from datasets import Dataset


class HubMixin:
    """Replaces `Trainer`'s Hub methods: the repo is created at `push_to_hub()` time, checkpoints are not uploaded,
    and what is uploaded is [`~HubMixin.save_for_hub`]'s folder (adapter, config, card, plot).

    Every save writes hf_seqtemp's model card and `seqtemp_config.json` next to the weights (over PEFT's
    placeholder card). `save_model()` with an eval set measures the base model, the myopic baseline and the
    tempered model on it, once per training step; a checkpoint shows the figures of the last `evaluate()`.
    """

    _card_options: dict | None = None  # what `save_for_hub` asks of the card being written
    _card_config = None  # the config written by the last save
    _measured: tuple | None = None  # (key, measurement): the last held-out measurement, reused at the same step
    _base_recorded: tuple | None = None  # (id of the base, (fingerprint, source)): the base weights do not change
    _saving_checkpoint = False
    _card_tags: list[str] | None = None  # tags given to `push_to_hub` / `create_model_card`

    # ------------------------------------------------------------------ saving with the card
    def _save_checkpoint(self, model, trial) -> None:
        self._saving_checkpoint = True  # the card of a checkpoint measures nothing
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self._saving_checkpoint = False

    def save_for_hub(
        self,
        folder: str | os.PathLike,
        *,
        held_out_dataset: Dataset | None = None,
        base_model=None,
        tokenizer=None,
        dataset_names: list[str] | None = None,
        repo_id: str | None = None,
        batch_size: int = 16,
    ):
        """Writes the folder that `push_to_hub` uploads: `save_model(folder)` (weights, `seqtemp_config.json`, card
        and plot, measured on `held_out_dataset` or the `eval_dataset`) and `custom_generate/`. The arguments are
        those of [`~hf_seqtemp.hub.save_for_hub`], which calls this method for a trainer.

        Returns:
            [`SequenceTemperatureConfig`]: the config written, with the measured figures.
        """
        options = {"held_out_dataset": held_out_dataset, "base_model": base_model, "tokenizer": tokenizer}
        options.update(dataset_names=dataset_names, repo_id=repo_id, batch_size=batch_size, tags=self._card_tags)
        folder = str(folder)
        self._card_options, self._card_config = options, None
        try:
            self.save_model(folder, _internal_call=True)  # one version: weights, card, tokenizer, custom_generate/
        finally:
            self._card_options = None
        self.accelerator.wait_for_everyone()  # the folder is whole before any rank reads it
        return self._card_config or self.sequence_temperature_config()

    def _write_hub_files(self, folder: str) -> None:
        """Inside a [`save_for_hub`] save: the tokenizer it was given and `custom_generate/`, in the same version."""
        if self._card_options is None:
            return
        tokenizer = self._card_options.get("tokenizer")
        if tokenizer is not None and tokenizer is not self.processing_class:
            tokenizer.save_pretrained(folder)
        write_custom_generate(folder)

    def _save_card(self, output_dir: str, shown_as: str | None = None) -> None:
        """Writes `seqtemp_config.json` and the model card (measured when possible) beside the saved weights;
        `shown_as` is the folder the files end up in when `output_dir` is a staging folder."""
        options = self._card_options or {}
        config, base = self.sequence_temperature_config(), options.get("base_model")
        if isinstance(base, (str, os.PathLike)):
            config.base_model_id, base = str(base), None
        config.base_model_fingerprint, config.base_model_source = self._base_record(base)
        held_out = options.get("held_out_dataset")
        held_out = held_out if held_out is not None else self._first_eval_dataset()
        measurement, reason = None, None  # `reason`: why nothing was measured, shown if no evaluate() ran either
        if held_out is not None and self._saving_checkpoint:
            reason = "a checkpoint's card scores nothing and no `evaluate()` ran before this checkpoint"
        elif held_out is not None:
            tokenizer = options.get("tokenizer") or self.processing_class
            measurement = self._measure_for_card(held_out, base, tokenizer, options.get("batch_size", 16))
            reason = (
                "the base model and the myopic baseline cannot be scored for this model (a diffusion model, or full "
                "fine-tuning without the base model object), and no `evaluate()` ran before saving"
            )
        repo_id = options.get("repo_id") or self.args.hub_model_id  # the real repo id whenever it is known
        repo_id = repo_id or (getattr(self, "hub_model_id", None) if self.args.push_to_hub else None)
        self._card_config = write_card(
            output_dir,
            config,
            measurement,
            repo_id=repo_id,
            dataset_names=options.get("dataset_names"),
            source="the last `evaluate()` during training",
            reason=reason,
            shown_as=shown_as,
            tags=options.get("tags"),
            custom_generate=self._card_options is not None,  # `_write_hub_files` then writes custom_generate/
        )

    def _tuning_samples(self, held_out, tokenizer):
        """The samples of p on which the once-tuned token temperature is searched: the completions of the first
        `TUNING_PROMPTS` training prompts (what a user tunes a token temperature on, once), none of them held out;
        `None` when the training set holds no completions (prompts whose completions are drawn during training)."""
        from ..data import GROUP_ID

        data = self.train_dataset
        if data is None or not {"input_ids", "completion_mask", GROUP_ID} <= set(data.column_names):
            return None
        held = set(measure.dataset_groups(held_out, tokenizer)) if held_out is not None else set()
        groups = data[GROUP_ID]
        if set(groups) == {0}:  # an unconditional corpus, held out by sequence: its first training sequences
            return data.select(range(min(len(data), TUNING_SEQUENCES))) if len(data) > 1 else None
        counts: dict = {}
        for group in groups:
            counts[group] = counts.get(group, 0) + 1
        chosen = [g for g, n in counts.items() if n > 1 and g not in held][:TUNING_PROMPTS]
        if not chosen:
            return None
        keep = set(chosen)
        return data.select([i for i, group in enumerate(groups) if group in keep])

    def _first_eval_dataset(self):
        """The `eval_dataset`, or the first of a dict of them: what the card's figures are measured on."""
        if isinstance(self.eval_dataset, dict):
            return next(iter(self.eval_dataset.values()), None)
        return self.eval_dataset

    def _base_record(self, base) -> tuple:
        """Fingerprint and source of the base p the model is tempered against: `base` when given, else the PEFT
        model with its adapters left out, else the frozen reference copy (full fine-tuning); `(None, None)` when
        no copy of the base weights is at hand."""
        if base is None:
            base = self.model if is_peft_model(wrapped_model(self.model)) else self._ref_model
        if base is None:
            return None, None
        if self._base_recorded is None or self._base_recorded[0] != id(base):
            self._base_recorded = (id(base), base_record(base, self.family.name))
        return self._base_recorded[1]

    def _measure_for_card(self, held_out, base, tokenizer, batch_size: int):
        """[`~hf_seqtemp.measure.measure_held_out`] of the current model, or `None` where it cannot run (no held-out
        set, a family without a myopic baseline, or full fine-tuning without the base model object). Reused at the
        same step."""
        base = base if base is not None else self._ref_model
        if held_out is None or not self.family.measures_held_out:
            return None
        if not is_peft_model(self.model) and base is None:
            return None
        # the same sequences at the same step give the same figures, whether passed raw or as the prepared eval set
        key = (self.state.global_step, measure.sequences_digest(held_out, tokenizer), id(base), batch_size)
        if self._measured is None or self._measured[0] != key:
            target, scorer = self.args.target_temperature, self.family.scorer
            result = measure.measure_held_out(
                self.model, held_out, target, base, tokenizer, scorer, batch_size=batch_size,
                tune_on=self._tuning_samples(held_out, tokenizer),
            )  # fmt: skip
            self._measured = (key, result)
        return self._measured[1]

    def measure_held_out(self, held_out_dataset: Dataset | None = None, base_model=None, batch_size: int = 16):
        """[`~hf_seqtemp.measure.measure_held_out`] of the model as it is now, on `held_out_dataset` (the
        `eval_dataset` by default): the within-prompt reports of the base model, token temperature T, the tuned
        token temperature and the tempered model, and their log-likelihoods. Measured once per training step:
        [`save_for_hub`] at the same step reuses it (and this reuses the figures `save_for_hub` measured).

        Returns:
            `(reports, logps)`, or `None` where nothing can be measured (no held-out set, a model family without a
            myopic baseline, or full fine-tuning without `base_model`).

        Example:
        ```python
        >>> reports, logps = trainer.measure_held_out()  # doctest: +SKIP
        >>> reports["tempered"]["t_eff"], reports["myopic"]["t_eff"]  # doctest: +SKIP
        ```
        """
        held_out = held_out_dataset if held_out_dataset is not None else self._first_eval_dataset()
        return self._measure_for_card(held_out, base_model, self.processing_class, batch_size)

    def create_model_card(self, dataset=None, dataset_tags=None, tags=None, **kwargs) -> None:
        """Writes hf_seqtemp's model card (the measured one of `save_model`) into `output_dir`, with `dataset` (or
        `dataset_tags`) as the card's datasets and `tags` added; not `Trainer`'s generic card, which would replace
        the measured figures. `Trainer`'s other card arguments (`language`, `license`, `model_name`, ...) are
        refused by name."""
        kwargs = {key: value for key, value in kwargs.items() if value is not None}
        dataset_names, extra = _card_kwargs(None, {"dataset_name": dataset or dataset_tags, "tags": tags, **kwargs})
        self._card_options = {"dataset_names": dataset_names, "tags": extra}
        try:
            self.save_model(self.args.output_dir, _internal_call=True)
        finally:
            self._card_options = None

    # ------------------------------------------------------------------ the Hub
    def init_hf_repo(self, token: str | None = None, private: bool | None = None) -> None:
        """Records the target repository (`hub_model_id`, else the output folder's name); `push_to_hub` creates it
        and names it as the Hub does (`user/name` for a bare name)."""
        self.hub_model_id = self.args.hub_model_id or os.path.basename(os.path.abspath(self.args.output_dir))
        self.push_in_progress = None

    def _push_from_checkpoint(self, checkpoint_folder: str) -> None:
        """Checkpoints are not uploaded: `push_to_hub()` uploads the adapter with its measured model card."""

    def push_to_hub(
        self,
        commit_message: str | None = "End of training",
        blocking: bool = True,
        token: str | None = None,
        revision: str | None = None,
        private: bool | None = None,
        dataset_names: list[str] | None = None,
        held_out_dataset: Dataset | None = None,
        **kwargs,
    ):
        """Creates the repository `hub_model_id` (a bare name in the token's namespace: `hub_model_id` becomes the
        `user/name` the Hub returns, as with `Trainer`), writes [`~hf_seqtemp.hub.save_for_hub`]'s folder, whose card
        names that repository, to `<output_dir>/hub` and uploads it.

        The card's figures are measured on `held_out_dataset` (the `eval_dataset` by default). `hub_model_id`,
        `hub_private_repo`, `hub_token` and `hub_revision` come from the [`SeqTempConfig`] unless given here.

        Example:
        ```python
        >>> trainer.push_to_hub(dataset_names=["me/prompts"])  # doctest: +SKIP
        ```
        """
        dataset_names, tags = _card_kwargs(dataset_names, kwargs, "push_to_hub")
        token = token if token is not None else self.args.hub_token
        hub.check_can_push(token)  # offline or no token: fail before anything is scored
        if self.hub_model_id is None:
            self.init_hf_repo()
        if not self.is_world_process_zero():
            return None
        private = private if private is not None else self.args.hub_private_repo
        # as `Trainer`: the repository's id as the Hub returns it (`user/name` for a bare `name`), card and upload
        self.hub_model_id = hub.create_repo(self.hub_model_id, private=private, token=token)
        folder = os.path.join(self.args.output_dir, "hub")
        self._card_tags = tags
        try:
            self.save_for_hub(
                folder, held_out_dataset=held_out_dataset, dataset_names=dataset_names, repo_id=self.hub_model_id
            )
        finally:
            self._card_tags = None
        return hub.push_to_hub(
            folder,
            self.hub_model_id,
            private=private,
            token=token,
            commit_message=commit_message or "End of training",
            revision=revision if revision is not None else self.args.hub_revision,
        )


def _card_kwargs(dataset_names, kwargs: dict, method: str = "create_model_card") -> tuple[list | None, list | None]:
    """`(dataset_names, tags)` from `Trainer`'s card keywords: `dataset_name` (a str or a list: the card's
    datasets, beside `dataset_names`) and `tags`; any other keyword is refused by name."""
    kwargs = dict(kwargs)
    named = kwargs.pop("dataset_name", None)
    tags = kwargs.pop("tags", None)
    unknown = sorted(key for key, value in kwargs.items() if value is not None)
    if unknown:
        raise TypeError(
            f"`{method}` got {unknown}, which hf_seqtemp's card does not take: it takes `dataset_name` (or "
            "`dataset_names`) and `tags`; its figures and metadata are measured and recorded by the trainer."
        )
    names = [named] if isinstance(named, str) else list(named or [])
    names = [*(dataset_names or []), *names] or None
    tags = [tags] if isinstance(tags, str) else (list(tags) if tags else None)
    return names, tags
