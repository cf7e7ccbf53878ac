# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a user saved is never lost or mixed: staged saves, one run per output folder, no silent overwrite.

- Saves are staged ([`~hf_seqtemp.staging.staged_save`]).
- **One run per folder** ([`OutputDirLock`]): `train()` holds `<output_dir>/.seqtemp.lock`, which names its holder
  (host, process id, start time). A second run into the folder stops with that name; a lock whose process is gone
  (same host) is stale and taken over with a warning.
- **No silent overwrite**: a folder that holds a finished adapter (`seqtemp_config.json` at its top) is not trained
  into afresh unless `overwrite_output_dir=True` ([`check_finished_output`]).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import warnings

from ..config import CONFIG_NAME

LOCK_NAME = ".seqtemp.lock"


def _holder() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class OutputDirLock:
    """`<output_dir>/.seqtemp.lock`, created exclusively, naming its holder; released by [`release`]."""

    def __init__(self, output_dir: str | os.PathLike):
        self.path = os.path.join(str(output_dir), LOCK_NAME)
        self.held = False

    def acquire(self) -> None:
        """Takes the lock, or raises `RuntimeError` naming the run that holds it. A lock left by a process that is
        gone (same host) is taken over with a warning."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._read()
                if holder.get("host") == socket.gethostname() and not _alive(int(holder.get("pid", -1))):
                    warnings.warn(
                        f"Taking over the stale lock {self.path}: its run (process {holder.get('pid')} on "
                        f"{holder.get('host')}, started {holder.get('started')}) is gone.",
                        stacklevel=4,  # the caller of `train()`
                    )
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(self.path)
                    continue
                raise RuntimeError(
                    f"`output_dir` {os.path.dirname(self.path)!r} is in use by another run (process "
                    f"{holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}; lock "
                    f"{self.path}). Two runs in one folder overwrite each other's adapter and checkpoints: give this "
                    "run another `output_dir`, or wait for that one to end. If that run is gone (another host, "
                    "killed), delete the lock file."
                ) from None
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(_holder(), handle)
            self.held = True
            return

    def _read(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {"pid": -1, "host": "unknown (unreadable lock)", "started": "unknown"}

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)
            self.held = False


def check_finished_output(args, resume: str | None) -> None:
    """Refuses to train afresh into a folder that holds a finished adapter (its top-level `seqtemp_config.json`)
    unless `args.overwrite_output_dir`: the new run's save would replace it."""
    finished = os.path.join(args.output_dir, CONFIG_NAME)
    if resume is not None or args.overwrite_output_dir or not os.path.isfile(finished):
        return
    raise ValueError(
        f"`output_dir` {args.output_dir!r} holds a finished adapter ({CONFIG_NAME}), which this run would "
        "overwrite: give another `output_dir`, or set `overwrite_output_dir` True (`--overwrite_output_dir`) to "
        "replace it."
    )
