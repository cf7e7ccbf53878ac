# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import json

import pytest
import torch

from hf_seqtemp.tasks import ArithmeticTask, ArithmeticTokenizer, check_answer


def test_tokenizer_round_trip_and_ids():
    tokenizer = ArithmeticTokenizer()
    assert (tokenizer.pad_token_id, tokenizer.mask_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (
        0,
        1,
        2,
        3,
    )
    assert len(tokenizer) == 18
    for text in ["12+34=046", "07*08=0056", "0-9"]:
        ids = tokenizer(text)["input_ids"]
        assert ids[0] == tokenizer.bos_token_id and len(ids) == len(text) + 1
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert tokenizer.decode([2, 5, 1, 1]) == "[BOS]1[MASK][MASK]"


def test_tokenizer_save_and_load_is_json_only(tmp_path):
    tokenizer = ArithmeticTokenizer()
    tokenizer.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer_config.json", "vocab.json"]
    assert json.loads((tmp_path / "vocab.json").read_text()) == tokenizer.get_vocab()
    loaded = ArithmeticTokenizer.from_pretrained(tmp_path)
    assert loaded.get_vocab() == tokenizer.get_vocab()
    assert loaded.mask_token_id == tokenizer.mask_token_id
    batch = loaded(["12+34=", "1+2="], padding=True, return_tensors="pt")
    assert batch["input_ids"].tolist() == [[2, 5, 6, 14, 7, 8, 17], [2, 5, 14, 6, 17, 0, 0]]
    assert batch["attention_mask"].sum(dim=1).tolist() == [7, 5]


def test_tokenizer_rejects_unknown_characters():
    with pytest.raises(ValueError, match=r"outside the arithmetic vocabulary: \[' ', 'x'\]"):
        ArithmeticTokenizer()("1 x 2")


@pytest.mark.parametrize(
    "prompt, completion, expected",
    [
        ("12+34=", "046", True),
        ("12+34=", "46", True),
        ("12+34=", " 46\n", True),
        ("12+34=", "047", False),
        ("99+99=", "198", True),
        ("12+34=", "", False),
        ("12+34=", "4[MASK]6", False),
        ("12+34=", "-46", False),
        ("12+34=", "٤٦", False),  # non-ASCII digits are not accepted
        ("07*08=", "0056", True),
        ("07*08=", "0015", False),
        ("12*34=", "0408", True),
    ],
)
def test_check_answer(prompt, completion, expected):
    assert check_answer(prompt, completion) is expected


@pytest.mark.parametrize("prompt", ["12-34=", "12+34", "a+b=", ""])
def test_check_answer_rejects_malformed_prompts(prompt):
    with pytest.raises(ValueError, match="`prompt` must look like"):
        check_answer(prompt, "1")


@pytest.mark.parametrize("operator, completion_length", [("+", 3), ("*", 4)])
def test_task_encoding_is_fixed_width_and_checkable(operator, completion_length):
    task, tokenizer = ArithmeticTask(operator, num_digits=2), ArithmeticTokenizer()
    assert task.completion_length == completion_length
    pairs = torch.tensor([[0, 0], [5, 34], [99, 99]])
    batch = task.encode(pairs, tokenizer)
    assert batch["input_ids"].shape == (3, task.prompt_length + completion_length)
    for row, (a, b) in zip(batch["input_ids"], pairs.tolist()):
        text = tokenizer.decode(row, skip_special_tokens=True)
        prompt, completion = text[: task.prompt_length - 1], text[task.prompt_length - 1 :]
        assert prompt == task.prompt(a, b) and completion == task.answer(a, b)
        assert check_answer(prompt, completion)
    completion_ids = batch["input_ids"][batch["completion_mask"]].view(3, -1)
    assert tokenizer.batch_decode(completion_ids) == [task.answer(a, b) for a, b in pairs.tolist()]


def test_split_is_disjoint_complete_and_deterministic():
    task = ArithmeticTask("+", num_digits=1)
    train, test = task.split(num_test=20, seed=3)
    assert len(train) == 80 and len(test) == 20
    all_pairs = {tuple(p) for p in train.tolist()} | {tuple(p) for p in test.tolist()}
    assert len(all_pairs) == 100
    assert torch.equal(task.split(num_test=20, seed=3)[1], test)
    assert not torch.equal(task.split(num_test=20, seed=4)[1], test)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"operator": "-"}, "`operator` must be"),
        ({"num_digits": 0}, "`num_digits` must be"),
        ({"num_digits": 2.0}, "`num_digits` must be"),
    ],
)
def test_task_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ArithmeticTask(**kwargs)


def test_task_operand_and_split_errors():
    task = ArithmeticTask()
    with pytest.raises(ValueError, match=r"operands must be in \[0, 100\), got \(100, 1\)"):
        task.prompt(100, 1)
    with pytest.raises(ValueError, match="`num_test` must be in"):
        task.split(num_test=0)
