# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Launching multi-process test scripts so that no rank can hang CI or outlive its test.

Every process of one launch (`torchrun`, `accelerate launch`, and the ranks they start, which torch's elastic agent
puts in sessions of their own) inherits a marker in its environment; on timeout, and after every launch, each
process carrying the marker is killed, orphaned or not, and a timed-out test fails with the last output of the
ranks. Rank scripts end with [`leave`], which flushes their results and exits with `os._exit`, skipping the
interpreter teardown where the DDP reducer and the gloo worker thread can deadlock.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

DEFAULT_TIMEOUT = 120


MARKER = "HF_SEQTEMP_TEST_LAUNCH"


def free_port() -> str:
    """A TCP port free on this machine now, for a launch's rendezvous: a fixed port fails with EADDRINUSE when two
    test runs (or two CI jobs) share the machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def _marked(marker: str) -> list[int]:
    """Pids of the live processes whose environment holds `MARKER=marker`."""
    needle = f"{MARKER}={marker}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return pids


def _kill_marked(marker: str) -> None:
    for pid in _marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_ranks(
    command: list[str],
    timeout: float = DEFAULT_TIMEOUT,
    tail: int = 3000,
    ready: Callable[[], bool] | None = None,
    startup: float = 180.0,
) -> subprocess.CompletedProcess:
    """Runs a multi-process launcher in its own process group; fails the test (never hangs) after `timeout` s.

    Returns the completed process when it exits with 0; otherwise fails with the last `tail` characters of its
    output (the ranks' stdout and stderr, interleaved as the launcher relays them). With `ready` (a callable that
    says the ranks have started, e.g. that their pid files exist), `timeout` counts from the moment it first returns
    True, and the start itself gets up to `startup` s: a launcher that starts slowly on a loaded machine is not taken
    for a hung rank.
    """
    marker = uuid.uuid4().hex
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path), MARKER: marker}
    name = Path(command[0]).name
    # the output goes to a file, not a pipe: no rank blocks on a full pipe while the test waits
    with tempfile.TemporaryFile("w+") as log:

        def output() -> str:
            log.seek(0)
            return log.read()[-tail:]

        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            if ready is not None:
                begun = time.monotonic()
                while process.poll() is None and not ready():
                    if time.monotonic() - begun > startup:
                        _kill_marked(marker)
                        process.wait()
                        pytest.fail(f"{name} did not start its ranks within {startup:g} s. Last output:\n{output()}")
                    time.sleep(0.05)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_marked(marker)  # launcher and ranks
                process.wait()
                pytest.fail(
                    f"{name} did not finish within {timeout:g} s; its process group was killed. "
                    f"Last output of the ranks:\n{output()}"
                )
        finally:
            _kill_marked(marker)  # a rank that outlived its launcher must not survive the test
        log.seek(0)
        text = log.read()
    if process.returncode != 0:
        pytest.fail(f"{name} exited with {process.returncode}. Last output:\n{text[-tail:]}")
    return subprocess.CompletedProcess(command, process.returncode, text, "")


def leave(code: int = 0) -> None:
    """Ends a rank without interpreter teardown (flushes stdio first).

    `destroy_process_group()` does not release the DDP reducer, whose destructor joins the gloo worker thread while
    that thread waits for the GIL: about 1 exit in 10 hung there. `os._exit` skips every destructor.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_script(script: str, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs the Python source `script` in a child process with `args` and, after them, the test folders on its
    path (`tests/trainer` and `tests`), on one thread; returns the finished process (output captured as text)."""
    here = Path(__file__).resolve().parent
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args), str(here / "trainer"), str(here)],
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def whole_batch_loss(trainer, model, batch):
    """The trainer's objective on the whole `batch` in this process alone (no gathering, no gradient scale): the
    reference a multi-process run's loss and gradients are compared with."""
    from hf_seqtemp.data import GROUP_ID
    from hf_seqtemp.groups import group_codes
    from hf_seqtemp.losses import LossInputs

    policy, extra = trainer.family.score(model, batch)
    codes = group_codes(batch[GROUP_ID], batch[GROUP_ID].numel())
    inputs = LossInputs(
        policy_logps=policy,
        ref_logps=batch["ref_logps"].float(),
        policy_token_logps=extra["token_logps"],
        completion_mask=extra["completion_mask"],
        ref_token_logps=trainer.family.stored_reference(batch),
        groups=codes,
        local_groups=codes,
        local_group_ids=batch[GROUP_ID],
    )
    return trainer.objective.compute(inputs, trainer.args).loss


def wait_for_marker(child: subprocess.Popen, marker, never: str, timeout: float = 300, poll: float = 0.2) -> None:
    """Waits until the child process `child` creates the file `marker`; fails with the end of its stderr if it exits
    first, and with `never` (what did not happen) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(marker):
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, never
        time.sleep(poll)
