# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Bookkeeping shared by the fidelity benchmarks: the ±10 % / τ ≥ 0.9 flags, the Tables 4-5 printout, the summary."""

from __future__ import annotations

import statistics

TOLERANCE, MIN_TAU = 0.10, 0.9


def add_flags(rows: list[dict]) -> list[dict]:
    """Adds the relative miss |T_eff - T| / T and whether it is within ±10 % and τ ≥ 0.9 to every row."""
    for row in rows:
        row["rel_error"] = abs(row["t_eff"] - row["target"]) / row["target"]
        row["within_10pct"] = row["rel_error"] <= TOLERANCE
        row["tau_ok"] = row["kendall_tau"] >= MIN_TAU
    return rows


def print_table(rows: list[dict], title: str = "") -> None:
    """Method × T rows with the target, T_eff, its relative miss, Kendall τ, NLL per token and, for diffusion, the
    schedule variance (Tables 4-5 layout)."""
    variance = any("schedule_variance" in r for r in rows)
    header = f"{'method':<8}{'target T':>10}{'T_eff':>10}{'|ΔT|/T':>10}{'τ':>9}{'NLL/tok':>10}"
    header += f"{'Var_π':>10}   flags" if variance else "   flags"
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
        print(f"{line}   {', '.join(flags)}")


def summarise(rows: list[dict], prefix: str = "") -> dict:
    """Per method: mean relative T_eff miss, runs within ±10 %, lowest τ and mean NLL per token (keys `prefix` +
    method + statistic; diffusion rows also give the mean schedule variance)."""
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
    return summary
