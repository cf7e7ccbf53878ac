# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The README's first-hour block and demo quote come from `benchmarks/results/first_hour.json` (and the `demo.json`
of the same run): they are only true of the code they timed. This test fails when any file those commands run
(`make venv`, the quick start, the own-data command, `make demo`, `make test`: the package, the examples, the tests,
the benchmarks the suite smoke-runs, the build files) changed after the commit the timings were measured on, or when
the README's quick-start or own-data block differs from the one that was timed. Results, docs and the README's prose
may change: the figures they quote are filled in from the results.

The fix it names: rerun `python benchmarks/first_hour.py --output benchmarks/results/first_hour.json --demo_json
benchmarks/results/demo.json` on an idle machine, after the last change, and commit what it writes."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
UNTIMED = ("benchmarks/results/", "docs/", ".github/", "tests/test_timings_fresh.py")
"""Paths whose changes cannot change what the timed commands do (the README is compared block by block; this check
itself came with the timings it checks)."""
RERUN = (
    "rerun `python benchmarks/first_hour.py --output benchmarks/results/first_hour.json --demo_json "
    "benchmarks/results/demo.json` on an idle machine and commit what it writes"
)


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True)


def _timed_commit(name: str) -> str:
    if os.environ.get("HF_SEQTEMP_FIRST_HOUR_RUN"):  # benchmarks/first_hour.py's TIMING_RUN
        pytest.skip(
            "this suite is the `make test` step of the first-hour timing: it refreshes the timings checked here"
        )
    record = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    commit = record["provenance"]["commit"].removesuffix("-dirty")
    if _git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git checkout: the history the timings are checked against is not here")
    if _git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        pytest.skip(f"{name}'s commit {commit[:12]} is not in this clone's history (a shallow clone)")
    return commit


def changed_since(commit: str) -> list[str]:
    """The files changed between `commit` and HEAD that a timed command runs or reads."""
    out = _git("diff", "--name-only", commit, "HEAD").stdout.split()
    return [path for path in out if not path.startswith(UNTIMED) and path != "README.md"]


def _readme_block(commit: str, finder) -> str:
    text = _git("show", f"{commit}:README.md").stdout
    return finder(text)


@pytest.mark.parametrize("name", ["first_hour.json", "demo.json"])
def test_the_quoted_timings_are_newer_than_the_code_they_time(name):
    commit = _timed_commit(name)
    changed = changed_since(commit)
    assert not changed, (
        f"benchmarks/results/{name} timed commit {commit[:12]}, and {len(changed)} file(s) the timed commands run "
        f"changed since ({', '.join(changed[:8])}{' ...' if len(changed) > 8 else ''}): {RERUN}."
    )


def test_the_readme_blocks_that_were_timed_are_the_readme_blocks_now():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import first_hour

    commit = _timed_commit("first_hour.json")
    now = (ROOT / "README.md").read_text(encoding="utf-8")
    for finder in (first_hour.readme_quick_start, first_hour.readme_own_data):
        assert _readme_block(commit, finder) == finder(now), (
            f"the README's {finder.__name__.removeprefix('readme_')} block changed after it was timed: {RERUN}."
        )


def test_the_check_sees_a_change_to_the_package():
    """The check itself: a change to a package file after a commit is seen, a change to a result is not."""
    head = _git("rev-parse", "HEAD").stdout.strip()
    if not head:
        pytest.skip("not a git checkout")
    first = _git("rev-list", "--max-parents=0", "HEAD").stdout.split()[0]
    changed = changed_since(first)
    assert any(path.startswith("hf_seqtemp/") for path in changed)
    assert not any(path.startswith("benchmarks/results/") for path in changed)


def test_the_timing_run_names_the_variable_this_check_skips_on(monkeypatch):
    """Inside the clone benchmarks/first_hour.py times, this check skips (it would compare the code with the timings
    the run replaces); the variable it sets and the one read here must be one name, and only it skips."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import first_hour

    assert first_hour.TIMING_RUN == "HF_SEQTEMP_FIRST_HOUR_RUN"
    monkeypatch.setenv(first_hour.TIMING_RUN, "1")
    with pytest.raises(pytest.skip.Exception):
        _timed_commit("first_hour.json")
    monkeypatch.delenv(first_hour.TIMING_RUN)
    assert _timed_commit("first_hour.json")  # outside a timing run the check runs
