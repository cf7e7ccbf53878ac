# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Versioned saves: a saved folder is always one whole save, the old one or the new one, and a reader reads one.

A save writes every file into a staging folder `<folder>/.seqtemp-saves/.partial-…` (the card's held-out
measurement runs there too, the longest part), writes the manifest last ([`~hf_seqtemp.manifest.write_manifest`]:
names, sizes, SHA-256, `fsync`ed), and renames the staging folder to a version `.seqtemp-saves/v<n>`, which is never
written again. The folder's own entries are relative symbolic links through `.seqtemp-saves/current`
(`adapter_model.safetensors -> .seqtemp-saves/current/adapter_model.safetensors`), and `current` names the version
in force. Publishing a version is one atomic `rename` of a new `current` link over the old one: before it, every
entry of the folder reads the old save; after it, every entry reads the new one. An entry of the old save that the
new one does not write is then a link to nothing (no file, to `os.path.isfile` and PEFT alike) and is removed; the
version before is kept for readers in flight, and older ones are deleted.

A kill at any moment leaves the old save or the new one (plus, at worst, a staging folder or links to nothing, which
the next save removes). A reader resolves `current` once ([`saved_version`]) and reads the version folder, which no
save changes: a save published meanwhile cannot give it one save's config with another's weights.

A folder saved by an hf_seqtemp without versions (plain files), or copied with its links followed (`cp -r`,
`shutil.copytree`), is adopted first: its files are hard-linked into a version `v000000` and each is replaced by its
link, content unchanged at every moment.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator

from .config import CONFIG_NAME
from .locking import LockFile
from .manifest import MANIFEST_NAME, fsync_path, write_manifest

SAVES_DIR = ".seqtemp-saves"
CURRENT = "current"
STAGING_PREFIX = ".partial-"
VERSION = re.compile(r"^v(\d{6,})$")
# what a save of an hf_seqtemp without versions left at the top of a folder (adopted as the old save)
LEGACY_NAMES = (
    CONFIG_NAME,
    MANIFEST_NAME,
    "adapter_config.json",
    "adapter_model.safetensors",
    "model.safetensors",
    "model.safetensors.index.json",
    "README.md",
)
WRITE_FAILURES = ("basic_ios", "unexpected pos", "file write failed", "No space left", "File too large")


def saved_version(folder: str | os.PathLike) -> str:
    """The folder to read a save from: the version `folder`'s `current` link names (never changed by a later save),
    or `folder` itself when it holds no versioned save."""
    link = os.path.join(str(folder), SAVES_DIR, CURRENT)
    if os.path.islink(link):
        return os.path.realpath(link)
    return str(folder)


def is_write_failure(error: BaseException) -> bool:
    """Whether `error` is a failure to write a file (an `OSError`, or torch's words for a full disk)."""
    return isinstance(error, OSError) or any(words in str(error) for words in WRITE_FAILURES)


def free_space(path: str) -> str:
    """'<n> MiB free' on the disk of `path` (or of its nearest existing parent)."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        return f"{shutil.disk_usage(path or '.').free / 2**20:.0f} MiB free"
    except OSError:
        return "free space unknown"


@contextlib.contextmanager
def staged_save(folder: str | os.PathLike) -> Iterator[str]:
    """Yields a staging folder; on a clean exit its files become `folder`'s next version, published at once
    ([`publish`]). On an error nothing in `folder` changes; a failure to write (a full disk, a file-size limit) is
    re-raised as an `OSError` naming the folder, its free space and that the previous save is unchanged."""
    folder = str(folder)
    saves = os.path.join(folder, SAVES_DIR)
    os.makedirs(saves, exist_ok=True)
    _remove_dead_staging(saves)
    staging = tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{socket.gethostname()}-{os.getpid()}-", dir=saves)
    try:
        yield staging
        write_manifest(staging)
        publish(staging, folder)
    except Exception as error:
        if not is_write_failure(error):
            raise
        raise OSError(
            f"saving to {folder} failed: {error} ({free_space(folder)} on its disk; a full disk or a file-size "
            f"limit gives this). The previous save in {folder} is unchanged. Free space (or raise the limit) and save "
            "again."
        ) from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish(staging: str, folder: str) -> None:
    """Makes the complete staging folder `folder`'s current save: renamed to the next version, linked from the
    folder's entries, then published by one atomic rename of the `current` link; entries of the old save that the
    new one lacks are removed, and versions older than the one before are deleted. Concurrent publishers into one
    folder take turns (a `flock`)."""
    saves = os.path.join(folder, SAVES_DIR)
    lock = LockFile(os.path.join(saves, ".publish.lock"))
    lock.try_acquire(blocking=True)
    try:
        _adopt_unversioned(folder, os.listdir(staging))
        versions = _versions(saves)
        name = f"v{(versions[-1][0] + 1 if versions else 1):06d}"
        os.rename(staging, os.path.join(saves, name))
        fsync_path(saves)
        entries = sorted(os.listdir(os.path.join(saves, name)))
        for entry in entries:
            _link_entry(folder, entry)
        previous = os.path.basename(os.path.realpath(os.path.join(saves, CURRENT)))
        swap = os.path.join(saves, f".{CURRENT}-{uuid.uuid4().hex}")
        os.symlink(name, swap)
        os.replace(swap, os.path.join(saves, CURRENT))  # the commit: every entry now reads the new version
        with contextlib.suppress(OSError):  # the new save is in force; what is left here the next save tidies
            fsync_path(saves)
            _tidy(folder, keep=(name, previous))
    finally:
        lock.release(remove=False)


def _versions(saves: str) -> list[tuple[int, str]]:
    return sorted((int(m.group(1)), entry) for entry in os.listdir(saves) if (m := VERSION.match(entry)))


def _entry_target(entry: str) -> str:
    return f"{SAVES_DIR}/{CURRENT}/{entry}"


def _link_entry(folder: str, entry: str) -> None:
    """Makes `folder/entry` the link through `current` (already one, or new: a link to nothing until the commit)."""
    path = os.path.join(folder, entry)
    if os.path.islink(path) and os.readlink(path) == _entry_target(entry):
        return
    if os.path.isdir(path) and not os.path.islink(path):  # a folder outside the save, of a name it writes
        shutil.rmtree(path)
    temporary = os.path.join(folder, f".{entry}.link-{uuid.uuid4().hex}")
    os.symlink(_entry_target(entry), temporary)
    os.replace(temporary, path)  # a file outside the save (a card another tool wrote) is replaced, as by a save


_TEMPORARY_LINK = re.compile(r"^\..+\.link-[0-9a-f]{32}$")
_TEMPORARY_SWAP = re.compile(rf"^\.{CURRENT}-[0-9a-f]{{32}}$")


def _tidy(folder: str, keep: tuple[str, ...]) -> None:
    """After a commit: removes the folder's links through `current` that lead nowhere (entries of the old save only)
    and the temporary links a killed save left, and deletes the versions other than `keep`."""
    saves = os.path.join(folder, SAVES_DIR)
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        dangling = os.path.islink(path) and os.readlink(path) == _entry_target(entry) and not os.path.exists(path)
        if dangling or (_TEMPORARY_LINK.match(entry) and os.path.islink(path)):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    for entry in os.listdir(saves):
        if _TEMPORARY_SWAP.match(entry):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(saves, entry))
    for _, old in _versions(saves):
        if old not in keep:
            shutil.rmtree(os.path.join(saves, old), ignore_errors=True)
    fsync_path(folder)


def _adopt_unversioned(folder: str, new_entries: list[str]) -> None:
    """Turns a save of plain files (written before versioned saves) into version `v000000`, content unchanged: its
    files (the new save's names and [`LEGACY_NAMES`]) are hard-linked into the version, `current` is pointed at it,
    and each file is replaced by its link."""
    saves = os.path.join(folder, SAVES_DIR)
    current = os.path.join(saves, CURRENT)
    if os.path.islink(current):
        return
    if os.path.isdir(current):  # the folder was copied with its links followed: the copy's files are plain now
        shutil.rmtree(current)
    names = {*new_entries, *LEGACY_NAMES} - {SAVES_DIR}
    names |= {entry for entry in os.listdir(folder) if re.match(r"^model-\d+-of-\d+\.safetensors$", entry)}
    plain = sorted(
        n for n in names if os.path.lexists(os.path.join(folder, n)) and not os.path.islink(os.path.join(folder, n))
    )
    if not plain:
        return
    version = os.path.join(saves, "v000000")
    shutil.rmtree(version, ignore_errors=True)  # a killed adoption: done again from the untouched files
    os.makedirs(version)
    for name in plain:
        source = os.path.join(folder, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(version, name), copy_function=os.link)
        else:
            os.link(source, os.path.join(version, name))
    fsync_path(version)
    swap = os.path.join(saves, f".{CURRENT}-{uuid.uuid4().hex}")
    os.symlink("v000000", swap)
    os.replace(swap, os.path.join(saves, CURRENT))
    for name in plain:
        path = os.path.join(folder, name)
        if os.path.isdir(path):  # a folder cannot be replaced by a link in one rename: moved aside first
            aside = os.path.join(saves, f".adopted-{uuid.uuid4().hex}")
            os.rename(path, aside)
            os.symlink(_entry_target(name), path)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            temporary = os.path.join(folder, f".{name}.link-{uuid.uuid4().hex}")
            os.symlink(_entry_target(name), temporary)
            os.replace(temporary, path)


def _remove_dead_staging(saves: str) -> None:
    """Removes the staging folders (and stray link files) of saves on this host whose process is gone."""
    host = socket.gethostname()
    for entry in os.listdir(saves):
        if not entry.startswith(STAGING_PREFIX):
            continue
        owner, _, pid = entry[len(STAGING_PREFIX) :].rpartition("-")[0].rpartition("-")
        if owner == host and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(saves, entry), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
