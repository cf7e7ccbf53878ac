# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Locks that two processes cannot both hold: an open file with an exclusive `flock`, created with its holder's record.

The kernel grants `flock(LOCK_EX)` on one open file to one holder at a time and drops it when the holder's process
ends, however it ends (SIGKILL included), so a dead holder's lock is free without anybody reading process ids: a
reused process id, or a holder that died between two lines of another process's check, cannot make two holders.
A holder removes the file while it still holds it; a process that opened the file just before that removal and
locks it just after finds that its open file is no longer the path's ([`LockFile.try_acquire`] compares the inode)
and tries again on the new file.

A new lock file is created whole, with its holder's record in it: the record is written to a temporary file, which
is then hard-linked to the lock's name (`link` fails when the name exists, on network filesystems too). Where
`flock` does not exclude (a network filesystem that does not forward it), two hosts racing for a free folder still
cannot both hold it: one creates the file, the other finds a record of another host and refuses.

[`FolderLock`] is the lock of a folder that runs and saves write into: `.<name>.seqtemp-lock` beside the folder
(never inside it: a saved folder holds its save's files only), and a `flock` on the folder itself (an open
descriptor of the directory). The file carries the holder's record; the directory's lock is what a user cannot tidy
away: a second run started after someone deleted the "stale" file creates a new one, takes it, and is still refused
by the directory's lock, naming the process that holds it (read from the kernel's table of locks).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import socket
import time
import warnings
import weakref
from typing import ClassVar

from .lock_file import (  # noqa: F401 - re-exported: `locking.fcntl`, `LockFile`, `beside` are this module's API
    UNSUPPORTED,
    LockFile,
    _require_flock,
    beside,
    errno_name,
    fcntl,
    flock_holder,
    process_started,
)

TAKING_WAIT = 2.0  # seconds a lock whose holder has not written its record yet is waited for, before it is named


# -------------------------------------------------------------------------------------------- the folder's lock
def holder_record(purpose: str) -> dict:
    """What a lock file says of its holder: host, process id, start time, what it does (`"run"` or `"save"`)."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "locking": "flock",
        "purpose": purpose,
    }


def alive(pid: int) -> bool:
    """Whether a process of id `pid` exists on this host (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, ValueError):
        return False
    return True


def parse_record(text: str) -> dict:
    """The holder record of a lock file's text (`{}` when empty; an unreadable one is named as such)."""
    if not text.strip():
        return {}
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return {"pid": -1, "host": "unknown (unreadable lock)", "started": "unknown"}
    return record


def _close(fd: int) -> None:
    if fd >= 0:
        os.close(fd)


def _let_go(entry: list) -> None:
    """Lets a held lock go: the folder's own lock first, then the file (removed while still held), so that whoever
    takes the file next finds the folder free."""
    _close(entry[3])
    entry[0].release(remove=True)


class _Owner:
    """Who holds a folder's lock in this process when nobody is named (one save)."""


class FolderLock:
    """The lock of `folder`: `.<name>.seqtemp-lock` beside it, an exclusive `flock` ([`LockFile`]) whose file names
    its holder (host, process id, start time, `"run"` or `"save"`), and an exclusive `flock` on the folder itself,
    which holds even when the file is deleted under a live holder (the folder is created for it when missing, and
    removed again, empty, when the lock is refused).

    One *owner* holds it at a time: a process, and in it one object (a trainer holds its `output_dir` for its whole
    life; a save holds the folder while it publishes). The same owner may take it again (counted); another owner in
    the same process is refused like another process, once objects no longer referenced have been collected.
    A lock left by a killed process on this host is taken over with a warning naming that process, however its id
    has been reused since. A lock file written on another host, or by an hf_seqtemp without `flock` whose process is
    still alive, is refused: this host cannot tell whether that holder is gone.

    Args:
        folder (`str` or `os.PathLike`): the folder the lock keeps one writer in.
        what (`str`, *optional*, defaults to `"output_dir"`): how messages name the folder.
    """

    # path -> [LockFile, weak reference to the owner, count, the folder's descriptor], this process's locks
    _held: ClassVar[dict[str, list]] = {}

    def __init__(self, folder: str | os.PathLike, what: str = "output_dir"):
        self.folder = os.path.abspath(os.fspath(folder))
        self.path = beside(self.folder, "seqtemp-lock")
        self.what = what

    def held_by_this_process(self) -> bool:
        """Whether an owner in this process holds the lock."""
        return self.path in FolderLock._held

    def held_by(self, owner) -> bool:
        entry = FolderLock._held.get(self.path)
        return entry is not None and entry[1]() is owner

    def acquire(self, owner=None, purpose: str = "save", wait: float = 0.0) -> object:
        """Takes the lock for `owner` (a new anonymous owner when `None`, which is returned), or raises
        `RuntimeError` naming the run or save that holds it. With `wait` > 0, a lock held by a *save* is waited for
        up to `wait` seconds (a save holds it for moments); one held by a run is refused at once."""
        owner = owner if owner is not None else _Owner()
        entry = FolderLock._held.get(self.path)
        if entry is not None and entry[1]() is None:
            self._forget()
        entry = FolderLock._held.get(self.path)
        if entry is not None and entry[1]() is owner:
            self._check_same_folder(entry)
            entry[2] += 1
            return owner
        if entry is not None:
            gc.collect()  # a trainer nobody refers to any more lets its folder go when it is collected
        first = time.monotonic()
        deadline = first + wait
        while True:
            lock = LockFile(self.path)
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            if FolderLock._held.get(self.path) is None and lock.try_acquire(record=json.dumps(holder_record(purpose))):
                directory = self._lock_directory()
                if directory is not None:
                    break
                lock.release(remove=lock.created)  # the record was deleted under a live holder: ours goes again
                holder, why = self._directory_holder()
            else:
                holder = self._read()
                why = self._why_held(holder)
            taking = not holder or holder.get("pid") == -1  # no record yet, or one being rewritten
            if taking and time.monotonic() < max(deadline, first + TAKING_WAIT):
                time.sleep(0.05)  # a holder between taking the file and writing its record: who it is comes next
                continue
            holder = holder or {"pid": "?", "host": "?", "started": "just now"}
            if holder.get("purpose", "run") in ("save", None) and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            raise RuntimeError(self._in_use(holder, why))
        if not lock.created:
            try:
                self._take_over(lock)
            except BaseException:
                _close(directory)
                raise
        if not lock.created:  # a file created here holds this record already
            lock.write(json.dumps(holder_record(purpose)))
        reference = weakref.ref(owner)
        FolderLock._held[self.path] = [lock, reference, 1, directory, self._identity()]
        weakref.finalize(owner, FolderLock._drop, self.path, reference)  # collected, or the process ends
        return owner

    def _identity(self) -> tuple | None:
        """`(device, inode)` of the folder now at this lock's path (`None` when there is none)."""
        try:
            info = os.stat(self.folder)
        except FileNotFoundError:
            return None
        return info.st_dev, info.st_ino

    def check_folder(self, owner) -> None:
        """Raises `RuntimeError` when the folder `owner` locked is no longer the one at its path (moved, renamed or
        deleted while the run was live): nothing may be saved into, or deleted from, whatever is there now."""
        entry = FolderLock._held.get(self.path)
        if owner is not None and entry is not None and entry[1]() is owner:
            self._check_same_folder(entry)

    def _check_same_folder(self, entry: list) -> None:
        if self._identity() == entry[4]:
            return
        moved = None
        if entry[3] >= 0:
            with contextlib.suppress(OSError):
                moved = os.readlink(f"/proc/self/fd/{entry[3]}")
        now = "another folder is at that path now" if os.path.isdir(self.folder) else "nothing is at that path now"
        if moved and moved.endswith(" (deleted)"):
            where = "; the folder it locked was deleted"
        else:
            where = f"; the folder it locked is now {moved!r}" if moved and moved != self.folder else ""
        raise RuntimeError(
            f"`{self.what}` {self.folder!r} is no longer the folder this run locked: it was moved, renamed or "
            f"deleted while the run was live ({now}{where}). Nothing is saved into, or deleted from, it: another "
            "run may own the folder at that path. Save this run's model to a new folder (`save_model(NEW_FOLDER)`)."
        )

    def _take_over(self, lock: LockFile) -> None:
        """A lock file that outlived its holder: taken over with a warning, or refused when this host cannot tell."""
        previous = self._parse(lock.read())
        if not previous:
            return
        unknown = self._cannot_tell(previous)
        if unknown:
            lock.release(remove=False)
            raise RuntimeError(self._in_use(previous, unknown) + " If that run is gone, delete the lock file.")
        warnings.warn(
            f"Taking over the stale lock {self.path}: its {previous.get('purpose', 'run')} (process "
            f"{previous.get('pid')} on {previous.get('host')}, started {previous.get('started')}) is gone"
            f"{self._why_gone(previous)}.",
            stacklevel=5,
        )

    def release(self, owner=None) -> None:
        """Lets `owner`'s hold go (the last one removes the file while holding it, then unlocks); any owner when
        `None`."""
        entry = FolderLock._held.get(self.path)
        if entry is None or (owner is not None and entry[1]() is not owner):
            return
        entry[2] -= 1
        if entry[2] <= 0:
            self._forget()

    def _forget(self) -> None:
        entry = FolderLock._held.pop(self.path, None)
        if entry is not None:
            _let_go(entry)

    @staticmethod
    def _drop(path: str, reference) -> None:
        """The owner behind `reference` is gone: its hold on `path` (if still its own) is let go."""
        entry = FolderLock._held.get(path)
        if entry is not None and entry[1] is reference:
            FolderLock._held.pop(path, None)
            _let_go(entry)

    def _lock_directory(self) -> int | None:
        """An exclusive `flock` on the folder itself (created when missing): its open descriptor, `-1` where the
        filesystem has no `flock` on folders (the lock file alone keeps runs apart there), or `None` when another
        process holds it (a folder created here for it is removed again)."""
        created = not os.path.isdir(self.folder)
        os.makedirs(self.folder, exist_ok=True)
        fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if created:
                with contextlib.suppress(OSError):
                    os.rmdir(self.folder)
            return None
        except OSError as error:
            os.close(fd)
            if error.errno in UNSUPPORTED:
                return -1
            raise
        return fd

    def _directory_holder(self) -> tuple[dict, str]:
        """Who holds the folder's own lock, when its lock file is gone: the process the kernel names."""
        pid = flock_holder(self.folder)
        holder = {
            "pid": pid if pid is not None else "unknown",
            "host": socket.gethostname(),
            "started": process_started(pid) if pid is not None else "unknown",
            "purpose": None,
        }
        why = (
            "its lock file was deleted while it holds the folder; the folder itself is locked too, so this run is "
            "refused all the same. Never delete a lock file: it is removed when its run or save ends"
        )
        return holder, why

    # ------------------------------------------------------------------------------------------------- messages
    @staticmethod
    def _cannot_tell(previous: dict) -> str:
        """Why this host cannot tell whether the holder that wrote `previous` is gone ('' when it can)."""
        if previous.get("host") != socket.gethostname():
            return f"it was written on another host ({previous.get('host')}), whose `flock` this host may not see"
        if previous.get("locking") != "flock" and alive(int(previous.get("pid", -1))):
            return "it was written by an hf_seqtemp without `flock`, and its process is still alive"
        return ""

    @staticmethod
    def _why_gone(previous: dict) -> str:
        if previous.get("locking") == "flock" and alive(int(previous.get("pid", -1))):
            return f" (process {previous.get('pid')} is alive but does not hold the lock: its id was reused)"
        return ""

    def _why_held(self, holder: dict) -> str:
        pid = holder.get("pid")
        if holder.get("host") == socket.gethostname() and isinstance(pid, int):
            if pid == os.getpid():
                return (
                    "another object of this process holds it: a `SeqTempTrainer` keeps its `output_dir` until "
                    "`trainer.close()`"
                )
            if not alive(pid):
                return "that process is gone and another run is taking the lock over from it right now"
        return "it holds the lock now"

    def _in_use(self, holder: dict, why: str) -> str:
        purpose = holder.get("purpose", "run") or "run or save"
        return (
            f"`{self.what}` {self.folder!r} is in use by another {purpose} (process {holder.get('pid')} on "
            f"{holder.get('host')}, started {holder.get('started')}; lock {self.path}; {why}). Two runs or saves "
            "in one folder overwrite each other's adapter and checkpoints: give this one another folder, or wait "
            "for that one to end."
        )

    _parse = staticmethod(parse_record)

    def _read(self) -> dict:
        """The holder's record, `{}` while there is none to read (a holder that has just taken the file)."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                return self._parse(handle.read())
        except OSError:
            return {}
