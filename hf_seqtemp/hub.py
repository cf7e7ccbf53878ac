# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Shipping a tempered adapter: the folder uploaded to the Hub (weights, config, card, plot) and the upload itself.

Everything here *receives* what it writes (a model, a [`SequenceTemperatureConfig`], a measurement): nothing reaches
back into the trainer, which calls these functions when it saves.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil

from .card import CARD_NAME, PLOT_NAME, ROW_NAMES, plot_log_likelihoods, render_model_card, write_card  # noqa: F401
from .config import SequenceTemperatureConfig
from .generation.custom_generate import write_custom_generate
from .measure import measure_held_out
from .models.fit import tokenizer_sha256
from .peft_compat import is_peft_model
from .progress import get_logger
from .saved import check_files, legacy_version, recorded_files, settle
from .staging import staged_save
from .upload import UPLOAD_IGNORED, check_pushable, remove_stale_copies, upload_changes, upload_copy, warn_dropped

logger = get_logger(__name__)

__all__ = [
    "check_can_push",
    "create_repo",
    "embedding_save_kwargs",
    "measure_held_out",
    "push_to_hub",
    "render_model_card",
    "save_for_hub",
    "save_weights",
    "write_card",
]


# ---------------------------------------------------------------------------------------------------- the folder
def _base_vocab_size(base_id: str) -> int | None:
    """`vocab_size` of the base model's config.json when a copy is on this machine (no network), else `None`."""
    from huggingface_hub import try_to_load_from_cache

    from .models.default import DEFAULT_MODEL_ID, cached_model_folder

    candidates = [os.path.join(base_id, "config.json")]
    if base_id == DEFAULT_MODEL_ID:
        candidates.append(str(cached_model_folder() / "config.json"))
    try:
        candidates.append(try_to_load_from_cache(base_id, "config.json"))
    except ValueError:  # not a repo id
        pass
    for path in candidates:
        if isinstance(path, str) and os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return json.load(handle).get("vocab_size")
    return None


def _adapts_embeddings(model, targets) -> bool:
    """Whether an adapter's `target_modules` include an embedding layer, decided as PEFT decides it."""
    from peft.utils.constants import EMBEDDING_LAYER_NAMES

    if isinstance(targets, str) and targets != "all-linear":
        names = (name for name, _ in model.get_base_model().named_modules())
        embeddings = [n for n in names if any(re.match(rf"(.*\.)?{e}$", n) for e in EMBEDDING_LAYER_NAMES)]
        return any(re.fullmatch(targets, name) for name in embeddings)
    return bool(targets) and any(name in targets for name in EMBEDDING_LAYER_NAMES)


def embedding_save_kwargs(model) -> dict:
    """`save_embedding_layers` for `PeftModel.save_pretrained`, decided from local files instead of a Hub lookup.

    PEFT's default (`"auto"`) saves the embedding matrices when the adapted model's vocabulary differs from the base
    model's, and asks the Hub for the base config to find out; offline it cannot, and warns. The base config is
    usually on this machine: in a local folder, in the embedded model's cache, or in the Hugging Face cache it was
    downloaded into. Returns `{}` (PEFT decides as before) when embeddings are adapted or no local copy exists.

    Example:
    ```python
    >>> embedding_save_kwargs(torch.nn.Linear(2, 2))  # not a PeftModel
    {}
    ```
    """
    if not is_peft_model(model):
        return {}
    config = model.peft_config.get(model.active_adapter)
    base_id = getattr(config, "base_model_name_or_path", None)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    targets = getattr(config, "target_modules", None)
    if not base_id or vocab is None or _adapts_embeddings(model, targets):
        return {}  # PEFT saves adapted embeddings on its own; without a base id or vocabulary there is no question
    base_vocab = _base_vocab_size(base_id)
    return {} if base_vocab is None else {"save_embedding_layers": base_vocab != vocab}


def save_weights(model, folder: str | os.PathLike, state_dict: dict | None = None) -> None:
    """Writes `model`'s weights into `folder` with `save_pretrained` (safetensors and JSON only), PEFT being told
    from local files whether the base vocabulary changed ([`embedding_save_kwargs`]); a plain `torch.nn.Module`
    without `save_pretrained` is written as its state dict (`model.safetensors`), as `Trainer` does.

    Example:
    ```python
    >>> import tempfile, torch
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_weights(torch.nn.Linear(2, 2), folder)
    ...     sorted(os.listdir(folder))
    ['model.safetensors']
    ```
    """
    if is_peft_model(model):
        _save_active_adapter(model, str(folder), state_dict)
        return
    if callable(getattr(model, "save_pretrained", None)):
        model.save_pretrained(str(folder), state_dict=state_dict, **embedding_save_kwargs(model))
        return
    import safetensors.torch

    state_dict = state_dict if state_dict is not None else model.state_dict()
    safetensors.torch.save_file(state_dict, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})


def _save_active_adapter(model, folder: str, state_dict) -> None:
    """The active adapter's files at the top of `folder`, where `load_tempered(folder)` reads them: PEFT writes an
    adapter that is not named "default" (such as `t0_5` from [`load_tempered`]) into a subfolder of its name."""
    name = model.active_adapter
    model.save_pretrained(folder, state_dict=state_dict, selected_adapters=[name], **embedding_save_kwargs(model))
    written = os.path.join(folder, name)
    if name != "default" and os.path.isfile(os.path.join(written, "adapter_config.json")):
        for entry in os.listdir(written):
            os.replace(os.path.join(written, entry), os.path.join(folder, entry))
        os.rmdir(written)


def _tokenizer_for(model, config: SequenceTemperatureConfig):
    """The tokenizer saved beside an adapter from [`load_tempered`] (its source folder's, else its base model's), or
    `None` when neither is on this machine."""
    from transformers import AutoTokenizer

    from .models.default import DEFAULT_MODEL_ID, load_default_model

    source = getattr(model, "seqtemp_source", None)
    if source and os.path.isfile(os.path.join(source, "tokenizer_config.json")):
        return AutoTokenizer.from_pretrained(source)
    if config.base_model_id == DEFAULT_MODEL_ID:
        return load_default_model()[1]
    if config.base_model_id and os.path.isfile(os.path.join(config.base_model_id, "tokenizer_config.json")):
        return AutoTokenizer.from_pretrained(config.base_model_id)
    logger.warning(
        "save_for_hub: no tokenizer was given and none is on this machine beside the adapter or its base model, so "
        "the folder has none: pass `tokenizer=`."
    )
    return None


def _save_model_folder(model, folder, held_out_dataset, base_model, tokenizer, dataset_names, repo_id, batch_size):
    """`save_for_hub` for a model from `load_tempered`: weights, tokenizer, then the measured card."""
    config = getattr(model, "seqtemp_config", None)
    if not isinstance(config, SequenceTemperatureConfig):
        raise TypeError(
            "`trainer_or_model` must be a SeqTempTrainer or a model carrying `seqtemp_config` (from `load_tempered`), "
            f"got a {type(model).__name__} without one: set `model.seqtemp_config = SequenceTemperatureConfig(...)`."
        )
    config = copy.deepcopy(config)  # never change the model's own `seqtemp_config`
    with staged_save(folder) as staging:  # the old folder stays whole until every new file is written
        save_weights(model, staging)
        tokenizer = tokenizer if tokenizer is not None else _tokenizer_for(model, config)
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)
            config.tokenizer_sha256 = tokenizer_sha256(tokenizer) or config.tokenizer_sha256
        if isinstance(base_model, (str, os.PathLike)):
            config.base_model_id = str(base_model)
        measurement = None
        if held_out_dataset is not None:
            measurement = measure_held_out(
                model, held_out_dataset, config.target_temperature, base_model, tokenizer, batch_size=batch_size
            )
        source = "its `seqtemp_config.json`, as recorded when it was saved"
        plot = os.path.join(str(getattr(model, "seqtemp_source", "")), PLOT_NAME)
        if measurement is None and config.eval_t_eff is not None and os.path.isfile(plot):
            shutil.copyfile(plot, os.path.join(staging, PLOT_NAME))  # the recorded figures' plot travels with them
        options = {"repo_id": repo_id, "dataset_names": dataset_names, "source": source, "shown_as": folder}
        options["custom_generate"] = True  # written beside it below
        written = write_card(staging, config, measurement, **options)
        write_custom_generate(staging)
        return written


def save_for_hub(
    trainer_or_model,
    folder: str | os.PathLike,
    *,
    held_out_dataset=None,
    base_model=None,
    tokenizer=None,
    dataset_names: list[str] | None = None,
    repo_id: str | None = None,
    batch_size: int = 16,
) -> SequenceTemperatureConfig:
    """Writes the folder that `push_to_hub` uploads: adapter, `seqtemp_config.json`, `custom_generate/`, card, plot.

    With a held-out dataset (for a [`SeqTempTrainer`], its `eval_dataset` by default) the base model, the myopic
    baseline and the tempered model are scored on it ([`measure_held_out`]); the tempered model's T_eff, Kendall τ
    and NLL per token go into `seqtemp_config.json` and all three rows into the card's table and plot. A trainer
    writes the folder with `save_model`, which measures once per training step: a `save_model()` before it is
    not scored again.

    Args:
        trainer_or_model ([`SeqTempTrainer`] or `PeftModel`): a trainer (which writes the folder itself with
            [`~hf_seqtemp.trainer.hub_mixin.HubMixin.save_for_hub`], calling the functions of this module), or a
            model from [`load_tempered`] (any model with a `seqtemp_config` attribute and `save_pretrained`).
        folder (`str` or `os.PathLike`): where to write; created if needed.
        held_out_dataset ([`~datasets.Dataset`], *optional*): sequences to measure on.
        base_model (*optional*): the base model object (full fine-tuning), or a Hub id recorded as the base model.
        tokenizer (*optional*): saved in the folder and used to tokenise text datasets.
        dataset_names (`list` of `str`, *optional*): Hub dataset ids recorded in the card metadata.
        repo_id (`str`, *optional*): repository the folder is meant for (used in the usage snippet).
        batch_size (`int`, *optional*, defaults to 16): sequences per forward pass when measuring.

    Returns:
        [`SequenceTemperatureConfig`]: the config written, with the measured figures.

    Example:
    ```python
    >>> config = save_for_hub(trainer, "outputs/hub", dataset_names=["me/prompts"])  # doctest: +SKIP
    >>> config.eval_t_eff  # doctest: +SKIP
    ```
    """
    if isinstance(dataset_names, str):
        raise TypeError(f"`dataset_names` must be a list of Hub dataset ids, got the string {dataset_names!r}.")
    options = {"held_out_dataset": held_out_dataset, "base_model": base_model, "tokenizer": tokenizer}
    options.update(dataset_names=dataset_names, repo_id=repo_id, batch_size=batch_size)
    save_own_folder = getattr(trainer_or_model, "save_for_hub", None)
    if callable(save_own_folder):  # a SeqTempTrainer writes its folder itself, through the functions of this module
        return save_own_folder(folder, **options)
    return _save_model_folder(trainer_or_model, folder, **options)


# ---------------------------------------------------------------------------------------------------- the upload
def check_can_push(token: str | None = None) -> None:
    """Fails at once when an upload cannot succeed, so that nothing is trained or scored for it first.

    Args:
        token (`str`, *optional*): the token that will be used; without one, the logged-in token must exist.

    Raises:
        `huggingface_hub.errors.OfflineModeIsEnabled`: `HF_HUB_OFFLINE=1` is set.
        `huggingface_hub.errors.LocalTokenNotFoundError`: no token was given and none is logged in.

    Example:
    ```python
    >>> check_can_push("hf_...")  # doctest: +SKIP
    ```
    """
    from huggingface_hub import constants, get_token
    from huggingface_hub.errors import LocalTokenNotFoundError, OfflineModeIsEnabled

    if constants.is_offline_mode():
        raise OfflineModeIsEnabled(
            "cannot push to the Hub: offline mode is on (HF_HUB_OFFLINE=1). Unset HF_HUB_OFFLINE to upload, or "
            "save locally instead with `save_for_hub(trainer, folder)` or `trainer.save_model()` and upload later."
        )
    if token is None and get_token() is None:
        raise LocalTokenNotFoundError(
            "cannot push to the Hub: no token. Log in with `hf auth login`, set the HF_TOKEN environment variable, "
            "or pass a write token (`hub_token` / `--hub_token`)."
        )


def create_repo(repo_id: str, private: bool | None = False, token: str | None = None) -> str:
    """Creates the repository `repo_id` if needed and returns its full id, as the Hub names it: a bare `name` is
    created in the token's namespace and comes back as `user/name`, which `Trainer` uploads to as well.

    Example:
    ```python
    >>> create_repo("smollm2-seqtemp-0.5")  # doctest: +SKIP
    'me/smollm2-seqtemp-0.5'
    ```
    """
    from huggingface_hub import HfApi

    return HfApi(token=token).create_repo(repo_id, private=private, exist_ok=True).repo_id


def push_to_hub(
    folder: str | os.PathLike,
    repo_id: str,
    private: bool | None = False,
    token: str | None = None,
    commit_message: str = "Upload sequence-tempered adapter with hf_seqtemp",
    revision: str | None = None,
):
    """Creates the repository (if needed) and uploads `folder`: the only network call of hf_seqtemp. The folder is
    uploaded as the save wrote it (a card edited by hand and files added by the user included; checkpoints and `_*`
    files left out, as `Trainer.push_to_hub` does), once no save is being moved into it, after its weights and
    configs are checked against the SHA-256 its `seqtemp_config.json` records (a card edited since the save: a
    warning). A save published into it during the upload is named after it.

    What is uploaded names the repository, not this machine ([`~hf_seqtemp.upload.upload_changes`]): the card's
    usage and metadata name `repo_id` as the Hub returns it (`user/name` for a bare `name`); a local base model is
    named by its Hub id where one is known and left out (with a warning) where not; `training_args.json` loses its
    local paths; `seqtemp_config.json` records the hashes of the files as uploaded, so that a downloaded copy loads
    without a warning. A folder without a tempered model (empty, a base model, a plain PEFT adapter) is refused.

    Args:
        folder (`str` or `os.PathLike`): typically written by [`save_for_hub`].
        repo_id (`str`): `"user/name"`, or `"name"` in the token's namespace.
        private (`bool`, *optional*, defaults to `False`): visibility of a newly created repository.
        token (`str`, *optional*): Hub token with write access; the logged-in token by default.
        commit_message (`str`, *optional*): commit message.
        revision (`str`, *optional*): branch to commit to.

    Returns:
        `huggingface_hub.CommitInfo` of the upload.

    Example:
    ```python
    >>> push_to_hub("outputs/hub", "me/smollm2-seqtemp-0.5")  # doctest: +SKIP
    ```
    """
    if not isinstance(repo_id, str) or not repo_id.strip():
        raise ValueError(f"`repo_id` must be a Hub repository id such as 'user/name', got {repo_id!r}.")
    if not os.path.isdir(folder):
        raise ValueError(f"`folder` must be an existing folder (from `save_for_hub`), got {str(folder)!r}.")
    check_can_push(token)
    from huggingface_hub import HfApi

    folder = str(folder)
    remove_stale_copies()  # what pushes killed on this machine left in the temporary directory
    settle(folder)  # a save being moved in is waited for (or, its process gone, finished)
    source = legacy_version(folder) or folder  # an earlier hf_seqtemp's save: the version its links name
    check_pushable(source, folder)  # empty, a base model, a plain PEFT adapter: refused by name
    recorded = recorded_files(source)
    if recorded is not None:
        check_files(source, recorded, folder)  # weights replaced: refused; a card edited by hand: a warning
    before = _listing(source)
    repo_id = create_repo(repo_id, private=private, token=token)  # `name` alone is `user/name` from here on
    changes, dropped = upload_changes(source, repo_id)  # named for the repository, no local path
    warn_dropped(dropped, repo_id)
    with upload_copy(source, changes) as uploaded:
        info = HfApi(token=token).upload_folder(
            repo_id=repo_id,
            folder_path=uploaded,
            commit_message=commit_message,
            revision=revision,
            ignore_patterns=list(UPLOAD_IGNORED),  # a copy: huggingface_hub appends its defaults to the list
        )
    if _listing(source) != before:
        raise RuntimeError(
            f"{folder} changed while it was uploaded to {repo_id} (a save was published into it meanwhile): the "
            "commit may hold files of two saves. Push again once no save is running."
        )
    return info


def _listing(folder: str) -> dict[str, tuple]:
    """Every file under `folder` with its inode, size and modification time (a save renames new files in)."""
    listing = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                status = os.stat(os.path.join(parent, name))
                listing[os.path.join(parent, name)] = (status.st_ino, status.st_size, status.st_mtime_ns)
    return listing
