# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""One run per output folder: the lock is an exclusive `flock`, taken before anything is read, deleted or written in
the folder. A live run's checkpoints survive a second run with `overwrite_output_dir`; two runs cannot both take
over one stale lock (forced interleaving); a lock whose holder was SIGKILLed, or whose recorded process id now
belongs to another process, is taken over; a lock this host cannot judge (another host, an older lock format with
a live process) is refused with the fix."""

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest
import torch
from launching import wait_for_marker
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, staging
from hf_seqtemp.trainer.output_dir import OutputDirLock

HERE = os.path.dirname(os.path.abspath(__file__))


def _trainer(output_dir, **overrides):
    torch.manual_seed(0)
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    data = as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 16, 4, seed=2))
    values = {"output_dir": str(output_dir), "target_temperature": 0.5, "max_steps": 2, "seed": 0}
    values.update(per_device_train_batch_size=8, learning_rate=1e-2, save_strategy="no", use_cpu=True)
    values.update(disable_tqdm=True, report_to=[], **overrides)
    return SeqTempTrainer(tiny_causal_lm(6, seed=3), SeqTempConfig(**values), train_dataset=data, peft_config=lora)


_LIVE_RUN = """
import os, sys, time
sys.path[:0] = sys.argv[3:]
from transformers import TrainerCallback
from test_output_dir_lock import _trainer


class ParkAfterTwoCheckpoints(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        if state.global_step == 2:  # checkpoint-1 and checkpoint-2 are on disk; the run goes on holding the lock
            open(sys.argv[2], "w").close()
            time.sleep(600)


trainer = _trainer(sys.argv[1], max_steps=4, save_strategy="steps", save_steps=1)
trainer.add_callback(ParkAfterTwoCheckpoints())
trainer.train()
"""


def _start(script, *args, marker):
    child = subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args), HERE, os.path.dirname(HERE)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_marker(child, marker, "the child never got there")
    return child


def test_overwrite_output_dir_never_deletes_a_live_runs_checkpoints(tmp_path):
    """A second run with `overwrite_output_dir` used to delete the live run's checkpoints, then be refused by the
    lock; now it is refused first and they stay. Once the live run is SIGKILLed, its lock is taken over."""
    out, marker = tmp_path / "out", tmp_path / "parked"
    live = _start(_LIVE_RUN, out, marker, marker=marker)
    try:
        second = _trainer(out, overwrite_output_dir=True, save_strategy="steps", save_steps=1)
        with pytest.raises(RuntimeError, match=rf"in use by another run \(process {live.pid} on"):
            second.train()
        assert sorted(e for e in os.listdir(out) if e.startswith("checkpoint-")) == ["checkpoint-1", "checkpoint-2"]
        assert second.state.global_step == 0
    finally:
        os.kill(live.pid, signal.SIGKILL)
        live.wait()
    with pytest.warns(UserWarning, match=rf"Taking over the stale lock .*process {live.pid} on .* is gone"):
        second.train()
    assert second.state.global_step == 2
    second.close()
    assert not os.path.exists(OutputDirLock(out).path)  # released when the trainer is closed


def test_a_deleted_lock_file_does_not_let_a_second_run_delete_a_live_runs_checkpoints(tmp_path, monkeypatch):
    """A user tidying "stale" files deleted the lock file beside the folder while run A trained; run B with
    `overwrite_output_dir` then created a new lock file, took it, deleted A's `checkpoint-2` and trained, both exiting
    0. The folder itself is locked too: B is refused, naming A's process, its checkpoints stay, and B's new lock file
    is not left behind. Once A is gone, B trains."""
    out, marker = tmp_path / "out", tmp_path / "parked"
    live = _start(_LIVE_RUN, out, marker, marker=marker)
    try:
        os.remove(OutputDirLock(out).path)  # `rm .out.seqtemp-lock`
        second = _trainer(out, overwrite_output_dir=True, save_strategy="steps", save_steps=1)
        with pytest.raises(RuntimeError, match=rf"in use by another run or save \(process {live.pid} on .*deleted"):
            second.train()
        assert sorted(e for e in os.listdir(out) if e.startswith("checkpoint-")) == ["checkpoint-1", "checkpoint-2"]
        assert second.state.global_step == 0
        assert not os.path.exists(OutputDirLock(out).path)
        monkeypatch.setattr(staging, "PUBLISH_WAIT", 1.0)  # a save waits for a save, not for a run
        with pytest.raises(RuntimeError, match=rf"process {live.pid} on"):
            second.save_model(str(out))  # another process's save into the folder is refused as well
    finally:
        os.kill(live.pid, signal.SIGKILL)
        live.wait()
    second.train()
    assert second.state.global_step == 2
    second.close()


def _stale_lock(folder, pid, **record):
    folder.mkdir(exist_ok=True)
    values = {"host": os.uname().nodename, "pid": pid, "started": "2026-11-25 03:00:00", "locking": "flock"}
    with open(OutputDirLock(folder).path, "w") as handle:
        handle.write(json.dumps({**values, **record}))


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_two_runs_cannot_both_take_over_one_stale_lock(tmp_path, monkeypatch):
    """Forced interleaving: run A does its whole `acquire()` while run B is between seeing the dead holder and
    taking the lock over. Both used to hold it, and A's `release()` then deleted B's lock, letting a third run in."""
    folder = tmp_path / "run"
    _stale_lock(folder, _dead_pid())
    first, second, third = OutputDirLock(folder), OutputDirLock(folder), OutputDirLock(folder)
    interleaved = []
    monkeypatch.setattr(OutputDirLock, "_read", _let_the_other_run_in(OutputDirLock._read, first, interleaved))
    real_parse = getattr(OutputDirLock, "_parse", lambda text: json.loads(text))
    parse = staticmethod(_let_the_other_run_in(real_parse, first, interleaved))
    monkeypatch.setattr(OutputDirLock, "_parse", parse, raising=False)
    try:
        second.acquire()
    except RuntimeError:
        pass
    monkeypatch.undo()
    assert interleaved
    holders = [lock for lock in (first, second) if lock.held]
    assert len(holders) == 1, "both runs hold the lock"
    other = second if holders[0] is first else first
    other.release()  # the run that was refused lets go of nothing
    with pytest.raises(RuntimeError, match="in use by another run"):
        third.acquire()
    holders[0].release()
    third.acquire()
    third.release()


def _let_the_other_run_in(real, first, interleaved):
    """`real` (where a run reads the lock's holder), after which, the first time, run `first` does its whole
    `acquire()`: the old code read the holder before taking the lock over, the new code once it holds it."""

    def read_then_let_the_other_run_in(*args, **kwargs):
        record = real(*args, **kwargs)
        if not interleaved:
            interleaved.append(True)
            with contextlib.suppress(RuntimeError):
                first.acquire()
        return record

    return read_then_let_the_other_run_in


def test_a_reused_process_id_does_not_keep_a_dead_runs_lock(tmp_path):
    """The recorded process id now belongs to an unrelated live process that holds no lock: the user used to have to
    delete the lock by hand without being told; now the lock is taken over, saying why."""
    folder = tmp_path / "run"
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _stale_lock(folder, unrelated.pid)
        trainer = _trainer(folder)
        with pytest.warns(UserWarning, match=rf"process {unrelated.pid} is alive but does not hold the lock"):
            trainer.train()
        assert trainer.state.global_step == 2
    finally:
        unrelated.kill()
        unrelated.wait()


@pytest.mark.parametrize("case", ["another host", "an older lock with a live process"])
def test_a_lock_this_host_cannot_judge_is_refused_with_the_fix(tmp_path, case):
    folder = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        if case == "another host":
            _stale_lock(folder, 12345, host="node-7")
            words = r"written on another host \(node-7\)"
        else:
            _stale_lock(folder, holder.pid, locking=None)
            words = "written by an hf_seqtemp without `flock`, and its process is still alive"
        trainer = _trainer(folder)
        with pytest.raises(RuntimeError, match=rf"in use by another run .*{words}.*delete the lock file"):
            trainer.train()
        assert trainer.state.global_step == 0
        assert os.path.exists(OutputDirLock(folder).path)  # left as it was
    finally:
        holder.kill()
        holder.wait()
