# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""How far a proposal is from the tempered target of each prompt, with no enumeration and no partition function.

For a prompt `c`, the target is `pi_c(x) = p(x | c)^alpha / Z(c)` (`alpha = 1 / T`, `p` the base model with every
adapter off) and a proposal `r` draws whole answers: token temperature `T` (Power-SMC's proposal) or a tempered
adapter `q`. Over `N` answers `x_i ~ r(. | c)` the log-weights `log w_i = alpha log p(x_i | c) - log r(x_i | c)`
give two figures, both within the prompt (`log Z(c)` shifts every weight of the prompt equally and cancels):

- `ess_fraction = (sum_i w_i)^2 / (N sum_i w_i^2)`, the importance-sampling ESS over `N`: 1 when `r = pi_c`; for
  large `N` it tends to `1 / (1 + chi^2(pi_c || r))`;
- `log_weight_variance`, the sample variance of the `log w_i`: 0 when `r = pi_c`, a second-order estimate of
  `2 KL` near the target.

The weights are those of [`~hf_seqtemp.generation.smc_sample`] run with `ess_threshold=0` (no resampling: plain
importance sampling of whole answers), so the two proposals are weighed by the same code that samples with them.
Answers are at most `max_new_tokens` tokens: one that has not ended by then is its first `max_new_tokens` tokens,
as in every sampler here.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from .adapters import active_adapter
from .smc import PROPOSALS, smc_sample


@dataclass
class ProposalESS:
    """Per-prompt figures of [`proposal_ess`].

    Args:
        ess_fraction (`torch.FloatTensor` of shape `(batch,)`): `ESS / N` of each prompt's importance weights.
        log_weight_variance (`torch.FloatTensor` of shape `(batch,)`): the sample variance (`N - 1` in the
            denominator) of each prompt's log-weights `alpha log p - log r`.
        log_weights (`torch.FloatTensor` of shape `(batch, N)`): the log-weights, normalised within each prompt
            (`logsumexp` 0).
        sequences (`torch.LongTensor` of shape `(batch, N, prompt_length + max_new_tokens)`): the drawn answers.
    """

    ess_fraction: torch.FloatTensor
    log_weight_variance: torch.FloatTensor
    log_weights: torch.FloatTensor
    sequences: torch.LongTensor


@torch.no_grad()
def proposal_ess(
    model: torch.nn.Module,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    max_new_tokens: int = 16,
    seq_temperature: float = 0.5,
    num_samples: int = 16,
    proposal: str = "token",
    adapter_name: str | None = None,
    logits_processor=None,
    generator: torch.Generator | None = None,
    eos_token_id: int | list[int] | None = None,
    pad_token_id: int | None = None,
) -> ProposalESS:
    """Draws `num_samples` answers of every prompt from `proposal` and weighs them against `p^(1/seq_temperature)`.

    Args:
        model (`torch.nn.Module`): the base model, or a [`~peft.PeftModel`] (its adapters are off for `p`).
        input_ids, attention_mask: left-padded prompts, as for `generate`.
        max_new_tokens (`int`, *optional*, defaults to `16`): the longest answer.
        seq_temperature (`float`, *optional*, defaults to `0.5`): the sequence temperature `T` of the target.
        num_samples (`int`, *optional*, defaults to `16`): answers per prompt (`N`).
        proposal (`str`, *optional*, defaults to `"token"`): `"token"` (token temperature `T` of `p`) or `"adapter"`
            (the tempered adapter `adapter_name`, default the active one, of a `PeftModel`).
        logits_processor, generator, eos_token_id, pad_token_id: as for [`~hf_seqtemp.generation.smc_sample`]
            (processors are part of `p`).

    Returns:
        [`ProposalESS`].
    """
    if proposal not in PROPOSALS:
        raise ValueError(f"`proposal` must be one of {PROPOSALS}, got {proposal!r}.")
    if num_samples < 2:
        raise ValueError(f"`num_samples` must be at least 2 for a variance and an ESS, got {num_samples}.")
    # `p` is the base: the token proposal tempers it with every adapter off (the adapter proposal switches them itself)
    with active_adapter(model, None) if proposal == "token" else contextlib.nullcontext():
        out = smc_sample(
            model,
            input_ids,
            attention_mask,
            max_new_tokens=max_new_tokens,
            seq_temperature=seq_temperature,
            num_particles=num_samples,
            ess_threshold=0.0,
            logits_processor=logits_processor,
            generator=generator,
            return_dict_in_generate=True,
            return_particles=True,
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
            proposal=proposal,
            adapter_name=adapter_name,
        )
    log_weights = out.particle_log_weights.float()
    ess_fraction = torch.exp(-torch.logsumexp(2 * log_weights, dim=1)) / num_samples
    return ProposalESS(ess_fraction, log_weights.var(dim=1), log_weights, out.particles)
