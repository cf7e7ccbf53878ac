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


def markdown_table(
    rows: list[dict], settings: dict, differences: dict | None = None, agreement: dict | None = None
) -> str:
    head = (
        f"Task table ({settings['mode']} mode): held-out prompts, sampling seeds {settings['seeds']}, "
        f"{settings['samples']} samples per prompt and seed, ≤ {settings['max_new_tokens']} new tokens, "
        f"training seed {settings.get('train_seed', 0)}, wall time {settings['wall_seconds']:.0f} s."
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
    if agreement:
        lines += ["", "| answers of (seed s) vs MH's (seed s' ≠ s) | total variation per prompt |", "| --- | --- |"]
        lines += [f"| {k} | {v:.3f} |" for k, v in agreement.items()]
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


def total_variation(a: list, b: list) -> float:
    """Total variation distance between the empirical distributions of two lists of answers."""
    from collections import Counter

    count_a, count_b = Counter(a), Counter(b)
    return 0.5 * sum(abs(count_a[k] / len(a) - count_b[k] / len(b)) for k in set(count_a) | set(count_b))


def answer_distance(first: dict, second: dict) -> float:
    """Answer-level distance of two sampler rows: the total variation between their answer distributions, per
    prompt, averaged over prompts and over ordered pairs of DIFFERENT sampling seeds (the first row's seed s against
    the second's seed s' != s), so that a row against itself gives the noise floor of `n` answers per prompt."""
    import statistics

    seeds = range(len(first["answers"]))
    pairs = [(s, t) for s in seeds for t in range(len(second["answers"])) if s != t]
    return statistics.fmean(
        total_variation(a, b) for s, t in pairs for a, b in zip(first["answers"][s], second["answers"][t])
    )


def answer_agreement(rows: list[dict]) -> dict:
    """Per family and α: the answer-level distance to MH power sampling (`mcmc α`, the reference sampler of p^α) of
    SMC, ancestral sampling and token temperature 1/α, next to MH against itself (the floor). Rows need two or more
    sampling seeds."""
    out = {}
    for mh in (r for r in rows if r["row"].startswith("mcmc") and len(r.get("answers", [])) > 1):
        alpha = mh["row"].split("=")[1]
        names = (f"smc α={alpha}", "ancestral", f"token T={1 / float(alpha):g}", mh["row"])
        smc = f"smc α={alpha} "  # any number of particles
        for other in (
            r
            for r in rows
            if r["family"] == mh["family"] and (r["row"] in names or r["row"].startswith(smc)) and "answers" in r
        ):
            out[f"{mh['family']}: {other['row']} vs {mh['row']}"] = answer_distance(other, mh)
    return out
