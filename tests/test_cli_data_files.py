# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What `hf-seqtemp train` says about its data files before it loads a model (reliability round 4, first hour take
seven): a non-UTF-8 byte in a training JSONL gave only the decoder's text (no file, line or fix), and a JSONL of
`{"text": ...}` rows given as prompts was trained as a corpus of completions of an empty prompt without a word."""

from __future__ import annotations

import json
import re

import pytest

from hf_seqtemp.cli import main


def _run(argv, capsys) -> str:
    """What the command said on stderr before it stopped (a clear error exits 2; a missing model errs later)."""
    with pytest.raises((SystemExit, OSError)):
        main(argv)
    return capsys.readouterr().err


def test_a_file_that_is_not_utf8_is_named_with_its_line_and_the_fix(tmp_path, capsys):
    path = tmp_path / "train.jsonl"
    rows = [json.dumps({"prompt": "Name a colour.", "completion": " Red."}).encode() for _ in range(3)]
    rows[1] = rows[1].replace(b"Red", b"Ros\xe9")  # latin-1 é
    path.write_bytes(b"\n".join(rows) + b"\n")
    said = _run(["train", "--dataset_path", str(path), "--output_dir", str(tmp_path / "out"), "--model_name_or_path",
                 str(tmp_path / "no-model")], capsys)  # fmt: skip
    assert re.search(r"train.jsonl'?: line 2 is not UTF-8 text \(byte 0xe9 .*iconv -f latin1", said), said
    prompts = tmp_path / "prompts.txt"
    prompts.write_bytes(b"Name a colour.\nDescribe a caf\xe9.\n")
    said = _run(["train", "--sample_prompts_file", str(prompts), "--output_dir", str(tmp_path / "out2"),
                 "--default_model"], capsys)  # fmt: skip
    assert re.search(r"`--sample_prompts_file` .*prompts.txt'?: line 2 is not UTF-8 text", said), said


def test_text_rows_are_said_to_train_as_a_corpus_before_the_model_loads(tmp_path, capsys):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"text": f"Name a colour number {i}."}) + "\n" for i in range(4)))
    said = _run(["train", "--dataset_path", str(path), "--output_dir", str(tmp_path / "out"), "--model_name_or_path",
                 str(tmp_path / "no-model")], capsys)  # fmt: skip
    assert "holds a `text` column and no prompts (TRL's language-modeling format)" in said
    assert "name the column `prompt`" in said
