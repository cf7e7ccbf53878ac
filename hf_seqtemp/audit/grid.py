# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A grid of decoding settings in one call, and the tuned-myopic baseline: the token temperature whose sequence
T_eff equals a target T (the strongest free baseline a sequence-tempered model has to beat)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import torch

from ..metrics.core import effective_temperature
from .decoding import decoding_config, score_completions
from .output import setting_name
from .report import audit_decoding, prompt_token_ids, rare_thresholds

_INT_FLAGS = {"top_k", "no_repeat_ngram_size", "min_new_tokens", "min_length", "encoder_no_repeat_ngram_size"}


def _value(name: str, text: str):
    text = text.strip()
    if text.lower() in ("none", "null"):
        return None
    try:
        return int(text) if name in _INT_FLAGS else float(text)
    except ValueError:
        raise ValueError(
            f"`grid` value {text!r} of `{name}` is not a number: write `{name}=v1,v2,...` (e.g. `top_p=0.9,0.95`)."
        ) from None


def parse_grid(tokens: Sequence[str]) -> list[dict]:
    """Decoding settings from `name=v1,v2 ...` tokens: the product of the values of one block; blocks separated by
    `+` are concatenated (so `temperature=0.3,0.7 + top_p=0.9` is three settings, not two by one).

    Example:
    ```python
    >>> parse_grid(["temperature=0.7,1.0", "top_p=0.9"])
    [{'temperature': 0.7, 'top_p': 0.9}, {'temperature': 1.0, 'top_p': 0.9}]
    >>> parse_grid(["temperature=0.3", "+", "top_k=50"])
    [{'temperature': 0.3}, {'top_k': 50}]
    ```
    """
    settings, block = [], []
    for token in [*tokens, "+"]:
        if token.strip() == "+":
            if block:
                names = [name for name, _ in block]
                settings += [dict(zip(names, values)) for values in itertools.product(*(v for _, v in block))]
            block = []
            continue
        if "=" not in token:
            raise ValueError(f"`grid` entry {token!r} must read `name=v1,v2,...` (e.g. `temperature=0.3,0.7`).")
        name, values = token.split("=", 1)
        block.append((name.strip(), [_value(name.strip(), v) for v in values.split(",") if v.strip()]))
    if not settings:
        raise ValueError("`grid` is empty: give at least one `name=v1,v2,...`.")
    return settings


def _unreached(points: dict, target: float, low: float, high: float) -> str:
    """Why no token temperature of the search reached `target`, and what would: a wider range only where T_eff is
    still moving toward `target` at the range's end; where it peaked inside the range, nothing would."""
    seen = ", ".join(f"t={t:.3g}: {v:.3g}" for t, v in sorted(points.items()))
    start = f"no token temperature in the searched range gives sequence T_eff {target:g} (seen {seen})"
    finite = {t: v for t, v in points.items() if v > 0 and math.isfinite(v)}
    if finite and all(v < target for v in finite.values()):
        peak = max(finite, key=finite.get)
        if max(finite.values()) <= 1.01 * min(finite.values()):
            return (
                f"{start}: T_eff does not move with t (it stays near {finite[peak]:.3g}), so no token temperature "
                f"reaches T = {target:g} on these samples. Train an adapter (`SeqTempTrainer`)."
            )
        if finite[max(finite)] < 0.99 * finite[peak]:  # T_eff fell again past its peak: a larger t does not help
            return (
                f"{start}: T_eff(t) peaks at {finite[peak]:.3g} (t = {peak:.3g}) and falls beyond it, so no token "
                f"temperature reaches T = {target:g} on these samples. Train an adapter (`SeqTempTrainer`), or ask "
                "for a T below that peak."
            )
        return f"{start}: T_eff is still rising at t = {max(finite):.3g}: raise `high` above {high:g}."
    return f"{start}: T_eff is still above T at t = {min(points):.3g}: lower `low` below {low:g}."


def tune_token_temperature(
    t_eff_at: Callable[[float], float],
    target: float,
    known: dict[float, float] | None = None,
    low: float = 0.05,
    high: float = 4.0,
    rel_tol: float = 0.01,
    max_evals: int = 12,
) -> dict:
    """The token temperature t whose sequence T_eff equals `target` (T_eff increasing in t), by regula falsi on
    `log T_eff − log T` against `log t` (the Illinois variant), started from the bracket that `known` points give.

    Args:
        t_eff_at (`Callable`): `t -> T_eff` of the myopic decoder at token temperature t (NaN counts as too sharp).
        target (`float`): the sequence temperature T.
        known (`dict`, *optional*): `{t: T_eff}` already measured (e.g. the temperature rows of a grid).
        low, high (`float`): where the bracket search starts when `known` does not bracket `target`.
        rel_tol (`float`, *optional*, defaults to 0.01): stop when |T_eff − T| / T is below it.
        max_evals (`int`, *optional*, defaults to 12): most calls of `t_eff_at`.

    Returns:
        `dict` with `token_temperature`, `t_eff` (at it), `evaluations` and `points` (every `{t: T_eff}` seen).

    Example:
    ```python
    >>> out = tune_token_temperature(lambda t: 2 * t, 0.5)  # T_eff = 2 t: t = 0.25
    >>> round(out["token_temperature"], 3), round(out["t_eff"], 3)
    (0.25, 0.5)
    ```
    """
    points = dict(known or {})
    evals = 0

    def f(t: float) -> float:
        nonlocal evals
        if t not in points:
            points[t] = t_eff_at(t)
            evals += 1
        value = points[t]
        return -math.inf if not (value > 0) else math.log(value) - math.log(target)

    if not any(f(t) < 0 for t in list(points)):
        f(low)
    if not any(f(t) > 0 for t in list(points)):
        f(high)
    below = [t for t in points if f(t) < 0]
    above = [t for t in points if f(t) > 0]
    exact = [t for t in points if f(t) == 0]
    if exact:
        return {"token_temperature": exact[0], "t_eff": points[exact[0]], "evaluations": evals, "points": points}
    if not below or not above:  # T_eff(t) need not be monotone: look inside the range before giving up
        for i in range(1, 8):
            f(low * (high / low) ** (i / 8))
        below = [t for t in points if f(t) < 0]
        above = [t for t in points if f(t) > 0]
        exact = [t for t in points if f(t) == 0]
        if exact:
            return {"token_temperature": exact[0], "t_eff": points[exact[0]], "evaluations": evals, "points": points}
    if not below or not above:
        raise ValueError(_unreached(points, target, low, high))
    ordered = sorted(points)
    rising = [(x, y) for x, y in itertools.pairwise(ordered) if f(x) < 0 < f(y)]  # the first upward crossing
    a, b = rising[0] if rising else (max(below), min(above))
    fa, fb, side = f(a), f(b), 0
    while evals < max_evals:
        if not math.isfinite(fa):
            c = math.sqrt(a * b)
        else:
            la, lb = math.log(a), math.log(b)
            c = math.exp(lb - fb * (lb - la) / (fb - fa))
        fc = f(c)
        if abs(math.expm1(fc)) <= rel_tol:
            a = b = c
            break
        if fc < 0:
            a, fa = c, fc
            fb, side = (fb / 2, 1) if side == 1 else (fb, 1)
        else:
            b, fb = c, fc
            fa, side = (fa / 2, -1) if side == -1 else (fa, -1)
    best = min(points, key=lambda t: abs(math.expm1(f(t))) if math.isfinite(f(t)) else math.inf)
    return {"token_temperature": best, "t_eff": points[best], "evaluations": evals, "points": points}


def audit_grid(
    model,
    tokenizer,
    prompts,
    settings: Sequence[dict],
    target_temperatures: Sequence[float] = (),
    held_out_prompts=None,
    num_samples: int = 8,
    max_new_tokens: int = 32,
    seed: int = 0,
    chat_template: bool = True,
    system_prompt: str | None = None,
    reference_samples: int = 32,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """[`audit_decoding`] of every setting (same prompts, same seed), plus one *tuned myopic* row per target T.

    The tuned token temperature t is the one whose T_eff on exact samples of p for `prompts` (the samples behind the
    "rare" thresholds) is T, as the fidelity tables measure the myopic baseline ([`myopic_t_eff`],
    [`tune_token_temperature`]); the decoding at t is then audited on `held_out_prompts` (default: `prompts`, with
    fresh samples), where its T_eff on its own samples may differ. T_eff measured on a decoding's own samples is not a
    monotone function of t at low t (few distinct answers, nearly tied under q), so it is not what is tuned.

    `progress`, when given, is called with a line naming each phase as it starts (the reference samples, each
    setting, each target's search), so that a long grid is not silent.

    Returns:
        `dict` with `rows` (one [`audit_decoding`] result per setting), `tuned_myopic` (per target: the search, with
        every `(t, T_eff)` it measured, and the audit at the tuned temperature) and the run's size.
    """
    common = {"num_samples": num_samples, "max_new_tokens": max_new_tokens, "chat_template": chat_template}
    common["system_prompt"] = system_prompt
    say = progress if progress is not None else (lambda line: None)
    ids = prompt_token_ids(tokenizer, prompts, chat_template, system_prompt)
    say(f"sampling p exactly: {reference_samples} answers per prompt, {len(ids)} prompts")
    thresholds, p_samples = rare_thresholds(model, ids, reference_samples, max_new_tokens, seed, return_samples=True)
    rows = []
    for index, setting in enumerate(settings, 1):
        say(f"setting {index}/{len(settings)}: {setting_name(setting)}")
        rows.append(audit_decoding(model, tokenizer, ids, setting, seed=seed, rare_thresholds_=thresholds, **common))
    tuned = []

    def t_eff_at(t: float) -> float:
        return myopic_t_eff(model, ids, p_samples, t, max_new_tokens)

    for target in target_temperatures:
        say(f"searching the token temperature whose T_eff is {target:g}")
        try:
            search = tune_token_temperature(t_eff_at, target, high=max(4.0, 4.0 * target))
        except ValueError as error:  # reported in the result, the grid is kept
            tuned.append({"target": target, "error": str(error)})
            continue
        held = ids if held_out_prompts is None else prompt_token_ids(tokenizer, held_out_prompts, chat_template)
        held_thresholds = thresholds if held_out_prompts is None else None
        setting = {"temperature": search["token_temperature"]}
        audit = audit_decoding(
            model, tokenizer, held, setting, seed=seed + 1, rare_thresholds_=held_thresholds, **common
        )
        tuned.append({"target": target, "search": {**search, "points": sorted(search["points"].items())}, **audit})
    return {
        "rows": rows,
        "tuned_myopic": tuned,
        "num_prompts": len(ids),
        "reference_samples": reference_samples,
        **common,
    }


def myopic_t_eff(model, prompt_ids: list, samples: list, token_temperature: float, max_new_tokens: int) -> float:
    """Within-prompt T_eff of token temperature t on exact samples of p (one list per prompt), as the fidelity
    tables measure the myopic baseline: log p_t(x) = Σ_i log softmax(logits_i / t)[x_i] against log p(x)."""
    config = decoding_config(model, {"temperature": token_temperature}, max_new_tokens)
    ref, policy, groups = [], [], []
    for index, (prompt, completions) in enumerate(zip(prompt_ids, samples)):
        scored = score_completions(model, prompt, completions, config)
        ref.append(scored.ref_logps)
        policy.append(scored.policy_logps)
        groups += [index] * len(completions)
    return effective_temperature(torch.cat(ref), torch.cat(policy), groups=groups)
