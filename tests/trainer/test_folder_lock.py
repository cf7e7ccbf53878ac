# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""One run per folder for the trainer's whole life: from `train()` through its last `save_model`, until `close()`.

A second run started during the first run's final save is refused (real processes, a real SIGKILL), as is another
object of the same process; where `flock` does not exclude (a network filesystem), two hosts racing for a free folder
cannot both hold it; the loser of a race for a dead run's lock is told what happens, not that the dead run holds it.
"""

import json
import os
import socket
import subprocess
import sys

import pytest
from launching import wait_for_marker
from saved_adapters import _trainer
from tiny_models import tiny_causal_lm

from hf_seqtemp import load_tempered
from hf_seqtemp.locking import LockFile
from hf_seqtemp.trainer.output_dir import OutputDirLock

HERE = os.path.dirname(os.path.abspath(__file__))

_PARKED_IN_FINAL_SAVE = """
import sys, time
sys.path[:0] = sys.argv[3:]
from saved_adapters import _trainer
from hf_seqtemp.trainer import hub_mixin

real = hub_mixin.write_card


def park(*args, **kwargs):  # the final save's card: the parent starts the same run here, then SIGKILLs this one
    open(sys.argv[2], "w").close()
    time.sleep(600)


trainer = _trainer(sys.argv[1], 0.5)
trainer.train()
hub_mixin.write_card = park
trainer.save_model()
"""


def test_the_same_run_started_during_the_final_save_is_refused(tmp_path):
    """The lock used to be released at the end of `train()`: the same command started during the first run's final
    `save_model` trained and saved, both exited 0, and its adapter was replaced by the first run's. Now it is
    refused, naming the first run, until that run's process is gone (here: SIGKILLed); then it trains and saves."""
    out, marker = tmp_path / "out", tmp_path / "parked"
    first = subprocess.Popen(
        [sys.executable, "-c", _PARKED_IN_FINAL_SAVE, str(out), str(marker), HERE, os.path.dirname(HERE)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_marker(first, marker, "the first run never reached its final save")
        second = _trainer(out, 2.0, seed=1)
        with pytest.raises(RuntimeError, match=rf"in use by another run \(process {first.pid} on "):
            second.train()
        assert second.state.global_step == 0
        other = _trainer(tmp_path / "elsewhere", 2.0, seed=1)
        other.train()
        with pytest.raises(RuntimeError, match=rf"in use by another run \(process {first.pid} on "):
            other.save_model(str(out))  # another process's save into the folder: refused too
    finally:
        first.kill()
        first.wait()
    with pytest.warns(UserWarning, match=rf"Taking over the stale lock .*process {first.pid} on .* is gone"):
        second.train()
    second.save_model()
    second.close()
    assert load_tempered(out, base_model=tiny_causal_lm(6, seed=3)).seqtemp_config.target_temperature == 2.0


def test_a_trainer_holds_its_folder_until_closed(tmp_path):
    """Within one process: another trainer is refused while the first is alive and open, and says how to let go;
    after `close()` (or once the first trainer is no longer referenced) the folder is free."""
    out = tmp_path / "out"
    first = _trainer(out, 0.5)
    first.train()
    first.save_model()
    assert os.path.exists(OutputDirLock(out).path)
    second = _trainer(out, 0.5, overwrite_output_dir=True)
    with pytest.raises(RuntimeError, match=r"another object of this process holds it: .*`trainer.close\(\)`"):
        second.train()
    first.close()
    assert not os.path.exists(OutputDirLock(out).path)
    second.train()
    del second  # not closed, but no longer referenced: collected when the folder is asked for
    third = _trainer(out, 0.5, overwrite_output_dir=True)
    third.train()
    third.close()


def _non_excluding_flock(monkeypatch):
    """`flock` as some network filesystems give it: every caller gets it. Returns a setter of this "host"'s name."""
    from hf_seqtemp import locking

    monkeypatch.setattr(locking.fcntl, "flock", lambda fd, operation: None)
    host = ["host-a"]
    monkeypatch.setattr(socket, "gethostname", lambda: host[0])
    return host


def test_two_hosts_where_flock_does_not_exclude_cannot_both_hold_a_folder(tmp_path, monkeypatch):
    """Host B runs its whole `acquire()` while host A holds `flock` on its new lock file (A has not locked the folder
    yet): both used to read an empty record and both held the folder. Now A's lock file is created with its record
    in it (and it has its name only once written), and B refuses a lock written on another host."""
    host = _non_excluding_flock(monkeypatch)
    first, second = OutputDirLock(tmp_path / "out"), OutputDirLock(tmp_path / "out")
    real_lock_directory, raced = OutputDirLock._lock_directory, []

    def lock_directory_after_the_other_host(self):
        if not raced:  # A holds its lock file and is about to lock the folder: B takes its turn
            raced.append(True)
            host[0] = "host-b"
            try:
                second.acquire()
            except RuntimeError as refused:
                raced.append(str(refused))
            host[0] = "host-a"
        return real_lock_directory(self)

    monkeypatch.setattr(OutputDirLock, "_lock_directory", lock_directory_after_the_other_host)
    first.acquire()
    assert len(raced) == 2 and "written on another host (host-a)" in raced[1]
    assert first.held and not second.held


def test_the_loser_of_a_race_for_a_dead_runs_lock_is_not_told_the_dead_run_holds_it(tmp_path, monkeypatch):
    """A takes over the lock of a killed run; B tries between A's `flock` and A's record: B used to be told that
    the dead process "holds the lock now"."""
    folder = tmp_path / "out"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder.mkdir()
    record = {"host": socket.gethostname(), "pid": dead.pid, "started": "2026-11-25", "locking": "flock"}
    with open(OutputDirLock(folder).path, "w") as handle:
        handle.write(json.dumps({**record, "purpose": "run"}))
    first, second = OutputDirLock(folder), OutputDirLock(folder)
    real_write, told = LockFile.write, []

    def write_after_the_other_run(self, text):
        if not told:
            with pytest.raises(RuntimeError) as refused:
                second.acquire()
            told.append(str(refused.value))
        return real_write(self, text)

    monkeypatch.setattr(LockFile, "write", write_after_the_other_run)
    with pytest.warns(UserWarning, match="Taking over the stale lock"):
        first.acquire()
    assert "holds the lock now" not in told[0]
    assert f"process {dead.pid} on" in told[0] and "another run is taking the lock over from it" in told[0]
    first.release()


def test_a_save_waits_for_another_saves_publish_but_not_for_a_run(tmp_path, monkeypatch):
    """A save holds the folder for moments (its publish): another save waits for it; a run holds it for hours: a
    save is refused at once."""
    from hf_seqtemp import locking
    from hf_seqtemp.locking import FolderLock

    waits = []
    monkeypatch.setattr(locking.time, "sleep", waits.append)
    folder = tmp_path / "adapter"
    holder = FolderLock(folder, "folder")
    owner = holder.acquire(purpose="run")
    with pytest.raises(RuntimeError, match="in use by another run"):
        FolderLock(folder, "folder").acquire(purpose="save", wait=30)
    assert waits == []
    holder.release(owner)
    owner = holder.acquire(purpose="save")
    with pytest.raises(RuntimeError, match="in use by another save"):
        FolderLock(folder, "folder").acquire(purpose="save", wait=0.3)
    assert waits and all(wait == 0.1 for wait in waits)
    holder.release(owner)
