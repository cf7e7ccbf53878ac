# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The Hub side of [`SeqTempTrainer`]: one upload of the adapter with its measured model card."""

from __future__ import annotations

import os

from datasets import Dataset


class HubMixin:
    """Replaces `Trainer`'s Hub methods: the repo is created at `push_to_hub()` time, checkpoints are not uploaded,
    and what is uploaded is [`~hf_seqtemp.hub.save_for_hub`]'s folder (adapter, config, card, plot)."""

    def init_hf_repo(self, token: str | None = None, private: bool | None = None) -> None:
        """Records the target repository (`hub_model_id`, else the output folder's name); `push_to_hub` creates it."""
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
    ):
        """Writes [`~hf_seqtemp.hub.save_for_hub`]'s folder to `<output_dir>/hub` and uploads it to `hub_model_id`.

        The card's figures are measured on `held_out_dataset` (the `eval_dataset` by default). `hub_model_id`,
        `hub_private_repo`, `hub_token` and `hub_revision` come from the [`SeqTempConfig`] unless given here.

        Example:
        ```python
        >>> trainer.push_to_hub(dataset_names=["me/prompts"])  # doctest: +SKIP
        ```
        """
        from ..hub import push_to_hub, save_for_hub

        if self.hub_model_id is None:
            self.init_hf_repo()
        if not self.is_world_process_zero():
            return None
        folder = os.path.join(self.args.output_dir, "hub")
        save_for_hub(
            self, folder, held_out_dataset=held_out_dataset, dataset_names=dataset_names, repo_id=self.hub_model_id
        )
        return push_to_hub(
            folder,
            self.hub_model_id,
            private=private if private is not None else self.args.hub_private_repo,
            token=token if token is not None else self.args.hub_token,
            commit_message=commit_message or "End of training",
            revision=revision if revision is not None else self.args.hub_revision,
        )
