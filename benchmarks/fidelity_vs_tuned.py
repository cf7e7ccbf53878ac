# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The adapter against the token temperature a user would tune once, per prompt, on prompts neither ever saw.

On the embedded SmolLM2-135M-Instruct, for each prompt *pool* and target T:

- the pool is split BY PROMPT into training prompts and held-out prompts;
- p's completions of the training prompts are sampled once per pool (`num_generations` each, exact ancestral
  sampling) and shared by every T: the adapter trains on them (the demo's recipe: likelihood-ratio loss L_p + 0.1 NLL,
  LoRA r = 16 on every linear layer, started at token temperature T), and the **once-tuned token temperature** is
  searched on those of the first 32 training prompts (`measure_held_out(tune_on=...)`: the t whose within-prompt
  T_eff there is T) and applied unchanged to the held-out prompts. Where no token temperature reaches T (T > 1 on
  this model), the once-tuned baseline is the t of a grid whose T_eff on the training prompts is closest to T, and
  the comparison says it does not reach T;
- every held-out prompt gets `held_out_generations` samples of p, on which each route's per-prompt T_eff
  (`per_prompt_effective_temperature`) and Kendall τ are measured.

Pools: `open` (the fidelity benchmark's open prompts: many plausible short answers) and `mixed` (half of them open,
half with one right answer: single-digit additions and capitals), where one scalar t cannot give every prompt the same
sequence temperature. Each comparison is a paired difference over the held-out prompts (bootstrap over prompts, 95 %
percentile interval): `per_prompt_t_eff_error` (the once-tuned route's |T_eff(c) − T| / T minus the adapter's:
positive, the adapter is closer) and `kendall_tau` (the adapter's τ(c) minus the once-tuned route's). The per-prompt
figures carry the sampling noise of `held_out_generations` samples; `noise` states it: the mean over prompts of
|err(c) on one half of the samples − err(c) on the other half|, for the adapter.

Writes `fidelity_vs_tuned.json` (`provenance`, `settings`, `comparisons`, `per_prompt`).

Usage:
    python benchmarks/fidelity_vs_tuned.py [--pools open mixed] [--temperatures 0.5 2.0] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from peft import LoraConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import device_info, pick_device, print_device, provenance
from _tasks import conversation, get_family, split_family

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, sample_dataset
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.measure import dataset_groups, score_dataset
from hf_seqtemp.metrics import (
    effective_temperature,
    paired_interval,
    per_prompt_effective_temperature,
    per_prompt_kendall_tau,
    split_half_noise,
)
from hf_seqtemp.tasks.prompts import split_prompts
from hf_seqtemp.trainer.hub_mixin import TUNING_PROMPTS

GRID = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)  # token temperatures tried where none reaches T (T > 1)
RECIPE = "ratio loss (L_p + 0.1 NLL), LoRA r=16 all-linear, from token temperature T, lr 1e-3 cosine"


def pool_prompts(pool: str, train: int, held_out: int, seed: int) -> tuple[list, list]:
    """`(train, held_out)` conversations of `pool`, split by prompt, interleaved (a mixed pool's first training
    prompts, on which the token temperature is tuned, hold both kinds)."""
    if pool == "open":
        tr, ho = split_prompts(train, held_out, seed=seed)
        return [conversation(p) for p in tr], [conversation(p) for p in ho]
    if pool != "mixed":
        raise ValueError(f"`pool` must be 'open' or 'mixed', got {pool!r}.")
    open_train, open_held = split_prompts(train // 2, held_out // 2, seed=seed)
    sharp_train, sharp_held = [], []
    for name in ("addition", "capitals"):
        tr, ho = split_family(get_family(name), train // 4, held_out // 4, seed=seed)
        sharp_train += [q for q, _ in tr]
        sharp_held += [q for q, _ in ho]
    rng = random.Random(f"mixed:{seed}")
    training = open_train + sharp_train
    rng.shuffle(training)
    return [conversation(p) for p in training], [conversation(p) for p in open_held + sharp_held]


def closest_token_temperature(model, tuning, temperature: float, batch_size: int) -> tuple[float, float, int]:
    """Where no token temperature reaches T: the t of [`GRID`] whose within-prompt T_eff on `tuning` (samples of p
    of the training prompts) is closest to T, its T_eff, and the scoring passes the grid took."""
    groups = dataset_groups(tuning)
    ref, _ = score_dataset(model, tuning, AutoregressiveScorer(), batch_size=batch_size)
    best = None
    for t in GRID:
        logps, _ = score_dataset(model, tuning, AutoregressiveScorer(token_temperature=t), batch_size=batch_size)
        t_eff = effective_temperature(ref, logps, groups=groups)
        if best is None or abs(t_eff - temperature) < abs(best[1] - temperature):
            best = (t, t_eff)
    return best[0], best[1], 1 + len(GRID)


def ratio_trainer(temperature, train_data, settings, workdir, learning_rate=1e-3, eval_dataset=None, **config):
    """A fresh base model and the benchmarks' ratio-loss trainer (L_p + 0.1 NLL, LoRA r = 16 all-linear, cosine
    schedule from the token-temperature start) at `temperature`; `config` adds `SeqTempConfig` fields."""
    model, tokenizer = load_default_model()
    torch.manual_seed(settings["seed"])
    config = SeqTempConfig(
        output_dir=workdir,
        target_temperature=temperature,
        loss_type="ratio",
        nll_weight=0.1,
        max_steps=settings["max_steps"],
        per_device_train_batch_size=settings["batch_size"],
        learning_rate=learning_rate,
        lr_scheduler_type="cosine",
        logging_steps=8,
        save_strategy="no",
        seed=settings["seed"],
        use_cpu=not torch.cuda.is_available(),
        init_from_token_temperature=True,
        disable_tqdm=True,
        report_to=[],
        **config,
    )
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    return SeqTempTrainer(
        model,
        config,
        train_dataset=train_data,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=lora,
    )


def run_one(pool, temperature, train_data, held_out, settings, workdir) -> tuple[dict, dict]:
    """Trains the adapter at `temperature` on `train_data` (a fresh base model), measures it and the once-tuned
    token temperature on `held_out`; returns the comparisons' figures and the per-prompt values."""
    started = time.time()
    trainer = ratio_trainer(temperature, train_data, settings, workdir, eval_dataset=held_out,
                            per_device_eval_batch_size=128)  # fmt: skip
    tokenizer = trainer.processing_class
    trainer.train()
    trained = time.time() - started
    reports, logps = trainer.measure_held_out(batch_size=128)
    groups, ref = list(logps["groups"]), logps["base"]
    once = reports.get("tuned_once")
    if once is None:  # no t reaches T on the training prompts: the closest one of the grid, applied unchanged
        tuning = trainer._tuning_samples(trainer.eval_dataset, tokenizer)
        with trainer.model.disable_adapter():
            t, t_eff_train, passes = closest_token_temperature(trainer.model, tuning, temperature, 128)
            scorer = AutoregressiveScorer(token_temperature=t)
            logps["tuned_once"], _ = score_dataset(trainer.model, trainer.eval_dataset, scorer, batch_size=128)
        once = {"token_temperature": t, "tuned_on": "training prompts", "reaches_on_training_prompts": False}
        once.update(t_eff_on_training_prompts=t_eff_train, scoring_passes=passes)
    routes = {name: logps[name] for name in ("myopic", "tuned_once", "tempered") if name in logps}
    if "tuned_myopic" in logps:
        routes["oracle"] = logps["tuned_myopic"]
    per_prompt = {}
    for name, policy in routes.items():
        t_effs = list(per_prompt_effective_temperature(ref, policy, groups).values())
        per_prompt[name] = {
            "t_eff": t_effs,
            "error": [abs(v - temperature) / temperature for v in t_effs],
            "kendall_tau": list(per_prompt_kendall_tau(ref, policy, groups).values()),
            "pooled_t_eff": effective_temperature(ref, policy, groups=groups),
        }
    per_prompt["tuned_once"]["token_temperature"] = once["token_temperature"]
    if "oracle" in per_prompt:
        per_prompt["oracle"]["token_temperature"] = reports["tuned_myopic"]["token_temperature"]
    noise = split_half_noise(ref, logps["tempered"], groups, temperature)
    adapter, tuned = per_prompt["tempered"], per_prompt["tuned_once"]
    common = {
        "pool": pool,
        "target_temperature": temperature,
        "training": f"{RECIPE}; {settings['max_steps']} steps of {settings['batch_size']} sequences",
        "held_out_prompts": len(set(groups)),
        "samples_per_prompt": len(groups) // len(set(groups)),
        "tuned_once_token_temperature": once["token_temperature"],
        "tuned_once_reaches_t": abs(tuned["pooled_t_eff"] / temperature - 1) <= 0.1,
        "pooled_t_eff": {"adapter": adapter["pooled_t_eff"], "tuned_once": tuned["pooled_t_eff"]},
        "train_seconds": trained,
    }
    comparisons = []
    for metric, a, b, sign in (
        ("per_prompt_t_eff_error", adapter["error"], tuned["error"], -1),
        ("kendall_tau", adapter["kendall_tau"], tuned["kendall_tau"], 1),
    ):
        differences = [sign * (x - y) for x, y in zip(a, b)]
        comparisons.append(
            {
                **common,
                "metric": metric,
                "adapter": statistics.fmean(a),
                "tuned_once": statistics.fmean(b),
                "difference": statistics.fmean(differences),
                "ci95": paired_interval(differences),
                **({"noise": noise} if metric == "per_prompt_t_eff_error" else {}),
            }
        )
    trainer.close()
    return comparisons, {"pool": pool, "target_temperature": temperature, "groups": list(dict.fromkeys(groups)),
                         "routes": per_prompt, "tuned_once": once}  # fmt: skip


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", nargs="+", default=["open", "mixed"], choices=["open", "mixed"])
    parser.add_argument("--temperatures", nargs="+", type=float, default=[0.5, 2.0])
    parser.add_argument("--train_prompts", type=int, default=96)
    parser.add_argument("--held_out_prompts", type=int, default=16)
    parser.add_argument("--num_generations", type=int, default=8)
    parser.add_argument("--held_out_generations", type=int, default=32)
    parser.add_argument("--max_completion_length", type=int, default=10)
    parser.add_argument("--max_steps", type=int, default=32)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--split_seed", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default="outputs/bench/fidelity_vs_tuned.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = pick_device(None)
    info = print_device(device)
    model, tokenizer = load_default_model()
    settings = {**vars(args), "tuning_prompts": TUNING_PROMPTS, "recipe": RECIPE}
    comparisons, per_prompt = [], []
    for pool in args.pools:
        train, held = pool_prompts(pool, args.train_prompts, args.held_out_prompts, args.split_seed)
        kwargs = {"max_new_tokens": args.max_completion_length, "batch_size": 128}
        print(f"[{pool}] sampling {args.num_generations} × {len(train)} training and "
              f"{args.held_out_generations} × {len(held)} held-out completions of p", flush=True)  # fmt: skip
        train_data = sample_dataset(
            model, tokenizer, train, num_samples=args.num_generations, seed=args.seed, **kwargs
        )
        held_out = sample_dataset(
            model, tokenizer, held, num_samples=args.held_out_generations, seed=args.seed + 1, **kwargs
        )
        for temperature in args.temperatures:
            print(f"[{pool}] T = {temperature:g}: training and measuring", flush=True)
            with tempfile.TemporaryDirectory() as workdir:
                found, values = run_one(pool, temperature, train_data, held_out, vars(args), workdir)
            comparisons += found
            per_prompt.append(values)
            for row in found:
                low, high = row["ci95"]
                print(f"  {row['metric']:24s} adapter {row['adapter']:.3f}  tuned once (t={row['tuned_once_token_temperature']:.3g}) "
                      f"{row['tuned_once']:.3f}  difference {row['difference']:+.3f} [{low:+.3f}, {high:+.3f}]", flush=True)  # fmt: skip
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"provenance": provenance(info | device_info(device)), "benchmark": "fidelity_vs_tuned"}
    payload.update(settings=settings, comparisons=comparisons, per_prompt=per_prompt)
    out.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
