# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A lock file that two processes cannot both hold: an open file with an exclusive `flock`.

The kernel grants `flock(LOCK_EX)` on one open file to one holder at a time and drops it when the holder's process
ends, however it ends (SIGKILL included), so a dead holder's lock is free without anybody reading process ids: a
reused process id, or a holder that died between two lines of another process's check, cannot make two holders.
A holder removes the file while it still holds it; a process that opened the file just before that removal and
locks it just after finds that its open file is no longer the path's ([`LockFile.try_acquire`] compares the inode)
and tries again on the new file.

POSIX `flock` is local to a machine on most network filesystems that do not forward it; [`LockFile`] users record
the holder's host and refuse, rather than take over, a lock file written on another host.
"""

from __future__ import annotations

import contextlib
import os

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def _require_flock() -> None:
    if fcntl is None:  # pragma: no cover - Windows
        raise OSError(
            "hf_seqtemp's output-folder lock needs POSIX `fcntl.flock` (Linux, macOS); it is not available on this "
            "platform."
        )


class LockFile:
    """An exclusive `flock` on `path`, which is created if needed.

    Example:
    ```python
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "run.lock")
    >>> first, second = LockFile(path), LockFile(path)
    >>> first.try_acquire(), second.try_acquire()
    (True, False)
    >>> first.release(); second.try_acquire()
    True
    ```
    """

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self.fd: int | None = None

    @property
    def held(self) -> bool:
        return self.fd is not None

    def try_acquire(self, blocking: bool = False) -> bool:
        """Takes the lock and returns `True`, or returns `False` at once when another open file holds it (with
        `blocking`, waits for it instead)."""
        _require_flock()
        if self.fd is not None:
            return True
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:
                mine, named = os.fstat(fd), os.stat(self.path)
                same = (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return True
            os.close(fd)  # the holder removed the file between our open and our lock: lock the path's new file

    def read(self) -> str:
        """The file's text, read through the held descriptor ('' when empty)."""
        os.lseek(self.fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self.fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")

    def write(self, text: str) -> None:
        """Replaces the file's text, through the held descriptor, and `fsync`s it."""
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.write(self.fd, text.encode("utf-8"))
        os.fsync(self.fd)

    def release(self, remove: bool = True) -> None:
        """Removes the file (with `remove`) while still holding it, then lets it go."""
        if self.fd is None:
            return
        if remove:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)
        os.close(self.fd)
        self.fd = None
