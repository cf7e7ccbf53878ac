# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a new user's first hour costs: `make venv`, the README's quick start as written, `make demo` and `make test`,
timed one after the other in a fresh clone of this checkout's commit, as the README tells them to be run.

Each step is timed as a whole (wall seconds, the command's own start-up and imports included) with the 1-minute load
average before and after it; the figures the README quotes come from the JSON this writes (`python docs/hooks.py`
puts them in the README). Run it on an idle machine: other jobs' load inflates every figure.

- `venv`: `git clone` of the commit, then `make venv` (the CPU torch wheel, the locked versions, the embedded model);
- `quickstart`: the README's quick-start block saved as `quick_start.py` in an empty folder and run with the clone's
  Python, torch's default threads (as written: no `OMP_NUM_THREADS`, unless this run's environment sets it);
- `owndata`: the README's "Your own data" command (its bash block running `hf-seqtemp train`), as written, in the
  clone, with the clone's `.venv/bin` first on the PATH; its printed plan (the estimate) is recorded beside the time;
- `demo`: `make demo` in the clone; its `demo.json` (the demo's figures and provenance) is copied to `--demo_json`;
- `test`: `make test` in the clone (lint, then the default suite);
- `test_engine`: `make test-engine` in the clone (`.ci/run`'s second command: the vLLM venv, then the engine tests).

Usage:
    python benchmarks/first_hour.py                                  # every step, into outputs/bench/first_hour.json
    python benchmarks/first_hour.py --output benchmarks/results/first_hour.json \\
        --demo_json benchmarks/results/demo.json                     # the committed figures (idle machine)
    python benchmarks/first_hour.py --steps quickstart               # the quick start alone, with this Python
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from _common import REPO, cores_busy, default_output, device_info, provenance

STEPS = ("venv", "quickstart", "owndata", "demo", "test", "test_engine")


TIMING_RUN = "HF_SEQTEMP_FIRST_HOUR_RUN"
"""Set in the environment of every timed step: inside the timed clone, `tests/test_timings_fresh.py` would compare
the code with the timings this run is about to replace, so it skips there (and nowhere else)."""


def readme_quick_start(readme: str) -> str:
    """The README's quick-start block: the python block that builds a `SeqTempTrainer`.

    Example:
    ```python
    >>> readme_quick_start("x\\n```python\\nprint(1)\\n```\\n```python\\nSeqTempTrainer(m)\\n```\\n")
    'SeqTempTrainer(m)\\n'
    ```
    """
    return _readme_block(readme, "python", "SeqTempTrainer(")


def readme_own_data(readme: str) -> str:
    """The README's own-data command: the bash block that runs `hf-seqtemp train`.

    Example:
    ```python
    >>> readme_own_data("x\n```bash\nmake demo\n```\n```bash\nhf-seqtemp train --default_model \\\n  --x 1\n```\n")
    'hf-seqtemp train --default_model \\\n  --x 1\n'
    ```
    """
    return _readme_block(readme, "bash", "hf-seqtemp train")


def _readme_block(readme: str, language: str, holding: str) -> str:
    """The first fenced `language` block of the README that holds `holding`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", readme, flags=re.DOTALL)
    return next(block for block in blocks if holding in block)


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def timed(name: str, command: list[str], cwd: Path, env: dict, log: Path, check: bool = True) -> dict:
    """Runs `command` in `cwd`, its output into `log`; its wall seconds, exit status and the load average around it.
    A failure stops the run when `check` (what follows needs the step), else it is recorded."""
    print(f"[{name}] {' '.join(command)} (in {cwd}; output: {log})", flush=True)
    others = cores_busy()  # other jobs, now: the load average still counts the step before
    start_load, start = _load(), time.perf_counter()
    with open(log, "w", encoding="utf-8") as handle:
        code = subprocess.call(command, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    print(f"[{name}] {seconds:.0f} s, exit status {code}", flush=True)
    if code != 0 and check:
        raise SystemExit(f"{name}: `{' '.join(command)}` failed with status {code}; see {log}")
    record = {"command": " ".join(command), "seconds": seconds, "load_average_1min": [start_load, _load()]}
    if others is not None:
        record["cores_busy_before"] = others
    return {**record, "exit_status": code}


def run(args) -> dict:
    work = Path(args.workdir or tempfile.mkdtemp(prefix="first_hour_"))
    work.mkdir(parents=True, exist_ok=True)
    if args.clone is None and "venv" not in args.steps:
        clone, python = REPO, Path(sys.executable)  # this checkout, as it is installed in this environment
    else:
        clone = Path(args.clone) if args.clone else work / "hf_seqtemp"
        python = clone / ".venv" / "bin" / "python"
    # TIMING_RUN tells tests/test_timings_fresh.py that this run is the one that refreshes the timings it checks
    env = {**os.environ, "HF_HUB_OFFLINE": "1", TIMING_RUN: "1"}
    steps = {}
    if "venv" in args.steps:
        if clone.exists():
            raise SystemExit(f"--clone {clone} exists: `venv` times a fresh clone; remove it or leave out `venv`")
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        steps["venv"] = timed("venv", ["make", "venv"], clone, env, work / "venv.log")
    if "quickstart" in args.steps:
        folder = work / "quick_start"
        shutil.rmtree(folder, ignore_errors=True)  # an empty folder, as a new user has: no earlier run's checkpoints
        folder.mkdir(parents=True)
        (folder / "quick_start.py").write_text(readme_quick_start((clone / "README.md").read_text()), "utf-8")
        steps["quickstart"] = timed("quickstart", [str(python), "quick_start.py"], folder, env, work / "qs.log")
        steps["quickstart"]["threads"] = env.get("OMP_NUM_THREADS", "torch's default (one per core)")
    if "owndata" in args.steps:
        command = readme_own_data((clone / "README.md").read_text())
        own_env = {**env, "PATH": f"{python.parent}{os.pathsep}{env.get('PATH', '')}"}
        shutil.rmtree(clone / "mine", ignore_errors=True)  # the command's --output_dir: a first run
        steps["owndata"] = timed("owndata", ["bash", "-c", command], clone, own_env, work / "own_data.log")
        steps["owndata"]["plan"] = next(
            (line for line in (work / "own_data.log").read_text().splitlines() if "the plan:" in line), None
        )
    if "demo" in args.steps:
        steps["demo"] = timed("demo", ["make", "demo"], clone, env, work / "demo.log")
        if args.demo_json:
            shutil.copy(clone / "outputs" / "quickstart" / "demo.json", args.demo_json)
    if "test" in args.steps:
        steps["test"] = timed("test", ["make", "test"], clone, env, work / "test.log", check=False)
    if "test_engine" in args.steps:  # CI's second command (`.ci/run`): the vLLM venv and the engine tests
        steps["test_engine"] = timed(
            "test_engine", ["make", "test-engine"], clone, env, work / "engine.log", check=False
        )
    return steps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS), help="which steps, in order")
    parser.add_argument("--output", default=default_output("first_hour"), help="where the JSON is written")
    parser.add_argument("--demo_json", default=None, help="copy the demo's demo.json here (e.g. benchmarks/results)")
    parser.add_argument("--workdir", default=None, help="folder for the clone and the logs (default: a new temp)")
    parser.add_argument(
        "--clone",
        default=None,
        help="an existing clone (with its .venv) to use; default, without `venv`: this checkout",
    )
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    commit = commit.strip()
    steps = run(args)
    machine = {k: v for k, v in device_info(torch.device("cpu")).items() if k != "threads"}  # each step's own
    record = {"provenance": provenance(machine), "benchmark": "first_hour", "clone_of": commit, "steps": steps}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
