# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Results a reader can trace: every result a page cites (the README, `docs/`, the benchmarks' README and result
pages) is committed under `benchmarks/results/` with its command, commit, machine and date; a removed or incomplete
one is named; the README's decision tables are the ones `decision.json` gives, and that file's sources are
committed results; superseded figures are marked in the index; the demo's quoted time is the committed run's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _load(name: str):
    return load_script(ROOT / "benchmarks" / f"{name}.py", f"trace_{name}", on_path=True)


@pytest.fixture(scope="module")
def index():
    return _load("results_index")


def test_every_cited_result_is_committed_with_its_provenance(index):
    assert index.problems(ROOT) == []
    cited = {name for page in index.pages(ROOT) for name in index.citations(page, ROOT)}
    # the pages the issue names cite results: the README's decision figure and demo, the docs, FIDELITY / TASKS
    assert {"decision.json", "demo.json", "fidelity_tuned.json", "fidelity_intervals.json"} <= cited
    assert any(name.startswith("task_table_cpu_") for name in cited)


def _copy_pages(tmp_path: Path) -> Path:
    """The pages and results of the repository in a scratch root (the benchmark scripts' names give the prefixes)."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", root / "docs", ignore=shutil.ignore_patterns("*.py"))
    shutil.copytree(RESULTS, root / "benchmarks" / "results")
    for path in [ROOT / "README.md", *(ROOT / "benchmarks").glob("*.py"), ROOT / "benchmarks" / "README.md"]:
        (root / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, root / path.relative_to(ROOT))
    return root


def test_a_removed_cited_result_is_named(index, tmp_path):
    root = _copy_pages(tmp_path)
    assert index.problems(root) == []
    (root / "benchmarks" / "results" / "decision.json").unlink()
    (root / "benchmarks" / "results" / "fidelity_smc_distill_adapter_batch32.json").unlink()  # cited by FIDELITY.md
    found = index.problems(root)
    assert "README.md: benchmarks/results/decision.json: cited but not committed" in found
    assert any(
        line.startswith("benchmarks/results/FIDELITY.md: benchmarks/results/fidelity_smc_distill_adapter_batch32.json")
        for line in found
    ), found


def test_a_result_without_command_commit_machine_or_date_is_named(index, tmp_path):
    root = tmp_path / "repo"
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / "benchmarks" / "fidelity.py").write_text("")  # results named fidelity* may be cited bare inside results/
    record = {"command": "python benchmarks/fidelity.py", "commit": "abc", "machine": "2-core x86_64", "date": "d"}
    results = root / "benchmarks" / "results"
    (results / "fidelity_ok.json").write_text(json.dumps({"provenance": record}))
    (results / "fidelity_nomachine.json").write_text(json.dumps({"provenance": {**record, "machine": ""}}))
    (results / "fidelity_bare.json").write_text(json.dumps({"rows": []}))
    lines = [json.dumps({"provenance": record}), json.dumps({"provenance": {**record, "commit": None}})]
    (results / "fidelity_sweep.jsonl").write_text("\n".join(lines) + "\n")
    (results / "FIDELITY.md").write_text("`fidelity_ok.json`, `fidelity_nomachine.json` and `fidelity_sweep.jsonl`\n")
    (root / "README.md").write_text(
        "See [x](benchmarks/results/fidelity_bare.json), not `eval.json` (a user's file).\n"
    )
    assert index.problems(root) == [
        "README.md: benchmarks/results/fidelity_bare.json: no command, commit, machine, date in its provenance",
        "benchmarks/results/FIDELITY.md: benchmarks/results/fidelity_nomachine.json: no machine in its provenance",
        "benchmarks/results/FIDELITY.md: benchmarks/results/fidelity_sweep.jsonl (line 2): no commit in its provenance",
    ]


def test_the_decision_tables_are_the_ones_decision_json_gives():
    decision_table = _load("decision_table")
    decision = json.loads((RESULTS / "decision.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    routes = (ROOT / "docs" / "routes.md").read_text(encoding="utf-8")  # README: the figure; the page: the tables
    shown = routes.split("<!-- decision-tables:begin -->\n", 1)[1].split("<!-- decision-tables:end -->", 1)[0]
    assert shown.startswith(decision_table.markdown(decision))  # then how many of its sources were backfilled
    assert "](benchmarks/results/decision.png)" in readme and (RESULTS / "decision.png").is_file()
    assert "](docs/routes.md)" in readme
    for name in decision["sources"]:  # the figures it was built from are committed results
        assert json.loads((RESULTS / name).read_text(encoding="utf-8"))["provenance"]["command"], name
    assert {r["route"] for r in decision["routes"]} >= {"token", "ratio", "smc_adapter", "smc8", "mh", "rloo"}


def test_superseded_figures_are_marked_in_the_index(index):
    """The ESS companion selected on the denominator's own draws (the JSONs before issue 47) is marked; a JSON that
    selected on independent draws, or has no companion, is not."""
    biased = RESULTS / "fidelity_smc_distill_adapter_4.5epochs_r4_heldout30_seed1.json"
    assert "ess_ratio_where_2_is_reachable" in biased.read_text() and index.BIASED_COMPANION in index.status(biased)
    assert index.status(RESULTS / "fidelity_tuned.json") == ""
    page = index.render_index(ROOT)
    entry = page.split("- [`fidelity_smc_distill_adapter_4.5epochs_r4_heldout30_seed1.json`]", 1)[1]
    assert "superseded by selection on independent draws" in entry.split("\n- [", 1)[0]
    assert page.count("\n- [`") == len([p for p in RESULTS.rglob("*") if p.suffix in (".json", ".jsonl")])


def test_the_readme_quotes_the_committed_demo_run():
    """The demo's time and machine in the README are those `benchmarks/results/demo.json` recorded."""
    demo = json.loads((RESULTS / "demo.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = re.search(r"Measured run: (\d+) s wall on ([^(]+?)\s\(", readme)
    assert quoted, "the README quotes no measured demo run"
    assert int(quoted.group(1)) == round(demo["wall_seconds"])
    assert quoted.group(2).strip() in demo["provenance"]["machine"]


def test_a_result_from_a_dirty_tree_is_named(index, tmp_path):
    root = _copy_pages(tmp_path)
    path = root / "benchmarks" / "results" / "decision.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["provenance"]["commit"] += "-dirty"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert any("decision.json: run from a dirty tree" in line for line in index.problems(root))


def test_backfilled_provenance_is_marked_in_the_index_and_on_every_page_that_cites_it(index):
    """The index says for each result whether its provenance was recorded by the run or backfilled; every page
    citing a backfilled result carries the note naming them (a committed block, `python docs/hooks.py`)."""
    page = index.render_index(ROOT)
    fidelity = page.split("- [`fidelity.json`]", 1)[1].split("\n- [", 1)[0]
    assert "provenance **backfilled**" in fidelity and index.backfilled(RESULTS / "fidelity.json")
    decision = page.split("- [`decision.json`]", 1)[1].split("\n- [", 1)[0]
    assert "provenance recorded by the run" in decision and not index.backfilled(RESULTS / "decision.json")
    citing = [p for p in index.pages(ROOT) if index.backfilled_note(p)]
    assert {p.name for p in citing} >= {"FIDELITY.md", "overview.md"}
    for path in citing:
        text = path.read_text(encoding="utf-8")
        note = text.split("<!-- backfilled-note:begin -->\n", 1)[-1].split("<!-- backfilled-note:end -->", 1)[0]
        assert note == index.backfilled_note(path), path


def test_a_results_page_shows_for_each_result_the_command_its_json_records(index):
    """A command line of a benchmark script that writes committed results appears on a page only inside a
    generated block of the commands the JSONs record (one command per result, the one that wrote it)."""
    writers = {record.get("command", "").split(" ")[1] for path in RESULTS.rglob("*.json*")
               for record in index.provenance(path) if record.get("command", "").startswith("python ")}  # fmt: skip
    for page in index.pages(ROOT):
        text = re.sub(r"<!-- result-commands .*?:end -->", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.DOTALL):
            for line in block.splitlines():
                words = line.split()
                assert not (words[:1] == ["python"] and words[1:2] and words[1] in writers), (page, line)
    fidelity = (RESULTS / "FIDELITY.md").read_text(encoding="utf-8")
    recorded = json.loads((RESULTS / "fidelity.json").read_text(encoding="utf-8"))["provenance"]["command"]
    assert f"```bash\n{recorded}  # fidelity.json (reconstructed)\n```" in fidelity
