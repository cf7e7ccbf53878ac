# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The demo's and the fidelity benchmarks' prompt pools, split by prompt (`hf_seqtemp.tasks.prompts`)."""

from __future__ import annotations

import pytest

from hf_seqtemp.tasks.prompts import prompt_pool, split_prompts, training_extension


def test_prompts_are_split_by_prompt():
    train, held_out = split_prompts(128, 16, seed=0)
    assert len(set(train)) == 128 and len(set(held_out)) == 16 and not set(train) & set(held_out)
    assert split_prompts(128, 16, seed=0) == (train, held_out) and split_prompts(128, 16, seed=1) != (train, held_out)
    pool, extension = prompt_pool(), training_extension()
    assert not set(pool) & set(extension)
    # more training prompts than the pool holds: the same held-out prompts, the smaller split's training prompts
    # first, then the extension (training only); held-out prompts never come from the extension
    more_train, same_held_out = split_prompts(len(pool), 16, seed=0)
    assert same_held_out == held_out and more_train[:128] == train and not set(more_train) & set(held_out)
    assert set(more_train[len(pool) - 16 :]) <= set(extension) and len(set(more_train)) == len(pool)
    with pytest.raises(ValueError, match="ask for fewer prompts"):
        split_prompts(len(pool) + len(extension), 1)
    with pytest.raises(ValueError, match="ask for fewer prompts"):
        split_prompts(0, len(pool) + 1)
