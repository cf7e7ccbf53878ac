# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Waiting for an engine server to start, on a loaded machine: a start that keeps working (CPU time, log lines) is
waited for past the stall limit; one that hangs (idle, silent) fails after the stall limit, well before the overall
limit, naming the hang (no vLLM needed: stand-in processes that never answer)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from hf_seqtemp.engine import EngineError
from hf_seqtemp.engine.server import EngineServer, free_port, group_cpu_seconds

BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\ntime.sleep(600)"
TALKING = "import sys, time\nfor i in range({lines}):\n    print(i, flush=True)\n    time.sleep(0.5)\ntime.sleep(600)"


def _server(tmp_path, code: str) -> EngineServer:
    """An [`EngineServer`] whose 'server' is `code` in its own session, writing to its log, answering nothing."""
    server = EngineServer.__new__(EngineServer)
    server.log_file = str(tmp_path / "server.log")
    with open(server.log_file, "w") as log:
        server.process = subprocess.Popen([sys.executable, "-c", code], stdout=log, start_new_session=True)
    server.url, server.grace, server.settings = f"http://127.0.0.1:{free_port()}", 2.0, None
    return server


def _waited(server: EngineServer, timeout: float, stall: float) -> tuple[float, str]:
    started = time.monotonic()
    try:
        with pytest.raises(EngineError) as error:
            server._wait(timeout, stall)
    finally:
        server.process.kill()
        server.process.wait()
    return time.monotonic() - started, str(error.value)


def test_an_idle_silent_start_fails_at_the_stall_limit(tmp_path):
    seconds, message = _waited(_server(tmp_path, "import time\ntime.sleep(600)"), timeout=120, stall=3)
    assert 3 <= seconds < 15, seconds
    assert "made no progress for 3 s" in message and "it hangs" in message


def test_a_start_that_keeps_computing_is_waited_for_past_the_stall_limit(tmp_path):
    seconds, message = _waited(_server(tmp_path, BUSY.format(seconds=8)), timeout=120, stall=3)
    assert 11 <= seconds < 30, seconds  # 8 s of work, then 3 s idle
    assert "made no progress" in message


def test_a_start_that_keeps_logging_is_waited_for_past_the_stall_limit(tmp_path):
    seconds, message = _waited(_server(tmp_path, TALKING.format(lines=16)), timeout=120, stall=3)
    assert "made no progress" in message
    assert 11 <= seconds < 30, seconds  # 8 s of log lines, then 3 s silent


def test_the_overall_limit_still_holds_for_a_start_that_never_stops_working(tmp_path):
    seconds, message = _waited(_server(tmp_path, BUSY.format(seconds=600)), timeout=6, stall=3)
    assert 6 <= seconds < 15, seconds
    assert "did not answer within 6 s" in message


def test_the_cpu_time_of_a_session_is_read_from_proc():
    process = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=1.5)], start_new_session=True)
    try:
        time.sleep(2.5)
        assert group_cpu_seconds(process.pid) >= 0.5
    finally:
        process.kill()
        process.wait()
