# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The keywords of a `generate(..., seq_temperature=T)` call, as hf_seqtemp's entry points pass them on."""

from __future__ import annotations

import copy

SEQTEMP_OPTIONS = (
    "seq_temperature", "strategy", "mcmc_steps", "block_size", "glauber_rounds", "num_candidates", "num_particles",
    "alpha_ramp_tokens", "return_particles", "proposal", "ess_threshold", "resampling", "allow_active_adapters",
    "engine", "proposal_engine", "engine_adapter", "pimh_steps", "defensive_mixture",
)  # fmt: skip
"""The keywords of `seqtemp_generate` beyond `generate`'s own, which a `GenerationConfig` may carry too."""


def seqtemp_call_kwargs(kwargs: dict) -> dict:
    """A `generate` call's keywords as `seqtemp_generate` needs them, in place:

    - the options of [`SEQTEMP_OPTIONS`] set on a passed `generation_config` (`GenerationConfig(seq_temperature=0.5,
      strategy="mcmc")`) are taken from it, as transformers takes its own fields from it (a keyword wins);
    - with `seq_temperature`, sampling is on: `do_sample=True` (so that `num_return_sequences=3` needs nothing more),
      and `do_sample=False` is refused, since a sequence temperature samples;
    - a `streamer` is handed over as `seqtemp_streamer`: transformers passes none to a `custom_generate` callable, and
      would give the streamer the prompt and never end it.
    """
    config = kwargs.get("generation_config")
    carried = {name: getattr(config, name) for name in SEQTEMP_OPTIONS if getattr(config, name, None) is not None}
    if carried:
        config = copy.deepcopy(config)
        for name, value in carried.items():
            kwargs.setdefault(name, value)
            delattr(config, name)
        kwargs["generation_config"] = config
    if kwargs.get("seq_temperature") is None:
        return kwargs
    if kwargs.get("do_sample") is False:
        raise ValueError(
            "`do_sample=False` cannot be combined with `seq_temperature`, which samples p^(1/T): drop `do_sample`, "
            "or drop `seq_temperature` for greedy decoding."
        )
    kwargs["do_sample"] = True
    if kwargs.get("streamer") is not None:
        kwargs["seqtemp_streamer"] = kwargs.pop("streamer")
    return kwargs


def reading_own_generation_config(model) -> None:
    """Makes `model.generate` (as [`~hf_seqtemp.generation.custom_generate.enable_seq_temperature_generate`] set
    it) read the options of [`SEQTEMP_OPTIONS`] from the model's own `generation_config` too, as transformers reads
    its own fields from it: `model.generation_config.seq_temperature = 0.5` then samples as the keyword does, where
    it used to be ignored (greedy answers, the same for every seed). A passed `generation_config` or keyword wins."""
    generate = model.generate

    def generate_with_own_config(*args, **kwargs):
        own = getattr(model, "generation_config", None)
        if kwargs.get("generation_config") is None and any(
            getattr(own, name, None) is not None for name in SEQTEMP_OPTIONS
        ):
            kwargs["generation_config"] = own
        return generate(*args, **kwargs)

    generate_with_own_config._reads_own_generation_config = True
    model.generate = generate_with_own_config
