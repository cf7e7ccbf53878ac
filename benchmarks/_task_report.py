# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The task benchmark's table, printed and as Markdown."""

from __future__ import annotations

COLUMNS = (
    "family", "row", "pass@1 [95% CI]", "per seed", "pass@8", "T_eff", "τ", "calls", "token-fwd/answer",
    "s/answer", "train s",
)  # fmt: skip


def _number(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def cells(row: dict) -> list[str]:
    if "note" in row:
        return [row["family"], row["row"], row["note"], *["—"] * (len(COLUMNS) - 3)]
    low, high = row["pass@1_ci95"]
    per_seed = " ".join(f"{v:.2f}" for v in row["pass@1_per_seed"])
    train = row.get("train_seconds")
    train = "—" if train is None else f"{train:.0f} ({row['train_steps']} steps)"
    return [
        row["family"],
        row["row"],
        f"{row['pass@1']:.3f} [{low:.3f}, {high:.3f}]",
        per_seed,
        _number(row.get("pass@8")),
        _number(row.get("t_eff")),
        _number(row.get("kendall_tau")),
        f"{row['calls']:.0f}",
        f"{row['token_forwards_per_answer']:.0f}",
        f"{row['seconds_per_answer']:.3f}",
        train,
    ]


def print_rows(rows: list[dict]) -> None:
    table = [list(COLUMNS)] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    for index, line in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
        if index == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))


def markdown_table(rows: list[dict], settings: dict, differences: dict | None = None) -> str:
    head = (
        f"Task table ({settings['mode']} mode): held-out prompts, sampling seeds {settings['seeds']}, "
        f"{settings['samples']} samples per prompt and seed, ≤ {settings['max_new_tokens']} new tokens, "
        f"wall time {settings['wall_seconds']:.0f} s."
    )
    lines = [
        head,
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + " --- |" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    if differences:
        lines += ["", "| pass@1 difference (paired over prompts) | mean [95% CI] |", "| --- | --- |"]
        lines += [f"| {k} | {m:+.3f} [{lo:+.3f}, {hi:+.3f}] |" for k, (m, lo, hi) in differences.items()]
    return "\n".join(lines) + "\n"


def paired_differences(rows: list[dict], bootstrap: int = 2000, seed: int = 0) -> dict:
    """pass@1 of `ours T` minus each other row's, per family and T, with a 95 % interval from a PAIRED bootstrap over
    held-out prompts (the same resampled prompts for both rows, which removes the prompts' own difficulty)."""
    import random
    import statistics

    rng, out = random.Random(seed), {}
    for ours in (r for r in rows if r["row"].startswith("ours") and "pass@1_per_prompt" in r):
        temperature = ours["target_T"]
        others = [
            r
            for r in rows
            if r["family"] == ours["family"]
            and r is not ours
            and "pass@1_per_prompt" in r
            and (r["target_T"] in (None, 1.0, temperature))
        ]
        for other in others:
            diffs = [a - b for a, b in zip(ours["pass@1_per_prompt"], other["pass@1_per_prompt"])]
            means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(bootstrap))
            key = f"{ours['family']}: {ours['row']} - {other['row']}"
            out[key] = [statistics.fmean(diffs), means[int(0.025 * bootstrap)], means[int(0.975 * bootstrap) - 1]]
    return out
