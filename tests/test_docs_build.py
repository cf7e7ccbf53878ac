# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The documentation site builds offline with `--strict` (any warning, such as a broken link, an unknown anchor or
an API object that does not resolve, fails it), as `make docs` builds it; and what the build generates is there: the
results index listing every committed result, the results pages read from `benchmarks/`, the decision tables read
from `decision.json`, the API reference."""

from __future__ import annotations

import html
import json
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


def _api_pages(site: Path) -> dict[str, str]:
    return {page.parent.name: page.read_text(encoding="utf-8") for page in sorted((site / "api").rglob("index.html"))}


def test_the_api_reference_shows_types_and_cross_references_without_markup(site):
    """The doc-builder docstrings read as a reader expects (`docs/hf_docstrings.py`): a type cell holds the type,
    not `` `float`, *optional*, defaults to `0.5` ``; a cross-reference is a link or a name, never `[~a.B]`."""
    pages = _api_pages(site)
    assert {"trainer", "generation", "measuring"} <= set(pages)
    for name, page in pages.items():
        cells = re.findall(r"<td>\s*<code>(.*?)</code>\s*</td>", page, flags=re.DOTALL)
        assert not [cell for cell in cells if "`" in cell or "*optional*" in cell], name
        assert cells or name == "api", name  # every page but the index documents parameters
        text = _text(site / "api" / ("" if name == "api" else name) / "index.html")
        assert "[~" not in text and "[`" not in text and "[<code>" not in page, name
    trainer = pages["trainer"]
    # [`SeqTempTrainer`] in SeqTempConfig's docstring links to the class on the same page
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]*href="#hf_seqtemp\.trainer\.trainer\.SeqTempTrainer"', trainer
    )
    assert "autorefs-internal" in pages["generation"] and "autorefs-internal" in pages["measuring"]


def test_the_api_reference_groups_parameters_folds_long_ones_and_renders_lists(site):
    pages = _api_pages(site)
    trainer = _text(site / "api" / "trainer" / "index.html")
    for group in ("Parameters that control the training", "Parameters that control the data preprocessing"):
        assert group in trainer
    assert "Defaults that differ from" in trainer and "[!NOTE]" not in trainer  # an admonition, not a quote
    # loss_type: a short first paragraph in its cell, the rest folded under "More", and no GRPO name left in it
    cell = pages["trainer"].split("<code>loss_type</code>", 1)[1].split("</tr>", 1)[0]
    first = re.search(r"<p>(.*?)</p>", cell, flags=re.DOTALL).group(1)
    assert len(re.sub(r"<[^>]+>", "", first)) < 400 and "<details" in cell and "steps_per_generation" not in cell
    # a docstring's bullet list is a list
    generation = pages["generation"]
    strategies = generation.split('id="hf_seqtemp.generation.routing.seqtemp_generate"', 1)[1]
    assert re.search(r"<ul>\s*<li>\s*<p><code>\"auto\"</code>", strategies)


def test_the_fidelity_page_shows_its_plots_and_the_index_reads(site):
    """Every fidelity plot committed under `benchmarks/results/fidelity/` is shown on the fidelity page (each a link
    to its full size); the results index lists each result with its whole command on a line of its own, and says
    whether its provenance was recorded by the run or backfilled."""
    fidelity = (site / "results" / "fidelity" / "index.html").read_text(encoding="utf-8")
    plots = sorted(p.name for p in (ROOT / "benchmarks" / "results" / "fidelity").glob("*.png"))
    assert len(plots) == 16
    for name in plots:
        assert f'src="../data/fidelity/{name}"' in fidelity, name
        assert (site / "results" / "data" / "fidelity" / name).is_file()
    index = (site / "results" / "index.html").read_text(encoding="utf-8")
    assert "<table>" not in index.split("<article", 1)[1]  # a list: nothing squeezes the command into a column
    recorded = json.loads((ROOT / "benchmarks" / "results" / "fidelity.json").read_text(encoding="utf-8"))
    assert f"command: <code>{html.escape(recorded['provenance']['command'], quote=False)}</code>" in index
    assert "provenance <strong>backfilled</strong>" in index and "provenance recorded by the run" in index
