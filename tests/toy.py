# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Brute-force oracles over enumerable causal LMs (the models: `tiny_models.py`), shared by the tests."""

from __future__ import annotations

import itertools

import torch
from datasets import Dataset
from tiny_models import BOS


def all_sequences(vocab_size: int, length: int) -> torch.Tensor:
    """Every BOS-prefixed sequence with `length` free tokens: shape `(vocab_size**length, length + 1)`."""
    rows = list(itertools.product(range(vocab_size), repeat=length))
    return torch.cat([torch.full((len(rows), 1), BOS), torch.tensor(rows)], dim=1)


@torch.no_grad()
def brute_force_logps(model, sequences: torch.Tensor) -> torch.Tensor:
    """log p(x) as a product of conditionals, one prefix at a time (no batching tricks), in float64."""
    out = []
    for seq in sequences:
        total = 0.0
        for i in range(1, seq.shape[0]):
            logits = model(input_ids=seq[None, :i]).logits[0, -1].double()
            total += logits.log_softmax(-1)[seq[i]].item()
        out.append(total)
    return torch.tensor(out, dtype=torch.float64)


@torch.no_grad()
def exact_logps(model, sequences: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=sequences).logits[:, :-1].double().log_softmax(-1)
    return logits.gather(-1, sequences[:, 1:, None]).squeeze(-1).sum(1)


def tempered_kl(ref_logps: torch.Tensor, model_logps: torch.Tensor, temperature: float) -> float:
    """KL(p_T || q) with p_T ∝ p^{1/T}, both given as log-probs of every sequence."""
    log_pt = ref_logps / temperature
    log_pt = log_pt - torch.logsumexp(log_pt, 0)
    log_q = model_logps - torch.logsumexp(model_logps, 0)
    return (log_pt.exp() * (log_pt - log_q)).sum().item()


@torch.no_grad()
def sample_sequences(model, num: int, length: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    seqs = torch.full((num, 1), BOS)
    for _ in range(length):
        probs = model(input_ids=seqs).logits[:, -1].float().softmax(-1)
        seqs = torch.cat([seqs, torch.multinomial(probs, 1, generator=gen)], dim=1)
    return seqs


def as_dataset(sequences: torch.Tensor) -> Dataset:
    return Dataset.from_dict({"input_ids": sequences.tolist()})
