# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The adapter proposal's two passes per token: two calls (adapter off, adapter on) against one mixed-adapter call.

SMC with `proposal="adapter"` needs, for every particle and token, the base's and the adapter's next-token
logits. PEFT can compute both in one call (`adapter_names=["__base__", ..., name, ...]`, rows of a batch twice as
wide); `smc_sample` makes two calls. This measures, on the embedded SmolLM2 with a LoRA (r = 16, every linear
layer), the decode loop of `--particles` rows over `--new_tokens` tokens with KV caches, both ways, alternated
(A B A B ...) in one process; it reports the median [min, max] of the paired time ratio one-call / two-calls, and
checks the logits agree.

PEFT mixes only LoRA layers (Linear, Embedding, Conv): an adapter with a `modules_to_save` copy, such as ours
initialised from token temperature (the final norm scaled by 1/T), cannot use the one-call path at all.

Usage:
    python benchmarks/mixed_adapter_batch.py [--particles 16] [--new_tokens 16] [--repeats 7] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import default_output, print_device, write_json

from hf_seqtemp.likelihood.autoregressive import cache_kwargs, output_cache


@torch.no_grad()
def two_calls(model, ids, tokens):
    from hf_seqtemp.generation.adapters import active_adapter

    with active_adapter(model, None):
        out_p = model(input_ids=ids, use_cache=True)
    out_q = model(input_ids=ids, use_cache=True)
    past_p, past_q, last = output_cache(out_p), output_cache(out_q), None
    for t in range(tokens.shape[1]):
        with active_adapter(model, None):
            out_p = model(input_ids=tokens[:, t : t + 1], **cache_kwargs(model, past_p))
        out_q = model(input_ids=tokens[:, t : t + 1], **cache_kwargs(model, past_q))
        past_p, past_q = output_cache(out_p), output_cache(out_q)
        last = (out_p.logits[:, -1], out_q.logits[:, -1])
    return last


@torch.no_grad()
def one_call(model, ids, tokens):
    rows = ids.shape[0]
    names = ["__base__"] * rows + ["default"] * rows
    out = model(input_ids=torch.cat([ids, ids]), use_cache=True, adapter_names=names)
    past, last = output_cache(out), None
    for t in range(tokens.shape[1]):
        step = torch.cat([tokens[:, t : t + 1]] * 2)
        out = model(input_ids=step, adapter_names=names, **cache_kwargs(model, past))
        past = output_cache(out)
        last = (out.logits[:rows, -1], out.logits[rows:, -1])
    return last


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--particles", type=int, default=16)
    parser.add_argument("--new_tokens", type=int, default=16)
    parser.add_argument("--prompt_tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument("--output", default=default_output("mixed_adapter_batch"))
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = 3 if args.quick else args.repeats
    from peft import LoraConfig, get_peft_model

    from hf_seqtemp import load_default_model

    info = print_device(torch.device("cpu"))
    base, _ = load_default_model()
    torch.manual_seed(0)
    lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", init_lora_weights=False)
    model = get_peft_model(base, lora).eval()
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (args.particles, args.prompt_tokens), generator=generator)
    tokens = torch.randint(0, vocab, (args.particles, args.new_tokens), generator=generator)
    a, b = two_calls(model, ids, tokens), one_call(model, ids, tokens)
    gap = max(float((x - y).abs().max()) for x, y in zip(a, b))
    times = {"two_calls": [], "one_call": []}
    for _ in range(repeats):
        for name, fn in (("two_calls", two_calls), ("one_call", one_call)):
            start = time.perf_counter()
            fn(model, ids, tokens)
            times[name].append(time.perf_counter() - start)
    ratios = [o / t for o, t in zip(times["one_call"], times["two_calls"])]
    summary = {
        "one_call_over_two_calls": {
            "median": statistics.median(ratios),
            "min": min(ratios),
            "max": max(ratios),
            "target": "< 1 would make one call cheaper",
        },
        "max_abs_logit_gap": gap,
    }
    print(f"{args.particles} rows, prompt {args.prompt_tokens} + {args.new_tokens} tokens, {repeats} pairs")
    for name, values in times.items():
        print(f"{name:10s} median {statistics.median(values):.3f} s [{min(values):.3f}, {max(values):.3f}]")
    print(
        f"one call / two calls: {statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]; "
        f"max |logit gap| {gap:.2e}"
    )
    rows = [{"method": name, "seconds": values} for name, values in times.items()]
    write_json(args.output, "mixed_adapter_batch", info, vars(args), rows, summary)


if __name__ == "__main__":
    main()
