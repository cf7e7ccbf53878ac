# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What the quick start prints from the rows it measured (`examples/_routes.py`): the route table, one verdict per
question and one recommendation per goal. Pure functions of the figures, so each reading is tested on its own
(`tests/test_quickstart_demo.py`).

- Does it reach T? Each route's T_eff against T (±10 %, the fidelity benchmark's tolerance).
- Which ranks each prompt's completions most like p? Routes against each other, τ paired over the prompts:
  "better" or "worse" only where the 95 % interval excludes 0.
- At what cost? Per answer (sequential model calls, token-forwards, seconds) against token temperature T, and once:
  seconds on this machine and token-forwards, for every route, in the same units.
- Is each prompt tempered at T? The per-prompt T_eff error (mean over prompts of |T_eff(c) − T| / T), each route
  against the token temperature tuned once on the training prompts, paired over the prompts.
- Which route for which goal: ship a model that samples at T at plain cost; the closest to p^(1/T) per compute;
  no training. The baseline is always the token temperature a user tunes once (on training prompts), never the
  oracle searched on the held-out completions themselves.
"""

from __future__ import annotations

REACH = 0.10  # "reaches T": T_eff within ±10 % of T
ROUTES = ("myopic", "tuned_once", "tempered", "smc_adapter", "tuned_myopic")
ERROR = " (per-prompt error)"  # the key suffix of a per-prompt T_eff error pair


def reaches(row: dict, temperature: float) -> bool:
    return abs(row["t_eff"] / temperature - 1) <= REACH


def _off(row: dict, temperature: float) -> str:
    return f"T_eff {row['t_eff']:.3f}, {100 * (row['t_eff'] / temperature - 1):+.1f} %"


def _once_cells(once: dict | None) -> tuple[str, str]:
    """The one-time cost columns of a route: seconds and token-forwards, `/prompt` for a cost paid per new prompt."""
    if not once:
        return "", ""
    per = "/prompt" if once.get("per_prompt") else ""
    return f"{once['seconds']:.1f}{per}", f"{once['token_forwards']:,.0f}{per}"


def table(rows: dict, costs: dict, names: dict, once: dict) -> str:
    """The route rows: T_eff, τ, NLL per token on the held-out completions, cost per answer (sequential model calls,
    token-forwards, seconds), and one-time cost (seconds, token-forwards; `/prompt`: on every new prompt)."""
    head = (  # under 100 columns: a docs page shows it whole
        f"{'route':27s}{'T_eff':>6s}{'err/c':>6s}{'τ':>6s}{'NLL/tok':>8s}{'calls':>6s}{'tok-fwd':>8s}{'s/ans':>7s}"
        f"{'once: s':>12s}{'once: tok-fwd':>14s}"
    )
    lines = [head, "-" * len(head)]
    for name in ("base", *ROUTES):
        if name not in rows:
            continue
        r, c = rows[name], costs.get(name)
        cost = f"{c['calls']:6d}{c['token_forwards_per_answer']:8.1f}{c['seconds_per_answer']:7.3f}" if c else ""
        seconds, forwards = _once_cells(once.get(name))
        error = f"{r['per_prompt_t_eff_error']:6.3f}" if "per_prompt_t_eff_error" in r else " " * 6
        lines.append(
            f"{names[name]:27s}{r['t_eff']:6.3f}{error}{r['kendall_tau']:6.3f}{r['nll_per_token']:8.3f}{cost:21s}"
            f"{seconds:>12s}{forwards:>14s}".rstrip()
        )
    return "\n".join(lines)


def reach_verdict(rows: dict, names: dict, temperature: float) -> str:
    """Does it reach T? Each route's T_eff against T (±10 %)."""
    parts = [
        f"{names[name]}: {'yes' if reaches(rows[name], temperature) else 'no'} ({_off(rows[name], temperature)})"
        for name in ROUTES
        if name in rows
    ]
    return f"Does it reach T = {temperature:g} (T_eff within ±{100 * REACH:.0f} %)? " + "; ".join(parts) + "."


def reading(interval) -> str:
    """`better`, `worse` or `not shown to differ`: the sign of a paired interval that excludes 0."""
    _, low, high = interval
    return "better" if low > 0 else "worse" if high < 0 else "not shown to differ"


def rank_verdict(rows: dict, pairs: dict, names: dict) -> str:
    """Which ranks each prompt's completions most like p? τ of one route against another, paired over prompts."""
    parts = []
    for key, interval in pairs.items():
        if key.endswith(ERROR):
            continue
        first, second = key.split(" vs ")
        mean, low, high = interval
        parts.append(
            f"{names[first]} ({rows[first]['kendall_tau']:.3f}) against {names[second]} "
            f"({rows[second]['kendall_tau']:.3f}): {mean:+.3f} [{low:+.3f}, {high:+.3f}], {reading(interval)}"
        )
    return (
        "Which ranks each prompt's completions most like p (τ = 1)? Route against route, τ paired over the prompts "
        "(mean difference [95 % interval]): " + "; ".join(parts) + "."
    )


def error_verdict(rows: dict, pairs: dict, names: dict, temperature: float) -> str:
    """Is each prompt tempered at T? The per-prompt T_eff error of routes against each other, paired over prompts."""
    parts = []
    for key, interval in pairs.items():
        if not key.endswith(ERROR):
            continue
        first, second = key[: -len(ERROR)].split(" vs ")
        mean, low, high = interval
        parts.append(
            f"{names[first]} ({rows[first]['per_prompt_t_eff_error']:.3f}) against {names[second]} "
            f"({rows[second]['per_prompt_t_eff_error']:.3f}): {mean:+.3f} [{low:+.3f}, {high:+.3f}], "
            f"{reading(interval)}"
        )
    if not parts:
        return ""
    return (
        f"Is each prompt tempered at T = {temperature:g}? Per-prompt T_eff error (err/c: mean over prompts of "
        "|T_eff(c) − T| / T, each prompt's slope over its own completions, so it carries their sampling noise), "
        "route against route, paired over prompts (positive: the first is closer): " + "; ".join(parts) + "."
    )


def _once_text(once: dict) -> str:
    if not once or not once["seconds"] and not once["token_forwards"]:
        return "nothing"
    per = " per new prompt" if once.get("per_prompt") else ""
    return f"{once['seconds']:.1f} s and {once['token_forwards']:,.0f} token-forwards{per} ({once['what']})"


def cost_verdict(costs: dict, names: dict, once: dict) -> str:
    """At what cost? Per answer against token temperature T, and once, in seconds and token-forwards."""
    base = costs["myopic"]
    parts = [f"{names['myopic']}: once {_once_text(once.get('myopic'))}"]
    for name in ROUTES[1:]:
        if name in costs:
            c = costs[name]
            parts.append(
                f"{names[name]}: {c['calls'] / base['calls']:.1f}× the calls and "
                f"{c['token_forwards_per_answer'] / base['token_forwards_per_answer']:.1f}× the token-forwards per "
                f"answer, once {_once_text(once.get(name))}"
            )
    return (
        "At what cost? Per answer against " + names["myopic"] + "; once in seconds on this machine and token-forwards "
        "(token positions run through the model; a training step's backward pass not counted): "
        + "; ".join(parts)
        + "."
    )


def ess_line(costs: dict, names: dict, particles: int) -> str:
    """The SMC route's effective sample size: the mean over its answers of the final weights' ESS / N."""
    smc = costs.get("smc_adapter", {})
    if "ess_fraction" not in smc:
        return ""
    bias = ""
    if smc.get("answer_bias_bound") is not None:
        bias = (
            f"Its answers' distance to p^(1/T) is estimated at {smc['answer_bias_bound']:.2f} in total variation (the "
            f"bound E|Z_hat/Z - 1|/2 with Z replaced by the mean Z_hat of the prompt's own runs, mean over "
            f"{smc['answer_bias_bound_prompts']} prompts, from runs of {particles} of the pool's draws: an estimate "
            "that reads low with few runs, not a bound; one run's answer is biased at small N). "
        )
    return bias + (
        f"ESS of {names['smc_adapter']}: mean over its {smc['ess_answers']} answers (one per prompt) of the final "
        f"weights' ESS / N = {smc['ess_fraction']:.2f} (1: the adapter proposes p^(1/T) itself; 1/{particles}: one "
        "particle carries all the weight; no resampling before the end; with few particles it under-reads the "
        "weights' tail, so it reads high)."
    )


def _pair(pairs: dict, first: str, second: str):
    return pairs.get(f"{first} vs {second}")


def _pair_text(pairs: dict, first: str, second: str, names: dict) -> str:
    interval = _pair(pairs, first, second)
    if interval is None:
        return ""
    mean, low, high = interval
    return f"τ against {names[second]} {mean:+.3f} [{low:+.3f}, {high:+.3f}], {reading(interval)}"


def _error_text(pairs: dict, first: str, second: str, names: dict) -> str:
    interval = _pair(pairs, first, second + ERROR)
    if interval is None:
        return ""
    mean, low, high = interval
    return f"per-prompt T_eff error against {names[second]} {mean:+.3f} [{low:+.3f}, {high:+.3f}], {reading(interval)}"


def ship_recommendation(rows, pairs, names, once, temperature) -> str:
    """Ship a model that samples at T at plain cost: the adapter, or the token temperature tuned once on the training
    prompts (the routes with plain sampling's cost per answer and no work per new prompt), or token temperature T."""
    baseline = "tuned_once" if "tuned_once" in rows else "myopic"
    adapter, tuned = reaches(rows["tempered"], temperature), reaches(rows[baseline], temperature)
    tau, error = _pair_text(pairs, "tempered", baseline, names), _error_text(pairs, "tempered", baseline, names)
    better = [_pair(pairs, "tempered", baseline), _pair(pairs, "tempered", baseline + ERROR)]
    wins = any(interval is not None and reading(interval) == "better" for interval in better)
    both = "; ".join(text for text in (tau, error) if text)
    if adapter and (not tuned or wins):
        why = f"it reaches T ({_off(rows['tempered'], temperature)})"
        why += f" where {names[baseline]} does not ({_off(rows[baseline], temperature)})" if not tuned else ""
        return (
            f"the adapter: {why}, at plain sampling's cost per answer; {both}; once: {_once_text(once['tempered'])}."
        )
    if tuned:
        return (
            f"{names[baseline]}: it reaches T ({_off(rows[baseline], temperature)}) without training, at plain "
            f"sampling's cost, and the adapter ties with it here ({both}); once: {_once_text(once.get(baseline))}."
        )
    closer = min(("tempered", baseline), key=lambda n: abs(rows[n]["t_eff"] - temperature))
    return (
        f"neither reaches T here ({names['tempered']}: {_off(rows['tempered'], temperature)}; {names[baseline]}: "
        f"{_off(rows[baseline], temperature)}); {names[closer]} is closer. Train longer or on more prompts."
    )


def compute_recommendation(rows, pairs, names, costs, temperature) -> str:
    """The closest to p^(1/T) per compute: the adapter as SMC's proposal where it ranks better than the adapter and
    reaches T, at its measured extra cost per answer; else the adapter."""
    interval = _pair(pairs, "smc_adapter", "tempered")
    if interval is None:
        return "the adapter (the SMC route was not measured)."
    extra = costs["smc_adapter"]["token_forwards_per_answer"] / costs["tempered"]["token_forwards_per_answer"]
    calls = costs["smc_adapter"]["calls"] / costs["tempered"]["calls"]
    tau = _pair_text(pairs, "smc_adapter", "tempered", names)
    cost = f"{calls:.1f}× the calls and {extra:.1f}× the token-forwards per answer"
    if reading(interval) == "better" and reaches(rows["smc_adapter"], temperature):
        return (
            f"{names['smc_adapter']}: {tau}, and it reaches T ({_off(rows['smc_adapter'], temperature)}), for {cost}."
        )
    return f"the adapter: its SMC route costs {cost} and gains no shown ranking ({tau})."


def no_training_recommendation(rows, pairs, names, once, temperature) -> str:
    """No training: the token temperature tuned once on the training prompts when it reaches T on the held-out ones,
    else token temperature T."""
    myopic = f"{names['myopic']} ({_off(rows['myopic'], temperature)})"
    if "tuned_once" not in rows:
        return f"{myopic}: no token temperature tuned on the training prompts reaches T."
    if not reaches(rows["tuned_once"], temperature):
        return f"{myopic}: {names['tuned_once']} does not reach T on the held-out prompts either."
    tau = _pair_text(pairs, "tuned_once", "myopic", names)
    return (
        f"{names['tuned_once']}: searched once on the training prompts and applied unchanged, it reaches T on the "
        f"held-out ones ({_off(rows['tuned_once'], temperature)}), {tau}; once: {_once_text(once.get('tuned_once'))}."
    )


def recommendations(rows, pairs, names, costs, once, temperature) -> list[str]:
    """One recommendation per goal, read from this run's rows."""
    return [
        "Which route, from these rows?",
        "- Ship a model that samples at T at plain cost: "
        + ship_recommendation(rows, pairs, names, once, temperature),
        "- Best answers per compute (read here as: closest to p^(1/T)): "
        + compute_recommendation(rows, pairs, names, costs, temperature),
        "- No training: " + no_training_recommendation(rows, pairs, names, once, temperature),
    ]


BY_LENGTH = (
    "fidelity_vs_tuned.json",
    "fidelity_long_open.json",
    "fidelity_long_open_fresh.json",
    "fidelity_long.json",
    "fidelity_long_64.json",
    "fidelity_long_t2.json",
    "fidelity_long_t2_fast.json",
)
"""The committed comparisons of the adapter with the once-tuned token temperature, short answers then long ones
(open prompts at up to 128 tokens, with the once-trained and the fresh-samples recipes; T = 0.25 at 256 samples per
prompt, T = 0.5 at 64, T = 2 with two recipes); a file not there is passed over."""


def by_length(results) -> list[str]:
    """Where the adapter beats the once-tuned token temperature and where it ties, by answer length: one line per
    (answers, T) of the committed comparisons in `results` (a folder holding [`BY_LENGTH`]), each difference paired
    over unseen prompts ("+": the adapter better). Empty when the files are not there (an installed package)."""
    import json
    from pathlib import Path

    cells: dict = {}
    for name in BY_LENGTH:
        path = Path(results) / name
        if not path.is_file():
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        for c in record["comparisons"]:
            if c.get("pool") not in ("open", "long"):
                continue
            if "mean_answer_tokens" in c:
                length = f"answers of {c['mean_answer_tokens']:.0f} tokens on average ({c['pool']} prompts)"
            else:
                cut = c.get("max_completion_length", record["settings"]["max_completion_length"])
                length = f"answers cut at {cut} tokens ({c['pool']} prompts)"
            key = (length, c["target_temperature"], name)
            low, high = c["ci95"]
            word = reading((c["difference"], low, high))
            figure = "per-prompt T_eff error" if c["metric"] == "per_prompt_t_eff_error" else "Kendall τ"
            cells.setdefault(key, []).append(f"{figure} {c['difference']:+.3f} [{low:+.3f}, {high:+.3f}] ({word})")
    if not cells:
        return []
    lines = [
        "By answer length, the adapter against the token temperature tuned once (committed runs, unseen prompts):"
    ]
    for (length, temperature, name), parts in cells.items():
        lines.append(f"- {length}, T = {temperature:g}: {'; '.join(parts)} (benchmarks/results/{name}).")
    return lines
