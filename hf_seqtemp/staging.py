# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Saves that leave a plain folder: the save's regular files, nothing hidden that it depends on, no earlier version.

After a save, `folder` holds what PEFT (or transformers) writes plus `seqtemp_config.json`, which lists every other
file of the save with its SHA-256 (`files_sha256`). Copies of the files, rsync, zip, tar, git (with or without
symlinks), `upload_folder` and filesystems without links then all do what users expect.

A save is staged *beside* the folder, on its filesystem: every file is written into `.<name>.seqtemp-staging-…`
(the card's held-out measurement runs there too), sealed (the config gets the hashes; every file is `fsync`ed),
and then published under the folder's lock ([`~hf_seqtemp.locking.FolderLock`]):

1. the *commit*: a journal (`.seqtemp-publish.json`: the files to move in, the files of the old save to remove) is
   renamed into the staging folder, which is complete from then on;
2. the *swap*: each new file is renamed over the folder's, the old save's files the new one does not write are
   removed, and `seqtemp_config.json` comes last;
3. the staging folder is deleted.

A save stopped before the commit leaves the old save untouched (its staging folder is removed by the next save).
One stopped after it is *rolled forward*: the next save, run or verifying load ([`roll_forward`], under the lock)
finishes the swap from the staging folder, so the folder becomes the new save, whole. A reader that verifies
(`load_tempered`, `push_to_hub`) waits for a save being published, and checks every file against the hashes of the
config it read (see `hf_seqtemp.saved`).

A save never deletes what it does not own: it removes only the files the old save's config lists, and a folder that
holds other files of the names it would write (a model's folder, a plain PEFT save) is refused by name. A folder
saved by an earlier hf_seqtemp (its entries links through `.seqtemp-saves/current`, or plain files with
`seqtemp_manifest.json`) loads as it is, and the next save into it converts it to this format.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import uuid
import warnings
from collections.abc import Iterator

from .config import CONFIG_NAME
from .locking import FolderLock, alive, beside, errno_name
from .manifest import MANIFEST_NAME, file_sha256, fsync_path, read_manifest

JOURNAL = ".seqtemp-publish.json"
STAGING = "seqtemp-staging"
LEGACY_SAVES = ".seqtemp-saves"  # the versions of an earlier hf_seqtemp (converted by the next save)
# what a save of an hf_seqtemp without file lists left at the top of a folder (owned by that save)
LEGACY_NAMES = (
    CONFIG_NAME,
    MANIFEST_NAME,
    "adapter_config.json",
    "adapter_model.safetensors",
    "model.safetensors",
    "model.safetensors.index.json",
    "README.md",
)
# the files of a model or adapter that training into a folder would overwrite or mix with
MODEL_FILES = re.compile(
    r"^(config\.json|generation_config\.json|adapter_config\.json|tokenizer(_config)?\.json|.*\.safetensors|"
    r".*\.safetensors\.index\.json|pytorch_model.*\.bin|adapter_model\.bin)$"
)
FULL_DISK = (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC))
TORCH_FULL_DISK = ("basic_ios", "unexpected pos", "file write failed", "No space left", "File too large")
PUBLISH_WAIT = 120.0  # seconds a save waits for another save of the folder to finish publishing


# ------------------------------------------------------------------------------------------------------- messages
class SaveRefused(FileExistsError):
    """A save refused before anything was written into its folder (it would overwrite files no save wrote there):
    its message is the whole story, never wrapped as a failure to write."""


def is_write_failure(error: BaseException) -> bool:
    """Whether `error` is a failure to write a file (an `OSError`, or torch's words for a full disk); a refused save
    ([`SaveRefused`]) is not one."""
    if isinstance(error, SaveRefused):
        return False
    return isinstance(error, OSError) or any(words in str(error) for words in TORCH_FULL_DISK)


def free_space(path: str) -> str:
    """'<n> MiB free' on the disk of `path` (or of its nearest existing parent)."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        return f"{shutil.disk_usage(path or '.').free / 2**20:.0f} MiB free"
    except OSError:
        return "free space unknown"


def describe_failure(error: BaseException, folder: str) -> str:
    """The cause of a failed write, in words: the errno's name and the path, and "disk full" only where the
    error is one (ENOSPC, EFBIG, EDQUOT, or torch's words for it)."""
    if isinstance(error, OSError) and error.errno is not None:
        where = f" on {error.filename!r}" if error.filename else ""
        cause = f"[{errno_name(error)}] {error.strerror or error}{where}"
        if error.errno in FULL_DISK:
            return f"{cause} ({free_space(folder)} on its disk: the disk is full or a file-size limit was reached)"
        hints = {
            errno.EACCES: "no permission to write there",
            errno.EPERM: "the filesystem or a permission does not allow it",
            errno.EROFS: "the filesystem is read-only",
            errno.EXDEV: "the staging folder and the folder are on two filesystems",
            errno.ENOENT: "a file or folder disappeared during the save (another process removed it?)",
            errno.ENOTEMPTY: "a folder of that name holds files (another process wrote there?)",
        }
        hint = hints.get(error.errno)
        return f"{cause}{f' ({hint})' if hint else ''}"
    if any(words in str(error) for words in TORCH_FULL_DISK):
        return f"{error} ({free_space(folder)} on its disk: the disk is full or a file-size limit was reached)"
    return str(error)


# ------------------------------------------------------------------------------------------- what a folder holds
def _relative_files(root: str) -> list[str]:
    """Every regular file under `root` (links not followed), as `/`-separated paths relative to it."""
    found = []
    for parent, folders, names in os.walk(root):
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(parent, f))]
        for name in names:
            path = os.path.join(parent, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return sorted(found)


def _read_json(path: str):
    with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as handle:
        return json.load(handle)
    return None


def is_legacy_link(folder: str, name: str) -> bool:
    """Whether `folder/name` is a link of an earlier hf_seqtemp's versioned save (into `.seqtemp-saves/`)."""
    path = os.path.join(folder, name)
    return os.path.islink(path) and os.readlink(path).startswith(f"{LEGACY_SAVES}/")


def owned_files(folder: str) -> set[str]:
    """The files (relative paths) the save in `folder` wrote, its `seqtemp_config.json` included: the config's
    `files_sha256`, or, for an earlier hf_seqtemp's save, its manifest's files (or its known names)."""
    config = os.path.join(folder, CONFIG_NAME)
    if not os.path.lexists(config):
        return set()
    values = _read_json(config)
    if isinstance(values, dict) and isinstance(values.get("files_sha256"), dict):
        return {*values["files_sha256"], CONFIG_NAME}
    owned = {CONFIG_NAME}
    version = os.path.join(folder, LEGACY_SAVES, "current")
    with contextlib.suppress(OSError, ValueError):
        manifest = read_manifest(os.path.realpath(version) if os.path.islink(version) else folder)
        if manifest is not None:
            return owned | set(manifest["files"]) | {MANIFEST_NAME}
    return owned | {name for name in LEGACY_NAMES if os.path.lexists(os.path.join(folder, name))}


def foreign_model_files(folder: str) -> list[str]:
    """The model or adapter files at the top of `folder` that no hf_seqtemp save wrote (a base model's folder, a
    plain PEFT save): a save there would overwrite them or mix with them."""
    if not os.path.isdir(folder):
        return []
    owned = owned_files(folder)
    return sorted(
        name
        for name in os.listdir(folder)
        if MODEL_FILES.match(name) and name not in owned and not is_legacy_link(folder, name)
    )


def _clashes(folder: str, names: list[str], owned: set[str]) -> list[str]:
    """The names the new save writes where `folder` holds something the old save does not own."""
    clashes = []
    for name in names:
        top = name.split("/", 1)[0]
        if name in owned or is_legacy_link(folder, top):
            continue
        if os.path.lexists(os.path.join(folder, name)) or (
            "/" in name and os.path.lexists(os.path.join(folder, top)) and not os.path.isdir(os.path.join(folder, top))
        ):
            clashes.append(name)
    return clashes


# ---------------------------------------------------------------------------------------------- staging folders
def staging_folders(folder: str) -> list[str]:
    """The staging folders of saves into `folder` (beside it), complete or not."""
    prefix = os.path.basename(beside(folder, STAGING)) + "-"
    parent = os.path.dirname(os.path.abspath(folder))
    with contextlib.suppress(FileNotFoundError):
        return sorted(os.path.join(parent, e) for e in os.listdir(parent) if e.startswith(prefix))
    return []


def committed(staging: str) -> bool:
    """Whether a staging folder holds its journal: its save is committed and only needs rolling forward."""
    return os.path.isfile(os.path.join(staging, JOURNAL))


def in_flux(folder: str) -> bool:
    """Whether a committed save of `folder` is still being moved into it."""
    return any(committed(staging) for staging in staging_folders(folder))


def _new_staging(folder: str) -> str:
    staging = f"{beside(folder, STAGING)}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    os.mkdir(staging)  # the umask's permissions, as the files a plain PEFT save writes
    return staging


def _dead(staging: str) -> bool:
    """A staging folder of a process of this host that is gone (its save cannot finish writing it)."""
    host_pid = staging.rsplit("-", 1)[0]
    host, _, pid = host_pid.rpartition("-")
    return host.endswith(socket.gethostname()) and pid.isdigit() and not alive(int(pid))


def roll_forward(folder: str) -> None:
    """Under the folder's lock: finishes a committed save a kill left half-moved (the folder becomes that save,
    whole) and removes the uncommitted staging folders of dead processes."""
    for staging in staging_folders(folder):
        if committed(staging):
            _swap(staging, folder)
        elif _dead(staging):
            shutil.rmtree(staging, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------- saving
def lock_for_save(folder: str, owner=None):
    """Takes `folder`'s lock for a save (waiting for another save's publish; a run's lock is refused) and rolls a
    committed save a kill left behind forward. Returns the owner to release it with."""
    lock = FolderLock(folder, "folder")
    owner = lock.acquire(owner, purpose="save", wait=PUBLISH_WAIT)
    try:
        roll_forward(folder)
    except BaseException:
        lock.release(owner)
        raise
    return owner


@contextlib.contextmanager
def staged_save(folder: str | os.PathLike, owner=None) -> Iterator[str]:
    """Yields a staging folder beside `folder`; on a clean exit its files become `folder`'s save (sealed, committed,
    swapped in). On an error before the commit nothing in `folder` changes and the staging folder is removed; a
    failure to write is re-raised as an `OSError` naming its cause (errno and path), the folder and that the previous
    save is unchanged. `owner` is who holds the folder's lock (a trainer holds its `output_dir`)."""
    folder = os.path.abspath(os.fspath(folder))
    lock = FolderLock(folder, "folder")
    lock.check_folder(owner)  # a run whose folder was moved away saves nothing into whatever is at its path now
    os.makedirs(folder, exist_ok=True)
    lock.release(lock_for_save(folder, owner))  # refused now, not after the save's work, if a run holds the folder
    staging = _new_staging(folder)
    try:
        yield staging
        _seal(staging)
        owner = lock_for_save(folder, owner)
        try:
            _publish(staging, folder)
        finally:
            lock.release(owner)
    except Exception as error:
        if committed(staging):
            raise OSError(
                f"saving to {folder} stopped while moving the new save in: {describe_failure(error, folder)}. The new "
                f"save is complete in {staging}: the next save into {folder} or `load_tempered` finishes moving it."
            ) from error
        if not is_write_failure(error):
            raise
        raise OSError(
            f"saving to {folder} failed: {describe_failure(error, folder)}. The previous save in {folder} is "
            "unchanged. Fix the cause and save again."
        ) from error
    finally:
        if not committed(staging):
            shutil.rmtree(staging, ignore_errors=True)


def _seal(staging: str) -> None:
    """Records the SHA-256 of every file of the save in its `seqtemp_config.json` and `fsync`s everything."""
    config = os.path.join(staging, CONFIG_NAME)
    values = _read_json(config)
    if not isinstance(values, dict):
        raise RuntimeError(  # noqa: TRY004 - a missing file, not a wrong argument
            f"a save must write {CONFIG_NAME} (none in {staging}): this is a bug of hf_seqtemp."
        )
    files = [name for name in _relative_files(staging) if name not in (CONFIG_NAME, JOURNAL)]
    for name in files:
        fsync_path(os.path.join(staging, name))
    values["files_sha256"] = {name: file_sha256(os.path.join(staging, name)) for name in files}
    _write_json(config, values)
    for parent, _, _ in os.walk(staging):
        fsync_path(parent)


def _write_json(path: str, values) -> None:
    """Writes `values` as JSON to `path` through a temporary file, `fsync`ed, renamed into place."""
    partial = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial")
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(values, handle, indent=2, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def _publish(staging: str, folder: str) -> None:
    """Under the folder's lock: refuses a save that would overwrite files it does not own, commits the save (its
    journal) and swaps it in."""
    new = [name for name in _relative_files(staging) if name not in (CONFIG_NAME, JOURNAL)]
    owned = owned_files(folder)
    clashes = _clashes(folder, [*new, CONFIG_NAME], owned)
    if clashes:
        shown = ", ".join(clashes[:6]) + (f" and {len(clashes) - 6} more" if len(clashes) > 6 else "")
        raise SaveRefused(
            f"saving to {folder} would overwrite files that no hf_seqtemp save wrote there ({shown}): it holds a "
            "model or another tool's files. Nothing was changed. Save into another folder (or move those files)."
        )
    _warn_on_a_changed_adapter_config(staging, folder, owned)
    legacy = os.path.lexists(os.path.join(folder, LEGACY_SAVES))
    journal = {"format": 1, "move": new, "remove": sorted(owned - {*new, CONFIG_NAME}), "legacy": legacy}
    _write_json(os.path.join(staging, JOURNAL), journal)
    fsync_path(staging)  # the commit: from here on, the folder becomes this save
    _swap(staging, folder)


PEFT_CONFIG = "adapter_config.json"


def _warn_on_a_changed_adapter_config(staging: str, folder: str, owned: set) -> None:
    """Warns when this save's `adapter_config.json` differs from the one of the save it replaces (another run's,
    another LoRA rank or alpha): a plain PEFT reader, which reads that file and then the weights, can get one save's
    config with the other's weights if the swap falls between its two reads. Saves of one run keep the file."""
    if PEFT_CONFIG not in owned:
        return
    old, new = _read_json(os.path.join(folder, PEFT_CONFIG)), _read_json(os.path.join(staging, PEFT_CONFIG))
    if old is None or new is None or old == new:
        return
    changed = sorted(key for key in {*old, *new} if old.get(key) != new.get(key))
    shown = ", ".join(f"{key} {old.get(key)!r} -> {new.get(key)!r}" for key in changed[:3])
    warnings.warn(
        f"this save replaces {folder}'s adapter_config.json with another one ({shown}"
        f"{' and more' if len(changed) > 3 else ''}): a plain PEFT reader (`PeftModel.from_pretrained`) loading the "
        "folder while the files are moved in may get the old save's config with the new save's weights, without an "
        "error. `hf_seqtemp.load_tempered` checks every file and never mixes; or save a changed adapter into a new "
        "folder (see docs/training.md, 'Who reads a folder during a save').",
        stacklevel=4,
    )


def _swap(staging: str, folder: str) -> None:
    """Moves a committed save's files into `folder` (the config last), removes the old save's other files, and
    deletes the staging folder. Doing it again after a kill finishes it (every step can be repeated)."""
    journal = _read_json(os.path.join(staging, JOURNAL))
    for name in journal["move"]:
        source = os.path.join(staging, name)
        if os.path.exists(source):
            _prepare_parent(folder, name)
            os.replace(source, os.path.join(folder, name))
    for name in journal["remove"]:
        top = name.split("/", 1)[0]
        if is_legacy_link(folder, top):
            os.remove(os.path.join(folder, top))
        elif os.path.isfile(os.path.join(folder, name)) or os.path.islink(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
            _prune_empty(folder, name)
    if os.path.exists(os.path.join(staging, CONFIG_NAME)):
        os.replace(os.path.join(staging, CONFIG_NAME), os.path.join(folder, CONFIG_NAME))
    fsync_path(folder)
    if journal.get("legacy"):
        shutil.rmtree(os.path.join(folder, LEGACY_SAVES), ignore_errors=True)
    os.remove(os.path.join(staging, JOURNAL))
    shutil.rmtree(staging, ignore_errors=True)


def _prepare_parent(folder: str, name: str) -> None:
    """Makes `name`'s parent folders inside `folder`, replacing an earlier hf_seqtemp's link to a folder."""
    if "/" not in name:
        return
    top = name.split("/", 1)[0]
    if is_legacy_link(folder, top):
        os.remove(os.path.join(folder, top))
    os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)


def _prune_empty(folder: str, name: str) -> None:
    """Removes the folders of `name` inside `folder` that its removal left empty."""
    parent = os.path.dirname(name)
    while parent:
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(folder, parent))
        parent = os.path.dirname(parent)
