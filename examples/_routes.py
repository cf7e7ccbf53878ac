# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The routes the quick start can afford, measured on its unseen prompts (what it prints from them:
`examples/_verdicts.py`).

Four ways to sample at sequence temperature T without more than the demo's minutes of CPU:

- token temperature T (the knob a user has: every step's logits divided by T);
- token temperature tuned once: the one whose T_eff on samples of p of 32 *training* prompts is T, applied
  unchanged to the held-out prompts (the baseline a user builds: its cost is that one search);
- for reference only, the oracle: the token temperature whose T_eff on these very held-out completions is T (chosen
  on the figure it is then scored on: not a baseline);
- the trained adapter (one forward pass per token, as plain sampling);
- the adapter as SMC's proposal with N = 4 particles and no resampling before the end (importance resampling): the
  base model p weighs the adapter's particles, two forward passes per token. Its answer law has no closed form, so
  its log-likelihood of each held-out completion is estimated from a pool of the adapter's own draws
  ([`~hf_seqtemp.measure.importance_resampling_logps`]).

Each gets T_eff / τ / NLL on the held-out completions of p, its per-prompt T_eff error (mean over prompts of
|T_eff(c) − T| / T) and its τ per prompt (both paired between routes, bootstrap over prompts: [`PAIRS`]), and its measured cost per answer (sequential model calls, token-forwards, seconds) when it
draws an answer to each of the same prompts; the SMC route also its particles' ESS.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _task_sampling import ancestral, encode
from datasets import Dataset

from hf_seqtemp.costs import ForwardCounter
from hf_seqtemp.data import eos_ids_of, sample_completions, tokenize_prompt
from hf_seqtemp.measure import dataset_groups, importance_resampling_logps, score_dataset, temperature_report
from hf_seqtemp.metrics import paired_interval as bootstrap_interval
from hf_seqtemp.metrics import per_prompt_effective_temperature, per_prompt_kendall_tau

PARTICLES, POOL = 4, 16  # the SMC route's particles; adapter draws per prompt that estimate its answer law
ROUTES = ("myopic", "tuned_once", "tempered", "smc_adapter", "tuned_myopic")


def route_names(temperature: float, tuned_t: float | None, once_t: float | None = None) -> dict[str, str]:
    oracle = f"oracle: token temp {tuned_t:.3g}" if tuned_t is not None else "oracle token temperature"
    once = f"token temp {once_t:.3g} tuned once" if once_t is not None else "token temperature tuned once"
    return {
        "base": "base model p",
        "myopic": f"token temperature {temperature:g}",
        "tuned_once": once,
        "tuned_myopic": oracle,
        "tempered": "adapter",
        "smc_adapter": f"adapter-proposal SMC, N = {PARTICLES}",
    }


@torch.no_grad()
def smc_route_logps(model, tokenizer, conversations, logps: dict, temperature: float, max_new_tokens: int, seed: int):
    """Estimated log-likelihood of each held-out completion under the answer law of importance resampling with
    `PARTICLES` draws of the adapter (`model`, a PeftModel; p is its adapter off), from `POOL` fresh draws per
    prompt of the adapter: their log q comes from the sampler's own logits (exact sampling at token temperature 1),
    their log p from one scoring pass with the adapter off."""
    prompts = [tokenize_prompt(tokenizer, conversation) for conversation in conversations]
    jobs = [ids for ids in prompts for _ in range(POOL)]
    eos = eos_ids_of(model, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(eos), 0)
    torch.manual_seed(seed)
    completions, token_logps = sample_completions(
        model, jobs, max_new_tokens, eos, pad, 128, "Sampling the adapter's pool", return_logps=True
    )
    kept = [(ids, c, sum(lp)) for ids, c, lp in zip(jobs, completions, token_logps) if c]
    pool = Dataset.from_list(
        [{"input_ids": ids + c, "completion_mask": [0] * len(ids) + [1] * len(c)} for ids, c, _ in kept]
    )
    pool_proposal = torch.tensor([logp for _, _, logp in kept], dtype=torch.float64)
    with model.disable_adapter():
        pool_ref, _ = score_dataset(model, pool, batch_size=128, desc="Scoring the pool under p")
    route = importance_resampling_logps(
        logps["tempered"], logps["base"], list(logps["groups"]), pool_proposal, pool_ref, dataset_groups(pool),
        temperature, PARTICLES, generator=torch.Generator().manual_seed(seed),
    ).float()  # fmt: skip
    return route, pool_bias_bounds(pool_proposal, pool_ref.double(), dataset_groups(pool), temperature)


def pool_bias_bounds(proposal_logps, ref_logps, groups, temperature: float) -> list[float]:
    """Per prompt, the bound E|Z_hat / Z - 1| / 2 on the total variation between one SMC run's answer law (N =
    `PARTICLES`, no resampling: importance resampling) and p^(1/T), from the prompt's pool cut into runs of N draws
    (`POOL / PARTICLES` runs: a rough, low-reading estimate) ([`~hf_seqtemp.generation.pimh.one_run_bias_bound`])."""
    from hf_seqtemp.generation.pimh import one_run_bias_bound

    weights = ref_logps / temperature - proposal_logps
    log_z, owners = [], []
    for index, group in enumerate(dict.fromkeys(groups)):
        rows = [i for i, g in enumerate(groups) if g == group]
        for start in range(0, len(rows) - PARTICLES + 1, PARTICLES):
            log_z.append(float(weights[rows[start : start + PARTICLES]].logsumexp(0)) - math.log(PARTICLES))
            owners.append(index)
    ids = torch.tensor([[owner] for owner in owners])
    bound = one_run_bias_bound(torch.tensor(log_z, dtype=torch.float64), ids, torch.ones_like(ids))
    per_prompt = {owner: float(value) for owner, value in zip(owners, bound.tolist())}
    return [per_prompt[owner] for owner in sorted(per_prompt) if not math.isnan(per_prompt[owner])]


def _smc_sampler(temperature: float, ess: list[float]):
    """The SMC route's sampler; it appends each answer's final ESS / N (the weights that pick it) to `ess`."""

    def sample(model, batch, max_new_tokens, seed):
        from hf_seqtemp.data import eos_ids_of
        from hf_seqtemp.generation import smc_sample

        eos = sorted(eos_ids_of(model))
        out = smc_sample(
            model, batch["input_ids"], batch["attention_mask"], max_new_tokens=max_new_tokens,
            seq_temperature=temperature, num_particles=PARTICLES, ess_threshold=0.0, proposal="adapter",
            generator=torch.Generator().manual_seed(seed), eos_token_id=eos, pad_token_id=eos[0] if eos else 0,
            return_dict_in_generate=True,
        )  # fmt: skip
        ess.extend((out.ess[:, -1] / PARTICLES).tolist())  # no resampling before the end: the last step's weights
        return out.sequences

    return sample


@torch.no_grad()
def route_costs(
    model, tokenizer, prompts: list[str], temperature: float, tuned_t, max_new_tokens: int, seed: int, once_t=None
):
    """Per route, one answer drawn to every prompt (one batch): sequential model calls per answer, token positions
    forwarded per answer, seconds per answer; for the SMC route also its particles' final ESS / N per answer."""
    samplers = {"myopic": (ancestral(temperature), True), "tempered": (ancestral(1.0), False)}
    if once_t is not None:
        samplers["tuned_once"] = (ancestral(once_t), True)
    if tuned_t is not None:
        samplers["tuned_myopic"] = (ancestral(tuned_t), True)
    ess: list[float] = []
    samplers["smc_adapter"] = (_smc_sampler(temperature, ess), False)
    costs, side = {}, tokenizer.padding_side  # `encode` pads on the left: the tokenizer is given back as it came
    for name, (sample, base_only) in samplers.items():
        batch = encode(tokenizer, prompts, 1, model.device)
        counter = ForwardCounter(model)
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
    costs["smc_adapter"]["ess_fraction"] = statistics.fmean(ess)  # mean over the prompts, one answer each
    costs["smc_adapter"]["ess_answers"] = len(ess)
    return costs


def paired_interval(differences: list[float]) -> tuple[float, float, float]:
    """Mean of per-prompt differences and its 95 % bootstrap interval over prompts (2000 replicates)."""
    return (statistics.fmean(differences), *bootstrap_interval(differences, replicates=2000))


PAIRS = (("tempered", "tuned_once"), ("tempered", "myopic"), ("smc_adapter", "tempered"), ("tuned_once", "myopic"))
"""The comparisons a "which route?" question needs, each (route, against), τ paired over the prompts."""
ERROR_PAIRS = (("tempered", "tuned_once"), ("smc_adapter", "tuned_once"), ("tempered", "myopic"))
"""The per-prompt T_eff error compared, each (route, against): positive differences mean the route is closer to T."""


def per_prompt_errors(ref: torch.Tensor, policy: torch.Tensor, groups: list, temperature: float) -> list[float]:
    """|T_eff(c) − T| / T of every prompt, in the order prompts first appear."""
    values = per_prompt_effective_temperature(ref, policy, groups).values()
    return [abs(value - temperature) / temperature for value in values]


def measure_routes(reports: dict, logps: dict, smc_logps: torch.Tensor, temperature: float) -> tuple[dict, dict]:
    """`(rows, pairs)`: `reports` with the SMC route's T_eff / τ / NLL added and every route's per-prompt T_eff error
    (its mean and the per-prompt values), and for each pair of [`PAIRS`] whose routes were both measured the mean
    difference of their τ per prompt with its 95 % interval (mean, low, high); for [`ERROR_PAIRS`] (keys ending in
    ` (per-prompt error)`) the against-route's per-prompt error minus the route's (positive: the route is closer)."""
    groups = list(logps["groups"])
    rows = {**reports, "smc_adapter": temperature_report(logps["base"], smc_logps, logps["lengths"], groups)}
    policy = {**logps, "smc_adapter": smc_logps}
    measured = [name for name in ("base", *ROUTES) if name in rows]
    tau = {name: list(per_prompt_kendall_tau(logps["base"], policy[name], groups).values()) for name in measured}
    errors = {name: per_prompt_errors(logps["base"], policy[name], groups, temperature) for name in measured}
    for name in measured:
        rows[name] = {
            **rows[name],
            "per_prompt_t_eff_error": statistics.fmean(errors[name]),
            "per_prompt_t_eff": list(per_prompt_effective_temperature(logps["base"], policy[name], groups).values()),
        }
    pairs = {
        f"{a} vs {b}": paired_interval([x - y for x, y in zip(tau[a], tau[b])])
        for a, b in PAIRS
        if a in tau and b in tau
    }
    pairs.update(
        {
            f"{a} vs {b} (per-prompt error)": paired_interval([y - x for x, y in zip(errors[a], errors[b])])
            for a, b in ERROR_PAIRS
            if a in errors and b in errors
        }
    )
    return rows, pairs
