# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Training-free power sampling for autoregressive LMs by sequential Monte Carlo (Power-SMC), targeting `p(x)^alpha`.

Each prompt gets `num_particles` particles, all of them rows of one batch that share one KV cache. Step `t` runs
one forward pass for every particle, giving the base conditional `p(v | x_<t)` (the model's logits after the
user's logits processors, `softmax(processors(x_<t, logits))`: the processed model *is* `p`, in the proposal and in
the weights alike). The intermediate target after `t` tokens is `gamma_t(x_<=t) = prod_{s<=t} p(x_s | x_<s)^alpha`
and the proposal is token temperature `1 / alpha`, `q_t(v) = p(v | x_<t)^alpha / Z_t` with
`Z_t = sum_v p(v | x_<t)^alpha`. The incremental importance weight is

    gamma_t / (gamma_{t-1} q_t) = p(x_t | x_<t)^alpha / q_t(x_t) = Z_t(x_<t) = sum_v p(v | x_<t)^alpha,

read from the same logits, and independent of the token drawn. So each step weights the particles by `Z_t`,
resamples them when the effective sample size `ESS = (sum w)^2 / sum w^2` of a prompt falls below
`ess_threshold * num_particles` (systematic resampling by default: one uniform per prompt, `N` evenly spaced
points; `"multinomial"` draws `N` independent indices), reorders the KV cache accordingly, and only then draws
`x_t ~ q_t`: after resampling the particles carry equal weights and the next token comes from the fully adapted
proposal. A particle whose answer ended (any EOS id, included in the answer) keeps its weight and gets no further
increment; it is padded with `pad_token_id`. An answer with no EOS within `max_new_tokens` tokens is the truncated
event, whose probability is that of its tokens, so the target is `p^alpha` over the answers of at most
`max_new_tokens` tokens, as in [`power_sample`]. The answer returned for a prompt is one particle drawn with
probability proportional to its final weight; the estimate is consistent, i.e. exact as `num_particles` grows (with
finite `N` the answer's law is biased by O(1/N)).

**Three answer laws.** The weighted particles are consistent and `Z_hat` is unbiased; one run's drawn answer is biased
by O(1/N) (chi-square p 1e-5 to 1e-33 at N = 4 on an enumerable toy); with `pimh_steps=K` the answer is the state of a
particle independent Metropolis-Hastings chain over `K + 1` runs drawn in one batch ([`~hf_seqtemp.generation.pimh`]),
exactly `p^alpha` for any N, with its acceptance rate in `SMCOutput.pimh_acceptance`.

The optional ramp (`alpha_ramp_tokens=K`) tempers the early steps less: the intermediate target after `t` tokens is
`p(x_<=t)^alpha_t` with `alpha_t = 1 + (alpha - 1) min(1, (t + 1) / K)`, the proposal is `p^alpha_t / Z_t(alpha_t)`,
and the weight carries the change of target on the prefix, `(alpha_t - alpha_{t-1}) log p(x_<t) + log Z_t(alpha_t)`
(also on finished answers). The last target is `p^alpha` in every case (answers that end before the ramp does get
the rest of the exponent at the end), so the ramp changes the variance of the weights, never the target.

**One sampler, two backends.** The loop ([`_run`]) is written once against the particles of
[`~hf_seqtemp.generation.smc_particles`]: on a model, one token per step from the KV caches (the order above); on an
engine server (`smc_sample(client, ...)`), rounds of `block_size` tokens drawn by the server at token temperature
`1 / alpha` (or by a LoRA adapter it serves), weighed by `sum_t [alpha log p(x_t) - log r(x_t)]` over the block and
resampled between rounds: the same target and the same [`SMCOutput`], two requests a round whatever the number of
particles. With `block_size=1` the engine weighs *after* each draw (the loop above, which sees the whole next-token
law, resamples on `Z_t` before drawing: lower variance, same target).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch

from ..checks import check_generator_device, check_int, check_temperature
from ..engine.client import EngineClient
from .answers import resolve_eos_and_pad
from .engine_proposal import EngineProposal
from .pimh import LOW_ESS_FRACTION, check_pimh_memory, diagnose_one_run, pimh_sample  # noqa: F401 (API)
from .smc_output import SMCOutput
from .smc_particles import EngineParticles, ModelParticles, incremental_log_weight, ramp_exponent  # noqa: F401 (API)
from .smc_proposals import AdapterProposal, TokenTemperatureProposal

RESAMPLING = ("systematic", "multinomial")
PROPOSALS = ("token", "adapter")
ENGINE_BLOCK_SIZE = 16
"""Tokens per SMC round on an engine when `block_size` is not given."""


def resample_indices(log_weights: torch.Tensor, method: str, generator: torch.Generator | None) -> torch.Tensor:
    """Ancestor indices `(batch, N)` within each row of `log_weights` `(batch, N)`, sorted (systematic) or not.

    Systematic: `u ~ U[0, 1)` per row, points `(u + i) / N`, ancestor = first index whose cumulative weight
    exceeds the point; each particle is kept `floor(N w_i)` or `ceil(N w_i)` times. Multinomial: `N` independent
    draws from the weights.
    """
    batch, n = log_weights.shape
    weights = (log_weights - log_weights.logsumexp(dim=1, keepdim=True)).exp().double()
    if method == "multinomial":
        return torch.multinomial(weights, n, replacement=True, generator=generator)
    u = torch.rand(batch, 1, generator=generator, dtype=torch.float64, device=log_weights.device)
    points = (u + torch.arange(n, dtype=torch.float64, device=log_weights.device)) / n
    cumulative = weights.cumsum(dim=1)
    cumulative[:, -1] = 1.0 + 1e-12  # rounding must not leave a point past the last particle
    return torch.searchsorted(cumulative, points, right=True).clamp(max=n - 1)


def effective_sample_size(log_weights: torch.Tensor) -> torch.Tensor:
    """`(sum w)^2 / sum w^2` per row of `log_weights` `(batch, N)`."""
    return (2 * log_weights.logsumexp(dim=1) - (2 * log_weights).logsumexp(dim=1)).exp()


def _resample(particles, method, threshold, generator) -> torch.Tensor:
    """Resamples the prompts whose ESS is below `threshold * N` (the particles and what the backend keeps for them
    alike); returns the mask of resampled prompts."""
    log_weights = particles.log_weights
    batch, n = log_weights.shape
    low = effective_sample_size(log_weights) < threshold * n
    if not bool(low.any()):
        return low
    local = torch.arange(n, device=low.device).expand(batch, n).clone()
    local[low] = resample_indices(log_weights[low], method, generator)
    index = (local + n * torch.arange(batch, device=low.device)[:, None]).flatten()
    mean = log_weights[low].logsumexp(dim=1, keepdim=True) - math.log(n)
    log_weights[low] = mean.expand(-1, n)  # equal weights that keep the normaliser estimate
    particles.reorder(index)
    return low


def _run(particles, method, threshold, max_new_tokens, generator, pad):
    """The SMC loop, for any proposal on either backend ([`~hf_seqtemp.generation.smc_particles`]); returns the
    resampling steps per prompt and the ESS after each weight update.

    A proposal whose weight does not depend on the tokens drawn weighs and resamples before the draw (fully
    adapted); any other resamples before the draw on the weights of the draws so far, then weighs."""
    batch = particles.log_weights.shape[0]
    resamples = torch.zeros(batch, dtype=torch.long, device=particles.log_weights.device)
    ess = []
    for step in range(0, max_new_tokens, particles.block):
        before = particles.before_draw(step)
        if before is not None:
            particles.log_weights += before
            ess.append(effective_sample_size(particles.log_weights).float())
        if before is not None or step:  # otherwise the weights of the draws so far are in
            resamples += _resample(particles, method, threshold, generator).long()
        after = particles.draw(step, min(particles.block, max_new_tokens - step), generator, pad)
        if after is not None:
            particles.log_weights += after
            ess.append(effective_sample_size(particles.log_weights).float())
        if particles.all_done():
            break
    return resamples, torch.stack(ess, dim=1)


def _check_arguments(input_ids, max_new_tokens, num_particles, ess_threshold, alpha_ramp_tokens, resampling):
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError(f"`input_ids` must be a 2-D tensor (batch, length), got {getattr(input_ids, 'shape', None)}.")
    check_int(max_new_tokens, "max_new_tokens")
    check_int(num_particles, "num_particles", fix="1 is token-temperature sampling; try 16.")
    check_int(alpha_ramp_tokens, "alpha_ramp_tokens", 0, fix="0 turns the ramp off.")
    if not isinstance(ess_threshold, (int, float)) or not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"`ess_threshold` must be a float in [0, 1], got {ess_threshold!r}; the default is 0.5.")
    if resampling not in RESAMPLING:
        raise ValueError(f"`resampling` must be one of {list(RESAMPLING)}, got {resampling!r}.")


def _check_mixture(defensive_mixture, proposal: str) -> None:
    if isinstance(defensive_mixture, bool) or not isinstance(defensive_mixture, (int, float)):
        raise TypeError(f"`defensive_mixture` must be a float in [0, 1), got {defensive_mixture!r}; try 0.5.")
    if not 0.0 <= defensive_mixture < 1.0:
        raise ValueError(
            f"`defensive_mixture` must be in [0, 1), got {defensive_mixture!r}: it is the token proposal's share in "
            "the adapter's (1 would be `proposal='token'`); try 0.5."
        )
    if defensive_mixture and proposal != "adapter":
        raise ValueError(
            f"`defensive_mixture={defensive_mixture!r}` mixes the token proposal into an adapter's, and the proposal "
            f"is {proposal!r}: drop it, or pass `proposal='adapter'` with a loaded adapter."
        )


@torch.no_grad()
def smc_sample(
    model: torch.nn.Module | EngineClient,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    max_new_tokens: int = 16,
    seq_temperature: float = 0.5,
    num_particles: int = 16,
    ess_threshold: float = 0.5,
    alpha_ramp_tokens: int = 0,
    resampling: str = "systematic",
    logits_processor=None,
    generator: torch.Generator | None = None,
    return_dict_in_generate: bool = False,
    return_particles: bool = False,
    eos_token_id: int | Sequence[int] | None = None,
    pad_token_id: int | None = None,
    proposal: str = "token",
    adapter_name: str | None = None,
    pimh_steps: int = 0,
    defensive_mixture: float = 0.0,
    block_size: int | None = None,
    proposal_client: EngineClient | None = None,
) -> SMCOutput | torch.LongTensor:
    """Samples answers approximately from `p(answer | prompt)^(1/T)` by sequential Monte Carlo (Power-SMC).

    See the module docstring for the algorithm. The cost is one sequential forward pass per generated token, as for
    plain sampling, on a batch `num_particles` times wider. With `proposal="adapter"` the particles are drawn from a
    tempered adapter and weighed by the base model ([`~hf_seqtemp.generation.smc_proposals.AdapterProposal`]): two
    forward passes per token, `p` is the model with every adapter off, and the adapter proposes only tokens that
    `p` (processors included: top-k, top-p, min-p) allows.

    On an engine server (`model` an [`~hf_seqtemp.engine.EngineClient`]) the same loop runs on
    [`~hf_seqtemp.generation.smc_particles.EngineParticles`]: the particles advance `block_size` tokens per round
    (two requests a round whatever the number of particles), drawn at token temperature `1 / alpha` by the server
    (started with `--logprobs-mode processed_logprobs`) or by the LoRA adapter it serves as `adapter_name`, and are
    weighed and resampled between rounds; `model_calls` then counts the sequential requests.

    Args:
        model (`torch.nn.Module` or [`~hf_seqtemp.engine.EngineClient`]): a causal LM (any `transformers`
            `...ForCausalLM`, PEFT-wrapped or not), or the engine server of the base model `p`.
        input_ids (`torch.LongTensor` of shape `(batch, prompt_length)`): prompts, left-padded.
        attention_mask (`torch.Tensor` of shape `(batch, prompt_length)`, *optional*): 0 on padding.
        max_new_tokens (`int`, *optional*, defaults to `16`): longest answer.
        seq_temperature (`float`, *optional*, defaults to `0.5`): sequence temperature `T = 1 / alpha`.
        num_particles (`int`, *optional*, defaults to `16`): particles per prompt (1: token temperature `T`).
        ess_threshold (`float`, *optional*, defaults to `0.5`): resample a prompt's particles when their effective
            sample size falls below `ess_threshold * num_particles`.
        alpha_ramp_tokens (`int`, *optional*, defaults to `0`): ramp the exponent from 1 to `alpha` over this many
            tokens, with weights that keep the target `p^alpha` (0: no ramp; not on an engine).
        resampling (`str`, *optional*, defaults to `"systematic"`): `"systematic"` or `"multinomial"`.
        logits_processor (`LogitsProcessorList`, *optional*): processors that define `p` (applied to the logits
            before the log-softmax, in the weights and in the token proposal; the adapter proposal is restricted to
            the tokens they leave; not on an engine, whose `p` is the served model's own).
        generator (`torch.Generator`, *optional*): makes the run reproducible (on an engine it seeds the requests).
        return_dict_in_generate (`bool`, *optional*, defaults to `False`): return an [`SMCOutput`].
        return_particles (`bool`, *optional*, defaults to `False`): add every particle and its log-weight to it.
        eos_token_id (`int` or `list[int]`, *optional*): tokens that end an answer; defaults to the model's
            `generation_config.eos_token_id` (none: fixed length).
        pad_token_id (`int`, *optional*): written after an answer's EOS; defaults to the generation config's pad
            id, else the first EOS id.
        proposal (`str`, *optional*, defaults to `"token"`): `"token"` (token temperature `1 / alpha` of `p`, the
            model as it is) or `"adapter"` (a PEFT adapter of `model`, or the LoRA adapter the engine serves as
            `adapter_name`, proposes; the target `p` is the model with every adapter off).
        adapter_name (`str`, *optional*): the proposing adapter with `proposal="adapter"`; defaults to the one active
            adapter (on an engine: required, the served adapter's name).
        pimh_steps (`int`, *optional*, defaults to `0`): steps of the particle independent Metropolis-Hastings chain
            over whole runs (see the module docstring): `K > 0` draws `K + 1` runs per prompt in one batch and returns
            the chain's answer, exactly `p^alpha` distributed as `K` grows for any `num_particles`; `0` returns one
            run's answer, biased at small `num_particles`.
        defensive_mixture (`float`, *optional*, defaults to `0.0`): with `proposal="adapter"`, the share `eps` of
            the token proposal mixed into the adapter's at every step (`eps * p^alpha / Z_t + (1 - eps) * q`, read
            from the base logits the step computes anyway; the weights use the mixture's density, so the target is
            unchanged): each weight is then at most `1 / eps` times the token proposal's, so an adapter that misses
            part of `p^alpha` no longer gives `Z_hat` a heavy tail. With `pimh_steps` this is what makes the adapter
            route exact at sharp targets: on the enumerable toy of `benchmarks/results/pimh_grid_mixture.json`
            (a random LoRA, alpha = 4) `0.5` passes chi-square at N = 2 and 4, K = 32, where `0` fails at every
            N and K measured (docs/sampling.md). Not on an engine (a round draws a block from one served model).
        block_size (`int`, *optional*): on an engine, tokens per round (resampling happens between rounds; defaults
            to `16`); a model advances one token per step.
        proposal_client ([`~hf_seqtemp.engine.EngineClient`], *optional*): on an engine, the server of
            `adapter_name` when it is another one (on vLLM's CPU build a server with LoRA cannot score).

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`, or an [`SMCOutput`].

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> out = smc_sample(tiny_causal_lm(), torch.tensor([[1, 2], [3, 4]]), max_new_tokens=4, seq_temperature=0.5,
    ...                  num_particles=8, generator=torch.Generator().manual_seed(0), return_dict_in_generate=True,
    ...                  eos_token_id=3, pad_token_id=0)
    >>> out.sequences.shape, out.model_calls <= 4
    (torch.Size([2, 6]), True)
    ```
    """
    _check_arguments(input_ids, max_new_tokens, num_particles, ess_threshold, alpha_ramp_tokens, resampling)
    check_int(
        pimh_steps,
        "pimh_steps",
        0,
        fix="0 returns one run's answer; K > 0 runs a PIMH chain, exact as K grows (docs/sampling.md gives the K that passed at each α).",
    )
    check_generator_device(generator, input_ids.device)
    if proposal not in PROPOSALS:
        raise ValueError(f"`proposal` must be one of {list(PROPOSALS)}, got {proposal!r}.")
    _check_mixture(defensive_mixture, proposal)
    alpha = 1.0 / check_temperature(seq_temperature, "seq_temperature")
    engine = isinstance(model, EngineClient)
    _check_backend_options(engine, logits_processor, alpha_ramp_tokens, defensive_mixture, block_size, proposal_client)
    eos, pad = resolve_eos_and_pad(None if engine else model, eos_token_id, pad_token_id)
    eos = eos.to(input_ids.device)
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    if pimh_steps and not engine:
        check_pimh_memory(model, *input_ids.shape, max_new_tokens, num_particles, pimh_steps)
    elif num_particles == 1 and not pimh_steps:
        warnings.warn(
            "smc_sample: `num_particles=1` with `pimh_steps=0` returns the proposal's own draws (one particle has "
            "nothing to be reweighted against): token temperature T, not p^(1/T) over answers. Use 16 particles, or "
            "`pimh_steps=K` (a chain over K + 1 runs is exact for any number of particles).",
            UserWarning,
            stacklevel=2,
        )
    if engine:
        if proposal == "adapter" and not adapter_name:
            raise ValueError(
                "`proposal='adapter'` on an engine needs `adapter_name`, the name the server serves the adapter under "
                "(`hf-seqtemp serve BASE --adapter NAME=FOLDER`)."
            )
        served = adapter_name if proposal == "adapter" else None
        sampler = EngineProposal(model, alpha, eos.tolist(), served, proposal_client)
        block = ENGINE_BLOCK_SIZE if block_size is None else block_size

        def particles(ids: torch.Tensor, mask: torch.Tensor):
            return EngineParticles(sampler, ids, mask, num_particles, block, max_new_tokens, generator)
    else:
        sampler = (
            AdapterProposal(model, adapter_name, defensive_mixture)
            if proposal == "adapter"
            else TokenTemperatureProposal(model)
        )
        settings = (alpha, alpha_ramp_tokens, logits_processor, eos)

        def particles(ids: torch.Tensor, mask: torch.Tensor):
            return ModelParticles(sampler, ids, mask, num_particles, settings)

    def run(ids: torch.Tensor, mask: torch.Tensor) -> SMCOutput:
        return _one_run(particles(ids, mask), (resampling, ess_threshold), max_new_tokens, generator, pad)

    out = (
        diagnose_one_run(run(input_ids, attention_mask), input_ids, attention_mask, num_particles)
        if pimh_steps == 0
        else pimh_sample(run, input_ids, attention_mask, pimh_steps, generator)
    )
    if not return_dict_in_generate:
        return out.sequences
    if not return_particles:
        fields = {name: getattr(out, name) for name in out.__dataclass_fields__ if not name.startswith("particle")}
        out = SMCOutput(**fields)
    return out


def _check_backend_options(engine, logits_processor, alpha_ramp_tokens, defensive_mixture, block_size, client):
    """Refuses by name an option the backend cannot apply (nothing is silently dropped)."""
    if not engine:
        if block_size not in (None, 1):
            raise ValueError(
                f"`block_size={block_size!r}` sets the tokens per round on an engine; a model advances one token per "
                "step with a resampling check after each: drop it, or pass an `EngineClient` as `model`."
            )
        if client is not None:
            raise ValueError(
                "`proposal_client` is an engine server of the adapter: pass an `EngineClient` as `model`."
            )
        return
    if block_size is not None:
        check_int(block_size, "block_size", fix="1 resamples after every token; 16 is one request per 16 tokens.")
    refused = {
        "logits_processor": (bool(logits_processor), "it targets the served model's own p"),
        "alpha_ramp_tokens": (bool(alpha_ramp_tokens), "a round draws a block at one token temperature"),
        "defensive_mixture": (bool(defensive_mixture), "a round draws a block from one served model"),
    }
    for name, (given, why) in refused.items():
        if given:
            raise ValueError(
                f"`{name}` is not available on an engine ({why}): leave it at its default, or pass the model instead "
                "of the engine (the transformers loop applies it)."
            )


def _one_run(particles, resampling, max_new_tokens, generator, pad) -> SMCOutput:
    """One SMC run of every prompt of the batch: its drawn answers, normaliser estimates and particles."""
    resamples, ess = _run(particles, *resampling, max_new_tokens, generator, pad)
    ids, logp = particles.finish(max_new_tokens, pad)
    batch, num_particles = particles.log_weights.shape
    log_weights = particles.log_weights - particles.log_weights.logsumexp(dim=1, keepdim=True)
    chosen = torch.multinomial(log_weights.exp().double(), 1, generator=generator)[:, 0]
    rows = torch.arange(batch, device=ids.device)
    return SMCOutput(
        sequences=ids[rows, chosen],
        sequence_logps=logp[rows, chosen],
        log_normalizer=(particles.log_weights.logsumexp(dim=1) - math.log(num_particles)).float(),
        num_resamples=resamples,
        model_calls=particles.calls,
        ess=ess,
        particles=ids,
        particle_log_weights=log_weights.float(),
        particle_logps=logp,
    )
