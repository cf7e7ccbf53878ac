# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Hyper-parameter sweep behind the settings of `fidelity.py` (autoregressive half): what limits T_eff and τ.

Samples ONE pool once (the trainer's own prompt-only sampling, `pool_prompts` training prompts × `pool_generations`
completions, with reference log-probabilities) and the held-out completions of the unseen prompts, saves them under
`--output_dir`, and then trains one adapter per configuration on a subset of the pool (the first `prompts` training
prompts, the first `generations` completions of each), reporting per run:

- held-out (unseen prompts): within-prompt T_eff, Kendall τ, NLL per token;
- train fit: the same on the completions of the first 8 training prompts (seen in training), so that a gap between
  the two shows overfitting, and a miss on both shows a model or objective that does not reach the target.

Each configuration is `key=value` pairs separated by commas, e.g.
`method=ratio,T=2,steps=64,lr=2e-4,nll=0.1,r=16,prompts=128,generations=16,ng=16,batch=16,init=1,sched=constant`
(unset keys take the defaults of `fidelity.py`'s default mode). Results are appended to `<output_dir>/sweep.jsonl`.

Usage:
    python benchmarks/fidelity_sweep.py --output_dir outputs/fidelity_sweep CONFIG [CONFIG ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import provenance
from datasets import Dataset, load_from_disk
from fidelity import MODES, TRAINING, SharedPreparation, conversations, sample_held_out, train_adapter

from hf_seqtemp import load_default_model
from hf_seqtemp.data import GROUP_ID
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.measure import dataset_groups, score_dataset, temperature_report
from hf_seqtemp.metrics.core import kendall_tau
from hf_seqtemp.tasks.prompts import split_prompts

KEYS = {
    "method": ("method", str),
    "T": ("temperature", float),
    "steps": ("max_steps", int),
    "lr": ("learning_rate", float),
    "nll": ("nll_weight", float),
    "r": ("lora_r", int),
    "prompts": ("prompts", int),
    "generations": ("generations", int),
    "ng": ("num_generations", int),
    "batch": ("batch_size", int),
    "init": ("init", int),
    "sched": ("lr_scheduler_type", str),
}
FIT_PROMPTS = 8


def parse_config(text: str) -> dict:
    defaults = MODES["default"]
    config = {
        **MODES["default"],
        **TRAINING,
        "method": "ratio",
        "temperature": 0.5,
        "prompts": defaults["train_prompts"],
        "generations": defaults["num_generations"],
        "init": 1,
        "seed": 0,
    }
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        if key not in KEYS:
            raise ValueError(f"unknown sweep key {key!r}; use one of {sorted(KEYS)}")
        name, kind = KEYS[key]
        config[name] = kind(value)
    return config


def build_pool(folder: Path, args, device) -> None:
    """Samples the training pool through the trainer (prompt-only data) and the held-out set, and saves both."""
    settings = {**MODES["default"], **TRAINING, "seed": 0, "num_generations": args.pool_generations, "max_steps": 1}
    base, tokenizer = load_default_model(device=device)
    train_prompts, held_prompts = split_prompts(args.pool_prompts, MODES["default"]["held_out_prompts"], 0)
    shared = SharedPreparation()
    train = Dataset.from_dict({"prompt": conversations(train_prompts)})
    with tempfile.TemporaryDirectory() as workdir:
        train_adapter("ssts", 0.5, settings, train, tokenizer, device, shared, workdir)  # one step: fills the pool
    shared.reference.save_to_disk(str(folder / "pool"))  # the sampled rows with their reference columns
    held_out = sample_held_out(base, tokenizer, held_prompts, {**settings, "held_out_generations": 16})
    held_out.save_to_disk(str(folder / "held_out"))


def subset(pool: Dataset, prompts: int, generations: int) -> Dataset:
    """The first `generations` completions of each of the first `prompts` prompt groups, in pool order."""
    order, seen, keep = [], {}, []
    for index, group in enumerate(pool[GROUP_ID]):
        if group not in seen:
            seen[group] = 0
            order.append(group)
        if len(order) <= prompts and seen[group] < generations:
            keep.append(index)
        seen[group] += 1
    return pool.select(keep)


def evaluate(model, dataset: Dataset, base_logps, groups) -> dict:
    logps, lengths = score_dataset(model, dataset, AutoregressiveScorer(), batch_size=32, desc="Scoring")
    return temperature_report(base_logps, logps, lengths, groups)


def run_config(config: dict, pool: Dataset, held_out: Dataset, reference: dict, device) -> dict:
    _, tokenizer = load_default_model(device=device)
    shared = SharedPreparation()
    shared.completed = shared.reference = subset(pool, config["prompts"], config["generations"])
    train = Dataset.from_dict({"prompt": ["unused: the pool is shared"]})
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        model, logged = train_adapter(
            config["method"], config["temperature"], config, train, tokenizer, device, shared, workdir
        )
    seconds = time.perf_counter() - start
    result = {"config": config, "train_seconds": seconds, "last_log": logged}
    result["held_out"] = evaluate(model, held_out, reference["held_out"], reference["held_out_groups"])
    result["train_fit"] = evaluate(model, reference["fit"], reference["fit_logps"], reference["fit_groups"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", help="key=value,key=value,... (see the docstring)")
    parser.add_argument("--output_dir", default="outputs/fidelity_sweep")
    parser.add_argument("--pool_prompts", type=int, default=142)
    parser.add_argument("--pool_generations", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cpu")
    folder = Path(args.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "held_out").exists():
        build_pool(folder, args, device)
    pool, held_out = load_from_disk(str(folder / "pool")), load_from_disk(str(folder / "held_out"))
    base, tokenizer = load_default_model(device=device)
    fit = subset(pool, FIT_PROMPTS, 16).select_columns(["input_ids", "completion_mask"])
    reference = {"fit": fit, "held_out_groups": dataset_groups(held_out, tokenizer), "fit_groups": dataset_groups(fit)}
    reference["held_out"], _ = score_dataset(base, held_out, AutoregressiveScorer(), batch_size=32)
    reference["fit_logps"], _ = score_dataset(base, fit, AutoregressiveScorer(), batch_size=32)
    temperatures = sorted({parse_config(text)["temperature"] for text in args.configs})
    for temperature in temperatures:  # the baseline and the τ ceiling (ties) for comparison
        logps, lengths = score_dataset(base, held_out, AutoregressiveScorer(token_temperature=temperature), 32)
        m = temperature_report(reference["held_out"], logps, lengths, reference["held_out_groups"])
        print(f"myopic T={temperature:g}: held-out T_eff {m['t_eff']:.3f} τ {m['kendall_tau']:.3f}", flush=True)
    ceiling = kendall_tau(reference["held_out"], reference["held_out"], groups=reference["held_out_groups"])
    print(f"base τ against itself (ceiling from tied duplicates): {ceiling:.3f}", flush=True)
    for text in args.configs:
        result = run_config(parse_config(text), pool, held_out, reference, device)
        h, f = result["held_out"], result["train_fit"]
        print(
            f"{text}: held-out T_eff {h['t_eff']:.3f} τ {h['kendall_tau']:.3f} NLL {h['nll_per_token']:.3f} | "
            f"train fit T_eff {f['t_eff']:.3f} τ {f['kendall_tau']:.3f} | {result['train_seconds']:.0f} s",
            flush=True,
        )
        with open(folder / "sweep.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"provenance": provenance(), "spec": text, **result}) + "\n")


if __name__ == "__main__":
    main()
