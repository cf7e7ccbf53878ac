# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A rank started by a launcher stops when the launcher is SIGKILLed (torchrun's agent cannot stop its ranks then):
a real parent process starts a "rank" that asks for it, the parent is killed, the rank must be gone within 5 s.
Without the request (no launcher variables) the orphan goes on, so the test has power."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

RANK = """
import os, sys, time
from hf_seqtemp.trainer.distributed import exit_with_launcher
print(exit_with_launcher(), flush=True)
time.sleep(60)
"""
LAUNCHER = """
import os, subprocess, sys, time
rank = subprocess.Popen([sys.executable, "-c", sys.argv[1]], env=dict(os.environ), stdout=open(sys.argv[2], "w"))
print(rank.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        return handle.read().split()[2] != "Z"  # a zombie has exited


@pytest.mark.parametrize("launched", [True, False])
def test_a_rank_stops_when_its_launcher_is_killed(tmp_path, launched):
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHELASTIC_RUN_ID", "LOCAL_RANK")}
    if launched:
        env["TORCHELASTIC_RUN_ID"] = "test"
    out = tmp_path / "rank.txt"
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, RANK, str(out)], env=env, stdout=subprocess.PIPE, text=True
    )
    rank = int(launcher.stdout.readline())
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not out.read_text().strip():
            time.sleep(0.1)
        assert out.read_text().strip() == str(launched)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        deadline = time.time() + 5  # the death signal is immediate; an orphan is still there after it
        while time.time() < deadline and _alive(rank):
            time.sleep(0.1)
        assert _alive(rank) is not launched
    finally:
        if _alive(rank):
            os.kill(rank, signal.SIGKILL)


TORCHRUN_RANK = """
import os, sys, time
from hf_seqtemp.trainer.distributed import exit_with_launcher
asked = exit_with_launcher() if sys.argv[2] == "ask" else False
with open(os.path.join(sys.argv[1], f"rank{os.environ['RANK']}.pid"), "w") as handle:
    handle.write(f"{os.getpid()} {asked}")
time.sleep(120)
"""


@pytest.mark.parametrize("ask", [True, False])
def test_ranks_under_torchrun_stop_when_the_agent_is_sigkilled(tmp_path, ask):
    """The same under a real `torchrun --nproc_per_node 2`: the agent is SIGKILLed once both ranks run; ranks that
    asked (what `SeqTempTrainer.__init__` does) are gone within 5 s, ranks that did not go on (torchrun's own
    behaviour, so the test has power)."""
    import uuid
    from pathlib import Path

    from launching import MARKER, _kill_marked, free_port

    script = tmp_path / "rank.py"
    script.write_text(TORCHRUN_RANK)
    torchrun = Path(sys.executable).with_name("torchrun")
    marker = uuid.uuid4().hex
    env = {**os.environ, "OMP_NUM_THREADS": "1", MARKER: marker}
    command = [str(torchrun), "--nproc_per_node", "2", "--master_port", free_port(), str(script), str(tmp_path)]
    agent = subprocess.Popen([*command, "ask" if ask else "no"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        files = [tmp_path / f"rank{r}.pid" for r in range(2)]
        deadline = time.time() + 120
        while time.time() < deadline and not all(f.exists() and f.read_text().strip() for f in files):
            assert agent.poll() is None, "torchrun exited before its ranks started"
            time.sleep(0.2)
        ranks = [f.read_text().split() for f in files]
        assert [asked for _, asked in ranks] == [str(ask)] * 2
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        pids = [int(pid) for pid, _ in ranks]
        deadline = time.time() + 5  # the death signal is immediate; an orphan is still there after it
        while time.time() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.1)
        assert [_alive(pid) for pid in pids] == [not ask] * 2
    finally:
        agent.kill()
        agent.wait()
        _kill_marked(marker)
