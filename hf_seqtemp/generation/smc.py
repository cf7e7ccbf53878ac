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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..checks import check_generator_device, check_int, check_temperature
from .answers import resolve_eos_and_pad
from .pimh import LOW_ESS_FRACTION, check_pimh_memory, diagnose_one_run, pimh_sample  # noqa: F401 (API)
from .smc_output import SMCOutput
from .smc_proposals import AdapterProposal, SMCProposal, TokenTemperatureProposal

RESAMPLING = ("systematic", "multinomial")
PROPOSALS = ("token", "adapter")


def ramp_exponent(step: int, alpha: float, ramp_tokens: int) -> float:
    """The exponent of the intermediate target after token `step` (0-based): `alpha` without a ramp."""
    if ramp_tokens <= 0:
        return alpha
    return 1.0 + (alpha - 1.0) * min(1.0, (step + 1) / ramp_tokens)


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


def incremental_log_weight(next_logp: torch.Tensor, alpha: float) -> torch.Tensor:
    """`log sum_v p(v | x_<t)^alpha` from `next_logp = log p(. | x_<t)` `(rows, vocab)`: the weight
    `p(x_t)^alpha / q_t(x_t)` of the proposal `q_t = p^alpha / sum_v p(v)^alpha`, whatever `x_t` is drawn."""
    return (alpha * next_logp).logsumexp(dim=-1)


def effective_sample_size(log_weights: torch.Tensor) -> torch.Tensor:
    """`(sum w)^2 / sum w^2` per row of `log_weights` `(batch, N)`."""
    return (2 * log_weights.logsumexp(dim=1) - (2 * log_weights).logsumexp(dim=1)).exp()


@dataclass
class _Particles:
    """The state of all `batch * N` particles (row `b * N + i` is particle `i` of prompt `b`); the KV caches are the
    proposal's."""

    ids: torch.Tensor
    attn: torch.Tensor
    logp: torch.Tensor  # log p of the answer so far
    done: torch.Tensor  # the answer ended at an EOS
    log_weights: torch.Tensor  # (batch, N)

    def reorder(self, index: torch.Tensor) -> None:
        self.ids, self.attn = self.ids[index], self.attn[index]
        self.logp, self.done = self.logp[index], self.done[index]

    def append(self, token: torch.Tensor, next_logp: torch.Tensor, eos: torch.Tensor) -> None:
        """Adds the drawn `token` `(rows, 1)` (padding on finished answers) and its `log p`."""
        self.logp = self.logp + next_logp.gather(1, token)[:, 0].masked_fill(self.done, 0.0)
        self.done = self.done | torch.isin(token[:, 0], eos)
        self.ids = torch.cat([self.ids, token], dim=1)
        self.attn = torch.cat([self.attn, self.attn.new_ones(self.attn.shape[0], 1)], dim=1)


def _next_logp(state: _Particles, logits: torch.Tensor, processors) -> torch.Tensor:
    """`log p(v | x_<t)` of every particle, `p` being the processed model.

    The processors see batches laid out as `generate` built them (one row per prompt, e.g. a repetition penalty
    that knows each row's padding): they run once per particle index `i` on the rows `(b, i)` of every prompt `b`.
    """
    if processors:
        batch, n = state.log_weights.shape
        ids, scores = state.ids.view(batch, n, -1), logits.view(batch, n, -1)
        logits = torch.stack([processors(ids[:, i], scores[:, i]) for i in range(n)], dim=1).flatten(0, 1)
    return logits.log_softmax(dim=-1)


def _resample(state: _Particles, proposal: SMCProposal, next_logp, method, threshold, generator):
    """Resamples the prompts whose ESS is below `threshold * N` (particles, their caches and `next_logp` alike);
    returns the reordered `next_logp` and the mask of resampled prompts."""
    batch, n = state.log_weights.shape
    low = effective_sample_size(state.log_weights) < threshold * n
    if not bool(low.any()):
        return next_logp, low
    local = torch.arange(n, device=low.device).expand(batch, n).clone()
    local[low] = resample_indices(state.log_weights[low], method, generator)
    index = (local + n * torch.arange(batch, device=low.device)[:, None]).flatten()
    mean = state.log_weights[low].logsumexp(dim=1, keepdim=True) - math.log(n)
    state.log_weights[low] = mean.expand(-1, n)  # equal weights that keep the normaliser estimate
    state.reorder(index)
    proposal.reorder(index)
    return next_logp[index], low


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


def _start(proposal: SMCProposal, input_ids, attention_mask, num_particles):
    """The particles of every prompt, their prompt prefilled once by the proposal; returns them and `p`'s logits."""
    logits = proposal.start(input_ids, attention_mask, num_particles)
    rows, device = input_ids.shape[0] * num_particles, input_ids.device
    state = _Particles(
        ids=input_ids.repeat_interleave(num_particles, dim=0),
        attn=attention_mask.repeat_interleave(num_particles, dim=0),
        logp=torch.zeros(rows, device=device),
        done=torch.zeros(rows, dtype=torch.bool, device=device),
        log_weights=torch.zeros(input_ids.shape[0], num_particles, device=device),
    )
    return state, logits


def _run(proposal: SMCProposal, state, logits, settings, max_new_tokens, generator):
    """The SMC loop, for any proposal; returns the number of model calls, the resampling steps per prompt and the
    ESS after each step's weight update.

    At step `t` the weight of a running particle grows by `alpha_t log p(x_t) - log r(x_t)` (plus the ramp's
    `(alpha_t - alpha_{t-1}) log p(x_<t)`, also on finished answers). A proposal whose weight does not depend on the
    token ([`~hf_seqtemp.generation.smc_proposals.SMCProposal.weight_before_draw`]) is weighed and resampled before
    the draw; any other is resampled before the draw on the weights of the draws so far, then weighed."""
    alpha, ramp, processors, method, threshold, eos, pad = settings
    batch, n = state.log_weights.shape
    calls, alpha_prev = proposal.calls_per_step, ramp_exponent(0, alpha, ramp)
    resamples = torch.zeros(batch, dtype=torch.long, device=state.log_weights.device)
    token, ess = None, []
    for step in range(max_new_tokens):
        if step:
            logits = proposal.advance(token, state.attn)
            calls += proposal.calls_per_step
        next_logp = _next_logp(state, logits, processors)
        alpha_t = ramp_exponent(step, alpha, ramp)
        ramp_term = (alpha_t - alpha_prev) * state.logp
        if proposal.weight_before_draw:
            log_norm = incremental_log_weight(next_logp, alpha_t).masked_fill(state.done, 0.0)
            state.log_weights += (log_norm + ramp_term).view(batch, n)
            ess.append(effective_sample_size(state.log_weights))
        if proposal.weight_before_draw or step:  # otherwise the weights of the draws so far are in
            next_logp, low = _resample(state, proposal, next_logp, method, threshold, generator)
            resamples += low.long()
            ramp_term = (alpha_t - alpha_prev) * state.logp
        next_logq = proposal.log_q(next_logp, alpha_t)
        token = torch.multinomial(next_logq.exp(), 1, generator=generator).masked_fill(state.done[:, None], pad)
        if not proposal.weight_before_draw:
            increment = alpha_t * next_logp.gather(1, token)[:, 0] - next_logq.gather(1, token)[:, 0]
            state.log_weights += (increment.masked_fill(state.done, 0.0) + ramp_term).view(batch, n)
            ess.append(effective_sample_size(state.log_weights))
        state.append(token, next_logp, eos)
        alpha_prev = alpha_t
        if bool(state.done.all()):  # one host sync per token, as `generate`'s own stopping check
            break
    state.log_weights += ((alpha - alpha_prev) * state.logp).view(batch, n)  # the rest of a ramp: target p^alpha
    return calls, resamples, torch.stack(ess, dim=1)


@torch.no_grad()
def smc_sample(
    model: torch.nn.Module,
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
) -> SMCOutput | torch.LongTensor:
    """Samples answers approximately from `p(answer | prompt)^(1/T)` by sequential Monte Carlo (Power-SMC).

    See the module docstring for the algorithm. The cost is one sequential forward pass per generated token, as for
    plain sampling, on a batch `num_particles` times wider. With `proposal="adapter"` the particles are drawn from a
    tempered adapter and weighed by the base model ([`~hf_seqtemp.generation.smc_proposals.AdapterProposal`]): two
    forward passes per token, `p` is the model with every adapter off, and the adapter proposes only tokens that
    `p` (processors included: top-k, top-p, min-p) allows.

    Args:
        model (`torch.nn.Module`): a causal LM (any `transformers` `...ForCausalLM`, PEFT-wrapped or not).
        input_ids (`torch.LongTensor` of shape `(batch, prompt_length)`): prompts, left-padded.
        attention_mask (`torch.Tensor` of shape `(batch, prompt_length)`, *optional*): 0 on padding.
        max_new_tokens (`int`, *optional*, defaults to `16`): longest answer.
        seq_temperature (`float`, *optional*, defaults to `0.5`): sequence temperature `T = 1 / alpha`.
        num_particles (`int`, *optional*, defaults to `16`): particles per prompt (1: token temperature `T`).
        ess_threshold (`float`, *optional*, defaults to `0.5`): resample a prompt's particles when their effective
            sample size falls below `ess_threshold * num_particles`.
        alpha_ramp_tokens (`int`, *optional*, defaults to `0`): ramp the exponent from 1 to `alpha` over this many
            tokens, with weights that keep the target `p^alpha` (0: no ramp).
        resampling (`str`, *optional*, defaults to `"systematic"`): `"systematic"` or `"multinomial"`.
        logits_processor (`LogitsProcessorList`, *optional*): processors that define `p` (applied to the logits
            before the log-softmax, in the weights and in the token proposal; the adapter proposal is restricted to
            the tokens they leave).
        generator (`torch.Generator`, *optional*): makes the run reproducible.
        return_dict_in_generate (`bool`, *optional*, defaults to `False`): return an [`SMCOutput`].
        return_particles (`bool`, *optional*, defaults to `False`): add every particle and its log-weight to it.
        eos_token_id (`int` or `list[int]`, *optional*): tokens that end an answer; defaults to the model's
            `generation_config.eos_token_id` (none: fixed length).
        pad_token_id (`int`, *optional*): written after an answer's EOS; defaults to the generation config's pad
            id, else the first EOS id.
        proposal (`str`, *optional*, defaults to `"token"`): `"token"` (token temperature `1 / alpha` of `p`, the
            model as it is) or `"adapter"` (a PEFT adapter of `model` proposes; the target `p` is `model` with every
            adapter off).
        adapter_name (`str`, *optional*): the proposing adapter with `proposal="adapter"`; defaults to the one active
            adapter.
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
            N and K measured (docs/sampling.md).

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
    eos, pad = resolve_eos_and_pad(model, eos_token_id, pad_token_id)
    eos = eos.to(input_ids.device)
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    if pimh_steps:
        check_pimh_memory(model, *input_ids.shape, max_new_tokens, num_particles, pimh_steps)
    elif num_particles == 1:
        warnings.warn(
            "smc_sample: `num_particles=1` with `pimh_steps=0` returns the proposal's own draws (one particle has "
            "nothing to be reweighted against): token temperature T, not p^(1/T) over answers. Use 16 particles, or "
            "`pimh_steps=K` (a chain over K + 1 runs is exact for any number of particles).",
            UserWarning,
            stacklevel=2,
        )
    settings = (alpha, alpha_ramp_tokens, logits_processor, resampling, ess_threshold, eos, pad)
    if proposal == "adapter":
        sampler = AdapterProposal(model, adapter_name, defensive_mixture)
    else:
        sampler = TokenTemperatureProposal(model)

    def run(ids: torch.Tensor, mask: torch.Tensor) -> SMCOutput:
        return _one_run(sampler, ids, mask, settings, num_particles, max_new_tokens, generator)

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


def _one_run(sampler, input_ids, attention_mask, settings, num_particles, max_new_tokens, generator) -> SMCOutput:
    """One SMC run of every prompt of the batch: its drawn answers, normaliser estimates and particles."""
    pad = settings[-1]
    batch, prompt_length = input_ids.shape
    state, logits = _start(sampler, input_ids, attention_mask, num_particles)
    calls, resamples, ess = _run(sampler, state, logits, settings, max_new_tokens, generator)
    ids = state.ids
    if ids.shape[1] < prompt_length + max_new_tokens:  # every answer ended early
        ids = torch.cat([ids, ids.new_full((ids.shape[0], prompt_length + max_new_tokens - ids.shape[1]), pad)], 1)
    ids = ids.view(batch, num_particles, -1)
    log_weights = state.log_weights - state.log_weights.logsumexp(dim=1, keepdim=True)
    chosen = torch.multinomial(log_weights.exp().double(), 1, generator=generator)[:, 0]
    rows = torch.arange(batch, device=ids.device)
    logp = state.logp.view(batch, num_particles)
    return SMCOutput(
        sequences=ids[rows, chosen],
        sequence_logps=logp[rows, chosen],
        log_normalizer=state.log_weights.logsumexp(dim=1) - math.log(num_particles),
        num_resamples=resamples,
        model_calls=calls,
        ess=ess,
        particles=ids,
        particle_log_weights=log_weights,
        particle_logps=logp,
    )
