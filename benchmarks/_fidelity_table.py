# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Bookkeeping shared by the fidelity benchmarks: the ±10 % / τ ≥ 0.9 flags, the Tables 4-5 printout, the summary."""

from __future__ import annotations

import statistics

from hf_seqtemp.metrics import paired_interval

TOLERANCE, MIN_TAU = 0.10, 0.9


def add_flags(rows: list[dict]) -> list[dict]:
    """Adds the relative miss |T_eff - T| / T and whether it is within ±10 % and τ ≥ 0.9 to every row."""
    for row in rows:
        row["rel_error"] = abs(row["t_eff"] - row["target"]) / row["target"]
        row["within_10pct"] = row["rel_error"] <= TOLERANCE
        row["tau_ok"] = row["kendall_tau"] >= MIN_TAU
    return rows


def print_table(rows: list[dict], title: str = "") -> None:
    """Method × T rows with the target, T_eff, its relative miss, Kendall τ, NLL per token, for diffusion the
    schedule variance (Tables 4-5 layout), and for a trained adapter the medians over held-out prompts of ESS / N of
    SMC's token and adapter proposals with the median per-prompt ratio."""
    variance = any("schedule_variance" in r for r in rows)
    header = f"{'method':<8}{'target T':>10}{'T_eff':>10}{'|ΔT|/T':>10}{'τ':>9}{'NLL/tok':>10}"
    ess = any("ess_ratio_adapter_over_token" in r for r in rows)
    header += f"{'Var_π':>10}" if variance else ""
    header += f"{'ESS/N tok':>10}{'ESS/N ad':>10}{'ratio':>7}" if ess else ""
    header += "   flags"
    print(f"\n{title}\n{header}\n{'-' * len(header)}" if title else f"\n{header}\n{'-' * len(header)}")
    for r in rows:
        flags = (
            []
            if r["method"] == "base"
            else [*([] if r["within_10pct"] else ["T_eff off >10%"]), *([] if r["tau_ok"] else ["τ<0.9"])]
        )
        line = (
            f"{r['method']:<8}{r['target']:>10g}{r['t_eff']:>10.4f}{r['rel_error']:>10.3f}{r['kendall_tau']:>9.4f}"
            f"{r['nll_per_token']:>10.4f}"
        )
        line += f"{r['schedule_variance']:>10.3f}" if variance else ""
        if ess and "ess_ratio_adapter_over_token" in r:
            line += f"{r['median_token_ess_fraction']:>10.3f}{r['median_adapter_ess_fraction']:>10.3f}"
            line += f"{r['ess_ratio_adapter_over_token']:>7.2f}"
        elif ess:
            line += " " * 27
        print(f"{line}   {', '.join(flags)}")


def summarise(rows: list[dict], prefix: str = "") -> dict:
    """Per method: mean relative T_eff miss, runs within ±10 %, lowest τ and mean NLL per token (keys `prefix` +
    method + statistic; diffusion rows also give the mean schedule variance, trained rows their ESS ratio per T and
    its bootstrap interval)."""
    summary = {}
    for method in dict.fromkeys(r["method"] for r in rows if r["method"] != "base"):
        mine = [r for r in rows if r["method"] == method]
        key = f"{prefix}{method}"
        summary[f"{key}_mean_rel_t_eff_error"] = statistics.mean(r["rel_error"] for r in mine)
        summary[f"{key}_within_10pct"] = f"{sum(r['within_10pct'] for r in mine)}/{len(mine)}"
        summary[f"{key}_min_kendall_tau"] = min(r["kendall_tau"] for r in mine)
        summary[f"{key}_mean_nll_per_token"] = statistics.mean(r["nll_per_token"] for r in mine)
        if "schedule_variance" in mine[0]:
            summary[f"{key}_mean_schedule_variance"] = statistics.mean(r["schedule_variance"] for r in mine)
        for r in mine:
            if "ess_ratio_adapter_over_token" in r:
                summary[f"{key}_T{r['target']:g}_ess_ratio_adapter_over_token"] = r["ess_ratio_adapter_over_token"]
            for name in (
                *("ess_ratio_interval", "ess_ratio_interval_these_prompts"),  # 95 % bootstrap intervals
                *("train_ess_ratio_adapter_over_token", "train_ess_ratio_interval"),  # on prompts it trained on
            ):
                if name in r:
                    summary[f"{key}_T{r['target']:g}_{name}"] = r[name]
    return summary


def paired_tau_intervals(rows: list[dict], baseline: str = "tuned", resamples: int = 2000, seed: int = 0) -> dict:
    """Per target T and trained method: the mean over held-out prompts of τ(method) − τ(`baseline`), prompt by prompt,
    with a 95 % percentile bootstrap interval over prompts (`[mean, low, high]`, key `<method>_T<T>_tau_minus_<baseline>`).

    Both rows score the same held-out completions, so the difference is paired; the interval covers the choice of
    held-out prompts, not the training seed. A fresh RNG per key, so adding a row does not move the others."""
    out = {}
    for row in rows:
        base = [r for r in rows if r["method"] == baseline and r["target"] == row["target"]]
        if row["method"] in ("base", "myopic", baseline) or not base or "tau_per_prompt" not in row:
            continue
        diffs = [a - b for a, b in zip(row["tau_per_prompt"], base[0]["tau_per_prompt"], strict=True)]
        key = f"{row['method']}_T{row['target']:g}_tau_minus_{baseline}"
        out[key] = [statistics.fmean(diffs), *paired_interval(diffs, seed=seed, replicates=resamples)]
    return out


def plot_within_prompts(logps: dict, groups, reports: dict, temperature: float, path: str, title: str) -> str:
    """Log p against log q of one run, points coloured by prompt: raw (left) and centred within each prompt (right).

    `logps` holds `"base"`, `"myopic"` and `"tempered"` held-out log-likelihoods, `reports` the rows of the last two.
    On the right, where each prompt's normaliser is removed, a model tempered exactly at T puts every point on the
    dashed line of slope 1/T; the solid lines have slope 1/T_eff (within-prompt least squares, Eq. 17).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    from hf_seqtemp.groups import group_codes, group_means

    codes = group_codes(groups, len(logps["base"]))
    base, tempered = logps["base"].double(), logps["tempered"].double()
    colours = plt.get_cmap("tab20")(codes.numpy() % 20)
    figure, (raw, centred) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=100)
    raw.scatter(base, tempered, s=10, c=colours, alpha=0.8)
    raw.set(xlabel="log p(x)  (base model)", ylabel="log q(x)", title="raw: each colour one held-out prompt")
    base_c, tempered_c = base - group_means(base, codes), tempered - group_means(tempered, codes)
    centred.scatter(base_c, tempered_c, s=10, c=colours, alpha=0.8)
    span = torch.linspace(base_c.min().item(), base_c.max().item(), 2, dtype=torch.float64)
    for name, colour, label in (("tempered", "tab:blue", "trained"), ("myopic", "tab:orange", "myopic (token T)")):
        t_eff, tau = reports[name]["t_eff"], reports[name]["kendall_tau"]
        centred.plot(span, span / t_eff, color=colour, linewidth=1.5, label=f"{label}: T_eff {t_eff:.3f}, τ {tau:.3f}")
    centred.plot(span, span / temperature, "k--", linewidth=1, label=f"target slope 1/T = {1 / temperature:.3g}")
    centred.set(xlabel="log p(x) − prompt mean", ylabel="log q(x) − prompt mean", title="centred within prompts")
    centred.legend(fontsize=8)
    figure.suptitle(f"{title}, target T = {temperature:g} ({len(base)} held-out completions)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def long_answers_markdown(payloads: dict[str, dict]) -> str:
    """The README's table of the long-answer runs (`{result file: fidelity_long payload}`): per run, pool and target
    T, both routes' per-prompt T_eff error and Kendall τ on the held-out prompts, their paired difference (+: the
    adapter better) with its 95 % interval over prompts, the split-half noise of the error (of one prompt's / of
    the mean over prompts) and each route's error beyond that noise (`excess_error`'s `rms_excess`: 0 where the
    per-prompt errors are noise)."""
    rows = {}
    for name, payload in payloads.items():
        for row in payload["comparisons"]:
            rows.setdefault((name, row["pool"], row["target_temperature"]), {})[row["metric"]] = row
    lines = [
        (
            "| result | pool, T | answers (tokens, cut) | held-out | tuned t | per-prompt T_eff error, adapter / tuned "
            "once | difference | noise: one prompt / mean | error beyond noise, adapter / tuned once | Kendall τ, adapter "
            "/ tuned once | difference |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, pool, temperature), metrics in rows.items():
        error, tau = metrics["per_prompt_t_eff_error"], metrics.get("kendall_tau")
        of_mean = error.get("noise_of_mean")
        noise = f"{error['noise']:.3f} / " + (f"{max(of_mean.values()):.4f}" if of_mean else "—")
        cells = [
            f"[`{name}`](benchmarks/results/{name})",
            f"{pool}, {temperature:g}",
            (
                f"mean {error['mean_answer_tokens']:.0f} of {error['max_completion_length']}, "
                f"{100 * error['clipped_fraction']:.1f} % cut"
            ),
            f"{error['held_out_prompts']} × {error['samples_per_prompt']}",
            f"{error['tuned_once_token_temperature']:.3f}",
            f"{error['adapter']:.4f} / {error['tuned_once']:.4f}",
            _signed(error),
            noise,
            (
                " / ".join(f"{error['excess_error'][r]['rms_excess']:.4f}" for r in ("adapter", "tuned_once"))
                if "excess_error" in error
                else "—"
            ),
            f"{tau['adapter']:.3f} / {tau['tuned_once']:.3f}" if tau else "—",
            _signed(tau) if tau else "—",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _signed(row: dict) -> str:
    low, high = row["ci95"]
    text = f"{row['difference']:+.4f} [{low:+.4f}, {high:+.4f}]"
    return f"**{text}**" if low > 0 or high < 0 else text
