# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`SequenceTemperatureConfig`: the temperature a tempered model was trained to, and what was measured."""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from .checks import SUPPORTED_TEMPERATURES, check_temperature_range

CONFIG_NAME = "seqtemp_config.json"
FAMILIES = ("causal_lm", "masked_diffusion", "block_diffusion")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_optional_number(name, value, low=-math.inf, high=math.inf, allow_nan=True):
    """`None`, or a number in [low, high] (NaN allowed where a figure can be undefined, e.g. a flat T_eff fit)."""
    if value is None:
        return None
    if _is_number(value) and math.isnan(value) and allow_nan:
        return float(value)
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        bounds = "a finite number" if math.isinf(low) and math.isinf(high) else f"a number in [{low:g}, {high:g}]"
        raise ValueError(f"`{name}` must be {bounds} or null, got {value!r}.")
    return float(value)


def _check_optional_count(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"`{name}` must be an integer >= 1 or null, got {value!r}.")
    return value


def _check_optional_text(name, value, what="a non-empty string"):
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ValueError(f"`{name}` must be {what} or null, got {value!r}.")
    return value


def _check_hyperparameters(value) -> dict:
    scalar = (str, int, float, bool, type(None))
    if not isinstance(value, dict):
        raise ValueError(  # noqa: TRY004 (a bad value in a JSON file: one error type for every field)
            f"`training_hyperparameters` must be an object of name -> number/string/bool/null, got {value!r}."
        )
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, scalar) or (isinstance(item, float) and math.isinf(item)):
            raise ValueError(
                f"`training_hyperparameters` must map names to a number, string, bool or null; got {key!r}: {item!r}."
            )
    return value


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def check_fingerprint(value: Any) -> dict[str, Any]:
    """Checks the types of a recorded `base_model_fingerprint` ([`~hf_seqtemp.fingerprint.base_fingerprint`]),
    raising naming the bad key."""
    name = "base_model_fingerprint"
    if not isinstance(value, dict):
        raise ValueError(f"`{name}` must be an object (written by hf_seqtemp) or null, got {value!r}.")  # noqa: TRY004
    digest = value.get("weights_sha256")
    if not _is_sha256(digest):
        raise ValueError(f"`{name}.weights_sha256` must be 64 lowercase hex digits, got {digest!r}.")
    ids, logps = value.get("canary_token_ids"), value.get("canary_logps")
    if (ids is None) != (logps is None):
        raise ValueError(f"`{name}` must give both `canary_token_ids` and `canary_logps`, or neither.")
    if ids is not None:
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids
        ):
            raise ValueError(f"`{name}.canary_token_ids` must be a list of token ids >= 0, got {ids!r}.")
        numbers = isinstance(logps, list) and all(isinstance(v, (int, float)) and v <= 0 for v in logps)
        if not numbers or len(logps) != len(ids) - 1:
            raise ValueError(
                f"`{name}.canary_logps` must hold {len(ids) - 1} log-probabilities <= 0 (one per canary token "
                f"after the first), got {logps!r}."
            )
    return value


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
        eval_answer_tokens (`float`, *optional*): their mean length in completion tokens. What separates a token
            temperature from a sequence temperature adds up with the answer's length: the figures hold for answers
            of about this length.
        base_model_fingerprint (`dict`, *optional*): what identifies the base weights p the adapter was tempered
            against ([`~hf_seqtemp.fingerprint.base_fingerprint`]): a SHA-256 of the float32 weights and the base's
            log-probabilities of a fixed canary sequence. `load_tempered` compares it with the base it is given.
        base_model_source (`str`, *optional*): what exactly `base_model_id` stands for when the id alone does not
            say, e.g. the embedded model, which is the Hub model dequantised from a Q4_1 GGUF file.
        weights_sha256 (`str`, *optional*): the SHA-256 of the weights saved beside this config, which its figures
            were measured on ([`~hf_seqtemp.manifest.weights_digest`]); `load_tempered` refuses weights of another
            hash (a save that replaced the weights without the config, or the other way round).
        tokenizer_sha256 (`str`, *optional*): the SHA-256 of the mapping of tokens to ids of the tokenizer the adapter
            was trained with ([`~hf_seqtemp.models.fit.tokenizer_sha256`]); measuring the adapter with a tokenizer
            that maps words to other ids is refused.
        files_sha256 (`dict`, *optional*): every other file of the save this config was written with (relative
            path -> SHA-256), recorded by the save itself ([`~hf_seqtemp.staging.staged_save`]); a later save removes
            only these files, and `load_tempered` and `push_to_hub` check them (weights and model configs that differ
            are refused, a card edited by hand is a warning). [`save_pretrained`] writes it as null: the list
            describes one saved folder.

    Fields are checked when the config is built or read: `target_temperature` must be in [1e-3, 1e3]
    (`hf_seqtemp.checks.SUPPORTED_TEMPERATURES`; outside it p^(1/T) is numerically the mode or uniform), every
    other field has the type above, and figures their natural range.

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
    eval_answer_tokens: float | None = None
    base_model_fingerprint: dict[str, Any] | None = None
    base_model_source: str | None = None
    weights_sha256: str | None = None
    tokenizer_sha256: str | None = None
    files_sha256: dict[str, str] | None = None
    hf_seqtemp_version: str = "0.1.0"

    def __post_init__(self):
        if self.base_model_id == "":  # a model built from a config has `_name_or_path == ""`: no id
            self.base_model_id = None
        self.target_temperature = check_temperature_range(self.target_temperature, "target_temperature")
        if self.model_family not in FAMILIES:
            raise ValueError(f"`model_family` must be one of {FAMILIES}, got {self.model_family!r}.")
        _check_optional_text("base_model_id", self.base_model_id, "a Hub id or a path")
        _check_optional_text("loss_type", self.loss_type, "a loss name (see `hf_seqtemp.losses.LOSSES`)")
        _check_optional_text("base_model_source", self.base_model_source)
        _check_optional_text("hf_seqtemp_version", self.hf_seqtemp_version, "a version string")
        self.training_hyperparameters = _check_hyperparameters(self.training_hyperparameters)
        self.eval_t_eff = _check_optional_number("eval_t_eff", self.eval_t_eff)
        self.eval_kendall_tau = _check_optional_number("eval_kendall_tau", self.eval_kendall_tau, -1.0, 1.0)
        self.eval_nll = _check_optional_number("eval_nll", self.eval_nll, 0.0)
        self.eval_prompts = _check_optional_count("eval_prompts", self.eval_prompts)
        self.eval_sequences = _check_optional_count("eval_sequences", self.eval_sequences)
        self.eval_answer_tokens = _check_optional_number(
            "eval_answer_tokens", self.eval_answer_tokens, 0.0, allow_nan=False
        )
        if self.base_model_fingerprint is not None:
            check_fingerprint(self.base_model_fingerprint)
        if self.weights_sha256 is not None and not _is_sha256(self.weights_sha256):
            raise ValueError(f"`weights_sha256` must be 64 lowercase hex digits or null, got {self.weights_sha256!r}.")
        if self.tokenizer_sha256 is not None and not _is_sha256(self.tokenizer_sha256):
            raise ValueError(
                f"`tokenizer_sha256` must be 64 lowercase hex digits or null, got {self.tokenizer_sha256!r}."
            )
        if self.files_sha256 is not None and not (
            isinstance(self.files_sha256, dict)
            and all(isinstance(k, str) and k and _is_sha256(v) for k, v in self.files_sha256.items())
        ):
            raise ValueError(
                "`files_sha256` must be an object of relative file path -> 64 lowercase hex digits (written by a "
                f"save), or null; got {self.files_sha256!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def save_pretrained(self, save_directory: str | os.PathLike) -> str:
        """Writes `seqtemp_config.json` into `save_directory` (created if needed) and returns its path."""
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, CONFIG_NAME)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self._standalone().to_json_string())
        return path

    def _standalone(self) -> SequenceTemperatureConfig:
        """This config without `files_sha256`, which describes the folder it was read from, not another."""
        return self if self.files_sha256 is None else dataclasses.replace(self, files_sha256=None)

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
            path_or_fileobj=self._standalone().to_json_string().encode("utf-8"),
            path_in_repo=CONFIG_NAME,
            repo_id=repo_id,
            commit_message=commit_message,
        )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SequenceTemperatureConfig:
        """Builds a config from the object of a `seqtemp_config.json`, refusing unknown keys and bad values."""
        if not isinstance(values, dict):
            kind = "a JSON list" if isinstance(values, list) else f"{type(values).__name__} {values!r}"
            raise ValueError(f"a {CONFIG_NAME} must hold a JSON object of config fields, got {kind}.")  # noqa: TRY004
        known = {f.name for f in fields(cls)}
        # files written before the unmeasured LoRA-scale dial was removed carry an empty, never-read `calibration`
        values = {key: value for key, value in values.items() if not (key == "calibration" and not value)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown keys in a {CONFIG_NAME}: {unknown}; known keys are {sorted(known)}.")
        if "target_temperature" not in values:
            raise ValueError(f"a {CONFIG_NAME} must give `target_temperature`, a number in {SUPPORTED_TEMPERATURES}.")
        try:
            return cls(**values)
        except TypeError as error:  # e.g. a non-number `target_temperature`
            raise ValueError(str(error)) from None

    @classmethod
    def from_json_file(cls, file: str | os.PathLike) -> SequenceTemperatureConfig:
        """Reads one `seqtemp_config.json`; every error names the file (and the field)."""
        try:
            with open(file, encoding="utf-8") as handle:
                values = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{file}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})."
            ) from None
        except UnicodeDecodeError as error:
            raise ValueError(f"{file}: not UTF-8 text ({error.reason}).") from None
        try:
            return cls.from_dict(values)
        except ValueError as error:
            raise ValueError(f"{file}: {error}") from None

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **hub_kwargs) -> SequenceTemperatureConfig:
        """Reads `seqtemp_config.json` from a local folder (or the file itself), or from a Hub repo id (via
        `hf_hub_download`). A path that is neither gives `FileNotFoundError` ("not found"), not a Hub error."""
        if os.path.isdir(path):
            file = os.path.join(path, CONFIG_NAME)
            if not os.path.isfile(file):
                raise FileNotFoundError(
                    f"no {CONFIG_NAME} in {path!s}: is this a folder saved by `SeqTempTrainer.save_model` "
                    "or `SequenceTemperatureConfig.save_pretrained`? A save killed while moving its files into "
                    "place also leaves none (it is written last): save the model again."
                )
        elif os.path.isfile(path):
            file = path
        else:
            file = resolve_hub_file(str(path), CONFIG_NAME, **hub_kwargs)
        return cls.from_json_file(file)


def looks_like_local_path(path: str) -> bool:
    """Whether `path` can only be a local path (absolute, `./`, `~`, a backslash, a final or more than one `/`), never a
    Hub repo id (`name` or `user/name`), or is meant as one: `user/name` where a local folder `user` exists (a
    mistyped `out/adaptr` next to `out/adapter` fails at once instead of after Hub retries)."""
    if os.path.isabs(path) or path.startswith((".", "~")) or path.endswith("/") or "\\" in path or path.count("/") > 1:
        return True
    return "/" in path and os.path.isdir(path.split("/", 1)[0])


def resolve_hub_file(path: str, filename: str, **hub_kwargs) -> str:
    """`hf_hub_download(path, filename)`, with "not found" for a path that is not there locally nor on the Hub."""
    not_found = f"not found: {path!r} is not a local folder"
    if looks_like_local_path(path):
        parent, name = os.path.split(os.path.normpath(os.path.expanduser(path)))
        siblings = os.listdir(parent or ".") if os.path.isdir(parent or ".") else []
        close = difflib.get_close_matches(name, siblings, n=1)
        hint = f"; did you mean {os.path.join(parent, close[0])!r}?" if close else " (check the path)."
        raise FileNotFoundError(f"{not_found}{hint}")
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(path, filename, **hub_kwargs)
    except Exception as error:  # offline, no such repository, no such file, an invalid repo id
        from .offline import hub_offline, offline_message

        if hub_offline():
            raise FileNotFoundError(f"not found: {offline_message(path, 'repository')}") from error
        raise FileNotFoundError(
            f"{not_found}, and no Hub repository {path!r} with {filename} could be read "
            f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})."
        ) from error
