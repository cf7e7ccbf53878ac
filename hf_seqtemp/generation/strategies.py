# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The sampling strategies of `generate(..., seq_temperature=T)`, selected by name from a registry.

Each strategy is a function of one prepared [`GenerateCall`] that returns what `generate` returns; [`seqtemp_generate`]
resolves `strategy="auto"`, looks the name up in [`STRATEGY_REGISTRY`] and calls it, with no `if` chain over names.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.generation import GenerationMixin
from transformers.generation.logits_process import (
    EpsilonLogitsWarper,
    EtaLogitsWarper,
    LogitsProcessorList,
    MinPLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
)

from ..checks import check_int
from .adapters import active_adapter
from .answers import pad_after_answer, resolve_eos_and_pad
from .glauber import GlauberGenerateOutput, ancestral_draft, glauber_refine
from .power_sampling import power_sample
from .smc import smc_sample

# `strategy="glauber"` with `num_candidates=None` runs `batch * |V|` sequences per site; above this, ask for N
_MAX_FULL_SITE_ROWS = 1 << 16
# token-level reshaping that would distort the sequence-tempered target
_DROPPED_WARPERS = (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    MinPLogitsWarper,
    TypicalLogitsWarper,
    EpsilonLogitsWarper,
    EtaLogitsWarper,
)


@dataclass
class GenerateCall:
    """One prepared `generate` call at sequence temperature `seq_temperature`: `_sample`'s arguments, the tempered
    adapters found on the model (`{adapter name: SequenceTemperatureConfig}`) and the strategies' own options."""

    model: Any
    input_ids: torch.LongTensor
    logits_processor: LogitsProcessorList | None
    stopping_criteria: Any
    generation_config: Any
    synced_gpus: bool
    streamer: Any
    model_kwargs: dict
    seq_temperature: float
    adapters: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def max_new_tokens(self) -> int:
        return self.generation_config.max_length - self.input_ids.shape[1]

    @property
    def return_dict(self) -> bool:
        return bool(self.generation_config.return_dict_in_generate)

    def eos_and_pad(self) -> tuple[list[int], int | None]:
        """EOS ids and pad id of the prepared call (no EOS id: fixed-length answers)."""
        config = self.generation_config
        eos = getattr(config, "_eos_token_tensor", None)
        eos = config.eos_token_id if eos is None else eos
        eos = [] if eos is None else torch.as_tensor(eos).flatten().tolist()
        pad = getattr(config, "_pad_token_tensor", None)
        pad = config.pad_token_id if pad is None else pad
        return eos, None if pad is None else int(torch.as_tensor(pad).flatten()[0])

    def on_base_model(self):
        """Every tempered adapter off, so that `p` is the base model (training-free strategies temper `p`)."""
        return active_adapter(self.model, None) if self.adapters else contextlib.nullcontext()


def _matching_adapter(adapters: dict[str, Any], seq_temperature: float) -> str | None:
    matches = [n for n, c in adapters.items() if math.isclose(c.target_temperature, seq_temperature, rel_tol=1e-6)]
    if matches:
        return matches[0]
    if math.isclose(seq_temperature, 1.0, rel_tol=1e-6):
        return None  # p^(1/1) is the base model itself: adapters off
    available = sorted(float(c.target_temperature) for c in adapters.values())
    raise ValueError(
        f"No loaded adapter was trained for `seq_temperature={seq_temperature}`; available temperatures: "
        f"{available}. Pass one of them, load a matching adapter with `load_tempered`, or sample without an adapter: "
        "`strategy='mcmc'` or `strategy='glauber'`."
    )


def plain_sampling(call: GenerateCall):
    """`_sample` at token temperature 1 with every token-level warper removed (it would distort `p^(1/T)`)."""
    config = copy.deepcopy(call.generation_config)
    config.do_sample, config.top_k, config.top_p, config.temperature = True, 0, 1.0, 1.0
    processors = LogitsProcessorList([p for p in call.logits_processor or [] if not isinstance(p, _DROPPED_WARPERS)])
    return GenerationMixin._sample(
        call.model,
        call.input_ids,
        logits_processor=processors,
        stopping_criteria=call.stopping_criteria,
        generation_config=config,
        synced_gpus=call.synced_gpus,
        streamer=call.streamer,
        **call.model_kwargs,
    )


def _adapter_strategy(call: GenerateCall):
    """The loaded adapter trained for `seq_temperature`, sampled at token temperature 1."""
    if not call.adapters:
        raise ValueError(
            "`strategy='adapter'` needs a model with sequence-temperature adapters (load one with `load_tempered`); "
            "without adapters use `strategy='mcmc'`."
        )
    with active_adapter(call.model, _matching_adapter(call.adapters, call.seq_temperature)):
        return plain_sampling(call)


def _mcmc_strategy(call: GenerateCall):
    """Training-free power sampling ([`power_sample`]) of the base model."""
    eos_token_id, pad_token_id = call.eos_and_pad()
    with call.on_base_model():
        return power_sample(
            call.model,
            call.input_ids,
            call.model_kwargs.get("attention_mask"),
            max_new_tokens=call.max_new_tokens,
            seq_temperature=call.seq_temperature,
            mcmc_steps=call.options["mcmc_steps"],
            block_size=call.options["block_size"],
            generator=call.options["generator"],
            return_dict_in_generate=call.return_dict,
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
        )


def _smc_strategy(call: GenerateCall):
    """Training-free Power-SMC ([`smc_sample`]) of the base model; the user's processors (token-level warpers
    removed) are part of `p`, in the proposal and in the weights."""
    eos_token_id, pad_token_id = call.eos_and_pad()
    processors = LogitsProcessorList([p for p in call.logits_processor or [] if not isinstance(p, _DROPPED_WARPERS)])
    with call.on_base_model():
        return smc_sample(
            call.model,
            call.input_ids,
            call.model_kwargs.get("attention_mask"),
            max_new_tokens=call.max_new_tokens,
            seq_temperature=call.seq_temperature,
            num_particles=call.options.get("num_particles", 16),
            alpha_ramp_tokens=call.options.get("alpha_ramp_tokens", 0),
            logits_processor=processors,
            generator=call.options["generator"],
            return_dict_in_generate=call.return_dict,
            return_particles=call.options.get("return_particles", False),
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
        )


def _check_glauber(call: GenerateCall) -> None:
    check_int(call.options["glauber_rounds"], "glauber_rounds", 0, fix="0 returns the draft.")
    if call.max_new_tokens < 1:
        raise ValueError(f"`max_new_tokens` must be >= 1 for `strategy='glauber'`, got {call.max_new_tokens}.")
    vocab = int(call.model.get_output_embeddings().weight.shape[0])
    rows = call.input_ids.shape[0] * vocab
    if call.options["num_candidates"] is None and rows > _MAX_FULL_SITE_ROWS:
        raise ValueError(
            f"`num_candidates=None` scores all {vocab} tokens at every site, {rows} sequences per forward "
            f"pass (limit {_MAX_FULL_SITE_ROWS}). Pass e.g. `num_candidates=8` (multiple-try Metropolis)."
        )


def _glauber_strategy(call: GenerateCall):
    """Ancestral draft of `max_new_tokens` tokens of the base model, then `glauber_rounds` Glauber sweeps targeting
    `p^(1/T)` over answers ([`glauber_refine`])."""
    _check_glauber(call)
    batch, prompt_length = call.input_ids.shape
    new = call.max_new_tokens
    attention_mask = call.model_kwargs.get("attention_mask")
    attention_mask = torch.ones_like(call.input_ids) if attention_mask is None else attention_mask
    ids = torch.cat([call.input_ids, call.input_ids.new_zeros(batch, new)], dim=1)
    attn = torch.cat([attention_mask, attention_mask.new_ones(batch, new)], dim=1)
    cmask = torch.zeros_like(ids, dtype=torch.bool)
    cmask[:, prompt_length:] = True
    eos, pad = resolve_eos_and_pad(call.model, *call.eos_and_pad())
    generator = call.options["generator"]
    with call.on_base_model():
        draft = ancestral_draft(call.model, ids, attn, cmask, generator)
        out = glauber_refine(
            call.model,
            draft,
            attn,
            cmask,
            seq_temperature=call.seq_temperature,
            num_rounds=call.options["glauber_rounds"],
            num_candidates=call.options["num_candidates"],
            generator=generator,
            eos_token_id=eos,
            pad_token_id=pad,
        )
    if not call.return_dict:
        return out.sequences
    return GlauberGenerateOutput(
        sequences=out.sequences,
        draft_sequences=pad_after_answer(draft, cmask, eos, pad),
        acceptance_rate=out.acceptance_rates,
        sequence_logps=out.log_likelihoods,
    )


def _imh_strategy(call: GenerateCall):
    """IMH global tempering is a diffusion decoder: `generate` of a causal LM points to it instead."""
    raise ValueError(
        "`strategy='imh'` needs a diffusion model: wrap it in a `DiffusionLM` wrapper and call `diffusion_generate`; "
        "for a causal LM use `strategy='mcmc'`."
    )


STRATEGY_REGISTRY: dict[str, Callable[[GenerateCall], Any]] = {
    "adapter": _adapter_strategy,
    "mcmc": _mcmc_strategy,
    "glauber": _glauber_strategy,
    "imh": _imh_strategy,
    "smc": _smc_strategy,
}
"""`strategy` name → the function that samples a prepared call (`"auto"` resolves to `"adapter"` or `"mcmc"`)."""

STRATEGIES = ("auto", *STRATEGY_REGISTRY)
