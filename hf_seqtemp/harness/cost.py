# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a harness run cost the model: forward passes and token-forwards, counted per kind of request."""

from __future__ import annotations

import contextlib
from collections import defaultdict


class ForwardCounter:
    """Counts the forward passes of a causal LM's decoder and the positions they compute, per kind of request.

    A forward pre-hook on the decoder (the transformer below the LM head, which every route calls, PEFT adapters on or
    off) adds one *model call* per forward and `batch × length` *token-forwards* (the positions of `input_ids` it
    computes, padding included; with a KV cache a decoding step computes one position per row). What the calls made
    inside `counting(kind, answers)` cost is added to `kind`'s totals, with the number of answers they produced.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(pad_token_id=0)
    >>> counter = ForwardCounter(model)
    >>> with counter.counting("loglikelihood", answers=2):
    ...     _ = model(torch.tensor([[1, 2, 3], [1, 2, 0]]))
    >>> counter.summary()["loglikelihood"]
    {'answers': 2, 'model_calls': 1, 'token_forwards': 6, 'model_calls_per_answer': 0.5, 'token_forwards_per_answer': 3.0}
    ```
    """

    def __init__(self, model):
        decoder = model.get_base_model() if hasattr(model, "get_base_model") else model
        decoder = decoder.get_decoder() if hasattr(decoder, "get_decoder") else decoder
        self._kind: str | None = None
        self._totals: dict[str, dict[str, int]] = defaultdict(
            lambda: {"answers": 0, "model_calls": 0, "token_forwards": 0}
        )
        self._handle = decoder.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module, args, kwargs):
        if self._kind is None:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            ids = kwargs["inputs_embeds"][..., 0]
        totals = self._totals[self._kind]
        totals["model_calls"] += 1
        totals["token_forwards"] += int(ids.shape[0]) * int(ids.shape[1])

    @contextlib.contextmanager
    def counting(self, kind: str, answers: int):
        """Adds the forwards made inside the block, and `answers`, to `kind`'s totals (blocks do not nest)."""
        self._kind = kind
        try:
            yield
        finally:
            self._kind = None
            self._totals[kind]["answers"] += answers

    @contextlib.contextmanager
    def paused(self):
        """Leaves the forwards made inside the block out of every total (e.g. lm-eval's batch-size probe)."""
        kind, self._kind = self._kind, None
        try:
            yield
        finally:
            self._kind = kind

    def summary(self) -> dict[str, dict[str, float]]:
        """`{kind: {answers, model_calls, token_forwards, model_calls_per_answer, token_forwards_per_answer}}`."""
        out = {}
        for kind, totals in self._totals.items():
            answers = max(totals["answers"], 1)
            per_answer = {
                "model_calls_per_answer": totals["model_calls"] / answers,
                "token_forwards_per_answer": totals["token_forwards"] / answers,
            }
            out[kind] = {**totals, **per_answer}
        return out

    def remove(self) -> None:
        """Takes the hook off the model."""
        self._handle.remove()
