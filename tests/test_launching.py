# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import sys
import time
from pathlib import Path

import pytest
from launching import free_port, run_ranks


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state  # a killed child not yet reaped is a zombie, not a running rank


def test_a_hung_rank_fails_the_test_within_the_timeout_and_leaves_no_process(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    script = Path(__file__).parent / "trainer" / "hung_rank.py"
    pid_files = [tmp_path / f"rank{r}.pid" for r in range(2)]
    started = []

    def ready() -> bool:  # both ranks wrote their pid: the 5 s count from here, however slow the start was
        if all(path.exists() and path.read_text() for path in pid_files):
            started.append(time.monotonic())
            return True
        return False

    with pytest.raises(pytest.fail.Exception, match=r"(?s)did not finish within 5 s.*rank 1 hangs now"):
        run_ranks(
            [str(torchrun), "--nproc_per_node", "2", "--master_port", free_port(), str(script), str(tmp_path)],
            5,
            ready=ready,
        )
    assert started and time.monotonic() - started[0] < 20
    pids = [int(path.read_text()) for path in pid_files]
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in pids), pids
