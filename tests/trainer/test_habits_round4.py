# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Smaller messages of reliability round 4: the plan's wording and its place after every refusal, TRL's
`generation_batch_size` pointing at `sampling_batch_tokens`, and a resume under other sampling settings."""

from __future__ import annotations

import json

import pytest

from hf_seqtemp import SeqTempConfig
from hf_seqtemp.cli import main
from hf_seqtemp.trainer.checkpoints import check_same_sampling
from hf_seqtemp.trainer.plan import WorkPlan


def test_one_step_is_one_optimisation_step():
    text = WorkPlan(4, 0, 4, 0, 1, 16, 16, 1, 8).describe()
    assert "then 1 optimisation step of 8 rows" in text and "1 optimisation steps" not in text


def test_generation_batch_size_points_to_the_sampling_call_size(tmp_path):
    with pytest.raises(ValueError, match=r"`generation_batch_size`.*sampling calls of `sampling_batch_tokens` tokens"):
        SeqTempConfig(output_dir=str(tmp_path), generation_batch_size=64)


def test_a_resume_under_another_sampling_call_size_is_refused(tmp_path):
    """The pool of samples of p depends on `sampling_batch_tokens` (one seed per call: 8, 64 and 8192 give three
    pools): a resume with another value would continue on other completions, silently."""
    (tmp_path / "training_args.json").write_text(json.dumps({"sampling_batch_tokens": 64, "num_generations": 8}))
    args = SeqTempConfig(output_dir=str(tmp_path / "out"), sampling_batch_tokens=8192, num_generations=8)
    with pytest.raises(
        ValueError,
        match=r"trained with `sampling_batch_tokens=64` and this run has "
        r"`sampling_batch_tokens=8192`.*Resume with `sampling_batch_tokens=64`",
    ):
        check_same_sampling(str(tmp_path), args)
    check_same_sampling(str(tmp_path), SeqTempConfig(output_dir=str(tmp_path / "o"), sampling_batch_tokens=64))


def test_the_plan_is_printed_only_once_the_trainer_took_every_setting(tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("".join(f"Name a colour, number {i}.\n" for i in range(6)))
    argv = [
        "train",
        "--default_model",
        "--sample_prompts_file",
        str(prompts),
        "--output_dir",
        str(tmp_path / "out"),
        "--init_from_token_temperature",
        "--use_peft",
        "false",
        "--max_steps",
        "1",
        "--eval_fraction",
        "0.34",
    ]
    with pytest.raises((SystemExit, ValueError)):
        main(argv)
    said = capsys.readouterr()
    assert "needs a causal LM and a `peft_config`" in said.err + said.out
    assert "the plan" not in said.out
