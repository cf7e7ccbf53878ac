# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence scoring: `AutoregressiveScorer` (batched, one forward) vs a per-sequence loop; chunked vs full log-softmax.

Part 1, throughput (sequences/s) on SmolLM2-135M-Instruct: the scorer runs once on a right-padded batch of
sequences of varying length; the naive baseline runs `model(ids, labels=ids).loss * (n - 1)` one sequence at a
time (no padding). Both give log p(x_2..x_n | x_1) per sequence; the largest difference is printed. Variants are
timed round-robin after a warm-up; medians are reported.

Part 2, memory on long sequences: a tiny-width random Llama with a 32768-token vocabulary and 2048-token rows, so
the logits dominate memory. Three ways, each in a fresh subprocess, under `torch.no_grad()`:
`forward_only` (the model's own logits, nothing else), `scorer_chunked` (`AutoregressiveScorer`, float32 log-softmax
`chunk_size` positions at a time) and `full_fp32` (`logits.float().log_softmax(-1)` of the whole batch, then gather).
The model's `lm_head` returns logits in the weights' dtype, so with float32 weights the model itself already holds
float32 logits and the scorer saves the second (log-softmax) full-size copy; with bfloat16 weights the logits are
bfloat16 and the scorer never holds a full float32 copy, while `full_fp32` holds two. Both dtypes are run.

Usage:
    python benchmarks/scoring.py [--quick] [--output benchmarks/results/scoring.json] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import (
    default_output,
    measure_peak,
    pick_device,
    print_device,
    run_child,
    time_interleaved,
    write_json,
)

from hf_seqtemp.likelihood import AutoregressiveScorer

SETTINGS = {
    "quick": {
        "num_seqs": 16,
        "min_len": 24,
        "max_len": 48,
        "warmup": 1,
        "repeats": 3,
        "mem_batch": 1,
        "mem_length": 2048,
    },
    "full": {
        "num_seqs": 64,
        "min_len": 64,
        "max_len": 256,
        "warmup": 1,
        "repeats": 5,
        "mem_batch": 4,
        "mem_length": 2048,
    },
}
WAYS = ("forward_only", "scorer_chunked", "full_fp32")
VOCAB, CHUNK = 32768, 256


def make_batch(vocab_size: int, num_seqs: int, min_len: int, max_len: int, seed: int = 0):
    """Random sequences of varying length: a list of 1-D tensors and their right-padded batch + attention mask."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, max_len + 1, (num_seqs,), generator=generator).tolist()
    seqs = [torch.randint(0, vocab_size, (n,), generator=generator) for n in lengths]
    ids = torch.zeros(num_seqs, max(lengths), dtype=torch.long)
    attn = torch.zeros_like(ids)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)], attn[row, : len(seq)] = seq, 1
    return seqs, ids, attn


@torch.no_grad()
def naive_scores(model, seqs: list[torch.Tensor]) -> torch.Tensor:
    """The usual one-at-a-time loop: mean token NLL from `labels=ids`, times the number of predicted tokens."""
    device = next(model.parameters()).device
    out = []
    for seq in seqs:
        ids = seq[None].to(device)
        out.append(-model(input_ids=ids, labels=ids).loss.float() * (ids.shape[1] - 1))
    return torch.stack(out).cpu()


@torch.no_grad()
def batched_scores(model, ids: torch.Tensor, attn: torch.Tensor, scorer=None) -> torch.Tensor:
    scorer = scorer or AutoregressiveScorer()
    device = next(model.parameters()).device
    return scorer(model, ids.to(device), attn.to(device)).cpu()


def throughput(device, settings: dict, dtype) -> dict:
    from hf_seqtemp.models import load_default_model

    model, tokenizer = load_default_model(dtype=dtype, device=device)
    seqs, ids, attn = make_batch(len(tokenizer), settings["num_seqs"], settings["min_len"], settings["max_len"])
    results = {}
    fns = {
        "batched_scorer": lambda: results.__setitem__("batched", batched_scores(model, ids, attn)),
        "naive_loop": lambda: results.__setitem__("naive", naive_scores(model, seqs)),
    }
    timings = time_interleaved(fns, device, settings["warmup"], settings["repeats"])
    diff = float((results["batched"] - results["naive"]).abs().max())
    n = settings["num_seqs"]
    rows = [{"variant": k, **v, "seqs_per_s": n / v["median_s"]} for k, v in timings.items()]
    speedup = timings["naive_loop"]["median_s"] / timings["batched_scorer"]["median_s"]
    print(f"{'variant':<15} | {'median s':>9} {'seq/s':>8} | max |batched - naive| log p = {diff:.2e}")
    for row in rows:
        print(f"{row['variant']:<15} | {row['median_s']:>9.4f} {row['seqs_per_s']:>8.2f}")
    print(f"batched scorer throughput: {speedup:.2f}x the per-sequence loop")
    return {"rows": rows, "speedup": speedup, "max_abs_diff": diff}


def tiny_long_model(dtype, device, length: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=length,
    )
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()


def memory_child(way: str, dtype, device, batch: int, length: int) -> None:
    """Fresh process: one warm-up call, then peak memory and time of one call; prints one JSON line."""
    model = tiny_long_model(dtype, device, length)
    ids = torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(1)).to(device)
    scorer = AutoregressiveScorer(chunk_size=CHUNK)
    result = {}

    @torch.no_grad()
    def call():
        if way == "forward_only":
            result["logits_dtype"] = str(model(input_ids=ids).logits.dtype)
        elif way == "scorer_chunked":
            result["score"] = scorer(model, ids).sum().item()
        else:
            logits = model(input_ids=ids).logits[:, :-1]
            logps = logits.float().log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
            result["score"] = logps.sum().item()

    call()
    start = time.perf_counter()
    peak = measure_peak(call, device)
    print(json.dumps({**peak, **result, "seconds": time.perf_counter() - start}))


def memory(device, settings: dict) -> dict:
    batch, length = settings["mem_batch"], settings["mem_length"]
    full_fp32 = batch * (length - 1) * VOCAB * 4 / 2**20
    print(
        f"tiny Llama (hidden 64, 2 layers), vocab {VOCAB}, batch {batch} x {length} tokens: one full float32 "
        f"logits tensor = {full_fp32:.0f} MiB, one scorer chunk = {batch * CHUNK * VOCAB * 4 / 2**20:.0f} MiB"
    )
    print(f"{'dtype':<9} {'way':<15} | {'peak MiB':>9} {'seconds':>8} | score")
    rows = []
    for dtype in ("float32", "bfloat16"):
        for way in WAYS:
            args = [
                "--device",
                device.type,
                "--mem-child",
                way,
                "--dtype",
                dtype,
                "--mem-batch",
                str(batch),
                "--mem-length",
                str(length),
            ]
            r = {"dtype": dtype, "way": way, **run_child("scoring.py", args)}
            rows.append(r)
            print(
                f"{dtype:<9} {way:<15} | {r['peak_mib']:>9.1f} {r['seconds']:>8.3f} | "
                f"{r.get('score', r.get('logits_dtype'))}"
            )
    peaks = {(r["dtype"], r["way"]): r["peak_mib"] for r in rows}
    summary = {
        f"{d}_full_over_chunked_peak": peaks[(d, "full_fp32")] / peaks[(d, "scorer_chunked")]
        for d in ("float32", "bfloat16")
    }
    for d in ("float32", "bfloat16"):
        extra_chunked = peaks[(d, "scorer_chunked")] - peaks[(d, "forward_only")]
        extra_full = peaks[(d, "full_fp32")] - peaks[(d, "forward_only")]
        summary[f"{d}_extra_over_forward_mib"] = {"scorer_chunked": extra_chunked, "full_fp32": extra_full}
        print(
            f"{d}: beyond the forward itself, chunked scorer +{extra_chunked:.0f} MiB, full float32 log-softmax "
            f"+{extra_full:.0f} MiB (peak ratio full/chunked {summary[f'{d}_full_over_chunked_peak']:.2f}x)"
        )
    return {"rows": rows, "summary": summary, "full_fp32_logits_mib": full_fp32}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="16 sequences of 24-48 tokens; memory: batch 1 x 2048")
    parser.add_argument("--output", default=default_output("scoring"))
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--mem-child", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--mem-batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mem-length", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    device, dtype = pick_device(args.device), getattr(torch, args.dtype)
    if args.mem_child:
        return memory_child(args.mem_child, dtype, device, args.mem_batch, args.mem_length)
    settings = SETTINGS["quick" if args.quick else "full"]
    info = print_device(device)
    print(
        f"[1] throughput, SmolLM2-135M-Instruct ({args.dtype}), {settings['num_seqs']} sequences of "
        f"{settings['min_len']}-{settings['max_len']} tokens"
    )
    speed = throughput(device, settings, dtype)
    print("[2] peak memory of scoring long sequences")
    mem = memory(device, settings)
    summary = {
        "batched_over_naive_throughput": speed["speedup"],
        "batched_naive_max_abs_diff": speed["max_abs_diff"],
        **mem["summary"],
    }
    rows = [{"part": "throughput", **r} for r in speed["rows"]] + [{"part": "memory", **r} for r in mem["rows"]]
    write_json(args.output, "scoring", info, {**settings, "dtype": args.dtype, "chunk_size": CHUNK}, rows, summary)


if __name__ == "__main__":
    main()
