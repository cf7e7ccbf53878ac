# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact block-diffusion likelihood: subset DP (Prop. 4.6) vs enumerating every block-respecting order, same inputs.

Both compute the same number, log p(x) under uniform block-respecting orders, on the same batch of a small random
BERT wrapped as a block-diffusion model (a prompt of one block + a completion of two full blocks). The enumeration baseline is
already the cheapest exact enumeration: it exploits that earlier blocks are fully revealed, enumerating the m! orders
of each block separately (Σ_j m_j! · m_j partial states per row) instead of the (B!)^blocks joint orders (whose
count is printed for reference). The DP needs Σ_j (2^m_j - 1) partial states. Model calls are counted by a forward
pre-hook on the wrapped model; both methods stack states `--max-batch` at a time. Time: one warm-up pair, then
`--repeats` pairs (enumeration, DP, enumeration, DP, ...); the cost is the median [min, max] of the paired ratios
DP / enumeration (`hf_seqtemp.costs`), target <= 1.0, and the table's speed-up is its inverse. The batch sweep shows how
both scale with rows.

Usage:
    python benchmarks/block_dp.py [--quick] [--output outputs/bench/block_dp.json]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import default_output, pick_device, print_device, write_json

from hf_seqtemp.costs import format_summary, summarise, time_pairs
from hf_seqtemp.likelihood.block_diffusion import BlockDiffusionScorer
from hf_seqtemp.likelihood.masked_diffusion import order_logps
from hf_seqtemp.models.diffusion import BlockDiffusionAdapter
from hf_seqtemp.models.layout import real_positions

VOCAB, MASK = 1000, 999
TARGET = 1.0


def enumerate_block_orders(model, input_ids, attention_mask, completion_mask, block_size, max_batch):
    """log p(x) by brute force: for each block, all m! orders of its completion positions, averaged exactly."""
    block = real_positions(attention_mask) // block_size
    total = torch.zeros(input_ids.shape[0])
    for j in range(int(block.max()) + 1):
        in_block = completion_mask & (block == j)
        m = int(in_block[0].sum())  # same layout on every row of this benchmark
        if m == 0:
            continue
        positions = in_block[0].nonzero().squeeze(1)
        orders = torch.full((math.factorial(m), input_ids.shape[1]), -1, dtype=torch.long)
        for k, perm in enumerate(itertools.permutations(range(m))):
            orders[k, positions] = torch.tensor(perm)
        orders = orders[None].expand(input_ids.shape[0], -1, -1)
        logps = order_logps(model, input_ids, attention_mask, in_block, orders, max_batch=max_batch)
        total += torch.logsumexp(logps, dim=1) - math.lgamma(m + 1)
    return total


def _recorded(fn, calls: list, out: dict, key: str):
    """`fn` under `torch.no_grad()`, keeping its last result and its number of model calls in `out`."""

    def run():
        calls.clear()
        with torch.no_grad():
            out[key] = fn()
        out[f"{key}_calls"] = len(calls)

    return run


def run(block_sizes, batch_sizes, max_batch, repeats, device):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=256,
        max_position_embeddings=64,
    )
    base = BertForMaskedLM(config).eval().to(device)
    calls = []
    base.register_forward_pre_hook(lambda module, args: calls.append(1))
    rows = []
    for block_size in block_sizes:
        model = BlockDiffusionAdapter(base, MASK, block_size)
        length = 3 * block_size
        for batch in batch_sizes:
            ids = torch.randint(0, MASK, (batch, length), device=device)
            attention = torch.ones_like(ids)
            completion = torch.zeros_like(ids, dtype=torch.bool)
            completion[:, block_size:] = True
            inputs = (model, ids, attention, completion)
            scorer, out = BlockDiffusionScorer(block_size, max_batch=max_batch), {}
            timed = time_pairs(
                _recorded(lambda x=inputs, b=block_size: enumerate_block_orders(*x, b, max_batch), calls, out, "en"),
                _recorded(lambda s=scorer, x=inputs: s(*x), calls, out, "dp"),
                device,
                warmup=1,
                pairs=repeats,
            )
            paired = summarise(timed["ratios"], TARGET)
            rows.append(
                {
                    "block_size": block_size,
                    "batch": batch,
                    "length": length,
                    "dp_seconds": timed["ours_s"],
                    "enum_seconds": timed["baseline_s"],
                    "dp_over_enumeration_time": paired,
                    "speedup": 1 / paired["median"],
                    "dp_model_calls": out["dp_calls"],
                    "enum_model_calls": out["en_calls"],
                    "dp_states_per_row": _dp_states(base_len=length, block_size=block_size),
                    "enum_states_per_row": _enum_states(length, block_size),
                    "joint_orders_per_row": _joint_orders(length, block_size),
                    "max_abs_diff": float((out["dp"].cpu() - out["en"].cpu()).abs().max()),
                }
            )
            print(_format(rows[-1]), flush=True)
    return rows


def _blocks(length, block_size):
    sizes = [0] * math.ceil(length / block_size)
    for pos in range(block_size, length):
        sizes[pos // block_size] += 1
    return [m for m in sizes if m]


def _dp_states(base_len, block_size):
    return sum(2**m - 1 for m in _blocks(base_len, block_size))


def _enum_states(length, block_size):
    return sum(math.factorial(m) * m for m in _blocks(length, block_size))


def _joint_orders(length, block_size):
    return math.prod(math.factorial(m) for m in _blocks(length, block_size))


HEADER = (
    f"{'B':>2} {'batch':>5} {'L':>3} | {'DP s':>8} {'enum s':>8} {'speedup':>7} | {'DP calls':>8} {'enum calls':>10}"
    f" | {'DP states':>9} {'enum states':>11} {'joint orders':>12} | max|diff|"
)


def _format(r):
    return (
        f"{r['block_size']:>2} {r['batch']:>5} {r['length']:>3} | {min(r['dp_seconds']):>8.4f} "
        f"{min(r['enum_seconds']):>8.4f} "
        f"{r['speedup']:>6.1f}x | {r['dp_model_calls']:>8} {r['enum_model_calls']:>10} | {r['dp_states_per_row']:>9} "
        f"{r['enum_states_per_row']:>11} {r['joint_orders_per_row']:>12} | {r['max_abs_diff']:.1e}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="B = 2..4, batch 1 and 4")
    parser.add_argument("--output", default=default_output("block_dp"))
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="timed pairs (enumeration, DP) after one warm-up pair")
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    block_sizes, batch_sizes = ([2, 3, 4], [1, 4]) if args.quick else ([2, 3, 4, 5, 6], [1, 8, 32])
    device = pick_device(args.device)
    info = print_device(device)
    print(f"max_batch {args.max_batch}; batch sweep {batch_sizes}")
    print(HEADER)
    rows = run(block_sizes, batch_sizes, args.max_batch, args.repeats, device)
    settings = {
        "block_sizes": block_sizes,
        "batch_sizes": batch_sizes,
        "max_batch": args.max_batch,
        "repeats": args.repeats,
        "model": "BertForMaskedLM(vocab=1000, hidden=128, layers=2) random, BlockDiffusionAdapter",
        "layout": "prompt = 1 block, completion = 2 blocks",
    }
    largest = max(block_sizes)
    summary = {
        f"dp_over_enumeration_time_B{largest}_batch{r['batch']}": r["dp_over_enumeration_time"]
        for r in rows
        if r["block_size"] == largest
    }
    for key, value in summary.items():
        print(format_summary(key, value))
    summary["max_abs_diff"] = max(r["max_abs_diff"] for r in rows)
    write_json(args.output, "block_dp", info, settings, rows, summary)


if __name__ == "__main__":
    main()
