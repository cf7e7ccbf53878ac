# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`SequenceTemperatureConfig`: the temperature a tempered model was trained to, and what was measured."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from .checks import check_temperature

CONFIG_NAME = "seqtemp_config.json"


@dataclass
class SequenceTemperatureConfig:
    """Configuration saved beside a tempered adapter as `seqtemp_config.json`.

    PEFT keeps only its own keys in `adapter_config.json`, so the temperature lives in this file next to it. The
    folder stays a standard PEFT adapter folder.

    Args:
        target_temperature (`float`):
            Sequence temperature T the adapter was trained toward: q_T ∝ p^{1/T}.
        base_model_id (`str`, *optional*):
            Hub id or path of the base model p the adapter applies to.
        model_family (`str`, *optional*, defaults to `"causal_lm"`):
            One of `"causal_lm"`, `"masked_diffusion"`, `"block_diffusion"`.
        loss_type (`str`, *optional*):
            Training objective used (see `hf_seqtemp.losses.LOSSES`).
        training_hyperparameters (`dict`, *optional*):
            Loss hyper-parameters worth recording (e.g. `nll_weight`, LoRA rank, learning rate).
        eval_t_eff (`float`, *optional*): measured held-out effective temperature (Eq. 17).
        eval_kendall_tau (`float`, *optional*): measured held-out Kendall τ (Eq. 13).
        eval_nll (`float`, *optional*): measured held-out NLL per token of the tempered model.
        eval_prompts (`int`, *optional*): number of held-out prompts the figures were measured over. T_eff and τ
            are within-prompt figures: only completions of the same prompt are compared.
        eval_sequences (`int`, *optional*): number of held-out completions (over all prompts) they were measured on.

    Example:
    ```python
    >>> import tempfile
    >>> from hf_seqtemp import SequenceTemperatureConfig
    >>> config = SequenceTemperatureConfig(target_temperature=0.5, base_model_id="my/base")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = config.save_pretrained(folder)
    ...     SequenceTemperatureConfig.from_pretrained(folder).target_temperature
    0.5
    ```
    """

    target_temperature: float
    base_model_id: str | None = None
    model_family: Literal["causal_lm", "masked_diffusion", "block_diffusion"] = "causal_lm"
    loss_type: str | None = None
    training_hyperparameters: dict[str, Any] = field(default_factory=dict)
    eval_t_eff: float | None = None
    eval_kendall_tau: float | None = None
    eval_nll: float | None = None
    eval_prompts: int | None = None
    eval_sequences: int | None = None
    hf_seqtemp_version: str = "0.1.0"

    def __post_init__(self):
        self.target_temperature = check_temperature(self.target_temperature, "target_temperature")
        families = ("causal_lm", "masked_diffusion", "block_diffusion")
        if self.model_family not in families:
            raise ValueError(f"`model_family` must be one of {families}, got {self.model_family!r}.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def save_pretrained(self, save_directory: str | os.PathLike) -> str:
        """Writes `seqtemp_config.json` into `save_directory` (created if needed) and returns its path."""
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, CONFIG_NAME)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.to_json_string())
        return path

    def push_to_hub(
        self,
        repo_id: str,
        private: bool | None = False,
        token: str | None = None,
        commit_message: str = "Upload seqtemp_config.json",
    ):
        """Uploads `seqtemp_config.json` alone to `repo_id` (created if needed) with `huggingface_hub`.

        Returns:
            `huggingface_hub.CommitInfo` of the upload.

        Example:
        ```python
        >>> SequenceTemperatureConfig(0.5).push_to_hub("me/tempered")  # doctest: +SKIP
        ```
        """
        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        return api.upload_file(
            path_or_fileobj=self.to_json_string().encode("utf-8"),
            path_in_repo=CONFIG_NAME,
            repo_id=repo_id,
            commit_message=commit_message,
        )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SequenceTemperatureConfig:
        known = {f.name for f in fields(cls)}
        # files written before the unmeasured LoRA-scale dial was removed carry an empty, never-read `calibration`
        values = {key: value for key, value in values.items() if not (key == "calibration" and not value)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown keys in a {CONFIG_NAME}: {unknown}; known keys are {sorted(known)}.")
        return cls(**values)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **hub_kwargs) -> SequenceTemperatureConfig:
        """Reads `seqtemp_config.json` from a local folder, or from a Hub repo id (via `hf_hub_download`)."""
        if os.path.isdir(path):
            file = os.path.join(path, CONFIG_NAME)
            if not os.path.isfile(file):
                raise FileNotFoundError(
                    f"no {CONFIG_NAME} in {path!s}: is this a folder saved by `SeqTempTrainer.save_model` "
                    "or `SequenceTemperatureConfig.save_pretrained`?"
                )
        else:
            from huggingface_hub import hf_hub_download

            file = hf_hub_download(str(path), CONFIG_NAME, **hub_kwargs)
        with open(file, encoding="utf-8") as handle:
            return cls.from_dict(json.load(handle))
