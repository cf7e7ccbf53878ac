# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""How each route's cost grows with the answer's length, on the embedded SmolLM2-135M-Instruct.

Answers of exactly L tokens (EOS off: `eos_token_id=[]`, so every route pays for the whole length) for L in
`--lengths`, `--prompts` chat prompts, one answer each, per route:

- `p`: exact ancestral sampling of the base model (one forward per token, the KV cache reused);
- `adapter`: the same through a LoRA adapter (r = 16, all linear layers; its cost does not depend on its weights);
- `smc`: Power-SMC with the token-temperature proposal, `--particles` particles (one batched forward per token);
- `smc_adapter`: Power-SMC with the adapter proposing and the base weighing (two forwards per token);
- `pimh`: PIMH over `--pimh_steps` + 1 SMC runs of `--pimh_particles` particles, drawn in one batch;
- `mh`: MH power sampling, `--mcmc_steps` steps per block of `--block_size` tokens (each step re-draws the
  answer from a random position of the current block on: quadratic in L).

Cost, counted by a forward pre-hook on the decoder ([`~hf_seqtemp.costs.ForwardCounter`]): token-forwards
per answer (positions computed, KV-cache reuse counted: a decoding step computes one position per row) and
sequential model calls per answer; wall seconds per answer (one thread unless `--threads`). Each route's
token-forwards are fitted as `a · L^b` (least squares in log-log; the prompt's forwards flatten it at short L, so
`local_exponent` is the slope between the two longest lengths); an exponent > 1.1 is said in `why`.

Writes `cost_by_length.json` (`provenance`, `settings`, `rows`, `fits`) and, with `--plot`, `cost_by_length.png`.

Usage:
    python benchmarks/cost_by_length.py [--lengths 16 32 64 128] [--threads 1] [--plot]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import device_info, pick_device, print_device, provenance
from _tasks import conversation

from hf_seqtemp import load_default_model
from hf_seqtemp.costs import ForwardCounter
from hf_seqtemp.data.ancestral import exact_generate
from hf_seqtemp.generation.power_sampling import power_sample
from hf_seqtemp.generation.smc import smc_sample

PROMPTS = ("Describe a river in one sentence.", "Explain rain in one sentence.", "Give two tips for sleeping well.")
WHY = {
    "mh": "each MH step re-draws the answer from a random position of the current block to the block's end, and the "
    "blocks grow with L: about L²/(2·block) rollout tokens per step",
}


def _inputs(tokenizer, prompts: int):
    texts = [tokenizer.apply_chat_template(conversation(p), tokenize=False, add_generation_prompt=True)
             for p in PROMPTS[:prompts]]  # fmt: skip
    tokenizer.padding_side = "left"
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    return batch["input_ids"], batch["attention_mask"]


def _routes(args, base, adapted, pad: int):
    common = {"seq_temperature": 0.25, "eos_token_id": [], "pad_token_id": pad}
    return {
        "p": lambda ids, mask, length: exact_generate(base, ids, mask, length, [], pad),
        "adapter": lambda ids, mask, length: exact_generate(adapted, ids, mask, length, [], pad),
        "smc": lambda ids, mask, length: smc_sample(base, ids, mask, max_new_tokens=length,
                                                    num_particles=args.particles, **common),
        "smc_adapter": lambda ids, mask, length: smc_sample(adapted, ids, mask, max_new_tokens=length,
                                                            num_particles=args.particles, proposal="adapter",
                                                            adapter_name="default", **common),
        "pimh": lambda ids, mask, length: smc_sample(base, ids, mask, max_new_tokens=length,
                                                     num_particles=args.pimh_particles, pimh_steps=args.pimh_steps,
                                                     **common),
        "mh": lambda ids, mask, length: power_sample(base, ids, mask, max_new_tokens=length,
                                                     mcmc_steps=args.mcmc_steps, block_size=args.block_size,
                                                     **common),
    }  # fmt: skip


def fit_power(lengths, values) -> tuple[float, float]:
    """`(a, b)` of `values ≈ a · lengths^b`, least squares on the logs."""
    xs, ys = [math.log(x) for x in lengths], [math.log(y) for y in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return math.exp(my - b * mx), b


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", nargs="+", type=int, default=[16, 32, 64, 128])
    parser.add_argument("--routes", nargs="+", default=["p", "adapter", "smc", "smc_adapter", "pimh", "mh"])
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--particles", type=int, default=8)
    parser.add_argument("--pimh_particles", type=int, default=4)
    parser.add_argument("--pimh_steps", type=int, default=8)
    parser.add_argument("--mcmc_steps", type=int, default=4)
    parser.add_argument("--block_size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--plot", action="store_true")
    parser.add_argument("--output", default="outputs/bench/cost_by_length.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = pick_device(None)
    info = print_device(device)
    base, tokenizer = load_default_model()
    base.eval()
    lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    adapted = get_peft_model(load_default_model()[0], lora).eval()
    ids, mask = _inputs(tokenizer, args.prompts)
    pad = tokenizer.pad_token_id
    routes = _routes(args, base, adapted, pad)
    counters = {"base": ForwardCounter(base), "adapted": ForwardCounter(adapted)}
    rows = []
    for length in args.lengths:
        for name in args.routes:
            counter = counters["adapted" if name in ("adapter", "smc_adapter") else "base"]
            kind = f"{name}@{length}"
            started = time.perf_counter()
            with torch.no_grad(), counter.counting(kind, answers=ids.shape[0]):
                routes[name](ids, mask, length)
            seconds = time.perf_counter() - started
            cost = counter.summary()[kind]
            rows.append({"route": name, "length": length, "seconds_per_answer": seconds / ids.shape[0],
                         "token_forwards_per_answer": cost["token_forwards_per_answer"],
                         "model_calls_per_answer": cost["model_calls_per_answer"]})  # fmt: skip
            print(f"L={length:4d} {name:12s} {rows[-1]['token_forwards_per_answer']:10.0f} token-forwards/answer "
                  f"{rows[-1]['seconds_per_answer']:7.2f} s/answer", flush=True)  # fmt: skip
    fits = {}
    for name in args.routes:
        mine = [r for r in rows if r["route"] == name]
        lengths = [r["length"] for r in mine]
        a, b = fit_power(lengths, [r["token_forwards_per_answer"] for r in mine])
        _, b_seconds = fit_power(lengths, [r["seconds_per_answer"] for r in mine])
        last = sorted(mine, key=lambda r: r["length"])[-2:]  # the prompt's forwards weigh less at long L
        local = math.log(last[1]["token_forwards_per_answer"] / last[0]["token_forwards_per_answer"]) / math.log(
            last[1]["length"] / last[0]["length"]
        )
        fits[name] = {"token_forwards": {"a": a, "b": b}, "local_exponent": local, "seconds_exponent": b_seconds}
        if max(b, local) > 1.1:
            fits[name]["why"] = WHY.get(name, "grows faster than the length")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"provenance": provenance(info | device_info(device)), "benchmark": "cost_by_length"}
    payload.update(settings=vars(args), rows=rows, fits=fits)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(fits, indent=1))
    if args.plot:
        plot(rows, fits, out.with_suffix(".png"))
    print(f"wrote {out}")


def plot(rows, fits, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name in fits:
        mine = [r for r in rows if r["route"] == name]
        lengths = [r["length"] for r in mine]
        for axis, key in zip(axes, ("token_forwards_per_answer", "seconds_per_answer")):
            axis.plot(
                lengths,
                [r[key] for r in mine],
                marker="o",
                label=f"{name} (L^{fits[name]['token_forwards']['b']:.2f})",
            )
    for axis, label in zip(axes, ("token-forwards per answer", "seconds per answer (CPU)")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("answer length L (tokens)")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("Cost per answer against answer length (SmolLM2-135M; fitted exponent of token-forwards)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
