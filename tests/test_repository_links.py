# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The README and the pages it leads to read right where users read them, on the repository page: every relative
link and image resolves in the repository tree (not only in the built site), no page waits for a build step to be
complete (its generated blocks are committed, and are the ones the committed results give), and the docs build
maps those repository links into the site (`docs/hooks.py`; the built links are checked by the strict build)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _links(page: Path) -> list[str]:
    """Relative link targets of a Markdown page, outside code blocks and spans, without their anchors."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = [match.group(1) for match in _LINK.finditer(text)]
    return [t.split("#", 1)[0] for t in targets if not re.match(r"^([a-z]+:|#)", t) and t.split("#", 1)[0]]


def _pages() -> list[Path]:
    """The README, every page under docs/ and the results pages the docs include."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return pages + [ROOT / "benchmarks" / "README.md", *sorted((ROOT / "benchmarks" / "results").glob("*.md"))]


def test_every_link_of_the_readme_and_the_docs_resolves_in_the_repository_tree():
    readme = _links(ROOT / "README.md")
    assert any(link.startswith("docs/") for link in readme) and "benchmarks/results/decision.png" in readme
    missing = [
        f"{page.relative_to(ROOT)}: {link}"
        for page in _pages()
        for link in _links(page)
        if not (page.parent / link).exists()
    ]
    assert missing == []


def test_no_page_has_an_unfilled_marker_or_a_stale_generated_block():
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed (make venv installs it)")
    hooks = load_script(ROOT / "docs" / "hooks.py", "docs_hooks")
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"<!-- (decision-tables|demo-run) -->", text), page  # a marker only a build fills
    for name in hooks.BLOCKS:
        text = (ROOT / name).read_text(encoding="utf-8")
        assert ":begin -->" in text and text == hooks.filled(text), f"{name}: run `python docs/hooks.py`"


def test_the_build_maps_repository_links_into_the_site():
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed (make venv installs it)")
    hooks = load_script(ROOT / "docs" / "hooks.py", "docs_hooks")
    page = "[i](../../benchmarks/results/) [f](../../benchmarks/results/FIDELITY.md#a) ![d](../../benchmarks/results/x.png)"
    assert hooks.site_links(page, "docs/results/overview.md", "results/overview.md") == (
        "[i](index.md) [f](fidelity.md#a) ![d](data/x.png)"
    )
    fidelity = "![plot](fidelity/ratio_T0.5.png) [tasks](TASKS.md) [code](../fidelity.py)"
    assert hooks.site_links(fidelity, "benchmarks/results/FIDELITY.md", "results/fidelity.md") == (
        "![plot](data/fidelity/ratio_T0.5.png) [tasks](tasks.md) [code](../fidelity.py)"
    )


def test_the_hooks_examples_run():
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed (make venv installs it)")
    import doctest

    hooks = load_script(ROOT / "docs" / "hooks.py", "docs_hooks")

    class Fenceless(doctest.DocTestParser):
        def parse(self, string, name="<string>"):
            return super().parse("\n".join(s for s in string.splitlines() if not s.strip().startswith("```")), name)

    runner = doctest.DocTestRunner()
    tests = doctest.DocTestFinder(parser=Fenceless()).find(hooks, "docs_hooks")
    for test in tests:
        runner.run(test)
    assert sum(len(t.examples) for t in tests) >= 4 and runner.summarize(verbose=False).failed == 0


def test_the_first_hour_line_quotes_the_timed_run_and_says_what_is_not_measured():
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed (make venv installs it)")
    hooks = load_script(ROOT / "docs" / "hooks.py", "docs_hooks")
    assert "has not been run on this commit's code yet" in hooks.first_hour(None)
    step = {"load_average_1min": [0.1, 0.2], "exit_status": 0}
    steps = {"venv": {**step, "seconds": 251.2}, "quickstart": {**step, "seconds": 31.4},
             "demo": {**step, "seconds": 210.0}, "test": {**step, "seconds": 1200.0, "exit_status": 1}}  # fmt: skip
    line = hooks.first_hour({"provenance": {"machine": "2-core x86_64"}, "steps": steps})
    assert "2-core x86_64, idle (1-minute load average at most 0.20)" in line
    assert "`make venv` 251 s, the quick start 31 s, `make demo` 210 s, `make test` 1200 s (exit status 1)" in line
    steps["demo"]["load_average_1min"] = [1.5, 2.0]
    assert "with other jobs on the machine" in hooks.first_hour({"provenance": {"machine": "m"}, "steps": steps})
    # the load average counts the step before; the cores busy as each step starts are other jobs' alone
    for name, step in steps.items():
        steps[name] = {**step, "load_average_1min": [1.9, 2.6], "cores_busy_before": 0.05}
    assert "m, idle (cores busy as each step started at most 0.05)" in hooks.first_hour(
        {"provenance": {"machine": "m"}, "steps": steps}
    )
    steps["test"]["cores_busy_before"] = 1.2
    assert "with other jobs on the machine" in hooks.first_hour({"provenance": {"machine": "m"}, "steps": steps})
