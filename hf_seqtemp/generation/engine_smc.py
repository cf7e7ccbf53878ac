# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Power-SMC on an inference engine: particles advance a block of tokens per round, resampled at block boundaries.

The target is `pi(x | c) ∝ p(x | c)^alpha` over the answers of at most `max_new_tokens` tokens, `p` the engine's
base model, `alpha = 1 / seq_temperature`, as for [`~hf_seqtemp.generation.smc.smc_sample`]. Each prompt has
`num_particles` particles. A round draws the next block of at most `block_size` tokens of every running particle
from a proposal `r` ([`~hf_seqtemp.generation.engine_rollout.EngineProposal`]: token temperature `1 / alpha` of
`p`, or a served LoRA adapter) and multiplies its weight by the exact incremental weight of the block,

    log w += sum_t [alpha log p(x_t | x_<t) - log r(x_t | x_<t)]     (t over the block's tokens),

the intermediate target after `k` blocks being `p(x_<=kB)^alpha`. An answer that ended at an EOS id (kept) keeps
its weight and draws no more. After a round, the prompts whose effective sample size `(sum w)^2 / sum w^2` fell
below `ess_threshold * num_particles` are resampled (systematic or multinomial, within the prompt's particles) and
their weights set to their mean, which keeps the normaliser estimate: SMC with resampling at block boundaries is
consistent, and `log_normalizer` estimates `log sum_x p(x | c)^alpha` without bias in `Z`. The answer returned for
a prompt is one particle drawn by its final weights.

With `block_size=1` this is the per-token SMC of `smc_sample` except that a round weighs *after* the draw (the
transformers loop, which sees the whole next-token law, resamples on `Z_t` before drawing: lower variance, same
target). Each round costs two engine requests (one sampling round, one scoring request), whatever the number of
prompts and particles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..checks import check_int, check_temperature
from ..engine.client import EngineClient
from .answers import resolve_eos_and_pad
from .engine_rollout import EngineProposal, prompts_of, seed_stream
from .pimh import pimh_sample
from .smc import RESAMPLING, SMCOutput, diagnose_one_run, effective_sample_size, resample_indices


def _check_arguments(input_ids, max_new_tokens, num_particles, ess_threshold, block_size, resampling):
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError(f"`input_ids` must be a 2-D tensor (batch, length), got {getattr(input_ids, 'shape', None)}.")
    check_int(max_new_tokens, "max_new_tokens")
    check_int(num_particles, "num_particles", fix="1 is token-temperature sampling; try 16.")
    check_int(block_size, "block_size", fix="1 resamples after every token; 16 is one request per 16 tokens.")
    if not isinstance(ess_threshold, (int, float)) or not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"`ess_threshold` must be a float in [0, 1], got {ess_threshold!r}; the default is 0.5.")
    if resampling not in RESAMPLING:
        raise ValueError(f"`resampling` must be one of {list(RESAMPLING)}, got {resampling!r}.")


class _Particles:
    """Every particle of every prompt (row `b * N + i` is particle `i` of prompt `b`), on the host."""

    def __init__(self, prompts: list[list[int]], num_particles: int, device: torch.device):
        self.prompts = [p for p in prompts for _ in range(num_particles)]
        self.answers: list[list[int]] = [[] for _ in self.prompts]
        self.logp = [0.0] * len(self.prompts)  # log p of the answer so far
        self.done = [False] * len(self.prompts)
        self.log_weights = torch.zeros(len(prompts), num_particles, dtype=torch.float64, device=device)

    def reorder(self, index: list[int]) -> None:
        self.answers = [list(self.answers[i]) for i in index]
        self.logp, self.done = [self.logp[i] for i in index], [self.done[i] for i in index]


def _round(state: _Particles, proposal: EngineProposal, length: int, seeds) -> None:
    """Draws and weighs the next block of every running particle."""
    running = [row for row, done in enumerate(state.done) if not done]
    blocks = proposal.draw([state.prompts[r] + state.answers[r] for r in running], length, seeds)
    increments = torch.zeros(state.log_weights.numel(), dtype=torch.float64, device="cpu")
    for row, block in zip(running, blocks):
        increments[row] = proposal.alpha * math.fsum(block.logp) - math.fsum(block.logr)
        state.answers[row] += block.tokens
        state.logp[row] += math.fsum(block.logp)
        state.done[row] = block.stopped
    state.log_weights += increments.view_as(state.log_weights).to(state.log_weights.device)


def _resample(state: _Particles, method: str, threshold: float, generator) -> torch.Tensor:
    """Resamples the prompts whose ESS is below `threshold * N`; returns the mask of resampled prompts."""
    batch, n = state.log_weights.shape
    low = effective_sample_size(state.log_weights) < threshold * n
    if not bool(low.any()):
        return low
    local = torch.arange(n, device=low.device).expand(batch, n).clone()
    local[low] = resample_indices(state.log_weights[low], method, generator)
    index = (local + n * torch.arange(batch, device=low.device)[:, None]).flatten()
    mean = state.log_weights[low].logsumexp(dim=1, keepdim=True) - math.log(n)
    state.log_weights[low] = mean.expand(-1, n)  # equal weights that keep the normaliser estimate
    state.reorder(index.tolist())
    return low


def _padded(input_ids: torch.Tensor, answers: Sequence[Sequence[int]], width: int, pad: int, n: int) -> torch.Tensor:
    """`(batch, n, prompt_length + width)`: each prompt row followed by its particles' answers, padded."""
    tail = torch.full((len(answers), width), pad, dtype=torch.long, device="cpu")
    for row, answer in enumerate(answers):
        tail[row, : len(answer)] = torch.tensor(answer, dtype=torch.long, device="cpu")
    heads = input_ids.repeat_interleave(n, dim=0)
    return torch.cat([heads, tail.to(input_ids.device)], dim=1).view(input_ids.shape[0], n, -1)


@torch.no_grad()
def engine_smc_sample(
    client: EngineClient,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    max_new_tokens: int = 16,
    seq_temperature: float = 0.5,
    num_particles: int = 16,
    ess_threshold: float = 0.5,
    block_size: int = 16,
    resampling: str = "systematic",
    generator: torch.Generator | None = None,
    return_dict_in_generate: bool = False,
    return_particles: bool = False,
    eos_token_id: int | Sequence[int] | None = None,
    pad_token_id: int | None = None,
    adapter: str | None = None,
    proposal_client: EngineClient | None = None,
    pimh_steps: int = 0,
) -> SMCOutput | torch.LongTensor:
    """Samples answers approximately from `p(answer | prompt)^(1/T)` by SMC on an engine server (see the module
    docstring): the same target, weights and [`SMCOutput`] as [`~hf_seqtemp.generation.smc.smc_sample`], with
    the particles drawn a block at a time by the engine.

    Args:
        client ([`~hf_seqtemp.engine.EngineClient`]): the server of the base model `p` (started with
            `--logprobs-mode processed_logprobs` for the token-temperature proposal).
        input_ids (`torch.LongTensor` of shape `(batch, prompt_length)`): prompts, left-padded.
        attention_mask (`torch.Tensor` of shape `(batch, prompt_length)`, *optional*): 0 on padding.
        max_new_tokens (`int`, *optional*, defaults to `16`): longest answer.
        seq_temperature (`float`, *optional*, defaults to `0.5`): sequence temperature `T = 1 / alpha`.
        num_particles (`int`, *optional*, defaults to `16`): particles per prompt.
        ess_threshold (`float`, *optional*, defaults to `0.5`): resample a prompt's particles at a block boundary
            when their effective sample size is below `ess_threshold * num_particles` (0: never).
        block_size (`int`, *optional*, defaults to `16`): tokens per round (resampling happens between rounds).
        resampling (`str`, *optional*, defaults to `"systematic"`): `"systematic"` or `"multinomial"`.
        generator (`torch.Generator`, *optional*): seeds the engine's requests and the resampling.
        return_dict_in_generate (`bool`, *optional*, defaults to `False`): return an [`SMCOutput`].
        return_particles (`bool`, *optional*, defaults to `False`): add every particle and its log-weight to it.
        eos_token_id (`int` or `list[int]`, *optional*): tokens that end an answer (kept); none: fixed length.
        pad_token_id (`int`, *optional*): written after an answer's end; defaults to the first EOS id, else 0.
        adapter (`str`, *optional*): a LoRA adapter served by name that proposes (at token temperature 1; the
            target's `p` is the base model without it); `None`: token temperature `T` of `p`.
        proposal_client ([`~hf_seqtemp.engine.EngineClient`], *optional*): the server of `adapter` when it is
            another one (on vLLM's CPU build a server with LoRA cannot score, so the adapter has its own).
        pimh_steps (`int`, *optional*, defaults to `0`): as in [`~hf_seqtemp.generation.smc.smc_sample`]: `K > 0`
            sends `K + 1` runs of every prompt in the same requests and returns the answer of a particle independent
            Metropolis-Hastings chain over them ([`~hf_seqtemp.generation.pimh.pimh_sample`]), exact for any N.

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`, or an [`SMCOutput`] whose
        `model_calls` counts the sequential engine requests and whose `ess` has one column per round.
    """
    _check_arguments(input_ids, max_new_tokens, num_particles, ess_threshold, block_size, resampling)
    check_int(
        pimh_steps,
        "pimh_steps",
        0,
        fix="0 returns one run's answer; K > 0 runs a PIMH chain, exact as K grows (docs/sampling.md gives the K that passed at each α).",
    )
    alpha = 1.0 / check_temperature(seq_temperature, "seq_temperature")
    eos, pad = resolve_eos_and_pad(None, eos_token_id, pad_token_id)
    proposal = EngineProposal(client, alpha, eos.tolist(), adapter, proposal_client)
    options = (proposal, max_new_tokens, num_particles, ess_threshold, block_size, resampling, generator, pad)
    run = lambda ids, mask: _one_run(ids, mask, *options)
    if pimh_steps > 0:
        out = pimh_sample(run, input_ids, attention_mask, pimh_steps, generator)
    else:
        out = diagnose_one_run(run(input_ids, attention_mask), input_ids, attention_mask, num_particles)
    if not return_dict_in_generate:
        return out.sequences
    if not return_particles:
        out = SMCOutput(**{k: getattr(out, k) for k in out.__dataclass_fields__ if not k.startswith("particle")})
    return out


def _one_run(
    input_ids, attention_mask, proposal, max_new_tokens, num_particles, ess_threshold, block_size, resampling,
    generator, pad,
) -> SMCOutput:  # fmt: skip
    """One SMC run of every prompt of the batch on the engine, particles included."""
    prompts = prompts_of(input_ids, attention_mask)
    proposal.check(prompts, max_new_tokens, "SMC")
    device = input_ids.device
    seeds = seed_stream(generator, device)
    state = _Particles(prompts, num_particles, device)
    resamples = torch.zeros(len(prompts), dtype=torch.long, device=device)
    ess = []
    rounds = proposal.rounds
    for start in range(0, max_new_tokens, block_size):
        _round(state, proposal, min(block_size, max_new_tokens - start), seeds)
        ess.append(effective_sample_size(state.log_weights).float())
        if start + block_size < max_new_tokens and not all(state.done):
            resamples += _resample(state, resampling, ess_threshold, generator).long()
        if all(state.done):
            break
    particles = _padded(input_ids, state.answers, max_new_tokens, pad, num_particles)
    log_weights = state.log_weights - state.log_weights.logsumexp(dim=1, keepdim=True)
    chosen = torch.multinomial(log_weights.exp(), 1, generator=generator)[:, 0]
    rows = torch.arange(len(prompts), device=device)
    logp = torch.tensor(state.logp, dtype=torch.float32, device=device).view(len(prompts), num_particles)
    return SMCOutput(
        sequences=particles[rows, chosen],
        sequence_logps=logp[rows, chosen],
        log_normalizer=(state.log_weights.logsumexp(dim=1) - math.log(num_particles)).float(),
        num_resamples=resamples,
        model_calls=proposal.rounds - rounds,
        ess=torch.stack(ess, dim=1),
        particles=particles,
        particle_log_weights=log_weights.float(),
        particle_logps=logp,
    )
