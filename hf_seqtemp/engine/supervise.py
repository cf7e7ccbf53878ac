# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The watchdog of an engine server: `python -m hf_seqtemp.engine.supervise --grace S -- COMMAND...`.

[`~hf_seqtemp.engine.server.EngineServer`] starts this process as the leader of a new process group, and it starts
the engine (COMMAND) inside that group; vLLM's engine core and workers are spawned into the same group. The
watchdog then waits. When its owner (the process that started it, e.g. a pytest run) is gone, even killed with
SIGKILL, or when it receives SIGTERM, it sends SIGTERM to the whole group, waits `--grace` seconds, and sends
SIGKILL to what is left: no engine process outlives the run that started it. It imports nothing but the standard
library.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def group_alive(pgid: int, own: int | None = None) -> bool:
    """Whether a live (not zombie) process other than `own` belongs to process group `pgid` (read from `/proc`; where
    there is no `/proc`, whether the group can still be signalled)."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == own:
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def stop_group(pgid: int, grace: float, own: int | None = None) -> None:
    """SIGTERM to every process of group `pgid` but `own`, then SIGKILL after `grace` seconds if any is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_alive(pgid, own):
        time.sleep(0.2)
    if group_alive(pgid, own):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grace", type=float, default=20.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--log", default=None, help="file that gets the engine's output (default: inherited)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the engine's command line, after `--`")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the engine's command after `--`")
    owner = os.getppid()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stopping.append("SIGINT"))
    output = open(args.log, "ab") if args.log else None  # noqa: SIM115 (open for the engine's whole life)
    engine = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT if output else None)
    while not stopping and engine.poll() is None and os.getppid() == owner:
        time.sleep(0.5)
    # stopped, orphaned, or the engine ended by itself: nothing of its group (vLLM's engine core, its workers) stays
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM is for the engine
    stop_group(os.getpgrp(), args.grace, own=os.getpid())
    engine.wait()
    return 0 if stopping else engine.returncode


if __name__ == "__main__":
    sys.exit(main())
