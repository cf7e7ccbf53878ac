# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The engine's scoring under vLLM's known bugs, on the real server (`hf-seqtemp serve` turns prefix caching on).

- vLLM #42019: `prompt_logprobs` that depend on request order under prefix caching. The same sequences, sharing a
  40-token prefix and prefixes of each other, are scored in one request, in the reverse order, and one request each
  after their prefixes are cached: every token's log p agrees with the local float32 scorer in every order.
- vLLM #51594: a LoRA's `lm_head` delta dropped from `prompt_logprobs`. The package never asks for
  `prompt_logprobs` under an adapter (scoring names the base model; an adapter's log q comes from its sampled
  tokens' log-probabilities), and the served LoRA of these tests adapts `lm_head`: its sampled log q is the local
  PEFT adapter's (`test_engine_exactness.py::test_the_probe_finds_processed_log_probs_and_the_proposals_log_q`), and
  a scoring request names the base model.
"""

from __future__ import annotations

import json

import torch
from engine.conftest import V

from hf_seqtemp.engine.agreement import local_token_logps

TOLERANCE = 1e-4  # the engine tests' agreement with the scorer (float32 servers of the same weights: ~1e-5)


def _worst(engine_logps, local_logps) -> float:
    return max(abs(a - b) for got, want in zip(engine_logps, local_logps) for a, b in zip(got, want))


def test_scoring_does_not_depend_on_request_order_or_cached_prefixes(engine):
    generator = torch.Generator().manual_seed(5)
    stem = torch.randint(V, (40,), generator=generator).tolist()
    tails = torch.randint(V, (8, 6), generator=generator).tolist()
    sequences = [stem + tail for tail in tails] + [stem[:k] for k in (12, 25, 33, 40)]
    sequences += [stem[:20] + tail for tail in tails[:4]]  # a shorter shared prefix, with the same tails
    starts = [1] * len(sequences)
    local = local_token_logps(engine.model, sequences, starts)
    together = engine.base.score(sequences, starts)
    reverse = engine.base.score(sequences[::-1], starts[::-1])[::-1]
    one_by_one = [engine.base.score([sequence], [1])[0] for sequence in sequences]  # prefixes cached by now
    twice = engine.base.score(sequences, starts)
    figures = {name: _worst(values, local) for name, values in
               (("one request", together), ("reverse", reverse), ("one each", one_by_one), ("again", twice))}  # fmt: skip
    print("largest |engine log p - scorer log p| per token:", json.dumps(figures))
    assert max(figures.values()) < TOLERANCE, figures


def test_scoring_requests_name_the_base_model_never_an_adapter(engine):
    """Under a LoRA, vLLM may drop an `lm_head` delta from `prompt_logprobs` (#51594): scoring never runs under one."""
    sent = []
    client = engine.base
    original = client._concurrently
    client._concurrently = lambda bodies, desc=None: sent.extend(bodies) or original(bodies, desc)
    try:
        client.score([[0, 1, 2]], [1])
    finally:
        del client._concurrently
    assert sent and all(body["model"] == client.model for body in sent)
    assert client.model not in client.adapters()
