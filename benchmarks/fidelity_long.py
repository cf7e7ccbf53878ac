# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Long answers: the adapter against the once-tuned token temperature where answers end at EOS, with power.

A token temperature t renormalises every prefix: log q_t(x) = Σ_i [log p(x_i | x_<i) / t − log Z_i(t)], and the
normalisers Z_i(t) differ from prefix to prefix, so what separates a token temperature from a sequence temperature
adds up with the answer's length. This benchmark measures it on the embedded SmolLM2-135M-Instruct, per prompt:

- a pool of prompts (`long`: a sentence, two tips, a one-sentence explanation; `open`: the fidelity benchmark's
  short-answer prompts; `mixed`: half open, half addition and capital questions, as in `fidelity_vs_tuned.py`) is split BY PROMPT into `fit` prompts (training and tuning), `validation` prompts (both drawn
  from the training side: they choose the recipe) and `held_out` prompts (scored only);
- p's completions are drawn exactly (`max_completion_length` tokens at most; the share cut before EOS is reported per
  pool as `clipped_fraction`);
- the **once-tuned token temperature** is searched on the fit prompts' samples ([`tune_token_temperature_once`]);
  where none reaches T (T_eff(t) peaks below T, as at T = 2 on long answers), the grid t whose T_eff there is
  closest (`tuned_once_reaches_target` false, its T_eff in `tuned_once_fit_t_eff`);
- each adapter recipe trains on the fit prompts (ratio loss L_p + 0.1 NLL, LoRA r = 16 all-linear): `from_T` starts at
  token temperature T (the demo's recipe), `from_tuned` starts at the once-tuned t (`init_token_temperature`), so
  training only has to learn what one scalar cannot (`from_tuned_fast`: the same at lr 1e-3; `from_tuned_fresh`: at
  lr 1e-3 on the fit prompts alone, p's completions drawn afresh for every batch, so the adapter never sees one answer
  twice and cannot fit the few hundred it would otherwise train on epoch after epoch). The recipe with the lower per-prompt error on the validation
  prompts is the `adapter` of the comparison; every recipe's held-out figures are kept in `recipes`;
- on the held-out prompts (`held_out_generations` samples of p each) both routes get their per-prompt T_eff error
  |T_eff(c) − T| / T and Kendall τ(c); `difference` is paired over prompts (positive: the adapter better), `ci95`
  a percentile bootstrap over prompts, `noise` the split-half noise of the per-prompt error (mean over prompts of
  |err(c) on half the samples − err(c) on the other half|), `noise` per route in `noise_by_route`, and
  `noise_of_mean` the split-half noise of the compared figure itself (the mean over prompts, random halvings),
  `excess_error` per route the root-mean-square error split into noise and what the noise does not explain
  ([`excess_error`]: an `excess_mean_square` at or below 0 says the per-prompt errors are sampling noise);
- `by_length`: each held-out prompt's mean answer length beside its two errors, the gap against answer length.

Writes `fidelity_long.json` after each comparison (`provenance`, `settings`, `pools`, `comparisons`, `by_length`),
and beside it `fidelity_long_logps.json`: every held-out sample's log p, log q (adapter) and log q (tuned t).

Usage:
    python benchmarks/fidelity_long.py [--pools long] [--temperatures 0.5 0.25] [--max_completion_length 80]
    python benchmarks/fidelity_long.py --output RESULT.json --excess_from RESULT_logps.json   # add excess_error
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from datasets import Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import device_info, pick_device, print_device, provenance
from _tasks import conversation
from fidelity_vs_tuned import closest_token_temperature, pool_prompts, ratio_trainer

from hf_seqtemp import load_default_model, sample_dataset, tune_token_temperature_once
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.measure import dataset_groups, score_dataset
from hf_seqtemp.metrics import (
    effective_temperature,
    excess_error,
    paired_interval,
    per_prompt_effective_temperature,
    per_prompt_kendall_tau,
    split_half_noise,
)
from hf_seqtemp.tasks.prompts import split_long_prompts, split_prompts

RECIPES = {
    "from_T": "ratio loss (L_p + 0.1 NLL), LoRA r=16 all-linear, from token temperature T, lr 1e-3 cosine",
    "from_tuned": "ratio loss (L_p + 0.1 NLL), LoRA r=16 all-linear, from the once-tuned token temperature, "
    "lr 3e-4 cosine",
    "from_tuned_fast": "ratio loss (L_p + 0.1 NLL), LoRA r=16 all-linear, from the once-tuned token temperature, "
    "lr 1e-3 cosine",
    "from_tuned_fresh": "ratio loss (L_p + 0.1 NLL), LoRA r=16 all-linear, from the once-tuned token temperature, "
    "lr 1e-3 cosine, fresh samples of p every step (prompt-only fit prompts, sample_every_steps=1)",
}
LEARNING_RATES = {"from_T": 1e-3, "from_tuned": 3e-4, "from_tuned_fast": 1e-3, "from_tuned_fresh": 1e-3}
FRESH = {"from_tuned_fresh"}  # recipes that train on the fit prompts alone, p sampled afresh at every step
POOLS = ("long", "open", "mixed")


def pool_split(pool: str, fit: int, validation: int, held_out: int, seed: int) -> dict:
    """`{"fit", "validation", "held_out"}` conversations of `pool`: disjoint prompts; validation comes from the
    training side of the split (the held-out prompts are the same whatever `fit` and `validation` ask)."""
    if pool not in POOLS:
        raise ValueError(f"`pool` must be one of {list(POOLS)}, got {pool!r}.")
    if pool == "mixed":  # conversations already, the training side shuffled so that fit and validation hold both kinds
        train, held = pool_prompts("mixed", fit + validation, held_out, seed)
        return {"fit": train[:fit], "validation": train[fit:], "held_out": held}
    split = split_long_prompts if pool == "long" else split_prompts
    train, held = split(fit + validation, held_out, seed=seed)
    parts = {"fit": train[:fit], "validation": train[fit:], "held_out": held}
    return {name: [conversation(p) for p in prompts] for name, prompts in parts.items()}


def cached_samples(folder, base, tokenizer, prompts, count: int, seed: int, kwargs: dict):
    """`sample_dataset(...)` of `prompts`, read from `folder` when the same draw (the model's weights, prompts, count,
    seed, length) was saved there before, else drawn and saved (no folder: drawn)."""
    if folder is None:
        return sample_dataset(base, tokenizer, prompts, num_samples=count, seed=seed, **kwargs)
    import hashlib

    from datasets import load_from_disk

    from hf_seqtemp.fingerprint import weights_sha256

    weights = weights_sha256(base)[0]  # a folder shared between models never returns another model's samples
    key = json.dumps([weights, prompts, count, seed, kwargs["max_new_tokens"]], sort_keys=True, default=str)
    path = Path(folder) / hashlib.sha256(key.encode()).hexdigest()[:16]
    if path.is_dir():
        print(f"  read from {path}", flush=True)
        return load_from_disk(str(path))
    data = sample_dataset(base, tokenizer, prompts, num_samples=count, seed=seed, **kwargs)
    data.save_to_disk(str(path))
    return data


def _rounded(values) -> list[float]:
    return [round(float(v), 5) for v in values]


def tuned_or_closest(base, fit, temperature: float, tokenizer, score: dict) -> tuple[float, bool | float]:
    """The once-tuned token temperature and `True`; where no token temperature reaches T on the fit prompts (T_eff(t)
    peaks below T), what a user who tunes once can do instead: the t of `fidelity_vs_tuned.GRID` whose T_eff on the
    fit prompts is closest to T, and that T_eff."""
    try:
        return tune_token_temperature_once(base, fit, temperature, tokenizer, **score), True
    except ValueError as error:
        if "no token temperature" not in str(error):
            raise
        t, t_eff, _ = closest_token_temperature(base, fit, temperature, score["batch_size"])
        print(f"  no token temperature reaches T = {temperature:g} on the fit prompts: the closest, t = {t:g}, gives "
              f"T_eff {t_eff:.3f} there", flush=True)  # fmt: skip
        return t, t_eff


def add_excess(output: Path, logps_path: Path) -> None:
    """Adds to each per-prompt-error row of `output` both routes' [`excess_error`] (the error sampling noise does not
    explain), recomputed from the per-sample log-likelihoods a run wrote beside it (runs before the figure existed)."""
    payload, side = json.loads(output.read_text()), json.loads(logps_path.read_text())["held_out"]
    for row in payload["comparisons"]:
        key = f"{row['pool']}@{row['target_temperature']:g}"
        if row["metric"] == "per_prompt_t_eff_error" and key in side:
            h = side[key]
            row["excess_error"] = {
                route: excess_error(h["p"], h[route], h["groups"], row["target_temperature"])
                for route in ("adapter", "tuned_once")
            }
            print(f"{key}: {row['excess_error']}")
    payload.setdefault("amended", []).append({**provenance(), "added": "excess_error, from " + logps_path.name})
    output.write_text(json.dumps(payload, indent=2, default=str) + "\n")


def route_figures(ref, policy, groups, temperature: float) -> dict:
    t_effs = list(per_prompt_effective_temperature(ref, policy, groups).values())
    return {
        "error": [abs(v - temperature) / temperature for v in t_effs],
        "t_eff": t_effs,
        "kendall_tau": list(per_prompt_kendall_tau(ref, policy, groups).values()),
        "pooled_t_eff": effective_temperature(ref, policy, groups=groups),
        "noise": split_half_noise(ref, policy, groups, temperature),
        "noise_of_mean": split_half_noise(ref, policy, groups, temperature, level="mean"),
        "excess": excess_error(ref, policy, groups, temperature),
    }


def train_recipe(recipe, temperature, start, data, prompts, settings, workdir):
    """Trains `recipe` on the fit samples `data`, or (a `FRESH` recipe) on the fit `prompts` alone, p's
    `num_generations` completions per prompt drawn afresh for every batch (`sample_every_steps=1`)."""
    fresh = {}
    if recipe in FRESH:
        data = Dataset.from_dict({"prompt": prompts})
        fresh = {"sample_every_steps": 1, "max_completion_length": settings["max_completion_length"]}
    trainer = ratio_trainer(temperature, data, settings, workdir, learning_rate=LEARNING_RATES[recipe],
                            init_token_temperature=None if recipe == "from_T" else start,
                            num_generations=settings["num_generations"], **fresh)  # fmt: skip
    trainer.train()
    return trainer


def recipe_summary(figures: dict) -> dict:
    """A recipe's mean per-prompt error, mean τ and pooled T_eff on the validation and held-out prompts."""
    return {
        part: {
            "error": statistics.fmean(values["error"]),
            "kendall_tau": statistics.fmean(values["kendall_tau"]),
            "pooled_t_eff": values["pooled_t_eff"],
        }
        for part, values in figures.items()
        if part in ("validation", "held_out")
    }


def lengths_by_prompt(data, groups) -> list[float]:
    sums: dict = {}
    for group, mask in zip(groups, data["completion_mask"]):
        sums.setdefault(group, []).append(sum(mask))
    return [statistics.fmean(v) for v in sums.values()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", nargs="+", default=["long"], choices=list(POOLS))
    parser.add_argument("--temperatures", nargs="+", type=float, default=[0.5, 0.25])
    parser.add_argument("--recipes", nargs="+", default=["from_T", "from_tuned"], choices=list(RECIPES))
    parser.add_argument("--fit_prompts", type=int, default=48)
    parser.add_argument("--validation_prompts", type=int, default=16)
    parser.add_argument("--held_out_prompts", type=int, default=16)
    parser.add_argument("--num_generations", type=int, default=8)
    parser.add_argument("--validation_generations", type=int, default=32)
    parser.add_argument("--held_out_generations", type=int, default=128)
    parser.add_argument("--max_completion_length", type=int, default=80)
    parser.add_argument("--max_steps", type=int, default=32)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--split_seed", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--token_temperature",
        type=float,
        default=None,
        help="use this t as the once-tuned token temperature instead of searching it (e.g. t = 1 at "
        "T = 2 on long answers, where no t reaches T and the search's grid takes 20 minutes)",
    )
    parser.add_argument("--samples_cache", default=None,
                        help="a folder of p's samples: a pool's part drawn before with the same prompts, count, seed "
                        "and length is read from it instead of drawn again")  # fmt: skip
    parser.add_argument("--output", default="outputs/bench/fidelity_long.json")
    parser.add_argument("--plot", action="store_true", help="draw the gap against answer length from --output")
    parser.add_argument("--excess_from", help="add `excess_error` to --output's rows from this *_logps.json, and stop")
    args = parser.parse_args(argv)
    if args.excess_from:
        add_excess(Path(args.output), Path(args.excess_from))
        return
    if args.plot:
        plot(json.loads(Path(args.output).read_text()), Path(args.output).with_suffix(".png"))
        return
    torch.set_num_threads(args.threads)
    device = pick_device(None)
    info = print_device(device)
    base, tokenizer = load_default_model()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"provenance": provenance(info | device_info(device)), "benchmark": "fidelity_long"}
    payload.update(settings={**vars(args), "recipes": {k: RECIPES[k] for k in args.recipes}}, pools={})
    payload.update(comparisons=[], by_length=[])
    score = {"batch_size": 64}
    logps: dict = {}  # per-sample held-out log-likelihoods: every figure can be recomputed from them
    for pool in args.pools:
        parts = pool_split(pool, args.fit_prompts, args.validation_prompts, args.held_out_prompts, args.split_seed)
        kwargs = {"max_new_tokens": args.max_completion_length, "batch_size": 128}
        counts = {"fit": args.num_generations, "validation": args.validation_generations,
                  "held_out": args.held_out_generations}  # fmt: skip
        data, p_logps, groups = {}, {}, {}
        for offset, (name, prompts) in enumerate(parts.items()):
            print(f"[{pool}] sampling {counts[name]} × {len(prompts)} {name} completions of p", flush=True)
            data[name] = cached_samples(args.samples_cache, base, tokenizer, prompts, counts[name],
                                        args.seed + offset, kwargs)  # fmt: skip
            groups[name] = list(dataset_groups(data[name], tokenizer))
            p_logps[name], _ = score_dataset(base, data[name], AutoregressiveScorer(), **score)
        clipped = {name: sum(d["truncated"]) / len(d) for name, d in data.items()}
        lengths = {name: statistics.fmean(sum(m) for m in d["completion_mask"]) for name, d in data.items()}
        payload["pools"][pool] = {"clipped_fraction": clipped, "mean_answer_tokens": lengths,
                                  "prompts": {name: len(p) for name, p in parts.items()}}  # fmt: skip
        print(f"[{pool}] clipped {clipped}, mean answer tokens {lengths}", flush=True)
        for temperature in args.temperatures:
            started = time.time()
            if args.token_temperature is None:
                t_once, reached = tuned_or_closest(base, data["fit"], temperature, tokenizer, score)
            else:  # given, not searched: recorded as such
                t_once, reached = args.token_temperature, "given"
            once = {name: score_dataset(base, data[name], AutoregressiveScorer(token_temperature=t_once), **score)[0]
                    for name in ("validation", "held_out")}  # fmt: skip
            print(f"[{pool}] T = {temperature:g}: once-tuned token temperature {t_once:.4f}", flush=True)
            recipes = {}
            for recipe in args.recipes:
                with tempfile.TemporaryDirectory() as workdir:
                    trainer = train_recipe(recipe, temperature, t_once, data["fit"], parts["fit"], vars(args),
                                           workdir)  # fmt: skip
                    scored = {name: score_dataset(trainer.model, data[name], AutoregressiveScorer(), **score)[0]
                              for name in ("validation", "held_out")}  # fmt: skip
                    trainer.close()
                figures = {name: route_figures(p_logps[name], scored[name], groups[name], temperature)
                           for name in scored}  # fmt: skip
                recipes[recipe] = {**figures, "held_out_logps": scored["held_out"]}
                print(f"  {recipe}: validation error {statistics.fmean(figures['validation']['error']):.4f}, "
                      f"held-out error {statistics.fmean(figures['held_out']['error']):.4f}", flush=True)  # fmt: skip
            chosen = min(recipes, key=lambda r: statistics.fmean(recipes[r]["validation"]["error"]))
            adapter = recipes[chosen]["held_out"]
            tuned = route_figures(p_logps["held_out"], once["held_out"], groups["held_out"], temperature)
            tuned_validation = route_figures(p_logps["validation"], once["validation"], groups["validation"],
                                             temperature)  # fmt: skip
            common = {
                "pool": pool,
                "target_temperature": temperature,
                "max_completion_length": args.max_completion_length,
                "clipped_fraction": clipped["held_out"],
                "mean_answer_tokens": lengths["held_out"],
                "training": f"{RECIPES[chosen]}; {args.max_steps} steps of {args.batch_size} sequences "
                f"({args.fit_prompts} prompts × {args.num_generations} samples of p"
                + (", drawn afresh for every batch)" if chosen in FRESH else ")"),
                "recipe": chosen,
                "chosen_on": f"{args.validation_prompts} validation prompts of the training side",
                "held_out_prompts": len(set(groups["held_out"])),
                "samples_per_prompt": args.held_out_generations,
                "tuned_once_token_temperature": t_once,
                "tuned_once_reaches_target": reached is True if reached != "given" else None,
                "tuned_once_fit_t_eff": temperature if reached is True else None if reached == "given" else reached,
                "tuned_once_given": reached == "given",
                "pooled_t_eff": {"adapter": adapter["pooled_t_eff"], "tuned_once": tuned["pooled_t_eff"]},
                "recipes": {recipe: recipe_summary(figures) for recipe, figures in recipes.items()},
                "tuned_once_validation_error": statistics.fmean(tuned_validation["error"]),
                "seconds": time.time() - started,
            }
            for metric, a, b, sign in (
                ("per_prompt_t_eff_error", adapter["error"], tuned["error"], -1),
                ("kendall_tau", adapter["kendall_tau"], tuned["kendall_tau"], 1),
            ):
                differences = [sign * (x - y) for x, y in zip(a, b)]
                row = {**common, "metric": metric, "adapter": statistics.fmean(a), "tuned_once": statistics.fmean(b),
                       "difference": statistics.fmean(differences), "ci95": paired_interval(differences)}  # fmt: skip
                if metric == "per_prompt_t_eff_error":
                    row["noise"] = adapter["noise"]
                    row["noise_by_route"] = {"adapter": adapter["noise"], "tuned_once": tuned["noise"]}
                    row["noise_at_most_half_the_smaller_error"] = (
                        adapter["noise"] <= min(row["adapter"], row["tuned_once"]) / 2
                    )
                    row["noise_of_mean"] = {"adapter": adapter["noise_of_mean"], "tuned_once": tuned["noise_of_mean"]}
                    row["excess_error"] = {"adapter": adapter["excess"], "tuned_once": tuned["excess"]}
                    row["noise_of_mean_at_most_half_the_smaller_error"] = (
                        max(adapter["noise_of_mean"], tuned["noise_of_mean"])
                        <= min(row["adapter"], row["tuned_once"]) / 2
                    )
                payload["comparisons"].append(row)
                low, high = row["ci95"]
                print(f"  {metric:24s} adapter ({chosen}) {row['adapter']:.4f}  tuned once (t={t_once:.3g}) "
                      f"{row['tuned_once']:.4f}  difference {row['difference']:+.4f} [{low:+.4f}, {high:+.4f}]",
                      flush=True)  # fmt: skip
            payload["by_length"].append({
                "pool": pool, "target_temperature": temperature,
                "mean_answer_tokens": lengths_by_prompt(data["held_out"], groups["held_out"]),
                "adapter_error": adapter["error"], "tuned_once_error": tuned["error"],
            })  # fmt: skip
            out.write_text(json.dumps(payload, indent=2, default=str) + "\n")
            logps[f"{pool}@{temperature:g}"] = {
                "groups": [str(g) for g in groups["held_out"]],
                "answer_tokens": [sum(m) for m in data["held_out"]["completion_mask"]],
                "p": _rounded(p_logps["held_out"]), "adapter": _rounded(recipes[chosen]["held_out_logps"]),
                "tuned_once": _rounded(once["held_out"]),
            }  # fmt: skip
            side = {"provenance": payload["provenance"], "benchmark": "fidelity_long_logps", "held_out": logps}
            out.with_name(out.stem + "_logps.json").write_text(json.dumps(side) + "\n")
            print(f"wrote {out}", flush=True)


def plot(payload: dict, path: Path) -> None:
    """Per held-out prompt: the once-tuned token temperature's per-prompt error minus the adapter's (positive: the
    adapter closer to T) against the prompt's mean answer length, one panel per target temperature."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = payload["by_length"]
    figure, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 3.8), squeeze=False)
    for axis, row in zip(axes[0], rows):
        gaps = [t - a for t, a in zip(row["tuned_once_error"], row["adapter_error"])]
        axis.scatter(row["mean_answer_tokens"], gaps, s=18)
        axis.axhline(0.0, color="grey", linewidth=0.8)
        axis.set_xlabel("mean answer length of the prompt (tokens)")
        axis.set_ylabel("error of tuned t − error of adapter")
        axis.set_title(f"{row['pool']} pool, T = {row['target_temperature']:g}")
        axis.grid(alpha=0.3)
    figure.suptitle("Per-prompt T_eff error gap against answer length\n(positive: the adapter is closer to T)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
