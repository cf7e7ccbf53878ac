# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a user saved is never lost or mixed: staged saves, one run per output folder, no silent overwrite.

- Saves are staged ([`~hf_seqtemp.staging.staged_save`]).
- **One run per folder** ([`OutputDirLock`]): `train()` takes `<output_dir>/.seqtemp.lock` (an exclusive `flock`,
  which the kernel grants to one process and drops when it dies) before it deletes or writes anything, and holds it
  to the end; the file names its holder (host, process id, start time). A second run into the folder stops with
  that name; a lock whose holder is gone is taken over with a warning.
- **No silent overwrite**: a folder that holds a finished adapter (`seqtemp_config.json` at its top) is not trained
  into afresh unless `overwrite_output_dir=True` ([`check_finished_output`]).
"""

from __future__ import annotations

import json
import os
import socket
import time
import warnings

from ..config import CONFIG_NAME
from ..locking import LockFile

LOCK_NAME = ".seqtemp.lock"


def _holder() -> dict:
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "locking": "flock",
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class OutputDirLock:
    """`<output_dir>/.seqtemp.lock`: an exclusive `flock` ([`~hf_seqtemp.locking.LockFile`]) held for the whole run,
    the file naming its holder (host, process id, start time); released by [`release`].

    Two processes cannot both hold it (the kernel grants the `flock` to one), and the kernel lets it go when its
    holder dies, so a lock left by a killed run on this host is taken over (with a warning naming that run), however
    its process id has been reused since. A lock file written on another host, or by an hf_seqtemp without `flock`
    whose process is still alive, is refused: this host cannot tell whether that run is gone.
    """

    def __init__(self, output_dir: str | os.PathLike):
        self.path = os.path.join(str(output_dir), LOCK_NAME)
        self._file = LockFile(self.path)

    @property
    def held(self) -> bool:
        return self._file.held

    def acquire(self) -> None:
        """Takes the lock, or raises `RuntimeError` naming the run that holds it."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        if not self._file.try_acquire():
            raise RuntimeError(self._in_use(self._read(), "it holds the lock now"))
        previous = self._parse(self._file.read())
        if previous:  # its holder never released it: killed, or another host's, or an older hf_seqtemp's
            unknown = self._cannot_tell(previous)
            if unknown:
                self._file.release(remove=False)
                raise RuntimeError(self._in_use(previous, unknown) + " If that run is gone, delete the lock file.")
            warnings.warn(
                f"Taking over the stale lock {self.path}: its run (process {previous.get('pid')} on "
                f"{previous.get('host')}, started {previous.get('started')}) is gone{self._why_gone(previous)}.",
                stacklevel=4,  # the caller of `train()`
            )
        self._file.write(json.dumps(_holder()))

    @staticmethod
    def _cannot_tell(previous: dict) -> str:
        """Why this host cannot tell whether the run that wrote `previous` is gone ('' when it can)."""
        if previous.get("host") != socket.gethostname():
            return f"it was written on another host ({previous.get('host')}), whose `flock` this host may not see"
        if previous.get("locking") != "flock" and _alive(int(previous.get("pid", -1))):
            return "it was written by an hf_seqtemp without `flock`, and its process is still alive"
        return ""

    @staticmethod
    def _why_gone(previous: dict) -> str:
        if previous.get("locking") == "flock" and _alive(int(previous.get("pid", -1))):
            return f" (process {previous.get('pid')} is alive but does not hold the lock: its id was reused)"
        return ""

    def _in_use(self, holder: dict, why: str) -> str:
        return (
            f"`output_dir` {os.path.dirname(self.path)!r} is in use by another run (process {holder.get('pid')} on "
            f"{holder.get('host')}, started {holder.get('started')}; lock {self.path}"
            f"{'; ' + why if why else ''}). Two runs in one folder overwrite each other's adapter and checkpoints: "
            "give this run another `output_dir`, or wait for that one to end."
        )

    @staticmethod
    def _parse(text: str) -> dict:
        if not text.strip():
            return {}
        try:
            record = json.loads(text)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            return {"pid": -1, "host": "unknown (unreadable lock)", "started": "unknown"}
        return record

    def _read(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as handle:
                return self._parse(handle.read()) or {"pid": "?", "host": "?", "started": "just now"}
        except OSError:
            return {"pid": "?", "host": "?", "started": "just now"}

    def release(self) -> None:
        """Removes the lock file while holding it, then lets the lock go."""
        self._file.release(remove=True)


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
