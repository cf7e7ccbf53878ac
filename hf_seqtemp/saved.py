# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Reading a saved folder whole: one save's files, checked against the hashes its `seqtemp_config.json` records.

A save moves its files into the folder one by one ([`~hf_seqtemp.staging`]), so a reader that opens two files while
a save is being published could get one from each. [`whole_save`] reads one save whole: it first waits for (or,
when its publisher was killed, finishes) a save being moved in, then links or copies the files it needs into a
private folder (a later save renames new files over the folder's, never writes into them, so a linked or copied
file keeps its content) and checks each against the config it copied with them. Files that changed meanwhile are
read again, from the next save.

What is checked, and how a difference is reported:

- weights and model configs (`*.safetensors`, `adapter_config.json`, `config.json`): refused, named, with the fix;
- any other file of the save (the card, the tokenizer, `training_args.json`): a warning naming it (a card edited
  by hand is what is loaded and uploaded);
- files the save did not write (added by the user): not checked, kept, uploaded.

A folder saved by an earlier hf_seqtemp (links through `.seqtemp-saves/current`) is read from the version those
links name, checked against its manifest.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator

from .config import CONFIG_NAME
from .locking import FolderLock, beside
from .manifest import MANIFEST_NAME, file_sha256, manifest_problem
from .staging import LEGACY_SAVES, STAGING, in_flux, is_legacy_link, roll_forward

CRITICAL = re.compile(r"(\.safetensors|\.bin|\.pt|\.pth|\.ckpt|\.pkl|\.gguf)$|(^|/)(adapter_config|config)\.json$")
READ_WAIT = 60.0  # seconds a reader waits for a save being moved into the folder
ATTEMPTS = 5


class SaveMismatch(ValueError):
    """A file of a save that is not the one its `seqtemp_config.json` records (replaced, damaged, or missing)."""


def settle(folder: str, timeout: float = READ_WAIT) -> None:
    """Returns once no save is being moved into `folder`: a save whose publisher is gone is finished here
    ([`~hf_seqtemp.staging.roll_forward`], under the folder's lock); one being moved in is waited for up to
    `timeout` seconds, then named."""
    if not in_flux(folder):
        return
    lock, deadline = FolderLock(folder, "folder"), time.monotonic() + timeout
    if lock.held_by_this_process():  # this process's own save stopped mid-move (an interrupt): nobody else moves
        roll_forward(folder)
        return
    while in_flux(folder):
        try:
            owner = lock.acquire(purpose="save")
        except (RuntimeError, OSError) as busy:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{folder} is in the middle of a save ({busy}): load it again once that save has ended."
                ) from None
            time.sleep(0.1)
            continue
        try:
            roll_forward(folder)
        finally:
            lock.release(owner)


def legacy_version(folder: str) -> str | None:
    """The version folder an earlier hf_seqtemp's save of `folder` reads from (its links through
    `.seqtemp-saves/current`), or `None` for a plain folder."""
    current = os.path.join(folder, LEGACY_SAVES, "current")
    if os.path.islink(current) and is_legacy_link(folder, CONFIG_NAME):
        return os.path.realpath(current)
    config = os.path.join(folder, CONFIG_NAME)
    if os.path.isfile(config) and os.path.getsize(config) < 200:
        with open(config, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        if text.startswith(f"{LEGACY_SAVES}/"):
            raise ValueError(
                f"{config} holds the text {text.strip()!r}: it was a link of an earlier hf_seqtemp's save, copied by "
                "a tool that does not keep links (git with `core.symlinks=false`, an archive, a FAT disk). Copy the "
                "folder again with its links kept (or from the machine that saved it), then save it once with this "
                "hf_seqtemp: saves are plain files now."
            )
    return None


def recorded_files(folder: str) -> dict[str, str] | None:
    """The `files_sha256` of `folder`'s `seqtemp_config.json` (`None` for a save of an earlier hf_seqtemp)."""
    with contextlib.suppress(OSError, ValueError):
        with open(os.path.join(folder, CONFIG_NAME), encoding="utf-8") as handle:
            values = json.load(handle)
        files = values.get("files_sha256") if isinstance(values, dict) else None
        return files if isinstance(files, dict) else None
    return None


def check_files(folder: str, recorded: dict[str, str], shown: str, names=None) -> None:
    """Compares the files of `folder` (those of `names`, or all) with `recorded` (`name -> SHA-256`): a weight or
    model config that differs or is missing raises [`SaveMismatch`]; any other file gives a warning."""
    critical, other = [], []
    for name, digest in sorted(recorded.items()):
        if names is not None and name not in names:
            continue
        path = os.path.join(folder, *name.split("/"))
        if not os.path.isfile(path):
            problem = f"{name} is missing"
        elif file_sha256(path) != digest:
            problem = f"{name} differs from what was saved"
        else:
            continue
        (critical if CRITICAL.search(name) else other).append(problem)
    if critical:
        staged = os.path.basename(beside(shown, STAGING)) + "-…"
        raise SaveMismatch(
            f"the save in {shown!r} is damaged: {'; '.join(critical)} (its SHA-256 is not the one {CONFIG_NAME} "
            "records). The folder holds files of two saves when a save into it was interrupted while its files were "
            f"moved in and the folder beside it that held the rest of that save ({staged}) was deleted, or when it "
            "was copied while a save was being moved into it; otherwise the file was replaced, cut or damaged after "
            "the save. Save the model again, or copy or download it again once no save is running."
        )
    if other:
        warnings.warn(
            f"{shown}: {'; '.join(other)} ({CONFIG_NAME} records another SHA-256): edited after the save? It is "
            "used as it is.",
            stacklevel=3,
        )


def _stamp(path: str):
    with contextlib.suppress(OSError):
        status = os.stat(path)
        return status.st_ino, status.st_size, status.st_mtime_ns
    return None


def _freeze(source: str, private: str, names: tuple[str, ...]) -> None:
    """Hard-links (or copies) `source`'s config, manifest and `names` into `private`: their content is fixed from
    then on, whatever a later save renames over `source`'s files."""
    for name in (CONFIG_NAME, MANIFEST_NAME, *names):
        path = os.path.join(source, name)
        if not os.path.isfile(path):
            continue
        target = os.path.join(private, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(os.path.realpath(path), target)
        except OSError:
            shutil.copyfile(path, target)


@contextlib.contextmanager
def whole_save(folder: str, names: tuple[str, ...], shown: str | None = None) -> Iterator[str]:
    """Yields a private folder holding `folder`'s `seqtemp_config.json` and the files `names` of one whole save,
    checked (deleted on exit). The save's other files are checked where they are ([`check_files`]).

    Raises:
        SaveMismatch: a weight or model config differs from its save's record (and no save is being published).
        RuntimeError: the folder changed under every attempt (saves published continuously).
    """
    shown = shown or folder
    for attempt in range(ATTEMPTS):
        settle(folder)
        source = legacy_version(folder) or folder
        before = _stamp(os.path.join(source, CONFIG_NAME))
        private = tempfile.mkdtemp(prefix="seqtemp-read-")
        try:
            _freeze(source, private, names)
            _check_frozen(private, source, shown, names)
        except (SaveMismatch, FileNotFoundError):
            shutil.rmtree(private, ignore_errors=True)
            changed = _stamp(os.path.join(source, CONFIG_NAME)) != before or in_flux(folder)
            if changed and attempt < ATTEMPTS - 1:
                continue
            raise
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
        try:
            yield private
        finally:
            shutil.rmtree(private, ignore_errors=True)
        return
    raise RuntimeError(f"{folder} changed while it was read, {ATTEMPTS} times: saves keep publishing into it.")


def _check_frozen(private: str, source: str, shown: str, names: tuple[str, ...]) -> None:
    recorded = recorded_files(private)
    if recorded is not None:
        check_files(private, recorded, shown, names=set(names))
        others = {name: digest for name, digest in recorded.items() if name not in names}
        check_files(source, others, shown)
        return
    if os.path.isfile(os.path.join(private, MANIFEST_NAME)):  # an earlier hf_seqtemp's save
        problem = manifest_problem(private, only=names)
        if problem is not None and "is missing" not in problem:
            raise SaveMismatch(
                f"the adapter {shown!r} is damaged: {problem}. Save it again (or download it again); a checkpoint of "
                "the run can be loaded instead."
            )
