# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`benchmarks/first_hour.py` times what the README tells a new user to run: the quick start block as written (the
one `tests/test_readme_recipe.py` runs), `make venv`, `make demo` and `make test`, each with the load around it, into
a JSON with its provenance (the times themselves are a benchmark, not a test)."""

import json
import sys
from pathlib import Path

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def first_hour():
    return load_script(ROOT / "benchmarks" / "first_hour.py", "first_hour", on_path=True)


def test_it_times_the_readme_quick_start_as_written(first_hour, tmp_path, monkeypatch):
    import test_readme_recipe

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert first_hour.readme_quick_start(readme) == test_readme_recipe._python_block("SeqTempTrainer(")
    ran = []

    def call(command, cwd, env, stdout, stderr):
        ran.append((command, Path(cwd), env["HF_HUB_OFFLINE"]))
        return 0

    monkeypatch.setattr(first_hour.subprocess, "call", call)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    out = tmp_path / "first_hour.json"
    argv = ["--steps", "quickstart", "--output", str(out), "--workdir", str(tmp_path / "w")]
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "first_hour.py"), *argv])  # what provenance records
    assert first_hour.main(argv) == 0
    ((command, cwd, offline),) = ran
    assert command == [sys.executable, "quick_start.py"] and offline == "1"
    assert (cwd / "quick_start.py").read_text(encoding="utf-8") == first_hour.readme_quick_start(readme)
    record = json.loads(out.read_text(encoding="utf-8"))
    step = record["steps"]["quickstart"]
    assert step["seconds"] >= 0 and len(step["load_average_1min"]) == 2 and "default" in step["threads"]
    assert all(record["provenance"][field] for field in ("command", "commit", "machine", "date"))
    assert record["provenance"]["command"].startswith("python benchmarks/first_hour.py --steps quickstart")


def test_it_times_the_readmes_own_data_command_as_written_and_keeps_its_plan(first_hour, tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = first_hour.readme_own_data(readme)
    assert command.startswith("hf-seqtemp train --default_model --dataset_path examples/my_prompts.jsonl")
    ran = []

    def call(words, cwd, env, stdout, stderr):
        ran.append((words, Path(cwd), env))
        stdout.write("hf-seqtemp train: the plan: sample 4 completions ... about 3 min in all\n")
        return 0

    monkeypatch.setattr(first_hour.subprocess, "call", call)
    out = tmp_path / "first_hour.json"
    argv = ["--steps", "owndata", "--output", str(out), "--workdir", str(tmp_path / "w")]
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "first_hour.py"), *argv])
    (tmp_path / "w").mkdir()
    assert first_hour.main(argv) == 0
    ((words, cwd, env),) = ran
    assert words == ["bash", "-c", command] and cwd == ROOT and env["HF_HUB_OFFLINE"] == "1"
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)  # the clone's hf-seqtemp first
    step = json.loads(out.read_text(encoding="utf-8"))["steps"]["owndata"]
    assert step["plan"].endswith("about 3 min in all") and step["exit_status"] == 0
