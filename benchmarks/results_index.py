# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Every committed result, where it came from, and which pages cite it: the docs' results index, generated.

A committed result is a `.json` / `.jsonl` file under `benchmarks/results/`. Each records its `provenance`: the
`command` that wrote it, the `commit` it ran on, the `machine` and the `date` (`benchmarks/_common.py` writes it;
the files older than that were backfilled from the git history). A page cites a result by naming it: a path that
starts with `benchmarks/results/`, or, inside `benchmarks/results/` (FIDELITY.md, TASKS.md), a bare file name that
starts like a benchmark script's results (`fidelity…`, `task_table…`, ...). [`problems`] lists every cited result
that is missing or lacks one of the four fields (`tests/test_results_trace.py` fails on any); [`render_index`]
writes the index page (the docs build generates it, `docs/hooks.py`).

A result is marked in the index when it is superseded: its provenance says so (`superseded`, or
`superseded_keys` for some of its figures), or it holds the ESS companion `ess_ratio_where_2_is_reachable`
selected on the ratio's own denominator draws (no `reachable_selected_on`; biased upwards, issue 47).

Usage:
    python benchmarks/results_index.py            # prints the index page
    python benchmarks/results_index.py --check    # lists the problems, exit 1 if any
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path("benchmarks") / "results"
FIELDS = ("command", "commit", "machine", "date")
_NAME = re.compile(r"[\w./@+-]+\.jsonl?\b")
BIASED_COMPANION = (
    "`ess_ratio_where_2_is_reachable` selected its prompts on the ratio's own denominator draws (biased upwards; "
    "issue 47): superseded by selection on independent draws"
)


def result_prefixes(root: Path) -> tuple[str, ...]:
    """Bare names a page inside `benchmarks/results/` may cite: those starting like a benchmark script's results."""
    scripts = [p.stem for p in (root / "benchmarks").glob("*.py") if not p.stem.startswith("_")]
    return (*sorted(scripts), "task_", "audit/", "decision")


def pages(root: Path) -> list[Path]:
    """The pages whose citations must resolve: the README, the docs, the benchmarks' README and result pages."""
    found = [root / "README.md", root / "benchmarks" / "README.md"]
    found += sorted((root / RESULTS).glob("*.md")) + sorted((root / "docs").rglob("*.md"))
    return [page for page in found if page.is_file()]


def citations(page: Path, root: Path) -> set[str]:
    """Result files the page names, as paths relative to `benchmarks/results/`."""
    text = page.read_text(encoding="utf-8")
    inside = page.parent == root / RESULTS
    prefixes = result_prefixes(root)
    cited = set()
    for name in _NAME.findall(text):
        marker = f"{RESULTS.as_posix()}/"
        if marker in name:
            cited.add(name.split(marker, 1)[1])
        elif inside and name.startswith(prefixes):
            cited.add(name)
    return cited


def provenance(path: Path) -> list[dict]:
    """The provenance of a result: one for a JSON file, one per line of a JSONL file (`{}` where absent)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line).get("provenance", {}) for line in text.splitlines() if line.strip()]
    payload = json.loads(text)
    return [payload.get("provenance", {}) if isinstance(payload, dict) else {}]


def problems(root: Path = REPO) -> list[str]:
    """`page: result: what is wrong` for every cited result that is missing or lacks a provenance field."""
    out = []
    for page in pages(root):
        for name in sorted(citations(page, root)):
            path = root / RESULTS / name
            where = f"{page.relative_to(root)}: {RESULTS / name}"
            if not path.is_file():
                out.append(f"{where}: cited but not committed")
                continue
            for index, record in enumerate(provenance(path)):
                missing = [field for field in FIELDS if not str(record.get(field) or "").strip()]
                line = f" (line {index + 1})" if path.suffix == ".jsonl" else ""
                if missing:
                    out.append(f"{where}{line}: no {', '.join(missing)} in its provenance")
                if str(record.get("commit", "")).endswith("-dirty"):
                    out.append(f"{where}{line}: run from a dirty tree ({record['commit']}): rerun it from a commit")
    return out


def backfilled(path: Path) -> bool:
    """Whether a result's provenance was backfilled from the git history (its command reconstructed, its commit and
    date those of the commit that wrote the file) rather than recorded by the run."""
    return any("backfilled" in str(record.get("recorded", "")) for record in provenance(path))


BACKFILLED_NOTE = (
    "their command was reconstructed and their commit and date are those of the commit that last wrote the file, "
    "not recorded by the run (the results index marks them)"
)


def backfilled_note(page: Path, root: Path = REPO) -> str:
    """The note a page carries under its results: which results it cites have backfilled provenance ("" if none).

    Example:
    ```python
    >>> backfilled_note(REPO / "docs" / "concepts.md")
    ''
    ```
    """
    names = sorted(name for name in citations(page, root) if (root / RESULTS / name).is_file())
    marked = [name for name in names if backfilled(root / RESULTS / name)]
    if not marked:
        return ""
    listed = ", ".join(f"`{name}`" for name in marked)
    return f"Provenance backfilled for {len(marked)} of the results this page cites ({listed}): {BACKFILLED_NOTE}.\n"


def recorded_commands(names: list[str], root: Path = REPO) -> str:
    """A code block of the commands the results `names` record, one line each with the file it wrote, and which of
    them were reconstructed (backfilled provenance)."""
    lines, rebuilt = [], False
    for name in names:
        path = root / RESULTS / name
        command = provenance(path)[0].get("command", "**missing**")
        mark = backfilled(path)
        rebuilt |= mark
        lines.append(f"{command}  # {name}{' (reconstructed)' if mark else ''}")
    note = "Each command as its JSON records it"
    note += f"; reconstructed: the JSON's provenance was backfilled, so {BACKFILLED_NOTE}.\n" if rebuilt else ".\n"
    return "```bash\n" + "\n".join(lines) + "\n```\n\n" + note


def status(path: Path) -> str:
    """What is superseded in a result, or ``."""
    if path.suffix == ".jsonl":
        return ""
    payload = json.loads(path.read_text(encoding="utf-8"))
    record = payload.get("provenance", {}) if isinstance(payload, dict) else {}
    marks = [record["superseded"]] if record.get("superseded") else []
    marks += [f"`{key}`: {why}" for key, why in record.get("superseded_keys", {}).items()]
    text = json.dumps(payload)
    if '"ess_ratio_where_2_is_reachable"' in text and '"reachable_selected_on"' not in text:
        marks.append(BIASED_COMPANION)
    return "; ".join(marks)


def render_index(root: Path = REPO, link_prefix: str = "data/") -> str:
    """The index page: every result with the command that wrote it, its commit, date and machine, whether that
    provenance was recorded by the run or backfilled, the pages citing it and what of it is superseded."""
    cited_by: dict[str, list[str]] = {}
    for page in pages(root):
        for name in citations(page, root):
            cited_by.setdefault(name, []).append(page.relative_to(root).as_posix())
    files = sorted(p for p in (root / RESULTS).rglob("*") if p.suffix in (".json", ".jsonl"))
    marked = sum(backfilled(path) for path in files)
    lines = [
        "# Results index",
        "",
        (
            "Generated from the files themselves by `benchmarks/results_index.py` when the docs are built: every "
            f"committed result under `{RESULTS.as_posix()}/`, the command that wrote it, the commit it ran on, the "
            "machine and the date, the pages that cite it, and what of it is superseded. Pages quote figures only "
            "from these files; `tests/test_results_trace.py` fails when a cited file is missing, lacks one of "
            "those four fields or was run from a dirty tree."
        ),
        "",
        (
            f"**Provenance recorded by the run** for {len(files) - marked} results; **backfilled** for {marked}: "
            f"{BACKFILLED_NOTE.replace(' (the results index marks them)', '')}."
        ),
        "",
    ]
    for path in files:
        lines += _entry(path, root, link_prefix, cited_by)
    return "\n".join(lines) + "\n"


def _entry(path: Path, root: Path, link_prefix: str, cited_by: dict) -> list[str]:
    """One result of the index: its name, then its command, provenance, citing pages and superseded parts."""
    name = path.relative_to(root / RESULTS).as_posix()
    records = provenance(path)
    first = records[0] if records else {}
    commits = sorted({r.get("commit", "")[:8] for r in records})
    dates = sorted({r.get("date", "") for r in records})
    command = first.get("command", "").replace("`", "'")
    more = f" (and {len(records) - 1} more runs)" if len(records) > 1 else ""
    how = "**backfilled**" if backfilled(path) else "recorded by the run"
    lines = [
        f"- [`{name}`]({link_prefix}{name})",
        f"    - command: `{command}`{more}" if command else "    - command: **missing**",
        (
            f"    - commit {', '.join(f'`{c}`' for c in commits if c) or '**missing**'}, "
            f"{' – '.join(dict.fromkeys([dates[0], dates[-1]])) if dates and dates[0] else '**missing**'}, "
            f"{first.get('machine') or '**missing**'}; provenance {how}"
        ),
        f"    - cited by: {', '.join(sorted(cited_by.get(name, []))) or '—'}",
    ]
    superseded = status(path)
    return lines + ([f"    - superseded: {superseded}"] if superseded else [])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="list cited results that are missing or incomplete")
    args = parser.parse_args(argv)
    if args.check:
        found = problems()
        print("\n".join(found) or "every cited result is committed with its provenance")
        return 1 if found else 0
    print(render_index(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
