# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Our checkable task families as lm-evaluation-harness tasks (hf_seqtemp.harness.tasks): the held-out questions of
the benchmarks, the chat prompt the benchmarks render, metrics that are the families' checkers, and the task table's
scorer reading the same draws to the same pass@1. Skipped without lm-eval (the `eval` extra), except in CI."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest
import torch

try:
    import lm_eval  # noqa: F401
except ImportError as error:
    if os.environ.get("CI"):
        raise ImportError(f"CI runs the harness tests, and lm-eval (the `eval` extra) is missing: {error}") from error
    pytest.skip(f"the harness tests need lm-eval: pip install -e '.[eval]' ({error})", allow_module_level=True)

from hf_seqtemp.harness.tasks import evaluate_tasks, score_answers, task_name, write_tasks
from hf_seqtemp.models.default import DEFAULT_MODEL_ID
from hf_seqtemp.tasks.chat import conversation, get_family, split_family

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_tasks_hold_out_the_benchmarks_questions_and_refuse_bad_settings_by_name(tmp_path):
    folder = write_tasks(tmp_path, ["addition", "capitals"], num_held_out=5, split_seed=1, repeats=4, k=2)
    for name in ("addition", "capitals"):
        train, held_out = split_family(get_family(name), 40, 5, seed=1)
        rows = _rows(folder / f"{task_name(name)}.jsonl")
        assert [(r["question"], r["answer"]) for r in rows] == held_out
        assert not {q for q, _ in train} & {r["question"] for r in rows}
        text = (folder / f"{task_name(name)}.yaml").read_text()
        assert f"process_results: !function seqtemp_checks.process_{name}" in text and "repeats: 4" in text
    with pytest.raises(ValueError, match="`families`.*algebra"):
        write_tasks(tmp_path, ["algebra"])
    with pytest.raises(ValueError, match="`k` must lie in \\[1, repeats=4\\], got 8"):
        write_tasks(tmp_path, ["addition"], repeats=4, k=8)
    with pytest.raises(ValueError, match="`num_held_out` must be an integer >= 1, got -1"):
        write_tasks(tmp_path, ["addition"], num_held_out=-1)  # was every question but one
    with pytest.raises(ValueError, match="`max_gen_toks` must be an integer >= 1, got 0"):
        write_tasks(tmp_path, ["addition"], max_gen_toks=0)
    with pytest.raises(ValueError, match="`num_held_out` must be at most 100 \\(the 'addition' questions\\), got 101"):
        write_tasks(tmp_path, ["addition"], num_held_out=101)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repeats", "2", "--k", "4"], "`k` must lie in [1, repeats=2], got 4"),
        (["--num_held_out", "-1"], "`num_held_out` must be an integer >= 1, got -1"),
        (["--max_gen_toks", "0"], "`max_gen_toks` must be an integer >= 1, got 0"),
    ],
)
def test_the_command_line_refuses_a_bad_setting_in_one_line(tmp_path, capsys, argv, message):
    from hf_seqtemp.harness.tasks import main

    with pytest.raises(SystemExit) as stopped:
        main([str(tmp_path / "tasks"), *argv])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert (
        error.count("\n") == 1 and error.startswith("python -m hf_seqtemp.harness.tasks: error: ") and message in error
    )
    assert not (tmp_path / "tasks").exists()  # nothing written


@pytest.mark.parametrize("how", ["moved", "copied"])
def test_a_tasks_folder_moved_or_copied_after_writing_still_loads(tmp_path, how):
    """The YAML reads its questions from beside it, not from the absolute path it was written at."""
    import shutil

    from lm_eval.tasks import TaskManager

    written = write_tasks(tmp_path / "written", ["addition", "comparison"], num_held_out=3, repeats=2, k=2)
    if how == "moved":
        shutil.move(written, tmp_path / "elsewhere")
    else:
        shutil.copytree(written, tmp_path / "elsewhere")
        shutil.rmtree(written)
    tasks = TaskManager(include_path=str(tmp_path / "elsewhere")).load(["seqtemp_tasks"])["tasks"]
    assert set(tasks) == {task_name("addition"), task_name("comparison")}
    for name in ("addition", "comparison"):
        docs = [(doc["question"], doc["answer"]) for doc in tasks[task_name(name)].test_docs()]
        assert docs == split_family(get_family(name), 0, 3, seed=0)[1]


@pytest.mark.parametrize(
    ("family", "answer", "replies", "correct"),
    [
        ("addition", "12", ["7 + 5 = 12.", "The answer is 13.", "I cannot say", "It is 12"], 2),
        ("capitals", "Paris", ["Paris, not Lyon.", "Berlin or Paris", "The capital is Paris", "Lyon"], 2),
        ("comparison", "no", ["No.", "Yes, it is.", "no", "Maybe"], 2),
        ("comparison", "yes", ["Yes.", "yes", "YES", "Yes!"], 4),
    ],
)
def test_a_questions_metrics_are_its_familys_checker(family, answer, replies, correct):
    scores = score_answers(family, answer, replies, k=2)
    n = len(replies)
    assert scores["pass@1"] == correct / n
    assert scores["pass@2"] == pytest.approx(1 - math.comb(n - correct, 2) / math.comb(n, 2))
    assert scores["exact_match"] == pytest.approx(correct / n)  # lm-eval's exact_match on the answers read


def test_the_real_model_through_the_harness_renders_our_prompts_and_both_scorers_read_the_same_draws(tmp_path):
    """The embedded SmolLM2-135M-Instruct sampled exactly (`strategy=p`) on two families, 3 questions × 4 answers."""
    from transformers import AutoTokenizer

    from hf_seqtemp.models.default import default_model_path

    families = ["comparison", "capitals"]
    folder = write_tasks(tmp_path / "tasks", families, num_held_out=3, repeats=4, k=2, max_gen_toks=8)
    model_args = "default_model=True,device=cpu,batch_size=12,seed=5,strategy=p"
    out = evaluate_tasks("seqtemp", model_args, folder, families=families, log_samples=True, verbosity="WARNING")
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _task_harness import replies_by_prompt
        from task_table import summarise
    finally:
        sys.path.remove(str(BENCHMARKS))
    seen = set()
    for name in families:
        family, task = get_family(name), task_name(name)
        _, held_out = split_family(family, 0, 3, seed=0)
        for sample in out["samples"][task]:
            question = sample["doc"]["question"]
            rendered = tokenizer.apply_chat_template(
                conversation(question), tokenize=False, add_generation_prompt=True
            )
            assert sample["arguments"][0][0] == rendered  # the benchmarks' chat prompt, system prompt included
            replies = sample["filtered_resps"][0]
            assert len(replies) == 4
            seen.update(replies)
            correct = sum(family.check(sample["doc"]["answer"], reply) for reply in replies)
            assert sample["pass@1"] == correct / 4 and sample["exact_match"] == pytest.approx(correct / 4)
        ours = summarise([{"completions": replies_by_prompt(out["samples"][task], held_out), "calls": 1,
                           "token_forwards": 0, "seconds": 0.0, "answers": 12}], family, held_out, 4)  # fmt: skip
        assert out["results"][task]["pass@1,all"] == pytest.approx(ours["pass@1"], abs=1e-12)
    assert len(seen) > 2  # the repeats are draws, not one answer copied
    cost = out["config"]["seqtemp"]["cost"]["generate_until"]
    assert cost["answers"] == 2 * 3 * 4 and cost["model_calls"] >= 2


def test_the_command_lines_write_the_tasks_and_run_them_by_their_tag(tmp_path):
    """`python -m hf_seqtemp.harness.tasks DIR` writes the tasks; `python -m hf_seqtemp.harness ... --tasks
    seqtemp_tasks` (the tag) runs every family written, as the evaluate page says, with the chat prompt."""
    import subprocess

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    folder = tmp_path / "tasks"
    write = [sys.executable, "-m", "hf_seqtemp.harness.tasks", str(folder), "--families", "addition", "comparison"]
    write += ["--num_held_out", "1", "--repeats", "2", "--k", "2", "--max_gen_toks", "2"]
    done = subprocess.run(write, check=False, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "seqtemp_addition, seqtemp_comparison (tag seqtemp_tasks)" in done.stdout
    run = [sys.executable, "-m", "hf_seqtemp.harness", "--model", "seqtemp", "--model_args", "default_model=True"]
    run += ["--include_path", str(folder), "--tasks", "seqtemp_tasks", "--apply_chat_template", "--system_instruction"]
    run += ["Answer briefly.", "--batch_size", "4", "--output_path", str(tmp_path / "out")]  # no --device
    done = subprocess.run(run, check=False, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "out").rglob("results_*.json")
    results = json.loads(path.read_text())
    # named by the embedded model's id (not a random one), on the device it ran on (not lm-eval's default cuda:0)
    assert results["model_name"] == DEFAULT_MODEL_ID and path.parent.name == DEFAULT_MODEL_ID.replace("/", "__")
    assert results["config"]["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")
    assert set(results["results"]) == {"seqtemp_addition", "seqtemp_comparison"}
    assert results["config"]["seqtemp"]["cost"]["generate_until"]["answers"] == 2 * 1 * 2
