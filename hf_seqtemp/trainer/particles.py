# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The SMC particles that `loss_type="smc_distill"` trains on: `num_generations` particles of `p(·|c)^(1/T)` per
prompt, drawn by [`~hf_seqtemp.generation.smc_sample`] into the completion pool, with their log-weights."""

from __future__ import annotations

import math
import warnings

import torch

from ..data import eos_ids_of, is_prompt_only
from ..generation.smc import smc_sample
from ..peft_compat import peft_model_of
from .distributed import sampling_seed
from .prompt_only import DrawnParticles, pad_token_id_of

SMC_LOG_WEIGHT = "smc_log_weight"
"""Column of a particle's log-weight towards `p^(1/T)` (mean of its prompt's `exp` values: the SMC estimate of
`Z_T(c)` over the answers of at most `max_completion_length` tokens)."""

PARTICLE_STREAM = 2  # the seed counter that separates particle draws from the other sampling streams


def particle_seed(seed: int, generation: int, prompt_index: int) -> int:
    """The seed of one prompt's particles in one generation: the same on every rank and in a resumed run, so that
    several processes (or one after a restart) draw exactly the particles one uninterrupted process draws."""
    return sampling_seed(seed, PARTICLE_STREAM, generation, prompt_index)


def answer_of(row: torch.Tensor, prompt_length: int, eos: set[int]) -> list[int]:
    """The answer tokens of an SMC particle `row` (prompt, answer, padding): up to its first EOS, included.

    Example:
    ```python
    >>> answer_of(torch.tensor([9, 9, 4, 2, 0, 0]), 2, {2})
    [4, 2]
    ```
    """
    answer = row[prompt_length:].tolist()
    for position, token in enumerate(answer):
        if token in eos:
            return answer[: position + 1]
    return answer


def check_particle_setup(train_dataset, model, args) -> None:
    """Refuses what `loss_type="smc_distill"` cannot train on: stored completions (it draws its own particles) and
    an adapter proposal without an adapter."""
    if not is_prompt_only(train_dataset):
        raise ValueError(
            "`loss_type='smc_distill'` trains on SMC particles of p^(1/T) that it draws for every prompt, so "
            "`train_dataset` must hold prompts only (a `prompt` column, text or conversational); these rows have "
            "completions. Drop the completion column, or use `loss_type='ratio'` or `'ssts'` on stored completions."
        )
    if args.smc_proposal == "adapter" and peft_model_of(model) is None:
        raise ValueError(
            "`smc_proposal='adapter'` proposes the particles from the adapter being trained, and this model has "
            "none: pass a `peft_config` (e.g. LoraConfig), or use `smc_proposal='token'`."
        )


@torch.no_grad()
def draw_particles(
    model, reference_context, prompts: list[list[int]], slots: list[int], args, generation: int, processing_class=None
) -> DrawnParticles:
    """SMC particles for the stale slots of a completion pool, `args.num_generations` consecutive slots per prompt.

    Each prompt gets one [`smc_sample`] run of its own (batch of one prompt, no padding), seeded by
    [`particle_seed`] from the run's seed, the generation and the prompt's index in the pool: a prompt's particles
    do not depend on which rank draws them nor on what else is in the batch. The target is `p^(1/T)`, `p` the
    reference (every adapter off); the proposal is token temperature T of `p` (`args.smc_proposal="token"`) or the
    adapter being trained (`"adapter"`). Answers end at EOS or after `max_completion_length` tokens, and never
    exceed `max_length` with their prompt (the SMC target is then over the answers that fit, so no particle is cut
    after its weight was computed).

    Args:
        model: the model being trained (a PeftModel for `smc_proposal="adapter"`).
        reference_context: a context manager factory yielding the reference `p` (the trainer's `_reference_model`).
        prompts (`list[list[int]]`): the prompt of every slot.
        slots (`list[int]`): the pool slots, whole runs of `num_generations` slots of one prompt.
        args: the training config.
        generation (`int`): the pool's generation.
    """
    n = args.num_generations
    if len(slots) % n or any(slots[i] // n != slots[i - i % n] // n for i in range(len(slots))):
        raise RuntimeError(f"SMC particles are drawn per prompt, {n} slots at a time; got slots {slots}.")
    completions, columns = [], []
    eos = eos_ids_of(model, processing_class)
    pad = pad_token_id_of(processing_class, model)
    for start in range(0, len(slots), n):
        prompt = prompts[start]
        device = next(model.parameters()).device
        generator = torch.Generator(device=device).manual_seed(particle_seed(args.seed, generation, slots[start] // n))
        settings = {
            "max_new_tokens": min(args.max_completion_length, args.max_length - len(prompt)),
            "seq_temperature": args.target_temperature,
            "num_particles": n,
            "ess_threshold": args.smc_ess_threshold,
            "generator": generator,
            "return_dict_in_generate": True,
            "return_particles": True,
            "eos_token_id": sorted(eos),
            "pad_token_id": pad,
            "proposal": args.smc_proposal,
        }
        ids = torch.tensor([prompt], device=device)
        if args.smc_proposal == "adapter":  # the adapter proposes, smc_sample turns it off for p
            out = _sample(model, ids, settings)
        else:
            with reference_context() as reference:
                out = _sample(reference, ids, settings)
        log_weights = out.particle_log_weights[0] + out.log_normalizer[0] + math.log(n)
        for particle, log_weight in zip(out.particles[0], log_weights.tolist()):
            completions.append(answer_of(particle, len(prompt), eos))
            columns.append({SMC_LOG_WEIGHT: log_weight})
    return DrawnParticles(completions, columns)


def _sample(sampler, ids, settings):
    was_training = sampler.training
    sampler.eval()
    try:
        with warnings.catch_warnings():  # its warning is about the one answer it draws; the teacher is every
            # particle with its weight (consistent at any ESS), and the trainer logs `ess/fraction` instead
            warnings.filterwarnings("ignore", message="smc_sample: the answers were drawn", category=UserWarning)
            return smc_sample(sampler, ids, **settings)
    finally:
        sampler.train(was_training)
