# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The proposals of the SMC loop ([`~hf_seqtemp.generation.smc.smc_sample`]): what draws each particle's next token.

The loop targets `p(x)^alpha`, `p` being the model with every adapter off and the call's logits processors applied.
It asks a proposal, at every step, for the base model's next-token logits (the proposal runs the forward passes and
keeps their KV caches, so it knows what it costs: [`SMCProposal.calls_per_step`]) and for its next-token
log-probabilities `log r(v | x_<t)`; the loop draws `x_t ~ r` and weighs with `alpha_t log p(x_t) - log r(x_t)`.

- [`TokenTemperatureProposal`] (Power-SMC): `r = p^alpha_t / Z_t`, the best proposal that sees only the prefix. Its
  weight `log Z_t = log sum_v p(v | x_<t)^alpha_t` does not depend on the token drawn ([`weight_before_draw`]), so
  the loop weighs and resamples *before* the draw (a fully adapted step).
- [`AdapterProposal`]: a tempered PEFT adapter of the model, `r = q(v | x_<t)` (adapter on, its own next-token law)
  restricted to the support of `p` (`r(v) = q(v) / sum_{u: p(u) > 0} q(u)` where `p(v) > 0`, else 0): a
  logit-dependent processor of `p` (top-k, top-p, min-p) forbids tokens the adapter may like, and a proposal that
  drew one would meet `log p = -inf`. Restricted, it never proposes a token `p` forbids and still covers every
  token `p` allows, so the estimator stays consistent. Two forward passes per step (adapter off, adapter on), each
  with its own cache. With `defensive_mixture=eps > 0` it proposes from `eps * p^alpha_t / Z_t + (1 - eps) * r`
  instead (defensive importance sampling, Hesterberg 1995): the token proposal is read from the base logits the
  step computes anyway (no extra forward pass), and every incremental weight is then at most `1 / eps` times the
  token proposal's and `1 / (1 - eps)` times the adapter's, so an adapter that misses part of `p^alpha` can no
  longer give the normaliser estimates a heavy upper tail.

A draft model, or any other `r` with the support of `p`, is one more subclass.
"""

from __future__ import annotations

import math

import torch

from ..likelihood.autoregressive import (
    _accepts_position_ids,
    cache_kwargs,
    output_cache,
    position_ids_from_attention_mask,
)
from .adapters import active_adapter, active_peft_adapters


def forward_step(model, step_ids, attn, past):
    """One forward pass over `step_ids` with cache `past`: the float32 logits of the last position and the cache."""
    kwargs = {"attention_mask": attn, **cache_kwargs(model, past)}
    if _accepts_position_ids(model):
        kwargs["position_ids"] = position_ids_from_attention_mask(attn)[:, -step_ids.shape[1] :]
    out = model(input_ids=step_ids, **kwargs)
    return out.logits[:, -1].float(), output_cache(out)


class SMCProposal:
    """What the SMC loop asks of a proposal. Rows are particles, `b * N + i` being particle `i` of prompt `b`.

    Attributes:
        calls_per_step (`int`): sequential forward passes per generated token.
        weight_before_draw (`bool`): the incremental weight `alpha_t log p(x_t) - log r(x_t)` is the same for every
            token `x_t`, so the loop weighs (and resamples) before drawing.
    """

    calls_per_step = 1
    weight_before_draw = False

    def start(self, input_ids, attention_mask, num_particles: int) -> torch.Tensor:
        """Prefills the prompts once and copies each to its particles; returns the base model's next-token logits
        `(batch * N, vocab)` (float32)."""
        raise NotImplementedError

    def advance(self, token, attention_mask) -> torch.Tensor:
        """Feeds the drawn `token` `(rows, 1)` and returns the base model's next-token logits."""
        raise NotImplementedError

    def log_q(self, next_logp: torch.Tensor, alpha_t: float) -> torch.Tensor:
        """`log r(. | x_<t)` `(rows, vocab)`, given `next_logp = log p(. | x_<t)` (processed) and the exponent."""
        raise NotImplementedError

    def reorder(self, index: torch.Tensor) -> None:
        """Reorders the caches (and anything kept per row) after resampling."""
        raise NotImplementedError


class TokenTemperatureProposal(SMCProposal):
    """`r = p^alpha_t / sum_v p(v)^alpha_t` (Power-SMC): one forward pass per token."""

    calls_per_step = 1
    weight_before_draw = True

    def __init__(self, model):
        self.model, self.past = model, None

    def start(self, input_ids, attention_mask, num_particles):
        logits, self.past = forward_step(self.model, input_ids, attention_mask, None)
        self.past.batch_repeat_interleave(num_particles)
        return logits.repeat_interleave(num_particles, dim=0)

    def advance(self, token, attention_mask):
        logits, self.past = forward_step(self.model, token, attention_mask, self.past)
        return logits

    def log_q(self, next_logp, alpha_t):
        return (alpha_t * next_logp).log_softmax(dim=-1)

    def reorder(self, index):
        self.past.reorder_cache(index)


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


class AdapterProposal(SMCProposal):
    """`r = q` restricted to the support of `p`, `q` the adapter `adapter_name` of `model` (see the module
    docstring): two forward passes per token, `p` with every adapter off (cache `past_p`) and `q` with the adapter
    on (cache `past_q`).

    With the ramp off, a particle's final log-weight is `alpha log p(answer) - log r(answer)`, and an adapter exactly
    equal to the tempered target `p^alpha / Z` gives equal final weights (without resampling: `ess_threshold=0`).
    Unlike the token proposal's, the weights of a perfect adapter are *not* equal along the way: after `t` tokens a
    particle's log-weight is `log V(empty) - log V(x_<=t)`, `V(prefix) = sum_y p(y | prefix)^alpha` being the
    tempered mass of the prefix's futures, which the adapter has learned to anticipate and the prefix targets
    `p^alpha` ignore. So resampling on the way trades the adapter's look-ahead for the prefix target's;
    `ess_threshold=0` is importance sampling from the adapter (final weights only). `benchmarks/samplers.py`
    measures both.
    """

    calls_per_step = 2
    weight_before_draw = False

    def __init__(self, model, adapter_name: str | None = None, defensive_mixture: float = 0.0):
        self.model, self.name = model, proposal_adapter_name(model, adapter_name)
        self.past_p = self.past_q = self.logits_q = None
        self.mixture = float(defensive_mixture)

    def _both(self, ids, attention_mask):
        with active_adapter(self.model, None):
            logits_p, self.past_p = forward_step(self.model, ids, attention_mask, self.past_p)
        with active_adapter(self.model, self.name):
            self.logits_q, self.past_q = forward_step(self.model, ids, attention_mask, self.past_q)
        return logits_p

    def start(self, input_ids, attention_mask, num_particles):
        logits_p = self._both(input_ids, attention_mask)
        self.past_p.batch_repeat_interleave(num_particles)
        self.past_q.batch_repeat_interleave(num_particles)
        self.logits_q = self.logits_q.repeat_interleave(num_particles, dim=0)
        return logits_p.repeat_interleave(num_particles, dim=0)

    def advance(self, token, attention_mask):
        return self._both(token, attention_mask)

    def log_q(self, next_logp, alpha_t):
        adapter = self.logits_q.masked_fill(next_logp == -torch.inf, -torch.inf).log_softmax(dim=-1)
        if self.mixture == 0.0:
            return adapter
        token = (alpha_t * next_logp).log_softmax(dim=-1)
        return torch.logaddexp(math.log(self.mixture) + token, math.log1p(-self.mixture) + adapter)

    def reorder(self, index):
        self.past_p.reorder_cache(index)
        self.past_q.reorder_cache(index)
        self.logits_q = self.logits_q[index]
