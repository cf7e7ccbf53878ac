# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`benchmarks/fidelity_long.py`'s samples cache: a folder shared between runs returns a draw only to the same
model, prompts, count, seed and length."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset
from scripts import load_script
from tiny_models import tiny_default_llama

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "fidelity_long.py"


def test_the_samples_cache_never_returns_another_models_draw(tmp_path, monkeypatch):
    module = load_script(SCRIPT, "bench_fidelity_long", on_path=True)
    drawn = []

    def draw(model, tokenizer, prompts, num_samples, seed, **kwargs):  # stands for sampling: which model drew
        drawn.append(model)
        return Dataset.from_dict({"drawn_by": [len(drawn)] * num_samples})

    monkeypatch.setattr(module, "sample_dataset", draw)
    first, other = tiny_default_llama(seed=0), tiny_default_llama(seed=1)
    prompts, length = [[{"role": "user", "content": "Name a colour."}]], {"max_new_tokens": 8}

    def cached(model, seed=0):
        return module.cached_samples(tmp_path, model, None, prompts, 2, seed, length)["drawn_by"]

    assert cached(first) == [1, 1]
    assert cached(first) == [1, 1] and len(drawn) == 1  # the same draw: read back
    assert cached(other) == [2, 2] and drawn[-1] is other  # other weights: drawn, not the first model's samples
    assert cached(first, seed=1) == [3, 3]  # another seed: drawn
    assert cached(other) == [2, 2] and len(drawn) == 3
