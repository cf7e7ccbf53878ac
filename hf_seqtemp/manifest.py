# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a saved folder should contain, written last and checked before anything is loaded from it.

`seqtemp_manifest.json` lists every file of a save (a checkpoint, a saved adapter) with its size and SHA-256. It is
written after every file it lists, through a temporary file, `fsync`ed, and renamed into place, the folder being
`fsync`ed after the rename: once the manifest exists, every file it lists was on the disk (as far as the disk's own
cache honours `fsync`) with exactly the recorded bytes. [`manifest_problem`] re-reads the files and names the first
that is missing, of another size or of other content (a cut file, 0 bytes, 256 overwritten bytes that stay finite).
"""

from __future__ import annotations

import hashlib
import json
import os

MANIFEST_NAME = "seqtemp_manifest.json"
MANIFEST_FORMAT = 1
WEIGHT_NAMES = ("adapter_model.safetensors", "model.safetensors")
_CHUNK = 1 << 20


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB chunks.

    Example:
    ```python
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(delete=False) as handle:
    ...     _ = handle.write(b"abc")
    >>> file_sha256(handle.name)[:16]
    'ba7816bf8f01cfea'
    ```
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def weights_digest(folder: str | os.PathLike) -> str | None:
    """The SHA-256 of a saved model's weights: of `adapter_model.safetensors` or `model.safetensors`, or, for a
    sharded save, of its shards' names and hashes in order; `None` when `folder` holds no safetensors weights."""
    folder = str(folder)
    for name in WEIGHT_NAMES:
        if os.path.isfile(os.path.join(folder, name)):
            return file_sha256(os.path.join(folder, name))
    shards = sorted(n for n in os.listdir(folder) if n.startswith("model-") and n.endswith(".safetensors"))
    if not shards:
        return None
    digest = hashlib.sha256()
    for name in shards:
        digest.update(f"{name}:{file_sha256(os.path.join(folder, name))}\n".encode())
    return digest.hexdigest()


def _listed_files(folder: str) -> list[str]:
    """Every regular file under `folder` (links followed), as `/`-separated paths relative to it, but the manifest."""
    found = []
    for root, _, names in os.walk(folder, followlinks=True):
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")
            if relative != MANIFEST_NAME and os.path.isfile(os.path.join(root, name)):
                found.append(relative)
    return sorted(found)


def fsync_path(path: str) -> None:
    """`fsync`s a file or a folder (a folder's entry for a renamed file is durable only once the folder is)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if os.path.isdir(path) else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(folder: str | os.PathLike, sync: bool = True) -> dict:
    """Writes `folder/seqtemp_manifest.json` listing every file under `folder` with its size and SHA-256, after
    `fsync`ing each file (with `sync`); the manifest itself goes through a temporary file, `fsync` and a rename, and
    the folder is `fsync`ed. Returns what was written.

    Example:
    ```python
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "weights.bin"), "wb").write(b"abc")
    >>> write_manifest(folder)["files"]["weights.bin"]["size"]
    3
    >>> manifest_problem(folder) is None
    True
    ```
    """
    folder = str(folder)
    files = {}
    for relative in _listed_files(folder):
        path = os.path.join(folder, relative)
        if sync:
            fsync_path(path)
        files[relative] = {"size": os.path.getsize(path), "sha256": file_sha256(path)}
    manifest = {"format": MANIFEST_FORMAT, "files": files}
    partial = os.path.join(folder, f".{MANIFEST_NAME}.partial")
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)
        handle.flush()
        if sync:
            os.fsync(handle.fileno())
    os.replace(partial, os.path.join(folder, MANIFEST_NAME))
    if sync:
        fsync_path(folder)
    return manifest


def read_manifest(folder: str | os.PathLike) -> dict | None:
    """The manifest of `folder`, or `None` when it has none.

    Raises:
        ValueError: a manifest that cannot be read or is not one hf_seqtemp wrote.
    """
    path = os.path.join(str(folder), MANIFEST_NAME)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({error}): the manifest is damaged.") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if manifest.get("format") != MANIFEST_FORMAT or not isinstance(files, dict):
        raise ValueError(f"{path} is not a manifest of format {MANIFEST_FORMAT} (a `files` object): it is damaged.")
    return manifest


def manifest_problem(folder: str | os.PathLike, only: tuple[str, ...] | None = None) -> str | None:
    """What differs between `folder` and its manifest, or `None` when every listed file (or, with `only`, every
    listed file of those names) is there with the recorded size and SHA-256. A folder without a manifest is a
    problem too ("no manifest").

    Example:
    ```python
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "optimizer.pt"), "wb").write(b"state")
    >>> _ = write_manifest(folder, sync=False)
    >>> _ = open(os.path.join(folder, "optimizer.pt"), "wb").write(b"")
    >>> manifest_problem(folder)
    'optimizer.pt has 0 bytes where its manifest records 5 (cut short or overwritten)'
    ```
    """
    try:
        manifest = read_manifest(folder)
    except ValueError as error:
        return str(error)
    if manifest is None:
        return f"no {MANIFEST_NAME}"
    for relative, record in sorted(manifest["files"].items()):
        if only is not None and relative not in only:
            continue
        path = os.path.join(str(folder), *relative.split("/"))
        if not os.path.isfile(path):
            return f"{relative} is missing (listed in its manifest)"
        size = os.path.getsize(path)
        if size != record.get("size"):
            recorded = record.get("size")
            return f"{relative} has {size} bytes where its manifest records {recorded} (cut short or overwritten)"
        if file_sha256(path) != record.get("sha256"):
            return (
                f"{relative} differs from what was saved (its SHA-256 is not the manifest's): the file was damaged "
                "or replaced"
            )
    return None
