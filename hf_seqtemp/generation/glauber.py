# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Glauber-dynamics refinement: a sequence-temperature sampler for autoregressive models.

Start from a draft (the given ids, or ancestral samples), then run rounds of single-site Metropolis-Hastings updates
(Kathuria & Kumar, "Leveraging Pretrained Language Models as Energy Functions for Glauber Dynamics Text Diffusion",
Sec. 3, Alg. 2 and App. D). Each round draws a fresh random permutation of the completion positions and updates them
in turn. The energy is `f(x) = -log p(x) / T` with `log p(x)` the model's exact sequence log-likelihood over the
completion, so the chain's stationary distribution is the sequence-tempered `p^(1/T) / Z` exactly.

Answers end at EOS. The chain runs on completions `y` of fixed length `n`; the answer `a(y)` is `y` up to and
including its first EOS (all of `y` when there is none: the truncated event), and the positions after it, the
*tail*, are an auxiliary variable distributed as the model's own continuation. The target is

    pi(y) ∝ p(a(y))^(1/T) · p(tail | a(y)),   i.e.   f(y) = -(1/T) Σ_{j in answer} log p_j - Σ_{j in tail} log p_j,

whose marginal over answers is exactly `p(a)^(1/T) / Z` because `p(tail | a)` sums to 1 over the tails. The
returned sequences hold the answer and `pad_token_id` in place of the tail. With no EOS id every completion is an
answer of `n` tokens (fixed length, EOS an ordinary token).

At a site `i` a proposal `v` is drawn from `q(v | x_-i)`: the AR model's own conditional `p(v | x_<i)`, a masked
LM's conditional, or uniform. None of them depends on the current token `x_i`, so the MH acceptance is
`min(1, exp(f(x) - f(x')) q(x_i) / q(v))`, detailed balance holds for every site kernel, and so every sweep keeps
`p^(1/T)/Z` invariant. All candidate energies of a site are scored in one batched forward pass: the `|V|`
substitutions (`num_candidates=None`), or `N` proposals plus the current sequence, combined by an
independent-proposal multiple-try Metropolis step (which reduces to plain MH at `N = 1`).

With logits processors, `p` is the processed distribution `p̃(x_j | x_<j) = softmax(processors(x_<j, l_j))`
throughout (energy, AR proposal, draft), so the chain targets `p̃(answer)^(1/T)` (see
[`~hf_seqtemp.generation.processed`]).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput

from ..checks import check_bytes, check_generator_device, check_int, check_temperature
from ..likelihood.autoregressive import AutoregressiveScorer, position_ids_from_attention_mask
from .answers import answer_mask, pad_after_answer, resolve_eos_and_pad
from .metropolis import mh_acceptance, mtm_probabilities
from .processed import processed_conditionals, processed_token_logps

_NO_EOS = torch.zeros(0, dtype=torch.long, device="cpu")  # moved to the tokens' device where used


@dataclass
class GlauberOutput:
    """Output of [`glauber_refine`].

    Attributes:
        sequences (`torch.LongTensor` of shape `(batch, length)`): the refined sequences.
        acceptance_rates (`torch.FloatTensor` of shape `(num_rounds,)`): accepted proposals / proposals per round.
        log_likelihoods (`torch.FloatTensor` of shape `(batch,)`): `log p(x)` of the returned completions (T = 1;
            `log p̃`, the processed distribution, when logits processors were given).
    """

    sequences: torch.Tensor
    acceptance_rates: torch.Tensor
    log_likelihoods: torch.Tensor


@dataclass
class GlauberGenerateOutput(ModelOutput):
    """Output of `generate(..., custom_generate=seqtemp_generate, strategy="glauber", return_dict_in_generate=True)`.

    Args:
        sequences (`torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`): prompts and refined
            completions.
        draft_sequences (`torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`): the ancestral
            drafts the chains started from.
        acceptance_rate (`torch.FloatTensor` of shape `(glauber_rounds,)`): accepted / proposed site updates per
            round, over the whole batch.
        sequence_logps (`torch.FloatTensor` of shape `(batch,)`): `log p(completion | prompt)` at temperature 1.
    """

    sequences: torch.LongTensor | None = None
    draft_sequences: torch.LongTensor | None = None
    acceptance_rate: torch.FloatTensor | None = None
    sequence_logps: torch.FloatTensor | None = None


def _forward_logits(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    kwargs = {"attention_mask": attention_mask}
    try:
        if "position_ids" in inspect.signature(model.forward).parameters:
            kwargs["position_ids"] = position_ids_from_attention_mask(attention_mask)
    except (TypeError, ValueError):
        pass
    out = model(input_ids=input_ids, **kwargs)
    return out if isinstance(out, torch.Tensor) else out.logits


def chain_energies(token_logps, sequences, completion_mask, seq_temperature, eos=_NO_EOS):
    """Energy `f(y) = -log pi(y)` (up to a constant) of completions `y`: `1/T` on the answer, 1 on the tail.

    Args:
        token_logps (`torch.FloatTensor` of shape `(..., length)`): `log p(y_j | y_<j)`, 0 off the completion.
        sequences (`torch.LongTensor` of shape `(..., length)`): the sequences.
        completion_mask (`torch.BoolTensor` broadcastable to `sequences`): the completion positions.
        seq_temperature (`float`): `T`.
        eos (`torch.LongTensor` of shape `(num_eos,)`, *optional*): EOS ids; empty for fixed-length answers.

    Returns:
        `torch.FloatTensor` of shape `(...)`.

    Example:
    ```python
    >>> logps, ids = torch.tensor([[0.0, -1.0, -2.0, -4.0]]), torch.tensor([[0, 5, 2, 7]])
    >>> chain_energies(logps, ids, ids > -1, 0.5, torch.tensor([2])).tolist()  # (1 + 2) / 0.5 + 4
    [10.0]
    ```
    """
    in_answer = answer_mask(sequences, completion_mask, eos)
    weights = torch.where(in_answer, 1.0 / seq_temperature, 1.0)
    return -(token_logps * weights).sum(dim=-1)


def _token_logps(model, scorer, ids, attn, cmask, conditionals=None, rows=None):
    """`log p(x_j | x_<j)` on the completion positions, or `log p̃` under the processors `conditionals`."""
    if conditionals is None:
        return scorer.token_logps(model, ids, attn, cmask)[0]
    return processed_token_logps(_forward_logits(model, ids, attn), ids, cmask, conditionals, rows)


def _site_energies(
    model, scorer, x, attn, cmask, sites, seq_temperature, vocab, eos=_NO_EOS, conditionals=None, rows=None
):
    """Scores every substitution `x_site = v` of each row in ONE forward pass over `rows * |vocab|` sequences.

    Returns `(energies, ar_log_q)`, both `(rows, |vocab|)`: [`chain_energies`] of `x with v` and
    `log p(v | x_<site)` (`p̃` under the processors `conditionals`; `rows` are the rows' indices in the call).
    """
    num, length = x.shape
    cand = x[:, None, :].repeat(1, vocab.numel(), 1)
    cand[torch.arange(num, device=x.device)[:, None], :, sites[:, None]] = vocab[None, :]
    flat = cand.reshape(-1, length)
    expand = lambda t: t[:, None, :].expand(num, vocab.numel(), length).reshape(-1, length)
    rows = torch.arange(num, device=x.device) if rows is None else rows
    token_logps = _token_logps(
        model, scorer, flat, expand(attn), expand(cmask), conditionals, rows.repeat_interleave(vocab.numel())
    )
    token_logps = token_logps.view(num, vocab.numel(), length)
    energies = chain_energies(token_logps, cand, cmask[:, None, :], seq_temperature, eos)
    ar_log_q = token_logps[torch.arange(num, device=x.device), :, sites]
    return energies, ar_log_q


def _proposal_log_q(proposal, x, attn, sites, ar_log_q, vocab_size, mask_token_id):
    """`log q(. | x_-site)` of shape `(rows, vocab_size)`; `ar_log_q` is the AR conditional (or `None`)."""
    rows = x.shape[0]
    if isinstance(proposal, torch.nn.Module):
        masked = x.clone()
        index = torch.arange(rows, device=x.device)
        masked[index, sites] = mask_token_id
        logits = _forward_logits(proposal, masked, attn)[index, sites, :vocab_size]
        return logits.float().log_softmax(dim=-1)
    if proposal == "uniform":
        return x.new_full((rows, vocab_size), -math.log(vocab_size), dtype=torch.float32)
    return ar_log_q


def _full_site_update(model, scorer, x, attn, cmask, sites, target, proposal, mask_token_id, rows, generator):
    vocab = torch.arange(_vocab_size(model), device=x.device)
    seq_temperature, eos, conditionals = target
    energies, ar_log_q = _site_energies(
        model, scorer, x, attn, cmask, sites, seq_temperature, vocab, eos, conditionals, rows
    )
    log_q = _proposal_log_q(proposal, x, attn, sites, ar_log_q, vocab.numel(), mask_token_id)
    current = x[torch.arange(x.shape[0], device=x.device), sites]
    proposed = torch.multinomial(log_q.exp(), 1, generator=generator).squeeze(1)
    uniform = torch.rand(x.shape[0], generator=generator, device=x.device)
    accept = uniform < mh_acceptance(energies, log_q, current, proposed)
    return torch.where(accept, proposed, current), accept


def _ar_proposal_log_q(model, x, attn, sites, conditionals, rows):
    """`log p(. | x_<site)` of each row at its own site (`log p̃`, the processors applied to each row's prefix)."""
    logits = _forward_logits(model, x, attn)[torch.arange(x.shape[0], device=x.device), sites - 1].float()
    if conditionals is None:
        return logits.log_softmax(dim=-1)
    out = torch.empty_like(logits)
    for site in sites.unique().tolist():  # the processors see prefixes of one width at a time
        pick = (sites == site).nonzero().squeeze(1)
        out[pick] = conditionals.log_softmax(x[pick, :site], logits[pick], rows[pick])
    return out


def _mtm_site_update(model, scorer, x, attn, cmask, sites, target, proposal, mask_token_id, rows, generator, n):
    num, vocab_size = x.shape[0], _vocab_size(model)
    ar_log_q = None
    if proposal == "model":
        ar_log_q = _ar_proposal_log_q(model, x, attn, sites, target[2], rows)
    log_q = _proposal_log_q(proposal, x, attn, sites, ar_log_q, vocab_size, mask_token_id)
    index = torch.arange(num, device=x.device)
    current = x[index, sites]
    tries = torch.multinomial(log_q.exp(), n, replacement=True, generator=generator)
    candidates = torch.cat([current[:, None], tries], dim=1)  # (rows, 1 + n): current first
    energies = _site_energies_of(model, scorer, x, attn, cmask, sites, target, candidates, rows)
    log_w = -energies - log_q.gather(1, candidates)
    select, accept_prob = mtm_probabilities(log_w[:, 1:], log_w[:, 0])
    j = torch.multinomial(select, 1, generator=generator).squeeze(1)
    accept = torch.rand(num, generator=generator, device=x.device) < accept_prob[index, j]
    return torch.where(accept, tries[index, j], current), accept


def _site_energies_of(model, scorer, x, attn, cmask, sites, target, candidates, rows=None):
    """Like [`_site_energies`] for a per-row candidate set `(rows, K)`: one forward over `rows * K` sequences."""
    num, length = x.shape
    k = candidates.shape[1]
    cand = x[:, None, :].repeat(1, k, 1)
    cand[torch.arange(num, device=x.device)[:, None], torch.arange(k, device=x.device)[None, :], sites[:, None]] = (
        candidates
    )
    expand = lambda t: t[:, None, :].expand(num, k, length).reshape(-1, length)
    seq_temperature, eos, conditionals = target
    rows = (torch.arange(num, device=x.device) if rows is None else rows).repeat_interleave(k)
    flat = cand.reshape(-1, length)
    token_logps = _token_logps(model, scorer, flat, expand(attn), expand(cmask), conditionals, rows)
    return chain_energies(token_logps.view(num, k, length), cand, cmask[:, None, :], seq_temperature, eos)


def _vocab_size(model: torch.nn.Module) -> int:
    return int(model.get_output_embeddings().weight.shape[0])


def check_site_memory(model: torch.nn.Module, rows: int, length: int, num_candidates: int | None) -> None:
    """Refuses a chain whose site update would not fit in memory, before anything is allocated.

    One site update scores `rows × K` sequences of `length` tokens in one forward pass (`K = |V|` with
    `num_candidates=None`, `N + 1` otherwise); its largest tensors are their logits, `rows × K × length × |V|`
    values in the model's dtype plus a float32 copy. More than half of the free memory of the model's device is an
    error naming `num_candidates`, the estimate and the fix.
    """
    vocab = _vocab_size(model)
    width = vocab if num_candidates is None else num_candidates + 1
    parameter = next(model.parameters())
    estimated = rows * width * length * (vocab * (parameter.element_size() + 4) + 8)
    if num_candidates is None:
        what = (
            f"`num_candidates=None` (every one of the {vocab} tokens of a site scored at once: {rows} × {vocab} "
            f"sequences of {length} tokens per forward pass)"
        )
        fix = "Pass `num_candidates=8` (multiple-try Metropolis: 9 sequences per row), or fewer rows at once."
    else:
        what = f"`num_candidates={num_candidates}` ({rows} × {width} sequences of {length} tokens per forward pass)"
        fix = "Pass a smaller `num_candidates`, fewer rows at once, or a shorter `max_new_tokens`."
    check_bytes(estimated, parameter.device, what, fix)


def ancestral_draft(model, x, attn, cmask, generator, conditionals=None):
    """Replaces every completion token by an ancestral sample `x_i ~ p(. | x_<i)` (`p̃` under the processors
    `conditionals`, whose batch is the rows of `x`), left to right."""
    x = x.clone()
    for col in range(1, x.shape[1]):
        rows = cmask[:, col].nonzero().squeeze(1)
        if rows.numel():
            logits = _forward_logits(model, x[rows], attn[rows])[:, col - 1].float()
            if conditionals is not None:
                logits = conditionals.scores(x[rows, :col], logits, rows)
            x[rows, col] = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(1)
    return x


def _validate(model, input_ids, seq_temperature, num_rounds, proposal, num_candidates, draft, mask_token_id):
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError(f"`input_ids` must be a 2-D tensor (batch, length), got {getattr(input_ids, 'shape', None)}.")
    seq_temperature = check_temperature(seq_temperature, "seq_temperature")
    check_int(num_rounds, "num_rounds", 0)
    if not isinstance(proposal, torch.nn.Module) and proposal not in ("model", "uniform"):
        raise ValueError(f"`proposal` must be 'model', 'uniform' or a masked LM module, got {proposal!r}.")
    if isinstance(proposal, torch.nn.Module):
        mask_token_id = getattr(proposal, "mask_token_id", None) if mask_token_id is None else mask_token_id
        if mask_token_id is None:
            raise ValueError("a masked-LM `proposal` needs `mask_token_id` (or a `mask_token_id` attribute on it).")
    check_int(num_candidates, "num_candidates", allow_none=True, fix="None scores all |V| tokens of a site.")
    if draft not in ("input", "ancestral"):
        raise ValueError(f"`draft` must be 'input' (refine the given ids) or 'ancestral', got {draft!r}.")
    return seq_temperature, mask_token_id


@torch.no_grad()
def glauber_refine(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    completion_mask: torch.Tensor | None = None,
    seq_temperature: float = 1.0,
    num_rounds: int = 2,
    proposal: str | torch.nn.Module = "model",
    num_candidates: int | None = None,
    draft: str = "input",
    mask_token_id: int | None = None,
    generator: torch.Generator | None = None,
    eos_token_id: int | list[int] | None = None,
    pad_token_id: int | None = None,
    logits_processor: list | None = None,
) -> GlauberOutput:
    """Samples answers from the sequence-tempered `p^(1/T)/Z` of a causal LM by Glauber dynamics.

    An answer ends at the first EOS of the completion (included); the returned sequences hold `pad_token_id` after
    it. A completion without EOS is the truncated event (probability of its tokens). The chain keeps the positions
    after the EOS as an auxiliary tail distributed as `p`'s own continuation (see the module docstring), so its
    answers follow `p(answer)^(1/T)` exactly in the limit.

    Args:
        model (`torch.nn.Module`): a causal LM (e.g. [`~transformers.LlamaForCausalLM`]); its exact sequence
            log-likelihood ([`AutoregressiveScorer`]) is the energy.
        input_ids (`torch.LongTensor` of shape `(batch, length)`): prompts followed by draft completions (any
            tokens when `draft="ancestral"`).
        attention_mask (`torch.Tensor` of shape `(batch, length)`, *optional*): 1 for real tokens.
        completion_mask (`torch.Tensor` of shape `(batch, length)`, *optional*): positions that are sampled and
            scored; defaults to every non-pad token but the first. Prompt tokens stay fixed.
        seq_temperature (`float`, *optional*, defaults to `1.0`): `T`; the target is `p^(1/T)/Z` over answers.
        num_rounds (`int`, *optional*, defaults to `2`): rounds; each visits every completion position once, in a
            fresh random order.
        proposal (`str` or `torch.nn.Module`, *optional*, defaults to `"model"`): `"model"` proposes from the AR
            conditional `p(v | x_<i)`, `"uniform"` uniformly; a masked LM (a [`DiffusionLM`] or an HF masked LM
            sharing the vocabulary) proposes from its conditional at the masked site.
        num_candidates (`int`, *optional*): `None` scores all `|V|` substitutions of a site in one pass; `N` scores
            `N` proposals plus the current sequence (multiple-try Metropolis), for large vocabularies.
        draft (`str`, *optional*, defaults to `"input"`): `"input"` refines the given completions, `"ancestral"`
            first replaces them by ancestral samples of the model.
        mask_token_id (`int`, *optional*): mask id of a masked-LM proposal without a `mask_token_id` attribute.
        generator (`torch.Generator`, *optional*): source of randomness, for reproducible chains.
        eos_token_id (`int` or `list[int]`, *optional*): tokens that end an answer; defaults to the model's
            `generation_config.eos_token_id`; `[]` (or a model without one) makes every completion a fixed-length
            answer.
        pad_token_id (`int`, *optional*): written after an answer's EOS; defaults to the generation config's pad
            id, else the first EOS id.
        logits_processor (`list` of [`~transformers.LogitsProcessor`], *optional*): processors included in the
            target, built for the rows of `input_ids`: the base distribution becomes
            `p̃(x_j | x_<j) = softmax(processors(x_<j, logits_j))`, evaluated on each prefix, in the energy, the
            AR proposal and the draft alike, so the chain targets `p̃(answer)^(1/T)` (a suppressed token is never
            sampled; see [`~hf_seqtemp.generation.processed`]). Processors with a state are refused by name.

    Returns:
        [`GlauberOutput`] with `sequences`, per-round `acceptance_rates` and the answers' `log_likelihoods`.

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(vocab_size=4, seed=0, hidden_size=8)
    >>> out = glauber_refine(model, torch.zeros(3, 4, dtype=torch.long), seq_temperature=0.5, num_rounds=2)
    >>> out.sequences.shape, out.acceptance_rates.shape
    (torch.Size([3, 4]), torch.Size([2]))
    ```
    """
    seq_temperature, mask_token_id = _validate(
        model, input_ids, seq_temperature, num_rounds, proposal, num_candidates, draft, mask_token_id
    )
    check_generator_device(generator, input_ids.device)
    eos, pad = resolve_eos_and_pad(model, eos_token_id, pad_token_id)
    conditionals = processed_conditionals(logits_processor)
    target = (seq_temperature, eos.to(input_ids.device), conditionals)
    scorer = AutoregressiveScorer()
    x, attn, cmask = scorer._check_inputs(input_ids, attention_mask, completion_mask)
    check_site_memory(model, x.shape[0], x.shape[1], num_candidates)
    if cmask[:, 0].any():
        raise ValueError("`completion_mask` marks position 0, which has no AR conditional: prepend a BOS token.")
    x = ancestral_draft(model, x, attn, cmask, generator, conditionals) if draft == "ancestral" else x.clone()
    chain = (model, scorer, x, attn, cmask, target, proposal, mask_token_id, num_candidates, generator)
    rates = [_sweep(*chain) for _ in range(num_rounds)]
    token_logps = _token_logps(model, scorer, x, attn, cmask, conditionals)
    log_likelihoods = (token_logps * answer_mask(x, cmask, target[1])).sum(dim=1)
    sequences = pad_after_answer(x, cmask, target[1], pad)
    rates = torch.stack(rates).float() if rates else torch.zeros(0, device=x.device)
    return GlauberOutput(sequences, rates, log_likelihoods)


def _sweep(model, scorer, x, attn, cmask, target, proposal, mask_token_id, num_candidates, generator):
    """One round: every completion position of every row once, in a fresh random order; updates `x` in place.
    Returns the round's acceptance rate (a 0-dim tensor on `x`'s device: no host sync per site)."""
    counts = cmask.sum(dim=1)
    width = int(counts.max()) if counts.numel() else 0  # host sync: the order's width, once per round
    order = torch.full((x.shape[0], width), -1, dtype=torch.long, device=x.device)
    for b in range(x.shape[0]):
        positions = cmask[b].nonzero().squeeze(1)  # host sync: `nonzero` sizes its output, once per row and round
        shuffled = torch.randperm(positions.numel(), generator=generator, device=x.device)
        order[b, : positions.numel()] = positions[shuffled]
    accepted = proposed = x.new_zeros((), dtype=torch.float32)
    for step in range(order.shape[1]):
        rows = (order[:, step] >= 0).nonzero().squeeze(1)
        sites = order[rows, step]
        args = (model, scorer, x[rows], attn[rows], cmask[rows], sites, target, proposal, mask_token_id, rows)
        if num_candidates is None:
            new, accept = _full_site_update(*args, generator)
        else:
            new, accept = _mtm_site_update(*args, generator, num_candidates)
        x[rows, sites] = new
        accepted, proposed = accepted + accept.sum(), proposed + rows.numel()
    return accepted / proposed.clamp(min=1)
