# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What travels to a bare GPU machine fits its 64 MiB: the tracked tree plus the carried `.whl/` and `.gpu_model/`
(sizes recorded in `benchmarks/gpu_carry.json` by `gpu_run.sh download`), and the record is the wheel list's."""

import json
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LIMIT = 64 * 2**20


def _tracked_bytes() -> int:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    return sum((REPO / f.decode()).stat().st_size for f in files if f and (REPO / f.decode()).is_file())


def _carried() -> dict[str, int]:
    return json.loads((REPO / "benchmarks" / "gpu_carry.json").read_text())


def _wheel_name(requirement: str) -> str:
    name, version = requirement.split("==")
    return f"{re.sub(r'[-.]+', '_', name).lower()}-{version}-"


def test_the_tree_and_the_carried_paths_fit_64_mib():
    carried = _carried()
    total = _tracked_bytes() + sum(carried.values())
    assert total <= LIMIT, f"{total / 2**20:.1f} MiB would travel; the GPU machine takes 64 MiB"
    assert all(path.startswith((".whl/", ".gpu_model/")) for path in carried)  # what gpu_run.sh carries


def test_the_record_holds_every_listed_wheel():
    wanted = [line for line in (REPO / "benchmarks" / "gpu_wheels.txt").read_text().splitlines() if "==" in line]
    wheels = [path.removeprefix(".whl/").lower() for path in _carried() if path.startswith(".whl/")]
    assert len(wheels) == len(wanted)
    for requirement in wanted:
        assert any(w.startswith(_wheel_name(requirement)) for w in wheels), requirement


def test_the_record_matches_the_wheels_here():
    if not (REPO / ".whl").is_dir():
        pytest.skip("no .whl/ here (run `bash benchmarks/gpu_run.sh download`): sizes not compared")
    here = {f".whl/{p.name}": p.stat().st_size for p in (REPO / ".whl").glob("*.whl")}
    assert here == {k: v for k, v in _carried().items() if k.startswith(".whl/")}
