# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The routes the quick start can afford, measured on its unseen prompts, and a verdict per question.

Four ways to sample at sequence temperature T without more than the demo's minutes of CPU:

- token temperature T (the knob a user has: every step's logits divided by T);
- the best token temperature: the one whose T_eff on these very held-out completions is T, found by a search that
  needs samples of p and their log p for every new prompt (its cost is that search);
- the trained adapter (one forward pass per token, as plain sampling);
- the adapter as SMC's proposal with N = 4 particles and no resampling before the end (importance resampling): the
  base model p weighs the adapter's particles, two forward passes per token. Its answer law has no closed form, so
  its log-likelihood of each held-out completion is estimated from a pool of the adapter's own draws
  ([`~hf_seqtemp.measure.importance_resampling_logps`]).

Each gets T_eff / τ / NLL on the held-out completions of p, its τ per prompt paired with token temperature T's
(bootstrap over prompts), and its measured cost per answer (sequential model calls, token-forwards, seconds) when it
draws answers to the same prompts. The verdicts answer three questions from those figures only: does it reach T,
does it rank each prompt's completions like p, and at what cost.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _task_sampling import CallCounter, ancestral, encode

from hf_seqtemp import kendall_tau, sample_dataset
from hf_seqtemp.measure import dataset_groups, importance_resampling_logps, score_dataset, temperature_report

REACH = 0.10  # "reaches T": T_eff within ±10 % of T, the fidelity benchmark's tolerance
PARTICLES, POOL = 4, 32  # the SMC route's particles; adapter draws per prompt that estimate its answer law
ROUTES = ("myopic", "tuned_myopic", "tempered", "smc_adapter")


def route_names(temperature: float, tuned_t: float | None) -> dict[str, str]:
    best = f"best token temperature {tuned_t:.3g}" if tuned_t is not None else "best token temperature"
    return {
        "base": "base model p",
        "myopic": f"token temperature {temperature:g}",
        "tuned_myopic": best,
        "tempered": "adapter",
        "smc_adapter": f"adapter as SMC's proposal, N = {PARTICLES}",
    }


@torch.no_grad()
def smc_route_logps(model, tokenizer, conversations, logps: dict, temperature: float, max_new_tokens: int, seed: int):
    """Estimated log-likelihood of each held-out completion under the answer law of importance resampling with
    `PARTICLES` draws of the adapter (`model`, a PeftModel; p is its adapter off), from `POOL` fresh draws per
    prompt of the adapter, scored like the held-out completions."""
    pool = sample_dataset(model, tokenizer, conversations, num_samples=POOL, max_new_tokens=max_new_tokens,
                          seed=seed, batch_size=32)  # fmt: skip
    pool_proposal, _ = score_dataset(model, pool, batch_size=32, desc="Scoring the adapter's pool")
    with model.disable_adapter():
        pool_ref, _ = score_dataset(model, pool, batch_size=32, desc="Scoring the pool under p")
    return importance_resampling_logps(
        logps["tempered"], logps["base"], list(logps["groups"]), pool_proposal, pool_ref, dataset_groups(pool),
        temperature, PARTICLES, generator=torch.Generator().manual_seed(seed),
    ).float()  # fmt: skip


def _smc_sampler(temperature: float):
    def sample(model, batch, max_new_tokens, seed):
        from hf_seqtemp.data import eos_ids_of
        from hf_seqtemp.generation import smc_sample

        eos = sorted(eos_ids_of(model))
        return smc_sample(
            model, batch["input_ids"], batch["attention_mask"], max_new_tokens=max_new_tokens,
            seq_temperature=temperature, num_particles=PARTICLES, ess_threshold=0.0, proposal="adapter",
            generator=torch.Generator().manual_seed(seed), eos_token_id=eos, pad_token_id=eos[0] if eos else 0,
        )  # fmt: skip

    return sample


@torch.no_grad()
def route_costs(model, tokenizer, prompts: list[str], temperature: float, tuned_t, max_new_tokens: int, seed: int):
    """Per route, answers drawn to every prompt (2 each, one batch): sequential model calls per answer, token
    positions forwarded per answer, seconds per answer."""
    samplers = {"myopic": (ancestral(temperature), True), "tempered": (ancestral(1.0), False)}
    if tuned_t is not None:
        samplers["tuned_myopic"] = (ancestral(tuned_t), True)
    samplers["smc_adapter"] = (_smc_sampler(temperature), False)
    costs, side = {}, tokenizer.padding_side  # `encode` pads on the left: the tokenizer is given back as it came
    for name, (sample, base_only) in samplers.items():
        batch = encode(tokenizer, prompts, 2, model.device)
        counter = CallCounter(model)
        start = time.perf_counter()
        try:
            if base_only:
                with model.disable_adapter():
                    sample(model, batch, max_new_tokens, seed)
            else:
                sample(model, batch, max_new_tokens, seed)
        finally:
            counter.remove()
        answers = len(batch["input_ids"])
        costs[name] = {
            "calls": counter.calls,
            "token_forwards_per_answer": counter.tokens / answers,
            "seconds_per_answer": (time.perf_counter() - start) / answers,
        }
    tokenizer.padding_side = side
    return costs


def per_prompt_tau(ref: torch.Tensor, policy: torch.Tensor, groups: list) -> list[float]:
    """Kendall τ of `policy` against `ref` within each prompt, in the order prompts first appear."""
    return [
        kendall_tau(
            ref[[i for i, h in enumerate(groups) if h == g]], policy[[i for i, h in enumerate(groups) if h == g]]
        )
        for g in dict.fromkeys(groups)
    ]


def paired_interval(differences: list[float], seed: int = 0, replicates: int = 2000) -> tuple[float, float, float]:
    """Mean and 95 % percentile bootstrap interval of per-prompt differences (prompts resampled)."""
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(differences, k=len(differences))) for _ in range(replicates))
    return statistics.fmean(differences), means[int(0.025 * replicates)], means[int(0.975 * replicates) - 1]


def measure_routes(reports: dict, logps: dict, smc_logps: torch.Tensor) -> dict:
    """`reports` with the SMC route's T_eff / τ / NLL added, and every route's τ per prompt paired with token
    temperature T's (`tau_minus_myopic`: mean, low, high)."""
    groups = list(logps["groups"])
    rows = {**reports, "smc_adapter": temperature_report(logps["base"], smc_logps, logps["lengths"], groups)}
    policy = {**logps, "smc_adapter": smc_logps}
    myopic = per_prompt_tau(logps["base"], logps["myopic"], groups)
    for name in ROUTES[1:]:
        if name in rows:
            mine = per_prompt_tau(logps["base"], policy[name], groups)
            rows[name]["tau_minus_myopic"] = paired_interval([a - b for a, b in zip(mine, myopic)])
    return rows


def table(rows: dict, costs: dict, names: dict, one_time: dict) -> str:
    """The route rows: T_eff, τ, NLL per token on the held-out completions, cost per answer, and one-time cost."""
    head = (
        f"{'route':42s}{'T_eff':>7s}{'τ':>7s}{'NLL/tok':>9s}{'calls/ans':>11s}{'tok-fwd/ans':>12s}{'s/ans':>8s}  once"
    )
    lines = [head, "-" * len(head)]
    for name in ("base", *ROUTES):
        if name not in rows:
            continue
        r, c = rows[name], costs.get(name)
        cost = f"{c['calls']:11d}{c['token_forwards_per_answer']:12.1f}{c['seconds_per_answer']:8.3f}" if c else ""
        lines.append(
            f"{names[name]:42s}{r['t_eff']:7.3f}{r['kendall_tau']:7.3f}{r['nll_per_token']:9.3f}{cost:31s}  "
            + one_time.get(name, "")
        )
    return "\n".join(lines)


def reach_verdict(rows: dict, names: dict, temperature: float) -> str:
    """Does it reach T? Each route's T_eff against T (±10 %)."""
    parts = []
    for name in ROUTES:
        if name in rows:
            error = rows[name]["t_eff"] / temperature - 1
            parts.append(f"{names[name]}: {'yes' if abs(error) <= REACH else 'no'} (T_eff {100 * error:+.1f} %)")
    return f"Does it reach T = {temperature:g} (T_eff within ±{100 * REACH:.0f} %)? " + "; ".join(parts) + "."


def rank_verdict(rows: dict, names: dict) -> str:
    """Does it rank each prompt's completions like p? τ against token temperature T's, paired over prompts: better
    or worse only where the 95 % interval excludes 0."""
    myopic = rows["myopic"]["kendall_tau"]
    parts = []
    for name in ROUTES[1:]:
        if "tau_minus_myopic" not in rows.get(name, {}):
            continue
        mean, low, high = rows[name]["tau_minus_myopic"]
        reading = "better" if low > 0 else "worse" if high < 0 else "not shown to differ"
        parts.append(
            f"{names[name]}: τ {rows[name]['kendall_tau']:.3f}, {mean:+.3f} [{low:+.3f}, {high:+.3f}], {reading}"
        )
    return (
        f"Does it rank each prompt's completions like p (τ = 1)? Against {names['myopic']} (τ {myopic:.3f}), paired "
        "over the prompts: " + "; ".join(parts) + "."
    )


def cost_verdict(costs: dict, names: dict, one_time: dict) -> str:
    """At what cost? Per answer relative to token temperature T, and what each route pays once."""
    base = costs["myopic"]
    parts = []
    for name in ROUTES[1:]:
        if name in costs:
            c = costs[name]
            parts.append(
                f"{names[name]}: {c['calls'] / base['calls']:.1f}× the calls and "
                f"{c['token_forwards_per_answer'] / base['token_forwards_per_answer']:.1f}× the token-forwards per "
                f"answer of {names['myopic']}" + (f", once: {one_time[name]}" if one_time.get(name) else "")
            )
    return "At what cost? " + "; ".join(parts) + "."
