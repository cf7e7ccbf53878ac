# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Particle independent Metropolis-Hastings (Andrieu, Doucet & Holenstein 2010) over whole SMC runs: exact answers.

One SMC run's answer (a particle drawn by its final weights) is biased at small N. The chain's state is (answer,
Z_hat); a proposal is an independent run and the answer it draws; it is accepted with probability
`min(1, Z_hat_new / Z_hat_current)`. Since `Z_hat` is unbiased, the chain's stationary law over answers is exactly
`p^alpha`, for any number of particles and any proposal. The runs do not depend on the chain's state, so a caller
draws all of them at once (`smc_sample(..., pimh_steps=K)`: `K + 1` runs per prompt in one batch, on either backend)
and only the accept/reject steps below, on numbers, are sequential.
"""

from __future__ import annotations

import math
import warnings

import torch

from ..checks import check_bytes

STUCK_PROBABILITY = 0.05
"""With `pimh_steps = K > 0`, [`smc_sample`] warns when a chain with its prompt's acceptance rate `a` would still be
at its first run after `K` steps with probability `(1 - a)^K` above this, averaged over the prompts: its answers then
keep part of one run's bias for want of steps. (The ESS of N particles under-reads the weights' tail at small N; the
acceptance rate of whole runs does not. With `pimh_steps=0` there is one run per prompt and no such estimate: the
low-ESS warning is all there is.)"""


ONE_RUN_BIAS_BOUND = 0.15
"""With `pimh_steps=0`, [`smc_sample`] warns when the answers' estimated distance to `p^alpha` may exceed this
(mean over the prompts). One run's answer has the law `E[w_i / sum w]` over the runs while `p^alpha` is
`E[(Z_hat / Z) w_i / sum w]`, so the total variation between them is at most `E|Z_hat / Z - 1| / 2`
([`one_run_bias_bound`]), estimated from the runs of a prompt that occurs more than once in the batch
(`num_return_sequences > 1`, or repeated rows). The estimate replaces Z by the mean Z_hat of those runs, which caps
it at `(n - 1) / n` for n runs and makes it read low where Z_hat is heavy-tailed (alpha = 4: below the true total
variation in most groups of 4 runs): it is an estimate, not a bound, and its warning is a floor. Measured on an enumerable toy (|V| = 8, answers of at most 3 tokens,
alpha = 2, 2000 answers per prompt): the bound read 0.41-0.53 at N = 4 (answers at total variation 0.39-0.51, where
the ESS / N of the weights read 0.60-0.79), 0.19-0.24 at N = 16 (chi-square fails), 0.09-0.12 at N = 64 (passes)."""


def one_run_bias_bound(log_normalizers: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor):
    """Per row, the estimated bound `E|Z_hat / Z - 1| / 2` on the total variation between one run's answer law and
    `p^alpha` for the row's prompt, from the `log Z_hat` of every run of that prompt in the batch (rows with the
    same unpadded tokens are runs of one prompt; `Z` is estimated by their mean). NaN where a prompt has one run.
    Never mixes prompts: each prompt's runs are compared with each other only.

    Example:
    ```python
    >>> ids, mask = torch.tensor([[1, 2], [1, 2], [3, 4]]), torch.ones(3, 2, dtype=torch.long)
    >>> one_run_bias_bound(torch.tensor([0.0, 0.0, 1.0]), ids, mask).tolist()  # equal estimates: no bias
    [0.0, 0.0, nan]
    ```
    """
    key = torch.where(attention_mask.bool(), input_ids, torch.full_like(input_ids, -1))
    _, group = torch.unique(key, dim=0, return_inverse=True)
    groups = int(group.max()) + 1 if group.numel() else 0
    log_z = log_normalizers.double()
    counts = torch.zeros(groups, dtype=torch.float64, device=log_z.device).index_add_(0, group, torch.ones_like(log_z))
    peak = torch.full((groups,), -math.inf, dtype=torch.float64, device=log_z.device)
    peak = peak.scatter_reduce(0, group, log_z, reduce="amax")
    z = (log_z - peak[group]).exp()
    mean = torch.zeros(groups, dtype=torch.float64, device=log_z.device).index_add_(0, group, z) / counts
    spread = torch.zeros(groups, dtype=torch.float64, device=log_z.device)
    spread = spread.index_add_(0, group, (z / mean[group] - 1.0).abs()) / (2.0 * counts)
    return torch.where(counts[group] > 1, spread[group], torch.full_like(log_z, math.nan)).float()


def warn_if_one_run_biased(bound: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> bool:
    """The warning of [`ONE_RUN_BIAS_BOUND`]: `bound` as [`one_run_bias_bound`] returns it. Returns whether an
    estimate exists (else the caller falls back on the ESS)."""
    key = torch.where(attention_mask.bool(), input_ids, torch.full_like(input_ids, -1))
    _, first = torch.unique(key, dim=0, return_inverse=True)
    per_prompt = torch.full((int(first.max()) + 1,), math.nan, device=bound.device).scatter(0, first, bound.float())
    per_prompt = per_prompt[~per_prompt.isnan()]
    if per_prompt.numel() == 0:
        return False
    level = float(per_prompt.mean())  # host sync: once per call
    if level > ONE_RUN_BIAS_BOUND:
        warnings.warn(
            f"smc_sample: one run's answers are estimated at {level:.2f} in total variation from p^(1/T) (mean over "
            f"the {per_prompt.numel()} prompts with several runs, from the spread of their normaliser estimates, "
            f"above {ONE_RUN_BIAS_BOUND}; an estimate that reads low with few runs: Z is replaced by their mean). Use `pimh_steps` (exact answers: a chain over whole runs), more "
            "particles (`num_particles`) or a proposal closer to p^(1/T). `SMCOutput.answer_bias_bound` holds each "
            "prompt's estimate.",
            UserWarning,
            stacklevel=3,
        )
    return True


def tail_diagnostics(log_normalizers: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per row, how heavy the upper tail of its runs' `Z_hat` is, from the `(batch, K + 1)` `log Z_hat` of its runs:

    - `log_normalizer_variance`: the sample variance of `log Z_hat` (pseudo-marginal chains mix well near 1 and
      slowly well above it: Doucet, Pitt, Deligiannidis & Kohn 2015);
    - `largest_run_share`: the largest `Z_hat` over their sum (1 / (K + 1) when the runs agree; near 1 when one run
      holds the whole estimate of `Z`);
    - `run_ess`: Kong's effective number of runs, `(Σ Z_hat)² / Σ Z_hat²` (K + 1 when the runs agree, near 1 when one
      run holds the sum): what [`warn_if_heavy_tailed`] reads;
    - `pareto_k`: the Hill estimate of the tail shape of `Z_hat` over its largest `min(0.2 S, 3 √S)` of `S = K + 1`
      runs, as PSIS reads importance weights (above 0.7: the mean of `Z_hat` is not to be trusted from S runs); NaN
      with fewer than 15 runs.

    Example:
    ```python
    >>> out = tail_diagnostics(torch.zeros(2, 20))  # runs that agree
    >>> out["log_normalizer_variance"].tolist(), out["run_ess"].tolist(), round(float(out["largest_run_share"][0]), 4)
    ([0.0, 0.0], [20.0, 20.0], 0.05)
    ```
    """
    log_z = log_normalizers.double()
    runs = log_z.shape[1]
    variance = log_z.var(dim=1) if runs > 1 else torch.zeros(log_z.shape[0], dtype=torch.float64, device=log_z.device)
    weights = log_z.softmax(dim=1)
    share = weights.max(dim=1).values
    run_ess = 1.0 / (weights**2).sum(dim=1)
    tail = min(int(0.2 * runs), int(3 * math.sqrt(runs)))
    if runs < 15 or tail < 3:
        shape = torch.full_like(variance, math.nan)
    else:
        ordered = log_z.sort(dim=1, descending=True).values
        shape = (ordered[:, :tail] - ordered[:, tail : tail + 1]).mean(dim=1)
    return {
        "log_normalizer_variance": variance.float(),
        "largest_run_share": share.float(),
        "run_ess": run_ess.float(),
        "pareto_k": shape.float(),
    }


RUN_ESS_LEVEL = 5.0
"""[`warn_if_heavy_tailed`] warns where some prompt's chains rest on fewer effective runs than this: Kong's ESS
`(Σ Z_hat)² / Σ Z_hat²` of a chain's K + 1 runs, averaged (as its inverse) over the prompt's rows. A chain ends,
once mixed, on a run drawn about in proportion to its `Z_hat`; where a handful of runs hold most of the estimates'
sum, the rare large ones it should spend its time in have mostly not been drawn, and its answers stay away from
`p^alpha` however often it accepts. Chosen on the grid of `benchmarks/results/pimh_grid.json` (docs/sampling.md has
the table of hits and misses); the variance of `log Z_hat` did not separate the cells (2.35 passing at α = 2, 2.19
failing at α = 4: it weighs the harmless lower tail, which only gets rejected, like the upper one)."""


def warn_if_heavy_tailed(run_ess: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         steps: int) -> bool:  # fmt: skip
    """Warns when some prompt's chains rest on fewer than [`RUN_ESS_LEVEL`] effective runs (`run_ess` per row, as
    [`tail_diagnostics`] returns it). Returns whether it warned."""
    key = torch.where(attention_mask.bool(), input_ids, torch.full_like(input_ids, -1))
    _, group = torch.unique(key, dim=0, return_inverse=True)
    count = int(group.max()) + 1
    inverse = 1.0 / run_ess.double().to(group.device)
    totals = torch.zeros(count, dtype=torch.float64, device=group.device).index_add_(0, group, inverse)
    rows = torch.zeros(count, dtype=torch.float64, device=group.device).index_add_(0, group, torch.ones_like(inverse))
    level = float((rows / totals).min())  # host sync: once per call
    if level >= RUN_ESS_LEVEL:
        return False
    warnings.warn(
        f"smc_sample: the {steps + 1} SMC runs of a PIMH chain rest on {level:.1f} effective runs on some prompt "
        f"(Kong's ESS of their normaliser estimates, below {RUN_ESS_LEVEL:g}): a few runs hold most of Z, the rare "
        "large ones the chain should spend its time in are mostly not drawn, and its answers may not follow p^(1/T) "
        "even where it accepts often. Use more particles (`num_particles`), a proposal closer to p^(1/T) (with "
        "`proposal='adapter'`: `defensive_mixture=0.5`, which bounds the weights), or more `pimh_steps`. `SMCOutput.run_ess`, `log_normalizer_variance`, `largest_run_share` and `pareto_k` hold each "
        "row's figures.",
        UserWarning,
        stacklevel=3,
    )
    return True


def pimh_chain(log_normalizers: torch.Tensor, generator: torch.Generator | None = None):
    """Particle independent Metropolis-Hastings over independent SMC runs: `log_normalizers` `(batch, K + 1)` are
    each run's `log Z_hat`; the chain starts at run 0 and moves to run `k` with probability
    `min(1, Z_hat_k / Z_hat_current)`. Returns the run each chain ends on `(batch,)` and its acceptance rate.

    Example:
    ```python
    >>> final, rate = pimh_chain(torch.tensor([[0.0, 5.0, -50.0]]), torch.Generator().manual_seed(0))
    >>> final.tolist(), rate.tolist()  # run 1 is always accepted, run 2 almost never
    ([1], [0.5])
    ```
    """
    batch, runs = log_normalizers.shape
    where = generator.device if generator is not None else log_normalizers.device
    uniforms = torch.rand(batch, max(runs - 1, 0), generator=generator, dtype=torch.float64, device=where)
    uniforms = uniforms.to(log_normalizers.device)
    log_z = log_normalizers.double()
    current = torch.zeros(batch, dtype=torch.long, device=log_z.device)
    accepted = torch.zeros(batch, dtype=torch.float64, device=log_z.device)
    rows = torch.arange(batch, device=log_z.device)
    for k in range(1, runs):
        move = uniforms[:, k - 1].log() < log_z[:, k] - log_z[rows, current]
        current = torch.where(move, torch.full_like(current, k), current)
        accepted += move.double()
    return current, accepted / max(runs - 1, 1)


def warn_if_stuck(acceptance: torch.Tensor, steps: int) -> bool:
    """The warning of [`STUCK_PROBABILITY`]; returns whether it warned."""
    stuck = float(((1.0 - acceptance) ** steps).mean())  # host sync: once per call
    if stuck > STUCK_PROBABILITY:
        rate = float(acceptance.mean())
        warnings.warn(
            f"smc_sample: the PIMH chains accepted {rate:.2f} of their {steps} proposed runs (mean over the prompts): "
            f"a chain is still at its first run with probability {stuck:.2f} (above {STUCK_PROBABILITY}), so the "
            "answers keep part of one run's bias away from p^(1/T). Use more `pimh_steps`, more particles "
            "(`num_particles`) or a proposal closer to p^(1/T). `SMCOutput.pimh_acceptance` holds each prompt's rate.",
            UserWarning,
            stacklevel=3,
        )
        return True
    return False


def check_pimh_memory(model, prompts: int, prompt_length: int, max_new_tokens: int, num_particles: int,
                      pimh_steps: int) -> None:  # fmt: skip
    """Refuses a PIMH call whose `K + 1` runs, drawn in one batch, would not fit in memory, before anything runs:
    `prompts × (K + 1) × num_particles` rows, each with a key/value cache of `prompt_length + max_new_tokens` tokens
    and a row of logits; more than half of the free memory of the model's device is an error with the numbers."""
    config = getattr(model, "config", None)
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    parameter = next(model.parameters())
    layers = getattr(config, "num_hidden_layers", 1) or 1
    heads = getattr(config, "num_key_value_heads", None) or getattr(config, "num_attention_heads", 1) or 1
    hidden = getattr(config, "hidden_size", 64) or 64
    head_dim = getattr(config, "head_dim", None) or hidden // max(1, getattr(config, "num_attention_heads", 1) or 1)
    vocab = getattr(config, "vocab_size", 1) or 1
    rows = prompts * (pimh_steps + 1) * num_particles
    per_row = (prompt_length + max_new_tokens) * (2 * layers * heads * head_dim * parameter.element_size() + 8)
    estimated = rows * (per_row + vocab * (parameter.element_size() + 4) * 2)
    check_bytes(
        estimated,
        parameter.device,
        f"`pimh_steps={pimh_steps}` ({pimh_steps + 1} SMC runs of {num_particles} particles for each of {prompts} "
        f"prompt(s), drawn in one batch: {rows} rows of {prompt_length + max_new_tokens} tokens)",
        "Use fewer `pimh_steps` (the docs give the steps that pass at each α), fewer `num_particles`, or fewer "
        "prompts per call.",
    )


def pimh_sample(run, input_ids: torch.Tensor, attention_mask: torch.Tensor, pimh_steps: int, generator=None):
    """The chain's answers for every prompt: `run(ids, mask)` is one SMC run of every row (any backend's, returning
    an `SMCOutput` with its particles), called once on `pimh_steps + 1` copies of each prompt (rows
    `prompt * (K + 1) + k`); the output is that of the run each chain ended on, with `log_normalizer` the log of the
    mean `Z_hat` of all runs (unbiased in `Z`), `num_resamples` summed and `ess` averaged over the runs, and the
    chain's `pimh_acceptance`."""
    prompts, runs = input_ids.shape[0], pimh_steps + 1
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    out = run(input_ids.repeat_interleave(runs, 0), attention_mask.repeat_interleave(runs, 0))
    log_z = out.log_normalizer.view(prompts, runs)
    final, acceptance = pimh_chain(log_z, generator)
    tails = tail_diagnostics(log_z)
    if not warn_if_stuck(acceptance, pimh_steps):  # a chain that never moved says so first
        warn_if_heavy_tailed(tails["run_ess"], input_ids, attention_mask, pimh_steps)
    keep = torch.arange(prompts, device=out.sequences.device) * runs + final.to(out.sequences.device)
    fields = {name: getattr(out, name) for name in out.__dataclass_fields__}
    for name in ("sequences", "sequence_logps", "particles", "particle_log_weights", "particle_logps"):
        if fields.get(name) is not None:
            fields[name] = fields[name][keep]
    fields["log_normalizer"] = (log_z.double().logsumexp(dim=1) - math.log(runs)).to(out.log_normalizer.dtype)
    fields["num_resamples"] = out.num_resamples.view(prompts, runs).sum(dim=1)
    fields["ess"] = out.ess.view(prompts, runs, -1).mean(dim=1)
    fields["pimh_acceptance"] = acceptance.to(out.log_normalizer.device).float()
    fields.update({name: value.to(out.log_normalizer.device) for name, value in tails.items()})
    return type(out)(**fields)


LOW_ESS_FRACTION = 0.5
"""With one run per prompt in the batch (nothing to estimate [`ONE_RUN_BIAS_BOUND`] from),
[`~hf_seqtemp.generation.smc.smc_sample`] warns when the answers were drawn from weights whose ESS / N, averaged over
the prompts, is below this. It is a weak signal: the ESS of a few particles under-reads the weights' tail (measured on an enumerable
toy at N = 4: ESS / N 0.60-0.79 where the answers were at total variation 0.39-0.51 from p^alpha), so it fires only
where the weights have collapsed. `num_return_sequences > 1` gives the truthful bound; `pimh_steps` exact answers."""


def diagnose_one_run(out, input_ids, attention_mask, num_particles: int):
    """One run's answers (`pimh_steps=0`): their bias bound where a prompt has several runs in the batch, warned on
    ([`ONE_RUN_BIAS_BOUND`]); else the low-ESS warning ([`LOW_ESS_FRACTION`])."""
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    out.answer_bias_bound = one_run_bias_bound(out.log_normalizer, input_ids, attention_mask)
    if not warn_if_one_run_biased(out.answer_bias_bound, input_ids, attention_mask):
        _warn_if_degenerate(out.ess[:, -1], num_particles)
    return out


def _warn_if_degenerate(final_ess: torch.Tensor, num_particles: int) -> None:
    """The warning of [`LOW_ESS_FRACTION`]: `final_ess` `(batch,)` is each prompt's ESS of the weights its answer is
    drawn from (before any resampling of the last step)."""
    if num_particles < 2:
        return
    fraction = float((final_ess / num_particles).mean())  # host sync: once per call
    if fraction < LOW_ESS_FRACTION:
        warnings.warn(
            f"smc_sample: the answers were drawn from particle weights of mean ESS / N {fraction:.2f} (N = "
            f"{num_particles}), below {LOW_ESS_FRACTION}: a few particles decided each answer, so the answers' law is "
            "biased away from p^(1/T) (the weighted particles stay consistent). Use more particles "
            "(`num_particles`) or a proposal closer to p^(1/T) (an adapter trained toward it). `SMCOutput.ess` holds "
            "each prompt's ESS after every step.",
            UserWarning,
            stacklevel=3,
        )
