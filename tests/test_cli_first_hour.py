# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The CLI paths a new user takes first: held-out prompts that really are unseen, `eval` on prompt-only files, one
flag vocabulary (TRL's), errors that name the fix before anything heavy runs, `bench` writing where it runs."""

import json
import random
import subprocess
import sys

import pytest
from tiny_models import save_word_base

from hf_seqtemp.cli import commands as cli_commands
from hf_seqtemp.cli import main

WORDS = ["a", "b", "c", "d"]
CHAT = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("first_hour")
    save_word_base(root / "base", CHAT)
    rng = random.Random(0)
    _jsonl(root / "text.jsonl", [{"text": " ".join(rng.choice(WORDS) for _ in range(4))} for _ in range(32)])
    prompts = [f"{x} {y}" for x in WORDS for y in WORDS[:2]]  # 8 prompts, 3 completions each, 2 turns before
    chats = [
        {"messages": [{"role": r, "content": t} for r, t in zip(["user", "assistant"] * 2, ["a", "b", p, c])]}
        for c in WORDS[:3]
        for p in prompts
    ]
    _jsonl(root / "messages.jsonl", chats)
    _jsonl(root / "prompts.jsonl", [{"prompt": p} for p in prompts[:3]])
    _jsonl(root / "singles.jsonl", [{"prompt": p, "completion": "c"} for p in prompts])
    (root / "prompts.txt").write_text("a b\nc d\n", encoding="utf-8")
    (root / "one_prompt.txt").write_text("a b\n", encoding="utf-8")
    return root


def _train(root, out, *extra):
    flags = ["train", "--model_name_or_path", str(root / "base"), "--output_dir", str(out), "--max_steps", "2"]
    flags += ["--lora_r", "2", "--lora_target_modules", "q_proj", "--per_device_train_batch_size", "6"]
    flags += ["--use_cpu", "--save_strategy", "no", "--report_to", "none", "--num_generations", "3"]
    return main([*flags, *extra])


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return " ".join(capsys.readouterr().err.split())


@pytest.fixture(scope="module")
def adapter(root):
    assert _train(root, root / "adapter", "--dataset_path", str(root / "text.jsonl"), "--max_steps", "1") == 0
    return str(root / "adapter")


# ---------------------------------------------------------------------------------------------------- held out
def test_messages_are_held_out_by_prompt_and_said_to_be_unseen(root, tmp_path, capsys):
    data = ["--dataset_path", str(root / "messages.jsonl"), "--eval_fraction", "0.25"]
    assert _train(root, tmp_path / "m", *data) == 0
    assert (
        "measured within prompts on 6 completions of 2 held-out prompts, never trained on" in capsys.readouterr().out
    )


def test_the_split_is_announced_before_training_with_a_warning_below_8_prompts(root, tmp_path, capsys):
    """Before any training output: how many prompts are held out and trained on; with fewer than
    `MIN_HELD_OUT_PROMPTS` held out, a warning on stderr and a caveat beside the final figures."""
    from hf_seqtemp.cli.held_out import MIN_HELD_OUT_PROMPTS

    data = ["--dataset_path", str(root / "messages.jsonl"), "--eval_fraction", "0.25"]
    assert _train(root, tmp_path / "m", *data) == 0
    captured = capsys.readouterr()
    announced = "hf-seqtemp train: holding out 2 prompts (6 rows), never trained on; training on 6 prompts."
    assert announced in captured.out and captured.out.index(announced) < captured.out.index("measured within")
    assert f"will rest on 2 prompts, fewer than {MIN_HELD_OUT_PROMPTS}" in captured.err
    assert f"(on fewer than {MIN_HELD_OUT_PROMPTS} prompts: indicative only)" in captured.out
    many = tmp_path / "many.txt"
    many.write_text("".join(f"{x} {y} {z}\n" for x in WORDS for y in WORDS for z in WORDS[:2]), encoding="utf-8")
    assert _train(root, tmp_path / "p", "--sample_prompts_file", str(many), "--eval_fraction", "0.25") == 0
    captured = capsys.readouterr()
    assert (
        "holding out 8 prompts (3 completions of each sampled from the base model), never trained on; "
        "training on 24 prompts." in captured.out
    )
    assert "fewer than" not in captured.err + captured.out


def test_a_text_corpus_is_not_said_to_be_unseen_prompts(root, tmp_path, capsys):
    assert _train(root, tmp_path / "t", "--dataset_path", str(root / "text.jsonl"), "--eval_fraction", "0.25") == 0
    out = capsys.readouterr().out
    assert "never trained on" not in out and "unseen rows, not unseen prompts" in out


def test_one_prompt_names_the_fixes(root, tmp_path, capsys):
    data = ["--sample_prompts_file", str(root / "one_prompt.txt")]
    message = _error([*_train_flags(root, tmp_path), *data, "--eval_fraction", "0.25"], capsys)
    assert "`--eval_fraction` 0.25 needs at least 2 distinct prompts" in message
    assert "train without `--eval_fraction`" in message and "`hf-seqtemp eval`" in message
    assert _train(root, tmp_path / "one", *data) == 0  # without --eval_fraction: trains, and says so first
    assert "nothing will be measured after training" in capsys.readouterr().err


def _train_flags(root, tmp_path):
    return ["train", "--model_name_or_path", str(root / "base"), "--output_dir", str(tmp_path / "x"), "--use_cpu"]


def test_a_prompts_text_file_as_dataset_names_sample_prompts_file(root, tmp_path, capsys):
    message = _error([*_train_flags(root, tmp_path), "--dataset_path", str(root / "prompts.txt")], capsys)
    assert "goes to `--sample_prompts_file`" in message


# ---------------------------------------------------------------------------------------------------- eval
def _eval(adapter, root, *extra):
    return ["eval", "--adapter_path", adapter, "--model_name_or_path", str(root / "base"), *extra]


def test_eval_samples_completions_of_a_prompt_only_file(adapter, root, tmp_path, capsys):
    out = tmp_path / "eval.json"
    flags = ["--dataset_path", str(root / "prompts.jsonl"), "--num_generations", "4", "--max_completion_length", "3"]
    assert main(_eval(adapter, root, *flags, "--output_json", str(out))) == 0
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert (payload["num_prompts"], payload["num_sequences"]) == (3, 12)
    assert "holds prompts only: sampling 4 completions of each" in capsys.readouterr().out


def test_old_eval_flag_names_still_work_with_a_deprecation_message(adapter, root, tmp_path, capsys):
    runs = {}
    for name, flags in (("new", ("--num_generations", "3", "--max_completion_length", "2")),
                        ("old", ("--num_samples", "3", "--max_new_tokens=2"))):  # fmt: skip
        out = tmp_path / f"{name}.json"
        assert main(_eval(adapter, root, "--sample_prompts_file", str(root / "prompts.txt"), *flags,
                          "--output_json", str(out))) == 0  # fmt: skip
        runs[name] = (json.loads(out.read_text(encoding="utf-8")), capsys.readouterr().err)
    assert runs["old"][0]["reports"] == runs["new"][0]["reports"] and runs["old"][0]["num_sequences"] == 6
    assert "`--num_samples` is deprecated and will be removed: use `--num_generations`" in runs["old"][1]
    assert runs["old"][1].count("deprecated") == 2 and "deprecated" not in runs["new"][1]


def test_eval_with_one_completion_per_prompt_fails_before_loading_a_model(adapter, root, capsys, monkeypatch):
    monkeypatch.setattr(cli_commands, "_load_base", lambda *a, **k: pytest.fail("loaded a model before the check"))
    message = _error(_eval(adapter, root, "--dataset_path", str(root / "singles.jsonl")), capsys)
    assert "has a single completion" in message and "`--num_generations`" in message
    prompts = ["--sample_prompts_file", str(root / "prompts.txt"), "--num_generations", "1"]
    assert "set `--num_generations 2` or more" in _error(_eval(adapter, root, *prompts), capsys)


# ---------------------------------------------------------------------------------------------------- bench, flags
def test_bench_writes_under_the_current_folder(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(cli_commands.subprocess, "call", lambda cmd, **kwargs: calls.append(cmd) or 0)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--quick"]) == 0
    assert calls[0][-3:] == ["--quick", "--results", str(tmp_path / "outputs" / "bench")]
    assert main(["bench", "--results", "elsewhere"]) == 0 and calls[1][-2:] == ["--results", "elsewhere"]


@pytest.mark.parametrize("command", ["train", "eval", "generate"])
def test_a_mistyped_flag_fails_without_importing_torch(command):
    code = (
        f"import sys\nfrom hf_seqtemp.cli import main\ntry:\n    main([{command!r}, '--learnin_rate', '1', '--seed', "
        "'2'])\nexcept SystemExit as e:\n    print('exit', e.code, 'torch' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "exit 2 False", run.stderr[-2000:]
    assert "unrecognised flag(s): --learnin_rate" in run.stderr
    if command == "train":
        assert "(did you mean --learning_rate?)" in run.stderr
