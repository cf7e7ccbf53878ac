# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import math
from collections import Counter

import pytest
import torch

from hf_seqtemp.tasks.multiplication import BOS, EOS, PAD, MultiplicationTask, decode, encode

TASK = MultiplicationTask()


def _brute_valid(n):
    out = {str(n)}
    for c in range(2, 100):
        for d in range(2, 100):
            if c * d == n:
                out.add(f"{c}*{d}")
    return out


def test_valid_sets_match_brute_force_enumeration():
    assert len(TASK.pairs) == 64
    for a, b in TASK.pairs:
        assert set(TASK.valid_completions(a, b)) == _brute_valid(a * b)
    assert TASK.valid_completions(8, 9) == sorted(
        ["72", "2*36", "36*2", "3*24", "24*3", "4*18", "18*4", "6*12", "12*6", "8*9", "9*8"]
    )
    assert TASK.data_logp(2, 2, "4") == pytest.approx(-math.log(2))
    assert TASK.data_logp(2, 2, "2*3") == -math.inf


def test_window_round_trip_and_malformed_windows():
    ids = TASK.window(3, 4, "2*6")
    assert ids == [BOS, *encode("3*4="), *encode("2*6"), EOS, PAD]
    assert len(ids) == TASK.prompt_length + TASK.completion_width
    assert TASK.parse_window(ids) == "2*6" and decode(ids[5:]) == "2*6"
    assert TASK.parse_window(ids[:-2] + [PAD, EOS]) is None  # pad inside the completion
    assert TASK.parse_window(ids[:-2] + [EOS, 5]) is None  # a token after eos
    assert TASK.parse_window(ids[:5] + encode("12*34")) is None  # no eos


def test_sample_is_uniform_over_valid_completions():
    g = torch.Generator().manual_seed(0)
    task = MultiplicationTask(min_factor=3, max_factor=4)  # 9=3*3, 12=3*4/4*3, 16=4*4
    batch = task.sample(8000, generator=g)
    counts = Counter((pair, task.parse_window(row)) for pair, row in zip(batch.pairs, batch.input_ids))
    for pair in task.pairs:
        valid = task.valid_completions(*pair)
        total = sum(counts[(pair, c)] for c in valid)
        assert sum(v for (p, _), v in counts.items() if p == pair) == total  # nothing invalid drawn
        for c in valid:  # each frequency within 5 binomial standard deviations of 1/|valid|
            f, k = counts[(pair, c)] / total, len(valid)
            assert abs(f - 1 / k) < 5 * math.sqrt((1 / k) * (1 - 1 / k) / total)
    assert torch.isfinite(batch.data_logps).all()
    assert batch.completion_mask[:, : task.prompt_length].sum() == 0 and batch.completion_mask[:, 5:].all()


def test_precision_recall_of_windows():
    pairs = [(3, 4)] * 4 + [(2, 2)] * 2
    rows = [TASK.window(3, 4, c) for c in ["12", "12", "2*6", "2*7"]] + [TASK.window(2, 2, c) for c in ["4", "2*2"]]
    out = TASK.precision_recall(pairs, torch.tensor(rows))
    assert out["precision"] == pytest.approx(5 / 6)
    assert out["recall"] == pytest.approx((2 / 5 + 2 / 2) / 2)


def test_errors():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        encode("3+4")
    with pytest.raises(ValueError, match="`max_factor` must be an integer in"):
        MultiplicationTask(max_factor=10)
    with pytest.raises(ValueError, match="must be <= `max_factor`"):
        MultiplicationTask(min_factor=5, max_factor=3)
    with pytest.raises(ValueError, match="outside this task's range"):
        TASK.valid_completions(1, 4)
    with pytest.raises(ValueError, match="the window holds"):
        TASK.window(2, 2, "123456")
    with pytest.raises(ValueError, match="`completions` has"):
        TASK.batch([(2, 2)], [])
    with pytest.raises(ValueError, match="`num_samples` must be an integer ≥ 1"):
        TASK.sample(0)
    with pytest.raises(ValueError, match="`windows` has"):
        TASK.precision_recall([(2, 2)], torch.zeros(2, 10, dtype=torch.long))
