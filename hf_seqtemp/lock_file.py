# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""One lock file that two processes cannot both hold: an open file with an exclusive `flock`, created whole (its
holder's record in it) and locked before it has its name ([`LockFile`]), and the kernel facts a lock's messages read
(who holds a `flock`, when a process started). [`~hf_seqtemp.locking.FolderLock`] builds a folder's lock on it."""

from __future__ import annotations

import contextlib
import errno
import os
import time
import uuid

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

# what `flock` raises on a filesystem that does not support it (FUSE, some SMB/NFS mounts)
UNSUPPORTED = (errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP))


def errno_name(error: OSError) -> str:
    """`'ENOENT'` for an `OSError` of that errno ('' when it has none)."""
    return errno.errorcode.get(error.errno, "") if error.errno is not None else ""


def _require_flock() -> None:
    if fcntl is None:  # pragma: no cover - Windows
        raise OSError(
            errno.ENOSYS,
            "hf_seqtemp's folder lock needs POSIX `fcntl.flock` (Linux, macOS); it is not available on this platform",
        )


def flock_holder(path: str) -> int | None:
    """The id of a process holding a `flock` on `path` (read from Linux's `/proc/locks`), or `None` when none is
    found or this system has no such table."""
    try:
        info = os.stat(path)
        key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "->" in fields or "FLOCK" not in fields or key not in fields:
            continue  # "->": a process waiting for the lock, not holding it
        with contextlib.suppress(ValueError, IndexError):
            return int(fields[fields.index(key) - 1])
    return None


def process_started(pid: int) -> str:
    """When process `pid` of this host started, as `YYYY-mm-dd HH:MM:SS` (`"unknown"` where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime"))
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(boot + ticks / os.sysconf("SC_CLK_TCK")))
    except (OSError, ValueError, IndexError, StopIteration):
        return "unknown"


def beside(folder: str | os.PathLike, what: str) -> str:
    """The path `.<name>.<what>` beside `folder` (in its parent): where a folder's lock and staged saves live.

    Example:
    ```python
    >>> beside("/data/runs/adapter/", "seqtemp-lock")
    '/data/runs/.adapter.seqtemp-lock'
    ```
    """
    path = os.path.abspath(os.fspath(folder))
    parent, name = os.path.split(path)
    if not name:
        raise ValueError(f"cannot save into the filesystem root {path!r}: give a folder inside it.")
    return os.path.join(parent, f".{name}.{what}")


class LockFile:
    """An exclusive `flock` on `path`, which is created (with `record` in it, when given) if needed.

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
        self.created = False  # this holder created the file (with its record), rather than took over an old one

    @property
    def held(self) -> bool:
        return self.fd is not None

    def _flock(self, fd: int, blocking: bool) -> bool:
        """`flock(LOCK_EX)` on `fd`: `False` when another open file holds it (not waiting unless `blocking`); `fd`
        is closed unless it is locked."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as error:
            os.close(fd)
            if error.errno in UNSUPPORTED:
                raise OSError(
                    error.errno,
                    f"cannot lock {self.path}: [{errno_name(error)}] {error.strerror}: this filesystem does not "
                    "support `flock`, which hf_seqtemp needs to keep two runs or saves out of one folder. Use a "
                    "folder on a local disk (or a filesystem with `flock`)",
                ) from None
            raise
        return True

    def _create_whole(self, record: str) -> int | None:
        """Creates the lock file with `record` in it, at once, and already locked: a temporary file, written, locked,
        then linked to the name, so nobody ever finds it at the name empty or unlocked. Its locked descriptor, or
        `None` when the name exists already."""
        temporary = f"{self.path}.{uuid.uuid4().hex}.new"
        try:
            fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                os.write(fd, record.encode("utf-8"))
                os.fsync(fd)
            except BaseException:
                os.close(fd)
                raise
            self._flock(fd, blocking=False)  # nobody else knows this file; raises (fd closed) where flock is missing
            try:
                os.link(temporary, self.path)
            except FileExistsError:
                os.close(fd)
                return None
            except OSError as error:  # no hard links here (FAT, some FUSE): exclusive creation, locked, written
                os.close(fd)
                if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
                except FileExistsError:
                    return None
                if not self._flock(fd, blocking=False):
                    return None
                os.write(fd, record.encode("utf-8"))
            return fd
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temporary)

    def try_acquire(self, blocking: bool = False, record: str | None = None) -> bool:
        """Takes the lock and returns `True`, or returns `False` at once when another open file holds it (with
        `blocking`, waits for it instead). A file created here holds `record` from its first byte, and is locked
        before it has its name.

        Raises:
            OSError: the filesystem does not support `flock` (its errno and the path named).
        """
        _require_flock()
        if self.fd is not None:
            return True
        while True:
            created = self._create_whole(record) if record is not None else None
            if created is not None:
                self.fd, self.created = created, True
                return True
            try:  # with a record, a file is only ever created whole: never an empty one another process could read
                fd = os.open(self.path, os.O_RDWR | (0 if record is not None else os.O_CREAT), 0o666)
            except FileNotFoundError:
                continue  # its holder removed it since: create it whole
            if not self._flock(fd, blocking):
                return False
            try:
                mine, named = os.fstat(fd), os.stat(self.path)
                same = (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                self.fd, self.created = fd, False
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
        """Replaces the file's text, through the held descriptor, and `fsync`s it: written over the old text, then
        cut to its length, so that a reader never finds the file empty."""
        data = text.encode("utf-8")
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))
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
