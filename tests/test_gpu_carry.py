# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What travels to a bare GPU machine fits its 64 MiB: the tracked tree plus the carried `.whl/` and `.gpu_model/`
(sizes recorded in `benchmarks/gpu_carry.json` by `gpu_run.sh download`), and the record is the wheel list's."""

import json
import os
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


def test_the_record_holds_every_listed_wheel_and_the_package_itself():
    wanted = [line for line in (REPO / "benchmarks" / "gpu_wheels.txt").read_text().splitlines() if "==" in line]
    wheels = [path.removeprefix(".whl/").lower() for path in _carried() if path.startswith(".whl/")]
    assert len(wheels) == len(wanted) + 1
    for requirement in wanted:
        assert any(w.startswith(_wheel_name(requirement)) for w in wheels), requirement
    assert any(w.startswith("hf_seqtemp-") for w in wheels)  # custom_generate/generate.py imports it


def test_the_wheel_list_carries_the_locks_transformers_stack():
    """The lent image's own transformers (5.17) is below our floor: the list must carry the lock's transformers,
    peft, accelerate, tokenizers and safetensors, at the lock's versions."""
    lock = dict(
        line.split("==") for line in (REPO / "requirements" / "lock.txt").read_text().splitlines() if "==" in line
    )
    lock = {name.lower(): version for name, version in lock.items()}
    wheels = dict(
        line.split("==") for line in (REPO / "benchmarks" / "gpu_wheels.txt").read_text().splitlines() if "==" in line
    )
    for name in ("transformers", "peft", "accelerate", "tokenizers", "safetensors", "trl", "datasets"):
        assert wheels.get(name) == lock[name], name


def test_the_version_check_refuses_an_image_transformers_by_name(tmp_path):
    """`gpu_versions.py` (the first step of `gpu_run.sh all`) imports each package as the runs will: with the lent
    image's transformers 5.17.0 first on the path it refuses, naming it and the lock's version; with the lock's, it
    passes."""
    import subprocess
    import sys

    fake = tmp_path / "image" / "transformers"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "5.17.0"\n')
    script = [sys.executable, str(REPO / "benchmarks" / "gpu_versions.py")]
    image = {**os.environ, "PYTHONPATH": str(tmp_path / "image")}
    run = subprocess.run(script, check=False, env=image, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "transformers 5.17.0 imports, the lock has 5.23.0" in run.stderr, run.stderr
    assert "nothing was run" in run.stderr
    assert subprocess.run(script, check=False, capture_output=True, text=True, timeout=120).returncode == 0


def test_the_record_matches_the_wheels_here():
    if not (REPO / ".whl").is_dir():
        pytest.skip("no .whl/ here (run `bash benchmarks/gpu_run.sh download`): sizes not compared")
    here = {f".whl/{p.name}": p.stat().st_size for p in (REPO / ".whl").glob("*.whl")}
    assert here == {k: v for k, v in _carried().items() if k.startswith(".whl/")}
