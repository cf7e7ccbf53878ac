# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Is the engine's model the local one, and which log-probabilities does it return? Measured, not assumed.

A server is configured on its own command line, which its HTTP API does not report. Two measurements against the
local model and this package's scorer ([`~hf_seqtemp.likelihood.AutoregressiveScorer`]) settle what matters:

- [`check_against_scorer`]: the engine's log-probabilities of given tokens agree with the scorer's within a
  tolerance (measured on the embedded SmolLM2-135M in float32: 2.8e-5 per token), else the run is refused with
  the numbers: another model, another dtype, or a logits mode (`--logprobs-mode raw_logits` / `processed_logits`).
- [`probe_engine`]: tokens sampled at a token temperature `tau != 1` come back with `log p_tau` (the tempered law
  they were drawn from: `--logprobs-mode processed_logprobs`) or with `log p` (`raw_logprobs`); the probe tells
  which, since SMC's token-temperature proposal and MH power sampling need the former.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..likelihood.autoregressive import AutoregressiveScorer
from .client import EngineClient
from .replies import position_logp
from .sampling import SeedStream


class EngineMismatchError(ValueError):
    """The engine's log-probabilities disagree with the local scorer's beyond the tolerance."""


@torch.no_grad()
def local_token_logps(
    model, sequences: Sequence[Sequence[int]], starts: Sequence[int], token_temperature: float = 1.0
) -> list[list[float]]:
    """The scorer's `log p_T(x_t | x_<t)` of `sequence[start:]` for each sequence (right-padded into one batch)."""
    device = next(model.parameters()).device
    width = max(len(s) for s in sequences)
    ids = torch.zeros(len(sequences), width, dtype=torch.long, device=device)
    attention = torch.zeros(len(sequences), width, dtype=torch.long, device=device)
    scored = torch.zeros(len(sequences), width, dtype=torch.bool, device=device)
    for row, (seq, start) in enumerate(zip(sequences, starts)):
        ids[row, : len(seq)] = torch.tensor(list(seq), dtype=torch.long, device=device)
        attention[row, : len(seq)] = 1
        scored[row, start : len(seq)] = True
    was_training = model.training
    model.eval()
    logps, _ = AutoregressiveScorer(token_temperature=token_temperature).token_logps(model, ids, attention, scored)
    model.train(was_training)
    rows = logps.cpu().tolist()
    return [rows[row][start : len(seq)] for row, (seq, start) in enumerate(zip(sequences, starts))]


def max_abs_difference(left: Sequence[Sequence[float]], right: Sequence[Sequence[float]]) -> tuple[float, int]:
    """`(max |left - right|, number of values)` over two ragged lists of the same shape."""
    diffs = [abs(a - b) for xs, ys in zip(left, right, strict=True) for a, b in zip(xs, ys, strict=True)]
    return max(diffs, default=0.0), len(diffs)


def check_against_scorer(
    what: str, model, sequences, starts, engine_logps, tolerance: float, token_temperature: float = 1.0
) -> float:
    """Refuses (with the numbers) engine log-probabilities of `sequence[start:]` that differ from the local scorer's
    by more than `tolerance` at any token; returns the largest difference.

    Args:
        what (`str`): what is compared, for the message (e.g. "the first batch of samples of p").
        model: the local model (the reference p, or the adapter-on model for a proposal).
        sequences, starts: the scored tokens are `sequence[start:]`.
        engine_logps (list of lists of `float`): the engine's values of those tokens.
        tolerance (`float`): largest accepted difference per token.
        token_temperature (`float`, *optional*, defaults to `1.0`): the local values are `log p_T`.
    """
    local = local_token_logps(model, sequences, starts, token_temperature)
    worst, count = max_abs_difference(engine_logps, local)
    if worst > tolerance:
        raise EngineMismatchError(
            f"{what}: the engine's log-probabilities differ from the scorer's by up to {worst:.3g} per token over "
            f"{count} tokens (tolerance {tolerance:g}; float32 servers of the same weights agree to ~3e-5). The "
            "server serves another model than the local one, in another dtype (serve with `--dtype float32`), or "
            "returns logits (`--logprobs-mode raw_logits/processed_logits`; serve with 'processed_logprobs'). Point "
            "it at the trainer's base model folder, or raise `vllm_logprob_tolerance` if the difference is expected."
        )
    return worst


@dataclass
class EngineProbe:
    """What [`probe_engine`] measured.

    Attributes:
        logprobs_mode (`str`): `"processed_logprobs"` (sampled tokens come with the log-probability of the tempered
            law they were drawn from) or `"raw_logprobs"` (with `log p`).
        max_abs_logp_difference (`float`): largest |engine − scorer| of `log p` over the probe's tokens.
        tokens (`int`): tokens compared.
    """

    logprobs_mode: str
    max_abs_logp_difference: float
    tokens: int


def probe_engine(
    client: EngineClient,
    model,
    prompts: Sequence[Sequence[int]],
    stop_ids,
    tolerance: float = 1e-3,
    temperature: float = 0.5,
    max_new_tokens: int = 8,
    seed: int = 0,
) -> EngineProbe:
    """Samples `max_new_tokens` tokens of each prompt at token temperature `temperature`, scores the sequences
    under the engine (`prompt_logprobs`) and the local `model`, and returns which log-probabilities the engine
    gives for sampled tokens. Refuses a server whose `log p` disagrees with the scorer's
    ([`check_against_scorer`]), or whose sampled values are neither `log p` nor `log p_tau`."""
    prompts = [list(p) for p in prompts]
    drawn = client.sample(prompts, max_new_tokens, stop_ids, SeedStream(seed).take([1] * len(prompts)), 1, temperature)
    sequences = [p + d[0].tokens for p, d in zip(prompts, drawn)]
    starts = [1] * len(sequences)
    engine_logp = client.score(sequences, starts)
    worst = check_against_scorer("the engine's probe", model, sequences, starts, engine_logp, tolerance)
    sampled = [d[0].logps for d in drawn]
    tempered = local_token_logps(model, sequences, [len(p) for p in prompts], temperature)
    plain = [values[len(p) - 1 :] for p, values in zip(prompts, engine_logp)]
    d_tempered, count = max_abs_difference(sampled, tempered)
    d_plain, _ = max_abs_difference(sampled, plain)
    if d_tempered <= tolerance < d_plain:
        mode = "processed_logprobs"
    elif d_plain <= tolerance < d_tempered:
        mode = "raw_logprobs"
    else:
        raise EngineMismatchError(
            f"the engine's log-probabilities of {count} tokens it sampled at temperature {temperature} differ from "
            f"log p_T by {d_tempered:.3g} and from log p by {d_plain:.3g} (tolerance {tolerance:g}): its "
            "`--logprobs-mode` cannot be told from these prompts (or it applies a processor of its own)."
        )
    client.logprobs_mode = mode
    return EngineProbe(mode, worst, sum(len(v) for v in engine_logp))


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def measured_logprobs_mode(
    client: EngineClient, prompts, stop_ids, temperature: float = 0.5, max_new_tokens: int = 8, seed: int = 0
) -> str:
    """The server's `--logprobs-mode`, measured without a local model (for samplers given a server only).

    Samples `max_new_tokens` tokens of each prompt at token temperature `temperature` and reads the server's own
    `log p` of the sequences (`prompt_logprobs`, with the likeliest token of each position). Log-probabilities,
    not logits: no value is > 0 and the listed tokens' probabilities sum to at most 1 (the logits modes are refused
    by name). A sampled token that comes back with its `log p` means raw log-probs; with another value, processed
    ones, checked against `log p_tau` wherever the listed tokens hold the whole distribution (a small vocabulary,
    a peaked position). Cached on the client.
    """
    if client.logprobs_mode is not None:
        return client.logprobs_mode
    prompts = [list(p) for p in prompts]
    drawn = client.sample(prompts, max_new_tokens, stop_ids, SeedStream(seed).take([1] * len(prompts)), 1, temperature)
    sequences = [p + d[0].tokens for p, d in zip(prompts, drawn)]
    entries = client.prompt_logprobs(sequences, top=1)  # a larger top-k than the vocabulary crashes the engine
    raw_gap, informative, tempered_gap = 0.0, False, 0.0
    for prompt, sample, positions in zip(prompts, drawn, entries):
        for t, entry in enumerate(positions[1:], start=1):
            values = [float(v["logprob"]) for v in entry.values()]
            if max(values) > 1e-6 or _logsumexp(values) > 1e-4:
                raise EngineMismatchError(
                    f"the engine server at {client.base_url} returns logits, not log-probabilities (a value "
                    f"{max(values):.3g} > 0, or probabilities summing to {math.exp(_logsumexp(values)):.3g} > 1): "
                    "it runs with `--logprobs-mode raw_logits` or `processed_logits`. Restart it with "
                    "`--logprobs-mode processed_logprobs` (`hf-seqtemp serve` does)."
                )
            if t < len(prompt):
                continue
            engine_value = sample[0].logps[t - len(prompt)]
            logp = position_logp(entry, (prompt + sample[0].tokens)[t], f"the engine server at {client.base_url}")
            raw_gap, informative = max(raw_gap, abs(engine_value - logp)), informative or logp < -1e-3
            if abs(_logsumexp(values)) < 1e-6:  # the listed tokens are the whole distribution: log p_tau is exact
                tempered = logp / temperature - _logsumexp([v / temperature for v in values])
                tempered_gap = max(tempered_gap, abs(engine_value - tempered))
    if raw_gap <= 1e-4 and informative:
        mode = "raw_logprobs"
    elif raw_gap > 1e-3 and tempered_gap <= 1e-3:
        mode = "processed_logprobs"
    else:
        raise EngineMismatchError(
            f"the engine's log-probabilities of its own samples at temperature {temperature} are neither log p nor "
            f"log p_T (largest gaps {raw_gap:.3g} and {tempered_gap:.3g}): its `--logprobs-mode` cannot be told "
            "from these prompts, or it applies a sampling processor of its own."
        )
    client.logprobs_mode = mode
    return mode
