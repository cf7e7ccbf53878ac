# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Training-free power sampling for autoregressive LMs: Metropolis-Hastings over blocks targeting `p(x)^(1/T)`.

The completion is grown block by block (blocks of `block_size` tokens). After each new block is drawn, `mcmc_steps`
MH steps run on the prefix built so far, targeting `pi(x) ∝ p(x)^alpha` with `alpha = 1 / seq_temperature`. A step
picks a block boundary `b` uniformly (independently of the state and of every other row: the rows of a batch are
independent chains, so several answers of one prompt are independent draws), keeps `x_{<=b}` and resamples the
suffix from the model at *token* temperature `T`, `r(x'_j | x'_{<j}) = softmax(alpha * l_j)`, until EOS or the end
of the stage. The acceptance ratio is

    A = min(1, [p(x'_{>b} | x_{<=b})^alpha r(x_{>b} | x_{<=b})] / [p(x_{>b} | x_{<=b})^alpha r(x'_{>b} | x_{<=b})]),

computed in log space from per-token log-probabilities (padding after EOS counts 0). `x` is an *answer*: it ends at
its first EOS (see [`~hf_seqtemp.generation.answers`]), and an answer that already ended at or before `b` is left
as it is. For each `b` the kernel is an independence sampler within the answers sharing `x_{<=b}`, reversible with
respect to `p^alpha` restricted to them, so every step keeps `p^alpha` over the stage's answers invariant (an
answer cut at the stage end is the truncated event, whose probability is its prefix's). With `mcmc_steps=0` this
is plain token-temperature sampling; more steps move the samples toward the sequence-tempered target.

With logits processors (`logits_processor`, or those of a `generate` call) `p` is the processed distribution
`p̃(x_j | x_<j) = softmax(processors(x_<j, l_j))` everywhere above: in the target, in the proposal
`r = softmax(alpha * processors(x_<j, l_j))` and in the ratio (see [`~hf_seqtemp.generation.processed`]).

**One chain, two backends.** The chain ([`_power_chain`]) asks its backend one thing: "redraw each row from its own
start up to `end` from the token-temperature proposal and give each token's `log p` and `log r`" (`draw`; a new
block is every row redrawn from the block's start). [`power_sample`] given a model draws with the model itself
([`ModelRollouts`]: one rollout with a KV cache per distinct start, processors included); given an
[`~hf_seqtemp.engine.EngineClient`] it draws on that inference engine ([`EngineRollouts`]: every row in one
sampling round and one scoring request, whatever the starts). The boundaries, the acceptance ratios and the
bookkeeping of answers that ended are the same code on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput, logging

from ..checks import check_generator_device, check_int, check_temperature
from ..engine.client import EngineClient
from ..engine.sampling import SeedStream
from ..likelihood.autoregressive import (
    _accepts_position_ids,
    cache_kwargs,
    gather_token_logps,
    output_cache,
    position_ids_from_attention_mask,
)
from .answers import resolve_eos_and_pad
from .engine_proposal import EngineProposal, prompts_of, seed_stream
from .processed import processed_conditionals

logger = logging.get_logger(__name__)


@dataclass
class PowerSamplingOutput(ModelOutput):
    """Output of [`power_sample`] with `return_dict_in_generate=True`.

    Args:
        sequences (`torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`): prompts and answers,
            padded after each answer's EOS.
        acceptance_rate (`torch.FloatTensor` of shape `(batch,)`): fraction of MH proposals accepted per row, over
            the steps whose boundary fell inside the row's answer (`nan` when there was none, e.g. `mcmc_steps=0`).
        sequence_logps (`torch.FloatTensor` of shape `(batch,)`): `log p(answer | prompt)` at temperature 1, the
            answer's EOS included (`log p̃`, the processed distribution, when logits processors were given).
    """

    sequences: torch.LongTensor | None = None
    acceptance_rate: torch.FloatTensor | None = None
    sequence_logps: torch.FloatTensor | None = None


def _rollout(model, ids, attn, num_new, alpha, generator, ends, conditionals=None, rows=None):
    """Samples `num_new` tokens at token temperature `1 / alpha` with a KV cache, stopping each row at EOS.

    `ends = (eos, pad, done)`: EOS ids, pad id and the rows already ended (they get `pad` throughout). Returns new
    tokens, their log-probs under `p` (temperature 1) and under the proposal `r`, each `(batch, num_new)`, 0 on pad.
    With `conditionals` ([`ProcessedConditionals`]) `p` is the processed `p̃`, the processors applied to each prefix;
    `rows` maps each row of `ids` to its row in the batch the processors were built for (default: the same).
    """
    eos, pad, done = ends
    tokens, logp, logr = [], [], []
    past, step_ids, prefix = None, ids, ids
    for _ in range(num_new):
        if bool(done.all()):
            zeros = ids.new_zeros(ids.shape[0], 1)
            tokens.append(zeros + pad)
            logp.append(zeros[:, 0].float())
            logr.append(zeros[:, 0].float())
            continue
        kwargs = {"attention_mask": attn, **cache_kwargs(model, past)}
        if _accepts_position_ids(model):
            kwargs["position_ids"] = position_ids_from_attention_mask(attn)[:, -step_ids.shape[1] :]
        out = model(input_ids=step_ids, **kwargs)
        past = output_cache(out)
        logits = out.logits[:, -1:].float()
        if conditionals is not None:  # ended rows see pads: their (unused) scores are reset, never all -inf
            scores = conditionals.scores(prefix, logits[:, 0], rows).masked_fill(done[:, None], 0.0)
            logits = scores[:, None]
        proposal = (alpha * logits[:, 0]).softmax(dim=-1)
        token = torch.multinomial(proposal, 1, generator=generator).masked_fill(done[:, None], pad)
        tokens.append(token)
        logp.append(gather_token_logps(logits, token)[:, 0].masked_fill(done, 0.0))
        logr.append(gather_token_logps(logits, token, token_temperature=1.0 / alpha)[:, 0].masked_fill(done, 0.0))
        done = done | torch.isin(token[:, 0], eos)
        step_ids, attn = token, torch.cat([attn, attn.new_ones(attn.shape[0], 1)], dim=1)
        prefix = torch.cat([prefix, token], dim=1)
    return torch.cat(tokens, dim=1), torch.stack(logp, dim=1), torch.stack(logr, dim=1)


def _redrawn(ids: torch.Tensor, starts: torch.Tensor, end: int, pad: int):
    """Empty outputs of a `draw`: tokens (`pad`), `log p` and `log r` (0) of width `end - min(starts)`."""
    width = end - int(starts.min())  # host sync: once per draw
    shape = (ids.shape[0], width)
    zeros = torch.zeros(shape, device=ids.device)
    return torch.full(shape, pad, dtype=ids.dtype, device=ids.device), zeros, zeros.clone()


class ModelRollouts:
    """The transformers backend of the chain: rollouts drawn by `model` itself ([`_rollout`]), `p` processed by
    `conditionals` when the call has logits processors."""

    def __init__(self, model, alpha: float, generator, eos: torch.Tensor, pad: int, conditionals=None):
        self.model, self.alpha, self.generator = model, alpha, generator
        self.eos, self.pad, self.conditionals = eos, pad, conditionals

    def draw(self, ids, prompt_attn, starts: torch.Tensor, end: int, active: torch.Tensor):
        """Row `i`'s answer tokens `starts[i]` to `end` redrawn after its prompt and first `starts[i]` answer tokens
        (`ids`: prompts and answers so far, `prompt_attn` the prompts' mask) where `active`, `pad` elsewhere:
        tokens, `log p` and `log r` `(batch, end - min(starts))`, row `i`'s in its first `end - starts[i]` columns,
        0 on pad. One rollout per distinct start (a KV cache over prefixes of one length); the processors see each
        row as the row of the call it is."""
        tokens, logp, logr = _redrawn(ids, starts, end, self.pad)
        width, everyone = prompt_attn.shape[1], starts.numel()
        for start in starts.unique().tolist():  # host sync: a start slices its rows, once per distinct start
            rows = (starts == start).nonzero().squeeze(-1)
            attn = torch.cat([prompt_attn[rows], prompt_attn.new_ones(len(rows), start)], dim=1)
            ends = (self.eos, self.pad, ~active[rows])
            mapped = None if len(rows) == everyone else rows
            new = _rollout(self.model, ids[rows, : width + start], attn, end - start, self.alpha, self.generator,
                           ends, self.conditionals, mapped)  # fmt: skip
            for out, values in zip((tokens, logp, logr), new):
                out[rows, : end - start] = values
        return tokens, logp, logr


class EngineRollouts:
    """The engine backend of the MH power-sampling chain ([`~hf_seqtemp.generation.power_sampling`]): the rows'
    rollouts drawn by `proposal` on the server, returned as the transformers backend returns them.

    Args:
        proposal ([`EngineProposal`]): draws and scores the blocks.
        seeds ([`SeedStream`]): the requests' seeds.
        pad (`int`): written after an answer's end and on rows not drawn.
    """

    def __init__(self, proposal: EngineProposal, seeds: SeedStream, pad: int):
        self.proposal, self.seeds, self.pad = proposal, seeds, pad

    def draw(self, ids: torch.Tensor, prompt_attn: torch.Tensor, starts: torch.Tensor, end: int, active: torch.Tensor):
        """As [`ModelRollouts.draw`], every row in one sampling round and one scoring request (each row's prefix
        and length its own)."""
        tokens, logp, logr = (out.cpu() for out in _redrawn(ids, starts, end, self.pad))
        sent = active.nonzero().flatten().tolist()  # host sync: the rows to send, once per draw
        if sent:
            width, cut = prompt_attn.shape[1], starts.tolist()
            attn = torch.cat([prompt_attn, prompt_attn.new_ones(ids.shape[0], ids.shape[1] - width)], dim=1)
            prefixes = [
                prompts_of(ids[i : i + 1, : width + cut[i]], attn[i : i + 1, : width + cut[i]])[0] for i in sent
            ]
            for row, block in zip(sent, self.proposal.draw(prefixes, [end - cut[i] for i in sent], self.seeds)):
                size = len(block.tokens)
                tokens[row, :size] = torch.tensor(block.tokens, dtype=torch.long, device="cpu")
                logp[row, :size] = torch.tensor(block.logp, dtype=torch.float32, device="cpu")
                logr[row, :size] = torch.tensor(block.logr, dtype=torch.float32, device="cpu")
        return tokens.to(ids.device), logp.to(ids.device), logr.to(ids.device)


def _ended(ids: torch.Tensor, eos: torch.Tensor) -> torch.Tensor:
    """Rows of `ids` (completion tokens only) that hold an EOS."""
    return torch.isin(ids, eos).any(dim=1)


def _mh_step(rollouts, state, prompt_attn, end, starts, alpha, generator, eos):
    """One MH move of every row on the completion prefix `[:end]`, row `i` resampled from its own boundary
    `starts[i]`, in place; returns the (accepted, proposed) masks."""
    ids, logp, logr = state
    prompt_len = prompt_attn.shape[1]
    answer = ids[:, prompt_len : prompt_len + end]
    suffix = torch.arange(end, device=ids.device)[None, :] >= starts[:, None]  # the positions a move resamples
    proposed = ~(torch.isin(answer, eos) & ~suffix).any(dim=1)  # an answer ended at or before `b`: nothing to move
    new, new_logp, new_logr = rollouts.draw(ids, prompt_attn, starts, end, proposed)
    column = (torch.arange(end, device=ids.device)[None, :] - starts[:, None]).clamp(min=0)  # position → new's column
    new, new_logp, new_logr = (values.gather(1, column) for values in (new, new_logp, new_logr))

    def total(values):
        return torch.where(suffix, values, 0.0).sum(dim=1)

    log_ratio = alpha * (total(new_logp) - total(logp)) + (total(logr) - total(new_logr))
    log_u = torch.rand(ids.shape[0], generator=generator, device=ids.device).log()
    accept = (log_u < log_ratio.clamp(max=0.0)) & proposed
    moved = suffix & accept[:, None]
    ids[:, prompt_len : prompt_len + end] = torch.where(moved, new, answer)
    logp.copy_(torch.where(moved, new_logp, logp))
    logr.copy_(torch.where(moved, new_logr, logr))
    return accept, proposed


def _check_arguments(input_ids, max_new_tokens, mcmc_steps, block_size):
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError(f"`input_ids` must be a 2-D tensor (batch, length), got {getattr(input_ids, 'shape', None)}.")
    check_int(max_new_tokens, "max_new_tokens")
    check_int(mcmc_steps, "mcmc_steps", 0)
    check_int(block_size, "block_size", allow_none=True, fix="None makes one block.")


def _power_chain(rollouts, input_ids, attention_mask, max_new_tokens, alpha, mcmc_steps, block_size, generator, eos):
    """The chain of the module docstring on any backend (`rollouts.draw`); returns the answers, each row's
    acceptance rate and the per-token `log p` of its answer."""
    block_size = max_new_tokens if block_size is None else block_size
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    batch, prompt_length = input_ids.shape
    ids, logp, logr = input_ids, input_ids.new_zeros(batch, 0).float(), input_ids.new_zeros(batch, 0).float()
    accepted = torch.zeros(batch, device=input_ids.device)
    proposed = torch.zeros(batch, device=input_ids.device)
    for start in range(0, max_new_tokens, block_size):
        end = min(start + block_size, max_new_tokens)
        active = ~_ended(ids[:, prompt_length:], eos)
        starts = torch.full((batch,), start, device=input_ids.device)
        new, new_logp, new_logr = rollouts.draw(ids, attention_mask, starts, end, active)
        ids, logp, logr = torch.cat([ids, new], 1), torch.cat([logp, new_logp], 1), torch.cat([logr, new_logr], 1)
        boundaries = torch.arange(0, end, block_size, device=input_ids.device)
        for _ in range(mcmc_steps):  # every row draws its own boundary: the rows are independent chains
            starts = boundaries[torch.randint(len(boundaries), (batch,), generator=generator, device=input_ids.device)]
            accept, moved = _mh_step(rollouts, (ids, logp, logr), attention_mask, end, starts, alpha, generator, eos)
            accepted, proposed = accepted + accept.float(), proposed + moved.float()
    acceptance = accepted / proposed  # nan for a row that never had anything to resample
    if mcmc_steps:
        logger.info(f"power sampling: mean MH acceptance rate {acceptance.nanmean().item():.3f}")
    return ids, acceptance, logp


@torch.no_grad()
def power_sample(
    model: torch.nn.Module | EngineClient,
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
    logits_processor: Sequence | None = None,
) -> PowerSamplingOutput | torch.LongTensor:
    """Samples answers approximately from `p(answer | prompt)^(1/T)` by power sampling (MH over blocks).

    An answer ends at its first EOS token; the positions after it are `pad_token_id`. An answer with no EOS within
    `max_new_tokens` tokens is the truncated event (its probability is that of its `max_new_tokens` tokens), so the
    target is `p^(1/T)` over the answers of at most `max_new_tokens` tokens. With `eos_token_id=[]` EOS is an
    ordinary token and every completion has exactly `max_new_tokens` tokens.

    Args:
        model (`torch.nn.Module` or [`~hf_seqtemp.engine.EngineClient`]): a causal LM (any `transformers`
            `...ForCausalLM`, PEFT-wrapped or not), or an engine server of the base model `p` started with
            `--logprobs-mode processed_logprobs`: every rollout is then drawn by the engine at token temperature
            `1 / alpha`, whose processed log-probability of each drawn token is exactly `log r`, and `log p` comes
            from scoring the rollout (two requests per rollout). The values of the current suffix are kept from the
            rollout that drew it: `r(x_t | x_<t)` depends on the prefix only, which a move after `t` does not change.
        input_ids (`torch.LongTensor` of shape `(batch, prompt_length)`): prompts, left-padded.
        attention_mask (`torch.Tensor` of shape `(batch, prompt_length)`, *optional*): 0 on padding.
        max_new_tokens (`int`, *optional*, defaults to `16`): longest answer.
        seq_temperature (`float`, *optional*, defaults to `0.5`): sequence temperature `T`.
        mcmc_steps (`int`, *optional*, defaults to `4`): MH steps after each new block (0: token-temperature
            sampling).
        block_size (`int`, *optional*): tokens per block; `None` makes one block, i.e. an independence sampler
            over whole answers.
        generator (`torch.Generator`, *optional*): makes the run reproducible.
        return_dict_in_generate (`bool`, *optional*, defaults to `False`): return a [`PowerSamplingOutput`].
        eos_token_id (`int` or `list[int]`, *optional*): tokens that end an answer; defaults to the model's
            `generation_config.eos_token_id` (none: fixed length).
        pad_token_id (`int`, *optional*): written after an answer's EOS; defaults to the generation config's pad
            id, else the first EOS id.
        logits_processor (`list` of [`~transformers.LogitsProcessor`], *optional*): processors included in the
            target: the base distribution becomes `p̃(x_t | x_<t) = softmax(processors(x_<t, logits_t))`, evaluated
            on each prefix (prompt included), in the proposal and in the acceptance ratio alike, so the target is
            `p̃(answer)^(1/T)` (see [`~hf_seqtemp.generation.processed`]; e.g. a suppressed token is never
            sampled). Processors with a state across steps are refused with an error naming them; on an engine,
            which targets the served `p` itself, any processor is refused.

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`, or a [`PowerSamplingOutput`].

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> out = power_sample(tiny_causal_lm(), torch.tensor([[1, 2]]), max_new_tokens=4, seq_temperature=0.5,
    ...                    mcmc_steps=2, block_size=2, generator=torch.Generator().manual_seed(0), return_dict_in_generate=True,
    ...                    eos_token_id=3, pad_token_id=0)
    >>> out.sequences.shape, out.acceptance_rate.shape
    (torch.Size([1, 6]), torch.Size([1]))
    ```
    """
    _check_arguments(input_ids, max_new_tokens, mcmc_steps, block_size)
    alpha = 1.0 / check_temperature(seq_temperature, "seq_temperature")
    if isinstance(model, EngineClient):
        if logits_processor:
            raise ValueError(
                "`logits_processor` cannot be applied by an engine (it targets the served model's own p): drop it, "
                "or pass the model instead of the engine (the transformers loop includes processors in p)."
            )
        eos, pad = resolve_eos_and_pad(None, eos_token_id, pad_token_id)
        eos = eos.to(input_ids.device)
        proposal = EngineProposal(model, alpha, eos.tolist())
        proposal.check(prompts_of(input_ids, attention_mask), max_new_tokens, "MH power sampling")
        rollouts = EngineRollouts(proposal, seed_stream(generator, input_ids.device), pad)
    else:
        check_generator_device(generator, input_ids.device)
        conditionals = processed_conditionals(logits_processor)
        eos, pad = resolve_eos_and_pad(model, eos_token_id, pad_token_id)
        eos = eos.to(input_ids.device)
        rollouts = ModelRollouts(model, alpha, generator, eos, pad, conditionals)
    chain = (input_ids, attention_mask, max_new_tokens, alpha, mcmc_steps, block_size, generator, eos)
    ids, acceptance, logp = _power_chain(rollouts, *chain)
    if not return_dict_in_generate:
        return ids
    return PowerSamplingOutput(sequences=ids, acceptance_rate=acceptance, sequence_logps=logp.sum(dim=1))
