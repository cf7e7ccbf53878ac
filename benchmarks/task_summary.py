# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The task tables of several runs in one Markdown summary: the trained rows over their training seeds.

`task_table.py` trains each adapter once (its `--train_seed`); with 8 training steps the trained rows move with the
training run far more than with the sampling seed. This script reads one full run per family (all rows, training
seed 0), any `--trained_only` runs of the same family and settings with other training seeds, and any runs of
some `--rows` (e.g. SMC distillation over three training seeds, or a larger SMC), and prints:

1. per family, every row of training seed 0 (the samplers, and the trained rows of training seed 0), with the runs
   they came from;
2. per family and trained row, pass@1 / T_eff / τ per training seed, and pass@1 pooled over the training seeds with a
   95 % interval (bootstrap over held-out prompts of each prompt's mean over training and sampling seeds);
3. the pooled rows paired with the samplers and with each other: `ours T` and `distill T` minus `token T`, `mcmc`,
   `smc` (every N), `smc-adapter` and `rloo T` (and `distill T` minus `ours T`), pass@1 difference with a paired
   bootstrap over prompts (a trained row pooled over its training seeds; two trained rows over the training seeds
   both have, each prompt against itself under the same seeds).

Usage:
    python benchmarks/task_summary.py RUN.json [RUN.json ...] > summary.md
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _task_report import cells

BOOTSTRAP = 2000
TRAINED = ("ours", "rloo", "distill", "smc-adapter")  # rows that depend on a training run (and its seed)


def load(paths: list[str]) -> tuple[dict, dict]:
    """`(full, trained)`: per family, the rows of the table of training seed 0 (every sampler row of every run, the
    trained rows of seed 0) with the runs they came from; and `trained[(family, row)][train_seed]` rows."""
    full, trained = {}, defaultdict(dict)
    for path in paths:
        payload = json.loads(Path(path).read_text())
        settings = payload["settings"]
        seed = settings.get("train_seed", 0)
        for row in payload["rows"]:
            is_trained = row["row"].startswith(TRAINED)
            if is_trained:
                trained[(row["family"], row["row"])][seed] = row
            if is_trained and (seed != 0 or settings.get("trained_only")):
                continue
            table = full.setdefault(row["family"], {"runs": [], "rows": []})
            if not any(run is settings for run in table["runs"]):
                table["runs"].append(settings)
            table["rows"].append(row)
    return full, trained


def describe(settings: dict) -> str:
    rows = ", ".join(settings.get("rows", ["every row"]))
    return (
        f"`--{settings.get('mode', 'cpu')}`, rows: {rows}; α ∈ {settings['alphas']}, {settings['held_out_prompts']} held-out "
        f"prompts × {settings['samples']} samples × sampling seeds {settings['seeds']}, training seed "
        f"{settings.get('train_seed', 0)}, wall {settings['wall_seconds']:.0f} s"
    )


def _figure(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def interval(values: list[float], rng: random.Random) -> tuple[float, float]:
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP))
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def pooled_per_prompt(rows: list[dict]) -> list[float]:
    """Each prompt's pass@1 averaged over the given rows (one per training seed)."""
    return [statistics.fmean(values) for values in zip(*(r["pass@1_per_prompt"] for r in rows))]


def summary(paths: list[str]) -> str:
    full, trained = load(paths)
    rng, out = random.Random(0), []
    for family, run in full.items():
        out += [f"**{family}** ({'; '.join(describe(s) for s in run['runs'])})"]
        out += [
            "",
            "| row | pass@1 [95% CI] | per seed | pass@8 | T_eff | τ | calls | token-fwd/answer | s/answer | train s |",
            "| --- |" + " --- |" * 9,
        ]
        out += ["| " + " | ".join(cells(row)[1:]) + " |" for row in run["rows"]]
        out.append("")
    out += [
        "| family | row | pass@1 per training seed | T_eff per seed | τ per seed | pass@1 pooled [95% CI] |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (family, name), by_seed in sorted(trained.items()):
        rows = [by_seed[k] for k in sorted(by_seed)]
        values = pooled_per_prompt(rows)
        low, high = interval(values, rng)
        seeds = " / ".join(f"{r['pass@1']:.3f}" for r in rows)
        t_eff = " / ".join(_figure(r.get("t_eff")) for r in rows)  # none for SMC rows (no density)
        tau = " / ".join(_figure(r.get("kendall_tau")) for r in rows)
        out.append(
            f"| {family} | {name} (seeds {sorted(by_seed)}) | {seeds} | {t_eff} | {tau} | "
            f"{statistics.fmean(values):.3f} [{low:.3f}, {high:.3f}] |"
        )
    out += [
        "",
        "| pass@1 difference, paired over prompts (trained rows pooled over their common seeds) | mean [95% CI] |",
    ]
    out.append("| --- | --- |")
    for (family, name), by_seed in sorted(trained.items()):
        if not name.startswith(("ours", "distill")):
            continue
        temperature = name.split("=")[1]
        alpha = f"{1 / float(temperature):g}"
        samplers = {r["row"]: r["pass@1_per_prompt"] for r in full.get(family, {"rows": []})["rows"]}
        samplers = {k: v for k, v in samplers.items() if not k.startswith(TRAINED)}
        smc = sorted(k for k in samplers if k == f"smc α={alpha}" or k.startswith(f"smc α={alpha} "))
        adapters = sorted(k for (f, k) in trained if f == family and k.startswith(f"smc-adapter α={alpha} "))
        compared = ["ancestral", f"token T={temperature}", f"mcmc α={alpha}", *smc, *adapters]
        compared += [f"rloo T={temperature}", f"ours T={temperature}"] if name.startswith("distill") else []
        compared += [f"rloo T={temperature}"] if name.startswith("ours") else []
        for other in compared:
            if other == name:
                continue
            if other in samplers:
                values, theirs, note = pooled_per_prompt(list(by_seed.values())), samplers[other], ""
            elif (family, other) in trained:  # two trained rows: the training seeds both have, paired
                common = sorted(set(by_seed) & set(trained[(family, other)]))
                if not common:
                    continue
                values = pooled_per_prompt([by_seed[k] for k in common])
                theirs = pooled_per_prompt([trained[(family, other)][k] for k in common])
                note = f" (training seeds {common})"
            else:
                continue
            diffs = [a - b for a, b in zip(values, theirs)]
            low, high = interval(diffs, rng)
            out.append(
                f"| {family}: {name} − {other}{note} | {statistics.fmean(diffs):+.3f} [{low:+.3f}, {high:+.3f}] |"
            )
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="task_table.json files (full runs and --trained_only runs)")
    print(summary(parser.parse_args(argv).runs), end="")


if __name__ == "__main__":
    main()
