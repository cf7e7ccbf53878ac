# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Held-out splits by prompt, for every dataset format: no held-out prompt appears in training."""

import json
import logging

import pytest
from datasets import Dataset

from hf_seqtemp.data import split_by_prompt

WORDS = ["a", "b", "c", "d"]


def _chat(*turns):
    roles = ["user", "assistant"] * len(turns)
    return [{"role": role, "content": text} for role, text in zip(roles, turns)]


def _rows(fmt: str) -> tuple[Dataset, list]:
    """8 prompts × 3 completions in `fmt`, shuffled together, and the prompt of every row as the trainer reads it."""
    prompts = [f"{x} {y}" for x in WORDS for y in WORDS[:2]]
    rows, truth = [], []
    for k in range(3):
        for i, prompt in enumerate(prompts):
            completion = WORDS[(i + k) % 4]
            if fmt == "prompt_completion":
                rows.append({"prompt": prompt, "completion": completion})
            elif fmt == "conversational":
                rows.append({"prompt": _chat(prompt), "completion": [{"role": "assistant", "content": completion}]})
            elif fmt == "messages":  # multi-turn: the prompt is every turn before the last assistant turn
                earlier = _chat("a", "b") if i % 2 else _chat("c", "d")
                rows.append({"messages": earlier + _chat(prompt, completion)})
                prompt = json.dumps(earlier + _chat(prompt), sort_keys=True)
            elif fmt == "prompt_only":
                rows.append({"prompt": prompt})
            elif fmt == "input_ids":
                ids = [1 + i, 2 + i % 3, 7 + k]
                rows.append({"input_ids": ids, "completion_mask": [0, 0, 1]})
                prompt = tuple(ids[:2])
            truth.append(prompt)
    return Dataset.from_list(rows), truth


def _prompt_of(row: dict, fmt: str):
    if fmt == "messages":
        return json.dumps(row["messages"][:-1], sort_keys=True)
    if fmt == "input_ids":
        return tuple(row["input_ids"][:2])
    if fmt == "conversational":
        return row["prompt"][0]["content"]
    return row["prompt"]


@pytest.mark.parametrize("fmt", ["prompt_completion", "conversational", "messages", "prompt_only", "input_ids"])
@pytest.mark.parametrize("fraction", [0.25, 0.5])
def test_no_held_out_prompt_appears_in_training(fmt, fraction):
    data, truth = _rows(fmt)
    train, held_out, unseen = split_by_prompt(data, fraction, seed=1)
    seen = {_prompt_of(row, fmt) for row in train}
    held = {_prompt_of(row, fmt) for row in held_out}
    assert unseen and held and not seen & held
    assert len(held) == round(fraction * 8) and len(train) + len(held_out) == len(data)
    # every completion of a held-out prompt is held out (3 each)
    assert len(held_out) == 3 * len(held) and seen | held == set(truth)


def test_messages_with_the_same_last_question_but_other_earlier_turns_are_other_prompts():
    rows = [{"messages": _chat(first, "x", "same?", answer)} for first in WORDS for answer in ("y", "z")]
    train, held_out, _ = split_by_prompt(Dataset.from_list(rows), 0.5, seed=0)
    assert len(held_out) == 4 and {r["messages"][0]["content"] for r in held_out}.isdisjoint(
        r["messages"][0]["content"] for r in train
    )


def test_a_prompt_id_column_decides_the_prompt():
    rows = [{"text": f"{w} {v}", "prompt_id": w} for w in WORDS for v in WORDS]
    train, held_out, unseen = split_by_prompt(Dataset.from_list(rows), 0.25)
    assert unseen and len(held_out) == 4 and set(train["prompt_id"]).isdisjoint(held_out["prompt_id"])


def test_a_text_corpus_says_its_held_out_rows_are_not_unseen_prompts(caplog):
    data = Dataset.from_dict({"text": [f"{a} {b}" for a in WORDS for b in WORDS]})
    with caplog.at_level(logging.WARNING):
        train, held_out, unseen = split_by_prompt(data, 0.25)
    assert not unseen and len(held_out) == 4 and len(train) == 12
    assert "not unseen prompts" in caplog.text


def test_one_prompt_cannot_be_held_out_and_the_error_names_the_fix():
    data = Dataset.from_dict({"prompt": ["a b"] * 4, "completion": WORDS})
    with pytest.raises(ValueError, match=r"needs at least 2 distinct prompts.*train without `eval_fraction`"):
        split_by_prompt(data, 0.25)


def test_the_trainer_warns_when_eval_prompts_appear_in_training(tmp_path, caplog):
    from tiny_models import tiny_causal_lm

    from hf_seqtemp import SeqTempConfig, SeqTempTrainer

    def rows(prompts):
        return Dataset.from_list(
            [{"input_ids": [0, p, c], "completion_mask": [0, 0, 1]} for p in prompts for c in (1, 2, 3)]
        )

    args = SeqTempConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", num_generations=3)
    args.per_device_train_batch_size = 6
    with caplog.at_level(logging.WARNING):
        SeqTempTrainer(tiny_causal_lm(4), args, train_dataset=rows([1, 2]), eval_dataset=rows([3]))
    assert "also appear in `train_dataset`" not in caplog.text
    with caplog.at_level(logging.WARNING):
        SeqTempTrainer(tiny_causal_lm(4), args, train_dataset=rows([1, 2]), eval_dataset=rows([2, 3]))
    assert "1 of the 2 prompts of `eval_dataset` also appear in `train_dataset`" in caplog.text
