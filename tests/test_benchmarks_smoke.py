# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What the benchmarks compare must be the same quantity: checked on tiny models, never timed."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from hf_seqtemp.likelihood import AutoregressiveScorer

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # the scripts import their shared `_common` module
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tiny_llama(vocab: int = 11) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    return LlamaForCausalLM(config).eval()


def _brute_force(model, seq: torch.Tensor) -> float:
    """log p(x_2..x_n | x_1) from the prefix conditionals, one prefix at a time."""
    total = 0.0
    with torch.no_grad():
        for i in range(1, len(seq)):
            logits = model(input_ids=seq[None, :i]).logits[0, -1].double()
            total += float(logits.log_softmax(-1)[seq[i]])
    return total


def test_scoring_batched_and_naive_paths_agree_with_brute_force():
    scoring = _load("scoring")
    model = _tiny_llama()
    seqs, ids, attn = scoring.make_batch(11, num_seqs=5, min_len=2, max_len=7)
    assert len({len(s) for s in seqs}) > 1  # padding is exercised
    batched = scoring.batched_scores(model, ids, attn)
    naive = scoring.naive_scores(model, seqs)
    oracle = torch.tensor([_brute_force(model, s) for s in seqs], dtype=torch.float32)
    torch.testing.assert_close(batched, oracle, atol=1e-4, rtol=0)
    torch.testing.assert_close(naive, oracle, atol=1e-4, rtol=0)


def test_measure_peak_sees_a_large_cpu_allocation():
    common = _load("_common")
    size_mib = 64

    def allocate():
        x = torch.ones(size_mib * 2**20 // 4)  # touched pages: resident
        return float(x[-1])

    peak = common.measure_peak(allocate, torch.device("cpu"))
    assert peak["peak_mib"] >= 0.9 * size_mib, peak
    assert math.isfinite(peak["peak_mib"])


def test_train_step_baseline_nll_is_the_seqtemp_token_nll_of_the_same_tokens():
    train_step = _load("train_step")
    model = _tiny_llama(vocab=120)
    ids, mask = train_step._token_rows(vocab_size=120, batch=3, length=12)
    labels = torch.tensor(train_step.plain_labels(ids, mask))
    ids, mask = torch.tensor(ids), torch.tensor(mask).bool()
    with torch.no_grad():
        plain = model(input_ids=ids, labels=labels).loss
        token_logps, scored = AutoregressiveScorer().token_logps(model, ids, completion_mask=mask)
    torch.testing.assert_close(plain, -token_logps.sum() / scored.sum(), atol=1e-5, rtol=0)
