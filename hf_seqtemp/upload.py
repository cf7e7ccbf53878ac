# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What [`~hf_seqtemp.hub.push_to_hub`] uploads: a saved folder as the Hub shows it.

A save names things as they are on the machine that saved it: the card's usage loads the folder, the card's
metadata names the folder and a local base model, `adapter_config.json` and `seqtemp_config.json` record the base's
local path, `training_args.json` its `output_dir`. What is uploaded names the repository instead ([`upload_changes`]):

- the card's usage and its metadata (`model-index`) name the repository the folder is pushed to;
- a base model's local path is replaced by its Hub id where one is known (a folder of the Hugging Face cache, the
  embedded default model's folder, or the Hub id `seqtemp_config.json` records), and left out where none is (a
  warning names what was left out and how to name the base);
- local paths of `training_args.json` (`output_dir`, ...) are left out, with a warning;
- `seqtemp_config.json`'s `files_sha256` records the files as uploaded, so that a downloaded copy loads without a
  warning that its card "differs from what was saved".

The changed files are written into a copy of the folder (hard links for the others) in the temporary directory
([`upload_copy`]), named after the process that made it: a push killed while it prepares or uploads leaves its copy
behind, and the next push removes the copies of processes that are gone ([`remove_stale_copies`]). The saved folder
itself is never changed.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import warnings
from collections.abc import Iterator

from .card import CARD_NAME
from .config import CONFIG_NAME, looks_like_local_path
from .locking import alive

PUSH_PREFIX = ".seqtemp-push-"
# as `Trainer.push_to_hub`: checkpoints and private files stay local; the lock and staged saves live beside the folder
UPLOAD_IGNORED = ("_*", "checkpoint-*", "checkpoint-*/**")
_IGNORED_NAMES = ("_*", "checkpoint-*")  # the name patterns among them (the third is huggingface_hub's, for contents)
PEFT_CONFIG = "adapter_config.json"
TRAINING_ARGS = "training_args.json"
# `TrainingArguments` fields that name local files or folders (any other field holding an absolute path is too)
TRAINING_PATH_FIELDS = ("output_dir", "logging_dir", "resume_from_checkpoint", "deepspeed", "fsdp_config")
NO_BASE = "<base model>"
_USAGE_NAME = re.compile(r'load_tempered\("([^"]+)"\)')
_CACHED = re.compile(r"(?:^|/)models--([^/]+)/snapshots/[^/]+/?$")
_COPY = re.compile(rf"^{re.escape(PUSH_PREFIX)}(\d+)@(.+)-[^-]+$")


# ---------------------------------------------------------------------------------------------------- what may go up
def check_pushable(folder: str, shown: str) -> None:
    """Refuses a folder that holds no tempered model, naming what it holds instead: nothing (an empty commit), a
    model without `seqtemp_config.json` (a base model), or a plain PEFT adapter (no temperature recorded)."""
    files = [name for name in _files(folder) if not _ignored(name)]
    if not files:
        raise ValueError(
            f"`folder` {shown!r} holds no file to upload (the push would be an empty commit): save the model into it "
            "first, with `save_for_hub(trainer_or_model, folder)` or `trainer.save_model(folder)`."
        )
    if CONFIG_NAME in files:
        return
    if PEFT_CONFIG in files:
        raise ValueError(
            f"`folder` {shown!r} is a plain PEFT adapter: it has no `{CONFIG_NAME}`, so nothing says which sequence "
            "temperature it samples at and `load_tempered` refuses it. Make it a tempered folder: measure the "
            "temperature it reaches against its base (`hf_seqtemp.measure.measure_held_out`), then "
            f"`SequenceTemperatureConfig(target_temperature=T, base_model_id=BASE).save_pretrained({shown!r})` and "
            "push again; or upload it as a plain adapter with `PeftModel.push_to_hub`."
        )
    weights = [name for name in files if name.endswith(".safetensors") or name == "config.json"]
    what = "a model (a base model, not a tempered one)" if weights else f"no model ({', '.join(sorted(files)[:4])})"
    raise ValueError(
        f"`folder` {shown!r} holds {what} and no `{CONFIG_NAME}`: push the folder `save_for_hub` or "
        "`SeqTempTrainer.save_model` wrote, which holds it. A plain model goes up with `model.push_to_hub(repo_id)`."
    )


def _files(folder: str) -> list[str]:
    found = []
    for parent, _, names in os.walk(folder):
        found += [os.path.relpath(os.path.join(parent, name), folder).replace(os.sep, "/") for name in names]
    return found


def _ignored(name: str) -> bool:
    """Left out of the upload: a file or folder of `UPLOAD_IGNORED`'s name patterns, at any depth."""
    return any(fnmatch.fnmatch(part, pattern) for part in name.split("/") for pattern in _IGNORED_NAMES)


# ---------------------------------------------------------------------------------------------------- local names
def is_local_path(value) -> bool:
    """Whether `value` names a file or folder of this machine rather than a Hub repository."""
    return isinstance(value, str) and bool(value) and (looks_like_local_path(value) or os.path.exists(value))


def hub_id_of(path: str) -> str | None:
    """The Hub id a local model folder is a copy of, where the folder says: a snapshot of the Hugging Face cache
    (`models--org--name/snapshots/<revision>`) or the embedded default model's folder; `None` for any other folder.

    Example:
    ```python
    >>> hub_id_of("/home/me/.cache/huggingface/hub/models--org--tiny/snapshots/0123abc")
    'org/tiny'
    >>> hub_id_of("/data/my-base") is None
    True
    ```
    """
    from .models.default import DEFAULT_MODEL_ID, cached_model_folder

    real = os.path.realpath(os.path.expanduser(path)).replace(os.sep, "/")
    cached = _CACHED.search(real)
    if cached:
        return cached.group(1).replace("--", "/")  # the cache writes "/" as "--", which no repo id holds
    if real == os.path.realpath(cached_model_folder()).replace(os.sep, "/"):
        return DEFAULT_MODEL_ID
    return None


def upload_changes(folder: str, repo_id: str) -> tuple[dict[str, bytes], list[str]]:
    """`(changes, dropped)`: the files of `folder` that are uploaded changed (`{name: content}`), so that they name
    `repo_id` and no local path, and what was left out for want of a Hub id (each a sentence)."""
    changes, dropped = {}, []
    config = _read_json(folder, CONFIG_NAME)
    recorded_base = config.get("base_model_id") if isinstance(config, dict) else None
    bases = {}  # local path of the base -> its Hub id, or None
    known = recorded_base if recorded_base and not is_local_path(recorded_base) else None
    peft = _read_json(folder, PEFT_CONFIG)
    for value in (recorded_base, peft.get("base_model_name_or_path") if isinstance(peft, dict) else None):
        if is_local_path(value):
            bases[value] = hub_id_of(value) or known
    if isinstance(peft, dict) and peft.get("base_model_name_or_path") in bases:
        peft["base_model_name_or_path"] = bases[peft["base_model_name_or_path"]]
        changes[PEFT_CONFIG] = _json_bytes(peft)
    args = _read_json(folder, TRAINING_ARGS)
    if isinstance(args, dict):
        local = sorted(key for key, value in args.items() if _is_path_field(key, value))
        if local:
            changes[TRAINING_ARGS] = _json_bytes({k: v for k, v in args.items() if k not in local})
            fields = ", ".join(f"`{key}`" for key in local)
            dropped.append(f"{TRAINING_ARGS} is uploaded without {fields} (paths of this machine)")
    card = _read_text(folder, CARD_NAME)
    if card is not None:
        named = _card_naming(card, repo_id, bases)
        if named != card:
            changes[CARD_NAME] = named.encode("utf-8")
    unnamed = sorted(path for path, hub_id in bases.items() if hub_id is None)
    if unnamed:
        dropped.append(
            f"the base model's local path {', '.join(map(repr, unnamed))} is left out of {CONFIG_NAME}, "
            f"{PEFT_CONFIG} and the card (no Hub id is known for it): a visitor passes the base to "
            "`load_tempered(repo_id, base_model=...)`. To name it, save with `save_for_hub(..., "
            'base_model="org/name")` (its Hub id) and push that folder'
        )
    if isinstance(config, dict):
        new = dict(config)
        if recorded_base in bases:
            new["base_model_id"] = bases[recorded_base]
        if isinstance(new.get("files_sha256"), dict):  # the files as uploaded: a downloaded copy checks clean
            hashes = dict(new["files_sha256"])
            hashes.update({name: hashlib.sha256(data).hexdigest() for name, data in changes.items() if name in hashes})
            new["files_sha256"] = hashes
        if new != config:
            changes[CONFIG_NAME] = _json_bytes(new)
    return changes, dropped


def _is_path_field(key: str, value) -> bool:
    """A `TrainingArguments` field naming a local file or folder: a path field set to text, or any absolute path."""
    if not isinstance(value, str) or not value:
        return False
    return key in TRAINING_PATH_FIELDS or os.path.isabs(os.path.expanduser(value))


def _card_naming(text: str, repo_id: str, bases: dict[str, str | None]) -> str:
    """The card as uploaded: its usage and `model-index` name `repo_id`, its base model the Hub id (or no path)."""
    from huggingface_hub import ModelCard

    card = ModelCard(text) if text.startswith("---") else None
    body = card.text if card is not None else text
    shown = _USAGE_NAME.search(body)
    if shown is not None and shown.group(1) != repo_id:
        body = body.replace(f'"{shown.group(1)}"', f'"{repo_id}"')
    for path, hub_id in bases.items():
        if hub_id is None:
            body = body.replace(
                f"The base model p is `{path}`",
                "The base model p is a local model of the machine that saved this adapter, not named here",
            )
            body = body.replace(f"](https://huggingface.co/{path})", "](#)")
        body = body.replace(path, hub_id or NO_BASE)
    if card is None:
        return body
    data, changed = card.data, body != card.text
    if data.eval_results and data.model_name != repo_id:
        data.model_name, changed = repo_id, True
    if data.base_model in bases:
        data.base_model, changed = bases[data.base_model], True
    tags = []
    for tag in data.tags or []:
        kind, _, named = tag.rpartition(":")
        if tag.startswith("base_model:") and named in bases:
            tag, changed = (f"{kind}:{bases[named]}" if bases[named] else None), True
        tags += [tag] if tag else []
    if not changed:
        return text
    data.tags = tags or None
    card.text = body
    return str(card)


def _read_json(folder: str, name: str):
    text = _read_text(folder, name)
    with contextlib.suppress(ValueError, TypeError):
        return json.loads(text)
    return None


def _read_text(folder: str, name: str) -> str | None:
    with contextlib.suppress(OSError, UnicodeDecodeError), open(os.path.join(folder, name), encoding="utf-8") as file:
        return file.read()
    return None


def _json_bytes(values: dict) -> bytes:
    return (json.dumps(values, indent=2, sort_keys=True) + "\n").encode("utf-8")


# ---------------------------------------------------------------------------------------------------- the copy
@contextlib.contextmanager
def upload_copy(folder: str, changes: dict[str, bytes]) -> Iterator[str]:
    """The folder to upload: `folder` itself without `changes`, else a copy in the temporary directory (hard links,
    each changed file written anew, so the saved folder keeps its own), removed on exit. Its name holds this
    process's id and host, so that a later push removes it if this process is killed ([`remove_stale_copies`])."""
    if not changes:
        yield folder
        return
    scratch = tempfile.mkdtemp(prefix=f"{PUSH_PREFIX}{os.getpid()}@{_host()}-")
    try:
        staged = os.path.join(scratch, "folder")
        shutil.copytree(folder, staged, copy_function=_link, ignore=shutil.ignore_patterns(*UPLOAD_IGNORED))
        for name, content in changes.items():
            path = os.path.join(staged, *name.split("/"))
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)  # a new file: the linked original stays as saved
            with open(path, "wb") as handle:
                handle.write(content)
        yield staged
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links refused: a plain copy
        shutil.copy2(source, target)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"


def remove_stale_copies(directory: str | None = None) -> list[str]:
    """Removes the upload copies ([`upload_copy`]) that processes of this host made and left behind when they were
    killed (those whose process is gone); returns their paths. Copies of live processes, of other hosts, and
    folders named otherwise are left alone."""
    directory = directory or tempfile.gettempdir()
    removed = []
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            made = _COPY.match(name)
            if made is None or made.group(2) != _host() or alive(int(made.group(1))):
                continue
            path = os.path.join(directory, name)
            shutil.rmtree(path, ignore_errors=True)
            removed += [path] if not os.path.exists(path) else []
    return removed


def warn_dropped(dropped: list[str], repo_id: str) -> None:
    if dropped:
        warnings.warn(f"push_to_hub({repo_id!r}): {'; '.join(dropped)}.", stacklevel=3)
