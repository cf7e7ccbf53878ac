# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence scoring against the physical limit (a bare forward pass) and against TRL's per-token log-prob helpers.

Part 1, SmolLM2-135M-Instruct on one right-padded batch of random sequences of varying length, four ways, all under
`torch.no_grad()` and on the same tensors:

- `forward`: `model(input_ids, attention_mask).logits`, nothing else: the physical limit of any scorer that needs
  the model's logits.
- `scorer`: `AutoregressiveScorer()(model, input_ids, attention_mask)`, sequence log-likelihoods.
- `trl_selective`: the same forward, then `trl.trainer.utils.selective_log_softmax(logits[:, :-1], ids[:, 1:])`,
  masked and summed (TRL's documented helper for per-token log-probs).
- `trl_fused`: `trl.trainer.utils.add_fused_lm_head(model)` and `model(..., labels=..., fused_lm_head=True)`, the
  path `GRPOTrainer` of trl 1.16 takes for its per-token log-probs (the patch is applied and removed around each
  call, which costs microseconds).

The four run in turn (forward, scorer, trl_selective, trl_fused, forward, ...) after a warm-up, and each cost is the
median [min, max] of the per-round ratios `scorer / other` (`hf_seqtemp.costs`). Targets: sequences/s within 10 % of the
bare forward (time ratio <= 1.10), and no slower than either TRL helper (<= 1.05: `selective_log_softmax` does the
same forward and an equally cheap gather, so the two tie and 5 % is the paired median's noise on a shared CPU).
Peak tensor memory of one call of each way, measured after the timed rounds, gives the same ratios for memory
(same targets).

Part 2, memory on long sequences: a tiny-width random Llama with a 32768-token vocabulary and 2048-token rows, so the
logits dominate memory. `forward`, `scorer`, `trl_selective` and `trl_fused` as above and `full_fp32`
(`logits.float().log_softmax(-1)` of the whole batch, then gather), with float32 and bfloat16 weights: the extra
tensor memory beyond the forward shows what each way holds on top of the model's own logits, and the scorer's peak
against TRL's fused LM head is the ratio with a target (<= 1.05). The scorer applies the LM head a chunk of positions
at a time inside the forward, so it never holds the `(batch, length, vocab)` logits that `forward` returns.

Why the CPU and the GPU figures of `scorer / trl_fused` disagreed (0.47x here against 6.7x on an H200 before the
chunked head): on CUDA, TRL's fused head folds each `[4096 tokens, 32768 vocab]` tile with a Triton kernel and holds
nothing else, while on the CPU (no Triton) it folds the tiles with torch operations that allocate the tile's
temporaries; our scorer then held the model's whole logits on both. The two devices' methods also differ (here a
sum of the CPU allocator's events, there `torch.cuda.max_memory_allocated`), which measure the same peak for one
thread. So the CPU ratio does not predict the GPU ratio for the fused head; the scorer's own peak (`forward`'s
logits gone) does carry over.

Usage:
    python benchmarks/scoring.py [--quick] [--output outputs/bench/scoring.json] [--device cpu]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import parse_timing_args, pick_device, print_device, timing_parser, write_json

from hf_seqtemp.costs import format_summary, ratios_by_round, summarise, tensor_peak, time_round_robin
from hf_seqtemp.likelihood import AutoregressiveScorer

SETTINGS = {
    "quick": {"num_seqs": 16, "min_len": 24, "max_len": 48, "warmup": 1, "rounds": 5, "long_batch": 1},
    "full": {"num_seqs": 64, "min_len": 64, "max_len": 256, "warmup": 2, "rounds": 10, "long_batch": 4},
}
WAYS = ("forward", "scorer", "trl_selective", "trl_fused")
TARGETS = {"forward": 1.10, "trl_selective": 1.05, "trl_fused": 1.05}
LONG_VOCAB, LONG_LENGTH = 32768, 2048


def make_batch(vocab_size: int, num_seqs: int, min_len: int, max_len: int, seed: int = 0):
    """Random sequences of varying length, right-padded: `(input_ids, attention_mask)`."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, max_len + 1, (num_seqs,), generator=generator).tolist()
    ids = torch.zeros(num_seqs, max(lengths), dtype=torch.long)
    attn = torch.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n], attn[row, :n] = torch.randint(0, vocab_size, (n,), generator=generator), 1
    return ids, attn


def scoring_ways(model, ids: torch.Tensor, attn: torch.Tensor, out: dict) -> dict:
    """The ways of both parts as no-argument callables; each stores its result in `out[way]`.

    `forward` stores the logits; the others the per-sequence log p(x_2..x_n | x_1) over the real tokens.
    """
    from trl.trainer.utils import add_fused_lm_head, selective_log_softmax

    scorer = AutoregressiveScorer()
    labels = ids.masked_fill(attn == 0, -100)

    def forward():
        out["forward"] = model(input_ids=ids, attention_mask=attn).logits

    def ours():
        out["scorer"] = scorer(model, ids, attn)

    def trl_selective():
        logits = model(input_ids=ids, attention_mask=attn).logits
        out["trl_selective"] = (selective_log_softmax(logits[:, :-1], ids[:, 1:]) * attn[:, 1:]).sum(1)

    def trl_fused():
        add_fused_lm_head(model)
        try:
            logps = model(input_ids=ids, attention_mask=attn, labels=labels, fused_lm_head=True).log_probs
        finally:
            del model.forward  # back to the class's own forward
        out["trl_fused"] = logps.sum(1)

    def full_fp32():
        logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1]
        logps = logits.float().log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        out["full_fp32"] = (logps * attn[:, 1:]).sum(1)

    return {
        "forward": forward,
        "scorer": ours,
        "trl_selective": trl_selective,
        "trl_fused": trl_fused,
        "full_fp32": full_fp32,
    }


def _no_grad(fns: dict) -> dict:
    return {name: torch.no_grad()(fn) for name, fn in fns.items()}


def throughput(device, settings: dict, dtype) -> dict:
    from hf_seqtemp.models import load_default_model

    model, tokenizer = load_default_model(dtype=dtype, device=device)
    ids, attn = make_batch(len(tokenizer), settings["num_seqs"], settings["min_len"], settings["max_len"])
    ids, attn = ids.to(device), attn.to(device)
    out = {}
    fns = _no_grad({way: fn for way, fn in scoring_ways(model, ids, attn, out).items() if way in WAYS})
    seconds = time_round_robin(fns, device, settings["warmup"], settings["rounds"])
    peaks = {name: tensor_peak(fn, device)["peak_mib"] for name, fn in fns.items()}
    diffs = {w: float((out["scorer"] - out[w]).abs().max()) for w in ("trl_selective", "trl_fused")}
    n = settings["num_seqs"]
    print(f"{'way':<14} | {'median s':>9} {'seq/s':>8} | {'peak MiB':>9}")
    for name in WAYS:
        median = sorted(seconds[name])[len(seconds[name]) // 2]
        print(f"{name:<14} | {median:>9.4f} {n / median:>8.2f} | {peaks[name]:>9.1f}")
    print(f"max |scorer - trl| log p: selective {diffs['trl_selective']:.1e}, fused {diffs['trl_fused']:.1e}")
    summary = {}
    for other, target in TARGETS.items():
        time_s = summarise(ratios_by_round(seconds, "scorer", other), target)
        memory = summarise([peaks["scorer"] / peaks[other]], target)
        summary[f"scorer_over_{other}_time"], summary[f"scorer_over_{other}_memory"] = time_s, memory
        print(format_summary(f"scorer / {other}: time", time_s))
        print(format_summary(f"scorer / {other}: peak memory", memory))
    rows = [{"way": name, "seconds": seconds[name], "peak_mib": peaks[name]} for name in WAYS]
    return {"rows": rows, "summary": summary, "max_abs_diff": diffs}


def tiny_long_model(dtype, device, length: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=LONG_VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=length,
    )
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()


LONG_WAYS = ("forward", "scorer", "trl_selective", "trl_fused", "full_fp32")


def long_peaks(dtype: str, device, batch: int) -> dict:
    """Peak tensor memory (MiB) of each way of part 2 on the long rows, one call each after a warm-up forward."""
    model = tiny_long_model(getattr(torch, dtype), device, LONG_LENGTH)
    ids = torch.randint(0, LONG_VOCAB, (batch, LONG_LENGTH), generator=torch.Generator().manual_seed(1))
    ids = ids.to(device)
    fns = scoring_ways(model, ids, torch.ones_like(ids), {})
    fns = _no_grad({way: fns[way] for way in LONG_WAYS})
    fns["forward"]()
    return {way: tensor_peak(fn, device)["peak_mib"] for way, fn in fns.items()}


def long_memory(device, settings: dict) -> dict:
    batch = settings["long_batch"]
    full_mib = batch * (LONG_LENGTH - 1) * LONG_VOCAB * 4 / 2**20
    print(
        f"tiny Llama (hidden 64, 2 layers), vocab {LONG_VOCAB}, batch {batch} x {LONG_LENGTH} tokens: one full "
        f"float32 logits tensor = {full_mib:.0f} MiB"
    )
    rows, summary = [], {}
    for dtype in ("float32", "bfloat16"):
        peaks = long_peaks(dtype, device, batch)
        extra = {way: peaks[way] - peaks["forward"] for way in LONG_WAYS[1:]}
        rows += [{"dtype": dtype, "way": way, "peak_mib": peak} for way, peak in peaks.items()]
        summary[f"{dtype}_extra_over_forward_mib"] = extra
        ratio = summarise([peaks["scorer"] / peaks["trl_fused"]], TARGETS["trl_fused"])
        summary[f"long_{dtype}_scorer_over_trl_fused_memory"] = ratio
        print(format_summary(f"long rows, {dtype}: scorer / trl_fused peak memory", ratio))
        text = ", ".join(f"{way} +{mib:.0f}" for way, mib in extra.items())
        print(f"{dtype}: forward {peaks['forward']:.0f} MiB; beyond the forward: {text} MiB")
    return {"rows": rows, "summary": summary, "full_fp32_logits_mib": full_mib}


def main():
    args = parse_timing_args(timing_parser(__doc__, "scoring", "16 sequences of 24-48 tokens; long rows: batch 1"))
    device, dtype = pick_device(args.device), getattr(torch, args.dtype)
    settings = SETTINGS["quick" if args.quick else "full"]
    info = print_device(device)
    print(
        f"[1] SmolLM2-135M-Instruct ({args.dtype}), {settings['num_seqs']} sequences of {settings['min_len']}-"
        f"{settings['max_len']} tokens, right-padded; {settings['warmup']} warm-up + {settings['rounds']} rounds"
    )
    speed = throughput(device, settings, dtype)
    print("[2] peak tensor memory of scoring long sequences")
    mem = long_memory(device, settings)
    summary = {**speed["summary"], "scorer_trl_max_abs_diff": speed["max_abs_diff"], **mem["summary"]}
    rows = [{"part": "padded_batch", **r} for r in speed["rows"]] + [{"part": "long", **r} for r in mem["rows"]]
    write_json(args.output, "scoring", info, {**settings, "dtype": args.dtype}, rows, summary)


if __name__ == "__main__":
    main()
