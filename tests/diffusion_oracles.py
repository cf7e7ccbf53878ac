# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Naive brute-force oracles for diffusion likelihoods: plain Python loops, one model call per conditional."""

from __future__ import annotations

import itertools
import math

import torch
from tiny_models import MASK


def real_log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """The model's conditional renormalised over the real tokens (the mask token is never a sampled token)."""
    logits = logits.float().clone()
    logits[..., MASK] = -math.inf
    return logits.log_softmax(-1)


def naive_order_logp(model, ids: list[int], attention: list[int], completion: list[int], order: list[int]):
    """log p(x; π) for one row: reveal `order` (tensor positions) one by one, one forward per step."""
    total = torch.zeros(())
    revealed = set()
    for pos in order:
        state = [MASK if completion[i] and i not in revealed else t for i, t in enumerate(ids)]
        logits = model(torch.tensor([state]), torch.tensor([attention]))[0, pos]
        total = total + real_log_softmax(logits)[ids[pos]]
        revealed.add(pos)
    return total


def all_orders(completion: list[int]):
    return [list(p) for p in itertools.permutations([i for i, c in enumerate(completion) if c])]


def block_respecting_orders(attention: list[int], completion: list[int], block_size: int):
    """Every order that unmasks blocks (of `block_size` real tokens) one after the other."""
    real = [i for i, a in enumerate(attention) if a]
    blocks = [real[start : start + block_size] for start in range(0, len(real), block_size)]
    per_block = [list(itertools.permutations([i for i in blk if completion[i]])) for blk in blocks]
    return [[i for perm in combo for i in perm] for combo in itertools.product(*per_block)]


def naive_log_marginal(model, ids, attention, completion, orders):
    """log of the average over `orders` of p(x; π), and the list of log p(x; π)."""
    logps = [naive_order_logp(model, ids, attention, completion, o) for o in orders]
    return torch.logsumexp(torch.stack(logps), 0) - math.log(len(logps)), logps


def orders_to_ranks(orders: list[list[int]], length: int) -> torch.Tensor:
    """Position lists -> the (k, length) reveal-step tensor the scorers take (-1 where not revealed)."""
    ranks = torch.full((len(orders), length), -1, dtype=torch.long)
    for j, order in enumerate(orders):
        for step, pos in enumerate(order):
            ranks[j, pos] = step
    return ranks
