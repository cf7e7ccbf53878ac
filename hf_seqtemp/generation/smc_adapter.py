# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequential Monte Carlo for `p(x)^alpha` with a tempered adapter as the proposal (`smc_sample(...,
proposal="adapter")`).

The target is the base model `p` (every adapter off, the call's logits processors applied); the proposal is the
adapter's own next-token distribution `q(v | x_<t)` (adapter on, the same processors applied, so that it never
proposes a token `p` forbids). The intermediate targets are those of Power-SMC, `gamma_t(x_<=t) = p(x_<=t)^alpha_t`,
so the incremental log-weight of a running particle that draws `x_t ~ q` is

    log gamma_t / (gamma_{t-1} q) = alpha_t log p(x_t | x_<t) - log q(x_t | x_<t) + (alpha_t - alpha_{t-1}) log p(x_<t)

(the last term only under a ramp); a finished particle (EOS drawn, kept in its answer) keeps its weight and gets only
the ramp term. With the ramp off, a particle's final log-weight is `alpha log p(answer) - log q(answer)`: any adapter
with full support gives a consistent estimator, and an adapter exactly equal to the tempered target
`p^alpha / Z` gives equal final weights (without resampling: `ess_threshold=0`). Unlike the token proposal, the
weights of a perfect adapter are *not* equal along the way: after `t` tokens a particle's log-weight is
`log V(empty) - log V(x_<=t)` with `V(prefix) = sum_y p(y | prefix)^alpha` the tempered mass of the prefix's
futures, which the adapter has learned to anticipate and the prefix targets `p^alpha` ignore. So resampling on the
way trades the adapter's look-ahead for the prefix target's; `ess_threshold=0` is importance sampling from the
adapter (no resampling, final weights only). The benchmark (`benchmarks/samplers.py`) measures both.

Particles are resampled before a step when their ESS fell below `ess_threshold * N` (weights depend on the token
drawn, so the update follows the draw). Each step runs two forward passes (adapter on, adapter off), each with its
own KV cache; both caches are reordered together on resampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .adapters import active_adapter, active_peft_adapters


def proposal_adapter_name(model, adapter_name: str | None) -> str:
    """The adapter that proposes: `adapter_name`, else the one active PEFT adapter of `model`."""
    if adapter_name is not None:
        return adapter_name
    active = active_peft_adapters(model)
    if len(active) != 1:
        raise ValueError(
            f"`proposal='adapter'` samples from the model's active PEFT adapter, and {len(active)} are active "
            f"({active}): load a tempered adapter with `hf_seqtemp.load_tempered` (or activate exactly one), or use "
            "`proposal='token'` (token temperature, no adapter needed)."
        )
    return active[0]


def adapter_log_weight(next_logp, next_logq, token, alpha_t: float) -> torch.Tensor:
    """`alpha_t log p(x_t | x_<t) - log q(x_t | x_<t)` of the drawn `token` `(rows, 1)`, from the base's and the
    adapter's next-token log-probabilities `(rows, vocab)`."""
    return alpha_t * next_logp.gather(1, token)[:, 0] - next_logq.gather(1, token)[:, 0]


@dataclass
class AdapterStep:
    """The two forward passes of one step: `p` (every adapter off) and `q` (adapter `name` on), each with its own
    cache (`state.past` and `state.proposal_past`)."""

    model: torch.nn.Module
    name: str
    forward: object  # smc._forward

    def __call__(self, ids, attn, past_p, past_q):
        with active_adapter(self.model, None):
            logits_p, past_p = self.forward(self.model, ids, attn, past_p)
        with active_adapter(self.model, self.name):
            logits_q, past_q = self.forward(self.model, ids, attn, past_q)
        return logits_p, past_p, logits_q, past_q


def run_adapter_proposal(state, logits_p, logits_q, step_fn, settings, max_new_tokens, generator, helpers):
    """The SMC loop with the adapter as proposal; returns the model calls, resampling steps per prompt and ESS per
    step. `state` is the particles of the base pass (`state.past` the base cache); `step_fn` is an [`AdapterStep`]."""
    alpha, ramp, processors, method, threshold, eos, pad = settings
    ramp_exponent, next_logp_of, resample, effective_sample_size = helpers
    batch, n = state.log_weights.shape
    calls, resamples, alpha_prev = 2, torch.zeros(batch, dtype=torch.long), ramp_exponent(0, alpha, ramp)
    token, ess = None, []
    for step in range(max_new_tokens):
        if step:
            logits_p, state.past, logits_q, state.proposal_past = step_fn(
                token, state.attn, state.past, state.proposal_past
            )
            calls += 2
        both = torch.cat([next_logp_of(state, logits_p, processors), next_logp_of(state, logits_q, processors)], -1)
        if step:  # the weights of the last draw are in: resample before this draw
            both, low = resample(state, both, method, threshold, generator)
            resamples += low.long().cpu()
        next_logp, next_logq = both.chunk(2, dim=-1)
        alpha_t = ramp_exponent(step, alpha, ramp)
        token = torch.multinomial(next_logq.exp(), 1, generator=generator).masked_fill(state.done[:, None], pad)
        increment = adapter_log_weight(next_logp, next_logq, token, alpha_t)
        state.log_weights += (increment.masked_fill(state.done, 0.0) + (alpha_t - alpha_prev) * state.logp).view(
            batch, n
        )
        ess.append(effective_sample_size(state.log_weights))
        state.logp = state.logp + next_logp.gather(1, token)[:, 0].masked_fill(state.done, 0.0)
        state.done = state.done | torch.isin(token[:, 0], eos)
        state.ids = torch.cat([state.ids, token], dim=1)
        state.attn = torch.cat([state.attn, state.attn.new_ones(state.attn.shape[0], 1)], dim=1)
        alpha_prev = alpha_t
        if bool(state.done.all()):
            break
    state.log_weights += ((alpha - alpha_prev) * state.logp).view(batch, n)  # the rest of a ramp: target p^alpha
    return calls, resamples, torch.stack(ess, dim=1)
