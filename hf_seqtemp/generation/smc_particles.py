# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The particles of one SMC run, on either backend: what [`~hf_seqtemp.generation.smc.smc_sample`]'s loop asks.

The loop ([`~hf_seqtemp.generation.smc`]) is written once; a backend holds every particle of every prompt (row
`b * N + i` is particle `i` of prompt `b`) and answers four requests:

- `before_draw(step)`: the log-weight increment `(batch, N)` that is known before the next tokens are drawn, or
  `None` (the token-temperature proposal's `log Z_t` does not depend on the token: the loop weighs and resamples
  *before* drawing, the fully adapted order; any other proposal returns `None`);
- `draw(step, length, generator)`: draws the next `length` tokens of every running particle and returns their
  increment `sum_t [alpha log p(x_t | x_<t) - log r(x_t | x_<t)]` `(batch, N)`, or `None` where `before_draw` gave it;
- `reorder(index)`: the particles (and whatever the backend keeps for them: KV caches, the next-token laws)
  reordered after resampling;
- `finish(pad)`: every particle `(batch, N, prompt_length + max_new_tokens)` and its answer's `log p` `(batch, N)`.

The two backends differ only in what their hardware makes cheap, never in the target:

- [`ModelParticles`] (transformers): one token per step (`block = 1`) from the model's own KV caches, with the
  user's logits processors as part of `p` and the optional exponent ramp;
- [`EngineParticles`] (an engine server): rounds of `block_size` tokens, two requests a round whatever the number
  of particles ([`~hf_seqtemp.generation.engine_proposal.EngineProposal`]); resampling happens between rounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .engine_proposal import EngineProposal, prompts_of, seed_stream
from .smc_proposals import SMCProposal


def ramp_exponent(step: int, alpha: float, ramp_tokens: int) -> float:
    """The exponent of the intermediate target after token `step` (0-based): `alpha` without a ramp."""
    if ramp_tokens <= 0:
        return alpha
    return 1.0 + (alpha - 1.0) * min(1.0, (step + 1) / ramp_tokens)


def incremental_log_weight(next_logp: torch.Tensor, alpha: float) -> torch.Tensor:
    """`log sum_v p(v | x_<t)^alpha` from `next_logp = log p(. | x_<t)` `(rows, vocab)`: the weight
    `p(x_t)^alpha / q_t(x_t)` of the proposal `q_t = p^alpha / sum_v p(v)^alpha`, whatever `x_t` is drawn."""
    return (alpha * next_logp).logsumexp(dim=-1)


class ModelParticles:
    """The particles on a transformers model, one token per step; the KV caches are `proposal`'s.

    At step `t` the weight of a running particle grows by `alpha_t log p(x_t) - log r(x_t)` (plus the ramp's
    `(alpha_t - alpha_{t-1}) log p(x_<t)`, also on finished answers), `p` the processed model
    (`softmax(processors(x_<t, logits))`)."""

    block = 1

    def __init__(self, proposal: SMCProposal, input_ids, attention_mask, num_particles: int, settings):
        self.proposal = proposal
        self.alpha, self.ramp, self.processors, self.eos = settings
        self.logits = proposal.start(input_ids, attention_mask, num_particles)
        rows, device = input_ids.shape[0] * num_particles, input_ids.device
        self.ids = input_ids.repeat_interleave(num_particles, dim=0)
        self.attn = attention_mask.repeat_interleave(num_particles, dim=0)
        self.logp = torch.zeros(rows, device=device)  # log p of the answer so far
        self.done = torch.zeros(rows, dtype=torch.bool, device=device)  # the answer ended at an EOS
        self.log_weights = torch.zeros(input_ids.shape[0], num_particles, device=device)
        self.prompt_length, self.calls = input_ids.shape[1], proposal.calls_per_step
        self.alpha_prev = ramp_exponent(0, self.alpha, self.ramp)
        self.token = None

    def _next_logp(self) -> torch.Tensor:
        """`log p(v | x_<t)` of every particle. The processors see batches laid out as `generate` built them (one row
        per prompt, e.g. a repetition penalty that knows each row's padding): they run once per particle index `i`
        on the rows `(b, i)` of every prompt `b`."""
        logits = self.logits
        if self.processors:
            batch, n = self.log_weights.shape
            ids, scores = self.ids.view(batch, n, -1), logits.view(batch, n, -1)
            logits = torch.stack([self.processors(ids[:, i], scores[:, i]) for i in range(n)], dim=1).flatten(0, 1)
        return logits.log_softmax(dim=-1)

    def before_draw(self, step: int):
        if step:
            self.logits = self.proposal.advance(self.token, self.attn)
            self.calls += self.proposal.calls_per_step
        self.next_logp = self._next_logp()
        self.alpha_t = ramp_exponent(step, self.alpha, self.ramp)
        self.ramp_term = (self.alpha_t - self.alpha_prev) * self.logp
        if not self.proposal.weight_before_draw:
            return None
        log_norm = incremental_log_weight(self.next_logp, self.alpha_t).masked_fill(self.done, 0.0)
        return (log_norm + self.ramp_term).view_as(self.log_weights)

    def reorder(self, index: torch.Tensor) -> None:
        self.ids, self.attn = self.ids[index], self.attn[index]
        self.logp, self.done = self.logp[index], self.done[index]
        self.next_logp = self.next_logp[index]
        self.ramp_term = (self.alpha_t - self.alpha_prev) * self.logp
        self.proposal.reorder(index)

    def draw(self, step: int, length: int, generator, pad: int):
        next_logq = self.proposal.log_q(self.next_logp, self.alpha_t)
        token = torch.multinomial(next_logq.exp(), 1, generator=generator).masked_fill(self.done[:, None], pad)
        increment = None
        if not self.proposal.weight_before_draw:
            gained = self.alpha_t * self.next_logp.gather(1, token)[:, 0] - next_logq.gather(1, token)[:, 0]
            increment = (gained.masked_fill(self.done, 0.0) + self.ramp_term).view_as(self.log_weights)
        self.logp = self.logp + self.next_logp.gather(1, token)[:, 0].masked_fill(self.done, 0.0)
        self.done = self.done | torch.isin(token[:, 0], self.eos)
        self.ids = torch.cat([self.ids, token], dim=1)
        self.attn = torch.cat([self.attn, self.attn.new_ones(self.attn.shape[0], 1)], dim=1)
        self.alpha_prev, self.token = self.alpha_t, token
        return increment

    def all_done(self) -> bool:
        return bool(self.done.all())  # one host sync per token, as `generate`'s own stopping check

    def finish(self, max_new_tokens: int, pad: int):
        batch, n = self.log_weights.shape
        self.log_weights += ((self.alpha - self.alpha_prev) * self.logp).view(batch, n)  # a ramp's rest: p^alpha
        ids, width = self.ids, self.prompt_length + max_new_tokens
        if ids.shape[1] < width:  # every answer ended early
            ids = torch.cat([ids, ids.new_full((ids.shape[0], width - ids.shape[1]), pad)], 1)
        return ids.view(batch, n, -1), self.logp.view(batch, n)


class EngineParticles:
    """The particles on an engine server, on the host: rounds of `block` tokens drawn by `proposal` and weighed by

        log w += sum_t [alpha log p(x_t | x_<t) - log r(x_t | x_<t)]     (t over the block's tokens),

    the intermediate target after `k` blocks being `p(x_<=kB)^alpha`. An answer that ended at an EOS id (kept) keeps
    its weight and draws no more."""

    def __init__(self, proposal: EngineProposal, input_ids, attention_mask, num_particles, block, max_new_tokens,
                 generator):  # fmt: skip
        prompts = prompts_of(input_ids, attention_mask)
        proposal.check(prompts, max_new_tokens, "SMC")
        self.proposal, self.block, self.input_ids = proposal, block, input_ids
        self.seeds = seed_stream(generator, input_ids.device)
        self.prompts = [p for p in prompts for _ in range(num_particles)]
        self.answers: list[list[int]] = [[] for _ in self.prompts]
        self.logp = [0.0] * len(self.prompts)
        self.done = [False] * len(self.prompts)
        self.log_weights = torch.zeros(len(prompts), num_particles, dtype=torch.float64, device=input_ids.device)
        self.rounds_before = proposal.rounds

    @property
    def calls(self) -> int:
        return self.proposal.rounds - self.rounds_before

    def before_draw(self, step: int):
        return None

    def reorder(self, index: torch.Tensor) -> None:
        index = index.tolist()
        self.answers = [list(self.answers[i]) for i in index]
        self.logp, self.done = [self.logp[i] for i in index], [self.done[i] for i in index]

    def draw(self, step: int, length: int, generator, pad: int):
        running = [row for row, done in enumerate(self.done) if not done]
        blocks = self.proposal.draw([self.prompts[r] + self.answers[r] for r in running], length, self.seeds)
        increments = torch.zeros(self.log_weights.numel(), dtype=torch.float64, device="cpu")
        for row, block in zip(running, blocks):
            increments[row] = self.proposal.alpha * math.fsum(block.logp) - math.fsum(block.logr)
            self.answers[row] += block.tokens
            self.logp[row] += math.fsum(block.logp)
            self.done[row] = block.stopped
        return increments.view_as(self.log_weights).to(self.log_weights.device)

    def all_done(self) -> bool:
        return all(self.done)

    def finish(self, max_new_tokens: int, pad: int):
        batch, n = self.log_weights.shape
        logp = torch.tensor(self.logp, dtype=torch.float32, device=self.input_ids.device).view(batch, n)
        return _padded(self.input_ids, self.answers, max_new_tokens, pad, n), logp


def _padded(input_ids: torch.Tensor, answers: Sequence[Sequence[int]], width: int, pad: int, n: int) -> torch.Tensor:
    """`(batch, n, prompt_length + width)`: each prompt row followed by its particles' answers, padded."""
    tail = torch.full((len(answers), width), pad, dtype=torch.long, device="cpu")
    for row, answer in enumerate(answers):
        tail[row, : len(answer)] = torch.tensor(answer, dtype=torch.long, device="cpu")
    heads = input_ids.repeat_interleave(n, dim=0)
    return torch.cat([heads, tail.to(input_ids.device)], dim=1).view(input_ids.shape[0], n, -1)
