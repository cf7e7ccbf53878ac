# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The documentation site builds offline with `--strict` (any warning, such as a broken link, an unknown anchor or
an API object that does not resolve, fails it), as `make docs` builds it; and what the build generates is there: the
results index listing every committed result, the results pages read from `benchmarks/`, the decision tables read
from `decision.json`, the API reference."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed (make venv installs it)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    result = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "WARNING" not in result.stderr, result.stderr[-3000:]
    return out


def _text(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_the_results_index_lists_every_committed_result_with_its_provenance(site):
    index = (site / "results" / "index.html").read_text(encoding="utf-8")
    results = sorted(p for p in (ROOT / "benchmarks" / "results").rglob("*") if p.suffix in (".json", ".jsonl"))
    for path in results:
        name = path.relative_to(ROOT / "benchmarks" / "results").as_posix()
        assert f'href="data/{name}"' in index, name  # listed, and the file is in the site
        assert (site / "results" / "data" / name).is_file(), name
    assert "<strong>missing</strong>" not in index  # what the index writes for an absent provenance field


def test_the_pages_read_from_benchmarks_and_the_generated_tables_are_in_the_site(site):
    fidelity = _text(site / "results" / "fidelity" / "index.html")
    assert "Temperature fidelity within prompts, on unseen prompts" in fidelity
    assert "Checkable-answer tasks: measured tables" in _text(site / "results" / "tasks" / "index.html")
    routes = _text(site / "routes" / "index.html")
    assert "token-forwards / answer" in routes and "adapter as SMC's proposal, N = 4" in routes
    assert "<!-- decision-tables -->" not in (site / "routes" / "index.html").read_text(encoding="utf-8")
    trainer = _text(site / "api" / "trainer" / "index.html")
    assert "SeqTempConfig" in trainer and "target_temperature" in trainer and "SeqTempTrainer" in trainer
