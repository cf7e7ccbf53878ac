# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Power sampling (Metropolis-Hastings over blocks, Karan & Du) on an inference engine, targeting `p(x)^(1/T)`.

The chain of [`~hf_seqtemp.generation.power_sampling.power_sample`] with the engine drawing every rollout: the
answer grows block by block (`block_size` tokens); after each new block, `mcmc_steps` MH steps pick a block
boundary `b` uniformly (one per step, for every row), keep `x_<=b` and propose a new suffix from the token
temperature proposal `r = p^alpha / Z_t` (the base model at token temperature `1 / alpha`), accepted with

    A = min(1, [p(x'_>b)^alpha r(x_>b)] / [p(x_>b)^alpha r(x'_>b)]).

Every factor is a product of per-token values the engine returns exactly: `log r` of the tokens a rollout draws
is the engine's processed log-probability at temperature `1 / alpha` (which needs `--logprobs-mode
processed_logprobs`: raw log-probs miss `Z_t`), `log p` comes from scoring the rollout under the base model. The
values of the current suffix are kept from the rollout that drew it: `r(x_t | x_<t)` depends on the prefix only,
which a move after `t` does not change. An answer ends at its first EOS id (kept); an answer that ended at or
before `b` is left as it is; an answer cut at the stage end is the truncated event. Each rollout is two engine
requests (sampling round, scoring request).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..checks import check_int, check_temperature
from ..engine.client import EngineClient
from .answers import resolve_eos_and_pad
from .engine_rollout import EngineProposal, prompts_of, seed_stream
from .engine_smc import _padded
from .power_sampling import PowerSamplingOutput


class _Chains:
    """Every row's answer so far with the per-token `log p` and `log r` of its tokens, on the host."""

    def __init__(self, prompts: list[list[int]]):
        self.prompts = prompts
        self.tokens: list[list[int]] = [[] for _ in prompts]
        self.logp: list[list[float]] = [[] for _ in prompts]
        self.logr: list[list[float]] = [[] for _ in prompts]
        self.ended = [False] * len(prompts)


def _extend(chains: _Chains, proposal: EngineProposal, length: int, seeds) -> None:
    """Draws the next block of every row that has not ended."""
    rows = [row for row, ended in enumerate(chains.ended) if not ended]
    if not rows:
        return
    blocks = proposal.draw([chains.prompts[r] + chains.tokens[r] for r in rows], length, seeds)
    for row, block in zip(rows, blocks):
        chains.tokens[row] += block.tokens
        chains.logp[row] += block.logp
        chains.logr[row] += block.logr
        chains.ended[row] = block.stopped


def _mh_step(chains: _Chains, proposal: EngineProposal, end: int, boundary: int, seeds, log_u: list[float]):
    """One MH move on every row whose answer runs past `boundary`: returns (accepted, proposed) row lists."""
    stop = set(proposal.stop)
    rows = [r for r, tokens in enumerate(chains.tokens) if not stop.intersection(tokens[:boundary])]
    rows = [r for r in rows if len(chains.tokens[r]) > boundary]
    if not rows:
        return [], []
    blocks = proposal.draw([chains.prompts[r] + chains.tokens[r][:boundary] for r in rows], end - boundary, seeds)
    accepted = []
    for row, block in zip(rows, blocks):
        log_ratio = proposal.alpha * (sum(block.logp) - sum(chains.logp[row][boundary:]))
        log_ratio += sum(chains.logr[row][boundary:]) - sum(block.logr)
        if log_u[row] < min(log_ratio, 0.0):
            chains.tokens[row] = chains.tokens[row][:boundary] + block.tokens
            chains.logp[row] = chains.logp[row][:boundary] + block.logp
            chains.logr[row] = chains.logr[row][:boundary] + block.logr
            chains.ended[row] = block.stopped
            accepted.append(row)
    return accepted, rows


@torch.no_grad()
def engine_power_sample(
    client: EngineClient,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    max_new_tokens: int = 16,
    seq_temperature: float = 0.5,
    mcmc_steps: int = 4,
    block_size: int | None = None,
    generator: torch.Generator | None = None,
    return_dict_in_generate: bool = False,
    eos_token_id: int | Sequence[int] | None = None,
    pad_token_id: int | None = None,
) -> PowerSamplingOutput | torch.LongTensor:
    """Samples answers approximately from `p(answer | prompt)^(1/T)` by power sampling on an engine server (see the
    module docstring): the chain and [`PowerSamplingOutput`] of [`power_sample`], the rollouts drawn by the engine.

    Args:
        client ([`~hf_seqtemp.engine.EngineClient`]): the server of the base model `p`, started with
            `--logprobs-mode processed_logprobs`.
        input_ids (`torch.LongTensor` of shape `(batch, prompt_length)`): prompts, left-padded.
        attention_mask (`torch.Tensor` of shape `(batch, prompt_length)`, *optional*): 0 on padding.
        max_new_tokens (`int`, *optional*, defaults to `16`): longest answer.
        seq_temperature (`float`, *optional*, defaults to `0.5`): sequence temperature `T`.
        mcmc_steps (`int`, *optional*, defaults to `4`): MH steps after each new block (0: token temperature `T`).
        block_size (`int`, *optional*): tokens per block; `None` makes one block.
        generator (`torch.Generator`, *optional*): seeds the boundaries, the acceptances and the engine's requests.
        return_dict_in_generate (`bool`, *optional*, defaults to `False`): return a [`PowerSamplingOutput`].
        eos_token_id (`int` or `list[int]`, *optional*): tokens that end an answer (kept); none: fixed length.
        pad_token_id (`int`, *optional*): written after an answer's end; defaults to the first EOS id, else 0.

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`, or a [`PowerSamplingOutput`].
    """
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError(f"`input_ids` must be a 2-D tensor (batch, length), got {getattr(input_ids, 'shape', None)}.")
    check_int(max_new_tokens, "max_new_tokens")
    check_int(mcmc_steps, "mcmc_steps", 0)
    check_int(block_size, "block_size", allow_none=True, fix="None makes one block.")
    alpha = 1.0 / check_temperature(seq_temperature, "seq_temperature")
    eos, pad = resolve_eos_and_pad(None, eos_token_id, pad_token_id)
    block_size = max_new_tokens if block_size is None else block_size
    prompts = prompts_of(input_ids, attention_mask)
    proposal = EngineProposal(client, alpha, eos.tolist())
    proposal.check(prompts, max_new_tokens, "MH power sampling")
    device, batch = input_ids.device, len(prompts)
    seeds, chains = seed_stream(generator, device), _Chains(prompts)
    accepted = torch.zeros(batch, device=device)
    proposed = torch.zeros(batch, device=device)
    for start in range(0, max_new_tokens, block_size):
        end = min(start + block_size, max_new_tokens)
        _extend(chains, proposal, end - start, seeds)
        boundaries = range(0, end, block_size)
        for _ in range(mcmc_steps):
            draw = torch.randint(len(boundaries), (1,), generator=generator, device=device)
            boundary = boundaries[int(draw)]  # host sync: the block boundary slices the answers, once per MH step
            log_u = torch.rand(batch, generator=generator, device=device).log().tolist()  # host sync: per MH step
            rows_accepted, rows_proposed = _mh_step(chains, proposal, end, boundary, seeds, log_u)
            accepted[rows_accepted] += 1
            proposed[rows_proposed] += 1
    sequences = _padded(input_ids, chains.tokens, max_new_tokens, pad, 1)[:, 0]
    if not return_dict_in_generate:
        return sequences
    logps = torch.tensor([sum(v) for v in chains.logp], dtype=torch.float32, device=device)
    return PowerSamplingOutput(sequences=sequences, acceptance_rate=accepted / proposed, sequence_logps=logps)
