# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A live run keeps the folder it locked, and saves never fail beside a reader (issue: reliability round 4).

- A user renamed a live run A's folder and deleted its lock file; run B then started in a new folder at the same
  path, and A's final save replaced B's `final` (both exited 0). A run now checks, before every save and checkpoint,
  that its path is still the folder it locked (device and inode), and stops by name if not.
- With a `load_tempered` reader looping beside a training run, `save_model` raised "in use by another run (process
  ? on ?, started just now)": it read the reader's lock file while that was still empty (a file the reader's open
  had created empty, or a record being rewritten). A lock file is now only ever created whole, rewritten without
  being emptied, and a holder with no record yet is waited for, not named.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from launching import wait_for_marker

from hf_seqtemp import staging
from hf_seqtemp.locking import FolderLock, LockFile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_output_dir_lock import _trainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_HOLD_FOLDER = """
import os, sys, time
sys.path.insert(0, sys.argv[3])
from hf_seqtemp.locking import FolderLock
owner = FolderLock(sys.argv[1]).acquire(purpose="run")
with open(os.path.join(sys.argv[1], "final.txt"), "w") as handle:
    handle.write("run B's final")
open(sys.argv[2], "w").close()
time.sleep(600)
"""


def _park(script, *args, marker):
    child = subprocess.Popen([sys.executable, "-c", script, *map(str, args), ROOT], stderr=subprocess.PIPE)
    wait_for_marker(child, marker, "the child never got there", timeout=120, poll=0.05)
    return child


def test_a_live_run_whose_folder_was_moved_saves_nothing_into_the_folder_now_at_its_path(tmp_path):
    out, marker = tmp_path / "run", tmp_path / "parked"
    trainer = _trainer(out)
    trainer.train()  # run A holds `run` until it is closed
    os.rename(out, tmp_path / "run-old")
    os.remove(FolderLock(out).path)  # `mv run run-old; rm .run.seqtemp-lock`
    second = _park(_HOLD_FOLDER, out, marker, marker=marker)  # run B starts in the new `run`
    try:
        with pytest.raises(RuntimeError, match=r"no longer the folder this run locked.*run-old"):
            trainer.save_model(str(out))
        assert sorted(os.listdir(out)) == ["final.txt"]  # B's folder: nothing of A's saved into it
        assert (out / "final.txt").read_text() == "run B's final"
        with pytest.raises(RuntimeError, match="no longer the folder this run locked"):
            trainer._save_checkpoint(trainer.model, None)  # a checkpoint (and its rotation) is refused too
        assert sorted(os.listdir(out)) == ["final.txt"]
    finally:
        os.kill(second.pid, signal.SIGKILL)
        second.wait()
    trainer.save_model(str(tmp_path / "elsewhere"))  # the fix the message names works
    assert (tmp_path / "elsewhere" / "seqtemp_config.json").is_file()
    trainer.close()


def test_a_run_whose_folder_was_deleted_does_not_create_it_again(tmp_path):
    out = tmp_path / "run"
    trainer = _trainer(out)
    trainer.train()
    shutil.rmtree(out)
    os.remove(FolderLock(out).path)  # `rm -rf run .run.seqtemp-lock`
    with pytest.raises(
        RuntimeError,
        match=r"no longer the folder .* \(nothing is at that path now; the folder it locked was deleted\)",
    ):
        trainer.save_model(str(out))
    assert not out.exists()
    trainer.close()


_EMPTY_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)  # an empty lock file, held: a holder about to write
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[3]))
os.remove(sys.argv[1])
os.close(fd)
"""


def test_a_save_waits_for_a_holder_that_has_not_written_its_record_yet(tmp_path):
    """The saver used to read the empty file and raise "in use by another run (process ? on ?, started just now)"
    at once; it now waits the moment it takes a holder to write who it is, then saves."""
    folder, marker = tmp_path / "adapter", tmp_path / "held"
    folder.mkdir()
    holder = _park(_EMPTY_HOLDER, FolderLock(folder).path, marker, 0.5, marker=marker)
    try:
        started = time.monotonic()
        owner = staging.lock_for_save(str(folder))  # raised "in use by another run (process ? on ?" at once
        assert FolderLock(folder).held_by(owner) and time.monotonic() - started > 0.2  # it waited, then took it
        FolderLock(folder).release(owner)
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_whose_record_never_comes_is_named_after_a_short_wait(tmp_path):
    folder, marker = tmp_path / "adapter", tmp_path / "held"
    folder.mkdir()
    holder = _park(_EMPTY_HOLDER, FolderLock(folder).path, marker, 60, marker=marker)
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r"in use by another run \(process \? on \?"):
            FolderLock(folder).acquire(purpose="run")
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_file_is_never_seen_empty_by_a_reader(tmp_path):
    """The creating open: a record-holding acquirer whose file vanished between its two opens used to create it
    empty (`O_CREAT`). Forced interleaving: the file is removed just before the second open."""
    path = str(tmp_path / ".x.seqtemp-lock")
    lock = LockFile(path)
    real_open, real_create, opened = os.open, lock._create_whole, []

    def create(record):
        return None if not opened else real_create(record)  # the first time, "the name existed"

    def open_after_removal(name, flags, *args):
        if name == path and not opened:
            opened.append(flags)  # and the previous holder has just removed it
        return real_open(name, flags, *args)

    lock._create_whole = create
    os.open = open_after_removal
    try:
        assert lock.try_acquire(record='{"pid": 1}')
    finally:
        os.open = real_open
    assert not opened[0] & os.O_CREAT  # it used to create the file empty here, and lock it
    assert lock.created
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == '{"pid": 1}'
    lock.release()


_READER_LOOP = """
import sys, time
sys.path.insert(0, sys.argv[3])
from hf_seqtemp.locking import FolderLock
lock = FolderLock(sys.argv[1], "folder")
open(sys.argv[2], "w").close()
end = time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:  # what a reader does while a save is being moved in: takes the lock, lets it go
    try:
        lock.release(lock.acquire(purpose="save"))
    except RuntimeError:
        pass
"""


def test_saves_beside_a_looping_reader_never_fail(tmp_path):
    folder, marker = tmp_path / "adapter", tmp_path / "reading"
    folder.mkdir()
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER_LOOP, str(folder), str(marker), ROOT, "60"], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert reader.poll() is None and time.monotonic() < deadline, reader.stderr.read().decode()[-2000:]
            time.sleep(0.05)
        lock, end = FolderLock(folder, "folder"), time.monotonic() + 8
        saves = 0
        while time.monotonic() < end:
            lock.release(staging.lock_for_save(str(folder)))
            saves += 1
        assert saves > 20
    finally:
        reader.kill()
        reader.wait()
