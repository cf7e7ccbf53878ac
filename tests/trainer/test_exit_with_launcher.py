# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A rank started by a launcher stops when the launcher is SIGKILLed (torchrun's agent cannot stop its ranks then):
a real parent process starts a "rank" that asks for it, the parent is killed, the rank must be gone within seconds.
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
        deadline = time.time() + 10
        while time.time() < deadline and _alive(rank):
            time.sleep(0.1)
        assert _alive(rank) is not launched
    finally:
        if _alive(rank):
            os.kill(rank, signal.SIGKILL)
