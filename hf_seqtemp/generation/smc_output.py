# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What an SMC call returns ([`SMCOutput`]): the answers, the normaliser estimates, the weights' diagnostics, and with
`pimh_steps` the chain's acceptance and its runs' tail diagnostics; one type for the transformers and engine paths."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput


@dataclass
class SMCOutput(ModelOutput):
    """Output of [`smc_sample`] with `return_dict_in_generate=True`.

    Args:
        sequences (`torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`): prompts and the answer
            drawn for each by the final weights, padded after its EOS.
        sequence_logps (`torch.FloatTensor` of shape `(batch,)`): `log p(answer | prompt)` of the returned answers
            (EOS included; `p` after the logits processors).
        log_normalizer (`torch.FloatTensor` of shape `(batch,)`): the SMC estimate of `log sum_x p(x | prompt)^alpha`
            over the answers of at most `max_new_tokens` tokens (unbiased in `Z`, not in `log Z`).
        num_resamples (`torch.LongTensor` of shape `(batch,)`): resampling steps per prompt.
        model_calls (`int`): sequential forward passes (each one batch over every particle of every prompt; two per
            token with `proposal="adapter"`: the adapter's and the base's).
        ess (`torch.FloatTensor` of shape `(batch, steps)`): the effective sample size of each prompt's particles
            after each step's weight update, before any resampling (`N` when the weights are equal).
        particles (`torch.LongTensor` of shape `(batch, num_particles, prompt_length + max_new_tokens)`, *optional*):
            every particle, with `return_particles=True`.
        particle_log_weights (`torch.FloatTensor` of shape `(batch, num_particles)`, *optional*): their normalised
            log-weights (`logsumexp` 0 per prompt).
        particle_logps (`torch.FloatTensor` of shape `(batch, num_particles)`, *optional*): their `log p(answer)`.
        pimh_acceptance (`torch.FloatTensor` of shape `(batch,)`, *optional*): with `pimh_steps > 0`, the fraction of
            proposed runs each prompt's chain accepted.
        answer_bias_bound (`torch.FloatTensor` of shape `(batch,)`, *optional*): with `pimh_steps=0`, the estimated
            bound on the total variation between one run's answer law and `p^alpha` for the row's prompt
            ([`~hf_seqtemp.generation.pimh.one_run_bias_bound`]; NaN for a prompt with one run in the batch).
        log_normalizer_variance, largest_run_share, run_ess, pareto_k (`torch.FloatTensor` of shape `(batch,)`,
            *optional*):
            with `pimh_steps > 0`, how heavy the tail of the row's `K + 1` normaliser estimates is
            ([`~hf_seqtemp.generation.pimh.tail_diagnostics`]): where it is heavy the chain's K steps may not reach
            the rare runs it should spend time in.

    With `pimh_steps > 0`, `sequences`, `sequence_logps` and the particles are those of the run the chain ended on,
    `log_normalizer` is the log of the mean of every run's `Z_hat` (unbiased in `Z`), `num_resamples` counts every
    run's resampling steps and `ess` is the mean over the runs.
    """

    sequences: torch.LongTensor | None = None
    sequence_logps: torch.FloatTensor | None = None
    log_normalizer: torch.FloatTensor | None = None
    num_resamples: torch.LongTensor | None = None
    model_calls: int | None = None
    ess: torch.FloatTensor | None = None
    particles: torch.LongTensor | None = None
    particle_log_weights: torch.FloatTensor | None = None
    particle_logps: torch.FloatTensor | None = None
    pimh_acceptance: torch.FloatTensor | None = None
    answer_bias_bound: torch.FloatTensor | None = None
    log_normalizer_variance: torch.FloatTensor | None = None
    largest_run_share: torch.FloatTensor | None = None
    run_ess: torch.FloatTensor | None = None
    pareto_k: torch.FloatTensor | None = None
