# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Which route? The README's decision table and figure, computed from committed results only.

Reads the task tables (`task_table_cpu_*.json`: pass@1 / pass@8 on three checkable families, model calls and
token-forwards per answer, training seconds, T_eff / τ of the trained rows on held-out prompts) and the enumerable
toy's sampler benchmarks (`samplers.json`, `smc_proposals.json`: KL of the answer law to p^4), all at α = 4
(T = 0.25), the one α every family was measured at. Per route it keeps:

- cost per answer: sequential model calls and token-forwards (the GPU latency is not measured: no committed GPU
  sampling run exists), and the training seconds (8 steps on 32 prompts, one CPU thread);
- fit: T_eff / τ against p on held-out prompts (trained rows; the samplers have no density to score), and
  KL(answer law ‖ p^4) on the enumerable toy;
- answers: pass@1 with a 95 % bootstrap interval over the 16 held-out prompts of each family (a trained row pooled
  over its three training runs), pass@8, and the number of distinct answers among each prompt's 8 samples (1 when a
  route has collapsed to one answer per prompt).

pass@8 and the distinct answers are recomputed from the answers each JSON records per prompt and seed, checked
against the gold answers of the split; the recomputed pass@1 must equal the JSON's own per-prompt figures.

Usage:
    python benchmarks/decision_table.py            # writes benchmarks/results/decision.json and decision.png
    python benchmarks/decision_table.py --markdown # prints the README's tables from decision.json
    python benchmarks/decision_table.py --plot     # redraws decision.png from decision.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, provenance
from _tasks import get_family, split_family

RESULTS = REPO / "benchmarks" / "results"
SHORT_FAMILIES = ("addition", "capitals", "comparison")  # answers of at most 4 tokens: the cost and figure
LONG_FAMILIES = ("capital_after_sentence",)  # a sentence, then the answer: 96 tokens of reply, one training run
FAMILIES = SHORT_FAMILIES + LONG_FAMILIES
BOOTSTRAP = 2000
# route: (key, label, task row, task-table files per training seed (`{}`: the family), toy KL source)
FULL = "task_table_cpu_{}.json"
TRAINED = (FULL, "task_table_cpu_{}_train_seed1.json", "task_table_cpu_{}_train_seed2.json")  # training seeds 0, 1, 2
DISTILLED = tuple(f"task_table_cpu_{{}}_distill_train_seed{seed}.json" for seed in range(3))
# majority vote and answer-level sharpening over 4 samples; a rerun of the SMC rows that records their ESS (whose
# answer-level rows counted "no answer" as an answer, before they followed self-consistency: not read here)
ANSWER_LEVEL = ("task_table_cpu_{}_answer_level.json",)
SMC_ESS = "task_table_cpu_{}_smc_ess.json"
TUNED_PIMH = "task_table_cpu_{}_tuned_pimh.json"  # the once-tuned token temperature; SMC-4 and its PIMH chains
# long families: the adapter as SMC's proposal with PIMH chains (a second distillation run of training seed 0)
ADAPTER_PIMH = "task_table_cpu_{}_adapter_pimh.json"
# MH power sampling rerun once every row of a call draws its own block boundary (c4a5202: before, one boundary per
# MH step served the whole call, so the answers of one call were one correlated draw and their pass@8 was wrong)
MH_RERUN = "task_table_cpu_{}_mh.json"
LONG_ONLY = (ADAPTER_PIMH, MH_RERUN)
ROUTES = (
    ("token", "token temperature 0.25", "token T=0.25", (FULL,), ("samplers", "token_temperature")),
    ("tuned", "token temperature tuned once (T_eff 0.25 on training prompts)", "token tuned once T=0.25",
     (TUNED_PIMH,), None),
    ("ratio", "trained adapter (ratio loss)", "ours T=0.25", TRAINED, None),
    ("distill", "trained adapter (SMC distillation)", "distill T=0.25", DISTILLED, None),
    ("smc_adapter", "adapter as SMC's proposal, N = 4", "smc-adapter α=4 N=4", DISTILLED, ("smc_proposals", "adapter_N4")),
    ("smc8", "token-proposal SMC, N = 8", "smc α=4", (FULL,), None),
    ("smc4", "token-proposal SMC, N = 4 (one run's answer)", "smc α=4 N=4", (TUNED_PIMH,), None),
    ("smc4_pimh1", "SMC, N = 4, PIMH 1 step (2 runs)", "smc α=4 N=4 pimh=1", (TUNED_PIMH,), None),
    ("smc4_pimh3", "SMC, N = 4, PIMH 3 steps (4 runs)", "smc α=4 N=4 pimh=3", (TUNED_PIMH,), None),
    ("smc64", "token-proposal SMC, N = 64", "smc α=4 N=64", ("task_table_cpu_{}_smc64.json",), ("samplers", "smc")),
    ("mh", "MH power sampling (4 steps / block)", "mcmc α=4", (MH_RERUN,), ("samplers", "mh")),
    ("rloo", "RLOO, reward log p (β = 1/3)", "rloo T=0.25", TRAINED, None),
    ("vote_p4", "majority vote, 4 samples of p", "vote p N=4", ANSWER_LEVEL, None),
    ("sharpen_p4", "answer-level sharpening, 4 samples of p", "sharpen α=4 p N=4", ANSWER_LEVEL, None),
    ("vote_t4", "majority vote, 4 samples at token T 0.25", "vote T=0.25 N=4", ANSWER_LEVEL, None),
    ("sharpen_t4", "answer-level sharpening, 4 samples at token T 0.25", "sharpen α=4 T=0.25 N=4", ANSWER_LEVEL, None),
    ("ancestral", "p itself (ancestral sampling)", "ancestral", (FULL,), ("samplers", "plain")),
    # last, so that the bootstrap draws of the routes above do not move with them
    ("smc_adapter_pimh3", "adapter as SMC's proposal, N = 4, PIMH 3 steps (4 runs)", "smc-adapter α=4 N=4 pimh=3",
     (ADAPTER_PIMH,), None),
    ("smc_adapter_pimh7", "adapter as SMC's proposal, N = 4, PIMH 7 steps (8 runs)", "smc-adapter α=4 N=4 pimh=7",
     (ADAPTER_PIMH,), None),
)  # fmt: skip
# the ESS / N of the weights each SMC answer was drawn from: read from the rerun of the same route and settings
ROW_ALIASES = {"smc α=4": ("smc α=4 N=8",)}
"""Row names a later task table gives a route (the token-proposal SMC row names its particles since N became a
flag)."""
ESS_ROWS = {"smc8": "smc α=4 N=8", "smc_adapter": "smc-adapter α=4 N=4"}
# route pairs compared at equal token-forwards per answer (paired over the held-out prompts): the adapters cost one
# sample of p per answer (majority vote or sharpening over N = 1 sample is that sample: p itself, or token T), SMC-8
# and the adapter as SMC's proposal with N = 4 cost about four
COMPARISONS = (
    *[(a, b) for a in ("ratio", "distill") for b in ("ancestral", "token", "tuned")],
    *[(a, b) for a in ("smc8", "smc_adapter") for b in ("vote_p4", "sharpen_p4", "vote_t4", "sharpen_t4")],
    ("smc4_pimh1", "smc8"),  # 8 particles' token-forwards each: two runs of 4 in a chain, or one run of 8
    ("smc4_pimh3", "smc4"),
    ("smc_adapter_pimh3", "smc_adapter"),  # long family: what the chain buys over one run (4x the forwards)
    ("smc_adapter_pimh7", "mh"),  # long family: 8 runs of 4 particles cost about MH's token-forwards
)


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.is_file() else None


def _bootstrap(values: list[float], rng: random.Random) -> list[float]:
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP))
    return [means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]]


def per_prompt_answers(row: dict, settings: dict) -> list[list[list[bool]]]:
    """`[seed][prompt][sample]` correctness of a task row, read from the answers it recorded; its pass@1 per prompt
    must be the JSON's own (a check that the gold answers are the run's)."""
    family = get_family(row["family"])
    _, held_out = split_family(family, settings["train_prompts"], settings["held_out_prompts"], seed=0)
    correct = [
        [[answer == gold for answer in seed[i]] for i, (_, gold) in enumerate(held_out)] for seed in row["answers"]
    ]
    recomputed = [statistics.fmean(sum(s[i]) / len(s[i]) for s in correct) for i in range(len(held_out))]
    if any(abs(a - b) > 1e-9 for a, b in zip(recomputed, row["pass@1_per_prompt"])):
        raise ValueError(f"{row['family']} / {row['row']}: the recorded answers do not give the recorded pass@1")
    return correct


def task_figures(route_row: str, patterns: tuple, family: str, rng: random.Random) -> tuple[dict, list[str]] | None:
    """Pass@1 / pass@8 / distinct answers of one route on one family, pooled over the runs (training seeds) found."""
    runs, sources = [], []
    if family in LONG_FAMILIES:  # one table run holds a long family's rows (training seed 0); PIMH and MH rows others
        patterns = tuple(p for p in patterns if p in LONG_ONLY and (RESULTS / p.format(family)).is_file()) or (FULL,)
    for pattern in patterns:
        name = pattern.format(family)
        payload = _load(name)
        names = (route_row, *ROW_ALIASES.get(route_row, ()))
        rows = [r for r in (payload or {}).get("rows", []) if r["row"] in names]
        if rows:
            runs.append((rows[0], payload))
            sources.append(name)
    if not runs:
        return None
    prompts = len(runs[0][0]["pass@1_per_prompt"])
    pass1 = [[] for _ in range(prompts)]
    pass8 = [[] for _ in range(prompts)]
    distinct = []
    for row, payload in runs:
        correct = per_prompt_answers(row, payload["settings"])
        for seed_correct, seed_answers in zip(correct, row["answers"]):
            for i, (c, answers) in enumerate(zip(seed_correct, seed_answers)):
                pass1[i].append(sum(c) / len(c))
                pass8[i].append(float(any(c)))
                distinct.append(len(set(answers)))
    pass1 = [statistics.fmean(v) for v in pass1]
    pass8 = [statistics.fmean(v) for v in pass8]
    rows = [row for row, _ in runs]
    figures = {
        "pass@1": statistics.fmean(pass1),
        "pass@1_ci95": _bootstrap(pass1, rng),
        "pass@1_per_prompt": pass1,
        "pass@8": statistics.fmean(pass8) if len(row["answers"][0][0]) >= 8 else None,
        "pass@8_ci95": _bootstrap(pass8, rng) if len(row["answers"][0][0]) >= 8 else None,
        "distinct_answers_per_8": statistics.fmean(distinct),
        "runs": len(runs),
        "answers_per_prompt": sum(len(s[0]) for r in rows for s in r["answers"]),
        "calls": statistics.fmean(r["calls"] for r in rows),
        "token_forwards_per_answer": statistics.fmean(r["token_forwards_per_answer"] for r in rows),
        "train_seconds": [r["train_seconds"] for r in rows if r.get("train_seconds") is not None],
        "t_eff": [r["t_eff"] for r in rows if r.get("t_eff") is not None],
        "kendall_tau": [r["kendall_tau"] for r in rows if r.get("kendall_tau") is not None],
    }
    accepted = [r["pimh_acceptance"] for r in rows if r.get("pimh_acceptance") is not None]
    if accepted:
        figures["pimh_acceptance"] = statistics.fmean(accepted)
    return figures, sources


def toy_kl(source: tuple | None) -> dict | None:
    """KL(answer law ‖ p^4) on the enumerable toy: `samplers.json` (point) or `smc_proposals.json` (with its basic
    bootstrap interval over runs)."""
    if source is None:
        return None
    name, key = source
    payload = _load(f"{name}.json")
    if name == "samplers":
        return {"kl": payload["summary"]["kl_to_p_alpha_alpha4"][key], "interval": None, "source": f"{name}.json"}
    proposal, particles = key.split("_N")
    row = next(r for r in payload["rows"] if r["alpha"] == 4.0 and r["proposal"] == proposal
               and r["num_particles"] == int(particles))  # fmt: skip
    return {"kl": row["kl"], "interval": row["kl_interval"][1:], "source": f"{name}.json"}


def build() -> dict:
    rng = random.Random(0)
    routes, sources = [], set()
    for key, label, row, patterns, kl_source in ROUTES:
        tasks = {}
        for family in FAMILIES:
            found = task_figures(row, patterns, family, rng)
            if found is not None:
                tasks[family], used = found
                sources.update(used)
        kl = toy_kl(kl_source)
        if kl:
            sources.add(kl["source"])
        ess = ess_figures(ESS_ROWS.get(key), sources)
        routes.append({"route": key, "label": label, "task_row": row, "tasks": tasks, "toy_kl_to_p_alpha": kl,
                       "gpu_latency": None, "ess_fraction_per_answer": ess})  # fmt: skip
    return {
        "provenance": provenance(),
        "benchmark": "decision_table",
        "alpha": 4.0,
        "target_temperature": 0.25,
        "sources": sorted(sources),
        "routes": routes,
        "comparisons": comparisons(routes, random.Random(1)),
    }


def ess_figures(row: str | None, sources: set) -> dict | None:
    """`{family: ESS / N per answer}` of an SMC route, from the rerun that records it."""
    if row is None:
        return None
    found = {}
    for family in FAMILIES:
        name = SMC_ESS.format(family)
        rows = [r for r in (_load(name) or {}).get("rows", []) if r["row"] == row and "ess_fraction_per_answer" in r]
        if rows:
            found[family] = {
                "mean": rows[0]["ess_fraction_per_answer"],
                "quartiles": rows[0]["ess_fraction_quartiles"],
            }
            sources.add(name)
    return found or None


def comparisons(routes: list[dict], rng: random.Random) -> dict:
    """Per family, the pass@1 difference of each pair of [`COMPARISONS`] (first minus second), with a 95 % bootstrap
    interval over the held-out prompts (the same prompts resampled for both: a paired comparison)."""
    by_key = {route["route"]: route for route in routes}
    out = {}
    for family in FAMILIES:
        pairs = []
        for first, second in COMPARISONS:
            a, b = (by_key[key]["tasks"].get(family) for key in (first, second))
            if a is None or b is None:
                continue
            differences = [x - y for x, y in zip(a["pass@1_per_prompt"], b["pass@1_per_prompt"])]
            pairs.append({
                "first": first, "second": second, "difference": statistics.fmean(differences),
                "ci95": _bootstrap(differences, rng),
                "token_forwards_per_answer": [a["token_forwards_per_answer"], b["token_forwards_per_answer"]],
            })  # fmt: skip
        out[family] = pairs
    return out


def _span(values: list[float], digits: int = 2) -> str:
    if not values:
        return "—"
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if round(low, digits) == round(high, digits) else f"{low:.{digits}f}–{high:.{digits}f}"


def _cost_cells(route: dict) -> list[str]:
    tasks = [figures for family, figures in route["tasks"].items() if family in SHORT_FAMILIES]
    if not tasks:
        return ["not measured"] * 7
    calls = _span([t["calls"] for t in tasks], 0)
    forwards = _span([t["token_forwards_per_answer"] for t in tasks], 0)
    train = [s for t in tasks for s in t["train_seconds"]]
    t_eff = [v for t in tasks for v in t["t_eff"]]
    tau = [v for t in tasks for v in t["kendall_tau"]]
    fit = f"{statistics.fmean(t_eff):.2f} ({_span(t_eff)}) / {statistics.fmean(tau):.2f}" if tau else "— (no density)"
    if route["route"] == "ancestral":
        fit = "1 / 1 (it is p)"
    kl = route["toy_kl_to_p_alpha"]
    kl_text = "not measured"
    if kl:
        kl_text = f"{kl['kl']:.3g}" + (
            f" [{kl['interval'][0]:.3g}, {kl['interval'][1]:.3g}]" if kl["interval"] else ""
        )
    ess = route.get("ess_fraction_per_answer")
    ess_text = _span([figures["mean"] for figures in ess.values()]) if ess else "—"
    acceptance = [t["pimh_acceptance"] for t in tasks if t.get("pimh_acceptance") is not None]
    if acceptance:  # a PIMH chain: its acceptance rate, the figure that does not under-read the weights' tail
        ess_text = f"acceptance {_span(acceptance)}"
    return [calls, forwards, "not measured", f"{_span(train, 0)} s" if train else "none", fit, kl_text, ess_text]


def _answer_cell(figures: dict | None) -> str:
    if figures is None:
        return "not measured"
    low, high = figures["pass@1_ci95"]
    cell = f"{figures['pass@1']:.2f} [{low:.2f}, {high:.2f}]"
    cell += f" / {figures['pass@8']:.2f}" if figures["pass@8"] is not None else " / —"
    return cell + f" · {figures['distinct_answers_per_8']:.1f}"


def markdown(decision: dict) -> str:
    """The README's two tables: cost and fit per route, then answers per family."""
    head = (
        "| route | sequential calls / answer | token-forwards / answer | GPU latency | training (CPU, 8 steps) | "
        "T_eff / τ, target 0.25 | KL to p^4, toy | ESS / N per answer |\n|---|---:|---:|---|---|---|---|---|\n"
    )
    cost = "".join(
        f"| {r['label']} | " + " | ".join(_cost_cells(r)) + " |\n"
        for r in decision["routes"]
        if any(f in r["tasks"] for f in SHORT_FAMILIES)
    )
    answers = "| route | addition | capitals | comparison |\n|---|---|---|---|\n" + "".join(
        f"| {r['label']} | " + " | ".join(_answer_cell(r["tasks"].get(f)) for f in SHORT_FAMILIES) + " |\n"
        for r in decision["routes"]
        if any(f in r["tasks"] for f in SHORT_FAMILIES)
    )
    return head + cost + "\n" + answers + "\n" + _comparison_table(decision) + _long_table(decision)


def _long_table(decision: dict) -> str:
    """The long-answer families: pass@1 with its cost per answer (96 tokens of reply), the routes measured there."""
    table = ""
    for family in LONG_FAMILIES:
        rows = [r for r in decision["routes"] if family in r["tasks"]]
        if not rows:
            continue
        table += (
            f"\n| route, long answers ({family}) | pass@1 [95 %] / pass@8 · distinct | sequential calls / answer | "
            "token-forwards / answer |\n|---|---|---:|---:|\n"
        )
        for r in rows:
            figures = r["tasks"][family]
            table += (
                f"| {r['label']} | {_answer_cell(figures)} | {figures['calls']:.0f} | "
                f"{figures['token_forwards_per_answer']:.0f} |\n"
            )
    return table


def _comparison_table(decision: dict) -> str:
    """pass@1 differences at equal token-forwards per answer, paired over the held-out prompts."""
    labels = {route["route"]: route["label"] for route in decision["routes"]}
    pairs = {}
    for family in FAMILIES:
        for pair in decision.get("comparisons", {}).get(family, []):
            low, high = pair["ci95"]
            pairs.setdefault((pair["first"], pair["second"]), {})[family] = (
                f"{pair['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"
            )
    names = " | ".join(family.replace("_", " ") for family in FAMILIES)
    table = f"| pass@1 difference (first − second) | {names} |\n|---|{'---|' * len(FAMILIES)}\n"
    for (first, second), cells in pairs.items():
        row = " | ".join(cells.get(family, "not measured") for family in FAMILIES)
        table += f"| {labels[first]} − {labels[second]} | {row} |\n"
    return table


def _side_by_side(tasks: list[dict | None], close: float = 1.3, step: float = 1.06) -> list[float]:
    """One factor per route for its x (log axis): routes whose token-forwards lie within `close` of each other form a
    group, spread `step` apart around their own cost, so that no marker leaves its cost for another's."""
    costs = sorted((t["token_forwards_per_answer"], i) for i, t in enumerate(tasks) if t is not None)
    groups: list[list[int]] = []
    last = None
    for cost, index in costs:
        if last is None or cost > last * close:
            groups.append([])
        groups[-1].append(index)
        last = cost
    shifts = [1.0] * len(tasks)
    for group in groups:
        for j, index in enumerate(group):
            shifts[index] = step ** (j - (len(group) - 1) / 2)
    return shifts


# One colour and one marker per route, in the order of `decision["routes"]`: 17 hues far apart (no light/dark pairs
# of one hue, as tab20 has), and where two hues are near each other their markers differ in shape and size.
ROUTE_COLOURS = (
    "#1f77b4", "#17becf", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#000000",
    "#bcbd22", "#7f7f7f", "#000080", "#e6ab02", "#008080", "#800000", "#ff00ff", "#66a61e",
)  # fmt: skip
ROUTE_MARKERS = (*"osD^v<>XpP*hd8H", (4, 1, 0), (6, 1, 0))  # every one filled, so pass@8 (open) reads as open


PLOTTED = ("ancestral", "tuned", "ratio", "distill", "smc_adapter", "smc8", "mh", "vote_p4", "rloo")
"""The routes the figure shows: those a user chooses between (p, one tuned token temperature, the two adapters, the
adapter as SMC's proposal, token SMC, MH, majority vote, the RL peer); every route is in the tables."""


def plot(decision: dict, path: Path) -> None:
    """pass@1 [95 %] (filled) and pass@8 (open) against token-forwards per answer, one marker per route of
    [`PLOTTED`], one panel per family."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # drawn at the size a docs page shows it (about 8 inches wide), with type that stays legible there
    plt.rcParams.update({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11})
    figure, axes = plt.subplots(1, len(SHORT_FAMILIES), figsize=(11, 7.0), sharey=True, sharex=True)
    colours, markers = ROUTE_COLOURS, ROUTE_MARKERS
    routes = [route for route in decision["routes"] if route["route"] in PLOTTED]
    for axis, family in zip(axes, SHORT_FAMILIES):
        shifts = _side_by_side([route["tasks"].get(family) for route in routes])
        for index, (marker, route) in enumerate(zip(markers, routes)):
            figures = route["tasks"].get(family)
            if figures is None:
                continue
            x = figures["token_forwards_per_answer"] * shifts[index]
            low, high = figures["pass@1_ci95"]
            axis.errorbar(x, figures["pass@1"], yerr=[[figures["pass@1"] - low], [high - figures["pass@1"]]],
                          marker=marker, linestyle="none", color=colours[index], markersize=8, capsize=3,
                          label=route["label"])  # fmt: skip
            if figures["pass@8"] is not None:
                axis.plot(x, figures["pass@8"], marker=marker, linestyle="none", mfc="none", markersize=8,
                          color=colours[index], alpha=0.8)  # fmt: skip
        axis.set_xscale("log")
        axis.set_xticks([40, 100, 300], labels=["40", "100", "300"])
        axis.set_xlim(25, 600)
        axis.set_title(family)
        axis.set_xlabel("token-forwards per answer (log)")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("pass@1 [95 %] (filled), pass@8 (open)")
    axes[0].set_ylim(0, 1.02)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=2, fontsize=11, frameon=False)
    figure.suptitle("Routes at α = 4 (T = 0.25), SmolLM2-135M, 16 held-out prompts per family", fontsize=13)
    figure.tight_layout(rect=(0, 0.2, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(RESULTS / "decision.json"))
    parser.add_argument("--markdown", action="store_true", help="print the tables of an existing --output")
    parser.add_argument(
        "--plot", action="store_true", help="draw the figure of an existing --output (the JSON is left as it is)"
    )
    args = parser.parse_args(argv)
    output = Path(args.output)
    if args.markdown:
        print(markdown(json.loads(output.read_text())), end="")
        return
    if args.plot:
        plot(json.loads(output.read_text()), output.with_suffix(".png"))
        print(f"wrote {output.with_suffix('.png')}")
        return
    decision = build()
    output.write_text(json.dumps(decision, indent=2, ensure_ascii=False) + "\n")
    plot(decision, output.with_suffix(".png"))
    print(markdown(decision), end="")
    print(f"wrote {output} and {output.with_suffix('.png')}")


if __name__ == "__main__":
    main()
