# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""One block of tokens for many particles on an engine server: the proposal draws it, the base model scores it.

The engine backends of the samplers (SMC's [`~hf_seqtemp.generation.smc_particles.EngineParticles`], MH power
sampling's [`~hf_seqtemp.generation.power_sampling.EngineRollouts`]) draw with [`EngineProposal`]; they
target `p(answer)^alpha`, `p` the served base model. A block proposal `r` gives, for the tokens it draws, `log r`
and (after scoring) `log p` of each, and every weight or acceptance ratio is made of these two:

- token temperature (`proposal="token"`): the base model at token temperature `1 / alpha`, `r = p^alpha / Z_t`.
  `log r(x_t) = alpha log p(x_t) - log Z_t` needs `Z_t = sum_v p(v | x_<t)^alpha`, a sum over the vocabulary
  that the raw log-probability of the sampled token does not give; the engine's *processed* log-probability of
  the token (`--logprobs-mode processed_logprobs`: the log-softmax of the logits divided by the temperature, the
  law it was drawn from) is exactly `log r`. A server in `raw_logprobs` mode is refused by name;
- a LoRA adapter the server serves by name (`proposal=<name>`), sampled at token temperature 1: `r` is the
  adapter's own law and `log r` its log-probability of the token (raw and processed agree at temperature 1).

`log p` of the block comes from a second request, under the base model without adapter (`prompt_logprobs`, raw
in every mode). Each round is two requests whatever the number of particles: one sampling round (one HTTP request
per distinct prefix, sent together; particles that share a prefix after resampling are one request with `n`
completions, so the prefix is computed once) and one scoring request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..engine.agreement import measured_logprobs_mode
from ..engine.client import EngineClient
from ..engine.sampling import SEED_SPACE, SeedStream, check_room


@dataclass
class Block:
    """What one particle drew in one round: its new tokens, `log r` and `log p` of each, and whether it ended at an
    EOS id (kept in `tokens`)."""

    tokens: list[int]
    logr: list[float]
    logp: list[float]
    stopped: bool


def prompts_of(input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> list[list[int]]:
    """The real tokens of each (left-padded) prompt row."""
    ids = input_ids.cpu().tolist()
    if attention_mask is None:
        return ids
    mask = attention_mask.cpu().tolist()
    return [[token for token, keep in zip(row, keep_row) if keep] for row, keep_row in zip(ids, mask)]


def seed_stream(generator: torch.Generator | None, device: torch.device) -> SeedStream:
    """A stream of request seeds started from `generator` (or torch's global stream)."""
    device = generator.device if generator is not None else device
    start = int(torch.randint(SEED_SPACE, (1,), generator=generator, device=device))
    return SeedStream(start)


class EngineProposal:
    """Draws blocks on an engine: token temperature `1 / alpha` of the base model, or a served LoRA adapter.

    Args:
        client ([`EngineClient`]): the base model's server (scores every block; proposes with `adapter=None`).
        alpha (`float`): the target's exponent.
        stop_ids (`list[int]`): the EOS ids.
        adapter (`str`, *optional*): the served LoRA adapter that proposes (at token temperature 1).
        proposal_client ([`EngineClient`], *optional*): the server of `adapter`, when it is not `client` (vLLM's CPU
            build cannot score on a server with LoRA enabled: there the adapter has a server of its own).
    """

    def __init__(self, client: EngineClient, alpha: float, stop_ids, adapter=None, proposal_client=None):
        self.client, self.alpha, self.stop = client, alpha, sorted(int(i) for i in stop_ids)
        self.adapter, self.proposer = adapter, proposal_client or client
        self.rounds = 0  # sequential engine rounds (a sampling round and a scoring request each count one)

    def check(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, what: str) -> None:
        """Refuses a server that cannot give an exact `log r` or `log p` here, or prompts that do not fit."""
        check_room(self.client, prompts, max_new_tokens, extra=1)
        if self.adapter is None:
            mode = measured_logprobs_mode(self.client, list(prompts)[:4], self.stop)
            if mode != "processed_logprobs" and self.alpha != 1.0:
                raise ValueError(
                    f"{what} with the token-temperature proposal needs log r = log p^alpha / Z_t of each sampled "
                    f"token, and the engine server at {self.client.base_url} returns raw log p (`--logprobs-mode "
                    f"{mode}`): Z_t, a sum over the vocabulary, cannot be read from it (top-k log-probs would only "
                    "approximate it). Restart the server with `--logprobs-mode processed_logprobs` (the default of "
                    "`hf-seqtemp serve`), or propose with a served adapter."
                )
            return
        served = self.proposer.adapters()
        if self.adapter not in served:
            raise ValueError(
                f"`adapter={self.adapter!r}` is not served by the engine server at {self.proposer.base_url} (it serves "
                f"{served or 'no adapter'}): start it with `hf-seqtemp serve BASE --adapter {self.adapter}=FOLDER`."
            )

    def draw(self, prefixes: Sequence[Sequence[int]], length: int | Sequence[int], seeds: SeedStream) -> list[Block]:
        """One block of at most `length` tokens (one for all, or one per prefix) after each prefix (a prompt and the
        answer so far), all in one sampling round and one scoring request."""
        lengths = [length] * len(prefixes) if isinstance(length, int) else [int(n) for n in length]
        groups: dict[tuple, list[int]] = {}
        for row, (prefix, size) in enumerate(zip(prefixes, lengths, strict=True)):
            groups.setdefault((tuple(int(t) for t in prefix), size), []).append(row)
        keys = list(groups)
        sizes = [len(groups[key]) for key in keys]
        temperature = 1.0 if self.adapter is not None else 1.0 / self.alpha
        drawn = self.proposer.sample(
            [list(k) for k, _ in keys],
            [n for _, n in keys],
            self.stop,
            seeds.take(sizes),
            sizes,
            temperature,
            self.adapter,
        )
        samples: list = [None] * len(prefixes)
        for key, completions in zip(keys, drawn):
            for row, completion in zip(groups[key], completions):
                samples[row] = completion
        if any(max(s.logps, default=0.0) > 1e-6 for s in samples):
            raise ValueError(
                f"the engine server at {self.proposer.base_url} returned a sampled token's value > 0, not a "
                "log-probability: it runs in a logits mode; restart it with `--logprobs-mode processed_logprobs`."
            )
        sequences = [list(prefix) + s.tokens for prefix, s in zip(prefixes, samples)]
        logps = self.client.score(sequences, [len(prefix) for prefix in prefixes])
        self.rounds += 2
        return [Block(s.tokens, s.logps, lp, s.stopped) for s, lp in zip(samples, logps)]
