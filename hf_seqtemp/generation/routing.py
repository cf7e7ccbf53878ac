# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., seq_temperature=T)`: route a sequence temperature to a trained adapter or a training-free sampler.

Use [`seqtemp_generate`] as a `custom_generate` callable: `transformers` prepares inputs, processors and stopping
criteria, pops the callable's extra parameters (`seq_temperature`, `strategy`, ...) out of `**kwargs` before
`GenerationConfig` validation, and calls it in place of the decoding loop with `_sample`'s signature. The strategies
themselves are registered by name in [`~hf_seqtemp.generation.strategies.STRATEGY_REGISTRY`].
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.generation import GenerationConfig, GenerationMixin
from transformers.generation.logits_process import LogitsProcessorList

from ..checks import check_temperature
from ..models.base import DiffusionLM
from .adapters import adapter_names_present, tempered_adapters
from .call_kwargs import seqtemp_call_kwargs
from .diffusion import diffusion_generate
from .strategies import STRATEGIES, STRATEGY_REGISTRY, GenerateCall, seeded_from

__all__ = ["STRATEGIES", "generate_tempered", "seqtemp_generate"]


def _check_strategy(strategy: str | None) -> str:
    strategy = "auto" if strategy is None else strategy
    if strategy != "auto" and strategy not in STRATEGY_REGISTRY:
        raise ValueError(f"`strategy` must be one of {['auto', *STRATEGY_REGISTRY]}, got {strategy!r}.")
    return strategy


def _check_family(model, adapters: dict[str, Any]) -> None:
    config = getattr(model, "config", None)
    if getattr(config, "is_encoder_decoder", False) or not isinstance(model, GenerationMixin):
        raise ValueError(
            f"Unsupported model family for `seq_temperature`: {type(model).__name__}. `generate` supports causal "
            "LMs; for masked/block diffusion models call `diffusion_generate` with a `DiffusionLM` wrapper."
        )
    for name, cfg in adapters.items():
        family = getattr(cfg, "model_family", "causal_lm") or "causal_lm"
        if family != "causal_lm":
            raise ValueError(
                f"Unsupported model family {family!r} in the config of adapter {name!r}: `generate` routes causal "
                "LMs only; use `diffusion_generate` for diffusion models."
            )


_RECIPE = (
    "model.generate(**inputs, custom_generate=hf_seqtemp.seqtemp_generate, seq_temperature=0.5, strategy='mcmc', "
    "max_new_tokens=32)"
)


def seqtemp_generate(
    model,
    input_ids: torch.LongTensor,
    logits_processor: LogitsProcessorList | None = None,
    stopping_criteria=None,
    generation_config=None,
    synced_gpus: bool = False,
    streamer=None,
    seq_temperature: float | None = None,
    strategy: str | None = "auto",
    mcmc_steps: int = 4,
    block_size: int | None = None,
    glauber_rounds: int = 2,
    num_candidates: int | None = None,
    num_particles: int = 16,
    alpha_ramp_tokens: int = 0,
    return_particles: bool = False,
    proposal: str | None = None,
    ess_threshold: float = 0.5,
    resampling: str = "systematic",
    pimh_steps: int = 0,
    defensive_mixture: float = 0.0,
    generator: torch.Generator | None = None,
    allow_active_adapters: bool = False,
    engine=None,
    proposal_engine=None,
    engine_adapter: str | None = None,
    seqtemp_streamer=None,
    **model_kwargs,
):
    """`custom_generate` callable that samples a causal LM at *sequence* temperature `seq_temperature`.

    Strategies (`strategy`):
    - `"auto"` (default): `"adapter"` when the model carries sequence-temperature adapters (from `load_tempered`),
      `"smc"` otherwise: of the training-free routes it has plain sampling's sequential model calls (MH takes
      5-6× as many, and more token-forwards than SMC with 8 particles: the README's route table).
    - `"adapter"`: activate the adapter whose `seqtemp_config.target_temperature` equals `seq_temperature` (with
      several adapters loaded, the matching one) and sample from it at token temperature 1. `seq_temperature=1`
      without a matching adapter samples the base model with adapters off.
    - `"mcmc"`: training-free power sampling ([`power_sample`]), `mcmc_steps` MH steps per block of `block_size`
      tokens.
    - `"glauber"`: training-free Glauber dynamics ([`glauber_refine`]): an ancestral draft of `max_new_tokens`
      tokens, then `glauber_rounds` sweeps of single-site Metropolis-Hastings updates whose stationary law is
      `p^(1/T)` over answers (the draft is the chain's start, so few rounds are approximate).
    - `"smc"`: training-free Power-SMC ([`smc_sample`]): `num_particles` particles per prompt in one batch,
      proposed at token temperature `T`, weighted by `sum_v p(v | x_<t)^(1/T)` and resampled (systematic) when
      their effective sample size drops below half; one answer per prompt is drawn by the final weights. One
      sequential forward per token, like plain sampling; consistent as `num_particles` grows. With a loaded
      adapter trained for `seq_temperature`, the adapter proposes (`proposal="adapter"`, the default then) and the
      base model (adapters off) weighs: two forward passes per token.

    `"mcmc"`, `"glauber"` and `"smc"` work on any causal LM (on a model with sequence-temperature adapters they run with
    the adapters off, so that `p` is the base model on every route) and target `p(answer)^(1/T)` over *answers*:
    an answer ends at its first EOS token (`generation_config.eos_token_id`, included) and is padded with
    `pad_token_id` after it; an answer without EOS within `max_new_tokens` is the truncated event, whose
    probability is that of its tokens.
    A model without an EOS id gets completions of exactly `max_new_tokens` tokens.

    When `seq_temperature` is given, sampling is forced (`do_sample=True`) with `top_k=0`, `top_p=1.0` and token
    `temperature=1.0`: the temperature, top-k, top-p, min-p, top-h, typical, epsilon and eta warpers are removed
    (a warning names them), since the sequence temperature replaces token-level reshaping. Every other logits
    processor (yours, and those `generate` builds from the generation config: `suppress_tokens`,
    `repetition_penalty`, `no_repeat_ngram_size`, `min_new_tokens`, `bad_words_ids`, ...) is kept. `"adapter"`
    applies them while sampling; `"mcmc"` and `"glauber"` include them in their target: the base distribution
    becomes `p̃(x_t | x_<t) = softmax(processors(x_<t, logits_t))`, evaluated on each prefix, and the target is
    `p̃(answer)^(1/T)`, used alike in proposals and acceptance ratios (a suppressed token is never sampled).
    Processors that keep a state across steps (classifier-free guidance, SynthID watermarking, ...) are refused
    with an error naming them ([`~hf_seqtemp.generation.processed`]).
    Without `seq_temperature` this is ordinary `_sample`. `streamer` and `synced_gpus` keep their defaults, because
    `transformers` does not pass them to a callable.

    Args:
        seq_temperature (`float`, *optional*): sequence temperature `T > 0` of the target `p(x)^(1/T)`.
        strategy (`str`, *optional*, defaults to `"auto"`): `"auto"`, `"adapter"`, `"mcmc"`, `"glauber"` or
            `"smc"` (`"imh"` is for diffusion models, see [`diffusion_generate`]).
        mcmc_steps (`int`, *optional*, defaults to `4`): MH steps per block (`"mcmc"` only).
        block_size (`int`, *optional*): MH block size (`"mcmc"` only); `None` is one block.
        glauber_rounds (`int`, *optional*, defaults to `2`): sweeps over the completion (`"glauber"` only); each
            visits every position once in a fresh random order.
        num_candidates (`int`, *optional*): `"glauber"` only: `None` scores all `|V|` substitutions of a site in
            one pass; `N` scores `N` proposals plus the current token (multiple-try Metropolis, for large
            vocabularies).
        num_particles (`int`, *optional*, defaults to `16`): particles per prompt (`"smc"` only).
        alpha_ramp_tokens (`int`, *optional*, defaults to `0`): `"smc"` only: ramp the exponent from 1 to `1 / T`
            over this many tokens (the weights correct for it: the target stays `p^(1/T)`).
        return_particles (`bool`, *optional*, defaults to `False`): `"smc"` with `return_dict_in_generate=True`
            only: also return every particle with its normalised log-weight.
        proposal (`str`, *optional*): `"smc"` only: `"token"` (token temperature `T` of the base model) or
            `"adapter"` (the loaded sequence-temperature adapter trained for `seq_temperature` proposes, the base
            model weighs: [`~hf_seqtemp.generation.smc_proposals.AdapterProposal`]). Defaults to `"adapter"` when such an adapter is
            loaded, `"token"` otherwise.
        ess_threshold (`float`, *optional*, defaults to `0.5`): `"smc"` only: resample a prompt's particles when
            their effective sample size falls below this fraction of `num_particles` (0: never, i.e. importance
            sampling from the proposal).
        resampling (`str`, *optional*, defaults to `"systematic"`): `"smc"` only: `"systematic"` or `"multinomial"`.
        pimh_steps (`int`, *optional*, defaults to `0`): `"smc"` only: `K > 0` returns the answer of a particle
            independent Metropolis-Hastings chain over `K + 1` SMC runs drawn in one batch (exact p^(1/T) answers
            for any `num_particles`, its acceptance rate in `pimh_acceptance`); `0` returns one run's answer, biased
            at small `num_particles` ([`~hf_seqtemp.generation.pimh`]).
        defensive_mixture (`float`, *optional*, defaults to `0.0`): `"smc"` with the adapter proposal only: the
            token proposal's share in the adapter's at every step, which bounds the weights (0.5 made PIMH exact
            at alpha = 4 where a poor adapter alone failed: [`~hf_seqtemp.generation.smc.smc_sample`]).
        generator (`torch.Generator`, *optional*): the randomness of every strategy (`"adapter"` and plain sampling
            draw from the global RNG, seeded from it inside a forked RNG state).
        allow_active_adapters (`bool`, *optional*, defaults to `False`): `"mcmc"` / `"glauber"` on a model with an
            active PEFT adapter that hf_seqtemp does not know (not from `load_tempered`) raise, since the adapter
            may already be tempered; `True` tempers the adapted model as it is.
        engine (`str` or [`~hf_seqtemp.engine.EngineClient`], *optional*): `"smc"` and `"mcmc"` only: an engine
            server of the model's base weights (`hf-seqtemp serve MODEL_FOLDER`) that draws the particles or the MH
            rollouts (the same samplers, given the server; [`~hf_seqtemp.generation.engine_checks`]): the same
            target and output, SMC resampling at boundaries of `block_size` tokens (default 16). The server is
            checked against this model before its first use; logits processors, `alpha_ramp_tokens` and
            `defensive_mixture` are refused there.
        proposal_engine (`str` or [`~hf_seqtemp.engine.EngineClient`], *optional*): `"smc"` with the adapter
            proposal on an engine: the server that serves the adapter as a LoRA, when it is not `engine` (vLLM's
            CPU build cannot score on a server with LoRA enabled).
        engine_adapter (`str`, *optional*): the served name of the proposing adapter; defaults to its local name.
        seqtemp_streamer (*optional*): the call's `streamer`, handed over by hf_seqtemp's entry points
            (`model.generate` of a model from `load_tempered`, [`generate_tempered`], the Hub folder's
            `custom_generate`): it gets the prompt, then the tokens as `"adapter"` samples them or the whole answer
            of the other strategies, then `end()`.

    These options may also be set on the call's `GenerationConfig` (`GenerationConfig(seq_temperature=0.5,
    strategy="smc")`); a keyword wins. `output_scores` / `output_logits` have no meaning for the whole-answer
    strategies (an answer is not drawn token by token from one distribution) and are refused there.

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + new_tokens)`; with `return_dict_in_generate=True` the
        strategy's output ([`PowerSamplingOutput`] for `"mcmc"`, [`GlauberGenerateOutput`] for `"glauber"`,
        [`SMCOutput`] for `"smc"`, the
        usual `generate` output otherwise).

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.generation import seqtemp_generate
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(pad_token_id=0)
    >>> out = model.generate(torch.tensor([[1, 2]]), max_new_tokens=4, custom_generate=seqtemp_generate,
    ...                      seq_temperature=0.5, strategy="mcmc", mcmc_steps=2)
    >>> out.shape
    torch.Size([1, 6])
    ```
    """
    if not isinstance(generation_config, GenerationConfig):
        raise TypeError(
            "`seqtemp_generate` is a `custom_generate` callable for `generate`, which prepares its inputs: call "
            f"`{_RECIPE}` (any causal LM), or `hf_seqtemp.generate_tempered(model, input_ids, seq_temperature=0.5)`."
        )
    strategy = _check_strategy(strategy)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"`generator` must be a `torch.Generator`, got {type(generator).__name__} ({generator!r:.40}): pass "
            "`torch.Generator(device=model.device).manual_seed(42)`."
        )
    options = {"mcmc_steps": mcmc_steps, "block_size": block_size, "glauber_rounds": glauber_rounds}
    options.update(num_candidates=num_candidates, generator=generator, num_particles=num_particles)
    options.update(alpha_ramp_tokens=alpha_ramp_tokens, return_particles=return_particles)
    options.update(proposal=proposal, ess_threshold=ess_threshold, resampling=resampling, pimh_steps=pimh_steps)
    options.update(defensive_mixture=defensive_mixture)
    options.update(allow_active_adapters=allow_active_adapters)
    options.update(engine=engine, proposal_engine=proposal_engine, engine_adapter=engine_adapter)
    sampling_args = (model, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus, streamer)
    if seq_temperature is None:
        if strategy != "auto":
            raise ValueError(f"`strategy={strategy!r}` needs `seq_temperature`; pass e.g. `seq_temperature=0.5`.")
        given = [f"`{k}={options[k]!r}`" for k, v in OPTION_DEFAULTS.items() if options[k] != v]
        if given:
            raise ValueError(f"{', '.join(given)} need `seq_temperature` (without it this is plain sampling, which "
                             "reads none of them): pass e.g. `seq_temperature=0.5`, or drop them.")  # fmt: skip
        if generator is None:
            return GenerationMixin._sample(*sampling_args, **model_kwargs)
        with seeded_from(generator, model):
            return GenerationMixin._sample(*sampling_args, **model_kwargs)
    seq_temperature = check_temperature(seq_temperature, "seq_temperature")
    if (generation_config.num_beams or 1) > 1:
        raise ValueError(
            f"`num_beams={generation_config.num_beams}` cannot be combined with `seq_temperature`, which samples "
            "p^(1/T): drop `num_beams`; for several samples per prompt pass `do_sample=True, num_return_sequences=n`."
        )
    adapters = tempered_adapters(model)
    _check_not_merged(model, adapters)
    _check_family(model, adapters)
    streamer = streamer if streamer is not None else seqtemp_streamer
    call = GenerateCall(*sampling_args[:6], streamer, model_kwargs, seq_temperature, adapters, options)
    if strategy == "auto":
        strategy = "adapter" if adapters else "smc"
    refuse_unused_options(strategy, options)
    token_by_token = strategy == "adapter"
    if not token_by_token and (generation_config.output_scores or generation_config.output_logits):
        raise ValueError(
            f"`output_scores` / `output_logits` have no meaning for `strategy={strategy!r}`, which draws whole answers "
            "(not token by token from one distribution): drop them, score the answers with "
            "`hf_seqtemp.AutoregressiveScorer`, or use `strategy='adapter'`."
        )
    if streamer is not None:
        streamer.put(input_ids.cpu())  # what `generate` does before its decoding loop, which it did not do here
    out = STRATEGY_REGISTRY[strategy](call)
    if streamer is not None and not token_by_token:  # `_sample` streamed the adapter's tokens and ended
        sequences = out if isinstance(out, torch.Tensor) else out.sequences
        streamer.put(sequences[:, input_ids.shape[1] :].cpu())
        streamer.end()
    return out


_SMC = ("num_particles", "alpha_ramp_tokens", "return_particles", "proposal", "ess_threshold", "resampling",
        "pimh_steps", "defensive_mixture")  # fmt: skip
OPTION_DEFAULTS = {
    "mcmc_steps": 4, "block_size": None, "glauber_rounds": 2, "num_candidates": None, "num_particles": 16,
    "alpha_ramp_tokens": 0, "return_particles": False, "proposal": None, "ess_threshold": 0.5,
    "resampling": "systematic", "pimh_steps": 0, "defensive_mixture": 0.0, "proposal_engine": None,
    "engine_adapter": None,
}  # fmt: skip
"""The options of [`seqtemp_generate`] that only some strategies read, with their defaults (`engine` is not among them:
a strategy without an engine version refuses it itself, naming what to use instead)."""
USED_BY = {
    "adapter": set(),
    "mcmc": {"mcmc_steps", "block_size"},
    "glauber": {"glauber_rounds", "num_candidates"},
    "smc": {*_SMC, "proposal_engine", "engine_adapter"},
}
"""The options each strategy reads (`block_size`, `proposal_engine` and `engine_adapter` on SMC: with `engine=`)."""


def refuse_unused_options(strategy: str, options: dict) -> None:
    """Raises `ValueError` naming every option given (not at its default) that `strategy` does not read: an option
    silently ignored is a bug of the caller's that nothing would show."""
    used = set(USED_BY.get(strategy, OPTION_DEFAULTS))
    if strategy == "smc" and options.get("engine") is not None:
        used.add("block_size")  # the engine's SMC rounds
    if strategy == "smc" and options.get("engine") is None:
        used -= {"proposal_engine", "engine_adapter"}
    given = [name for name, default in OPTION_DEFAULTS.items() if name not in used and options.get(name) != default]
    if not given:
        return
    readers = {name: sorted(s for s, names in USED_BY.items() if name in names) for name in given}
    shown = ", ".join(f"`{name}={options[name]!r}` ({' / '.join(map(repr, readers[name])) or 'no strategy'})"
                      for name in given)  # fmt: skip
    if "block_size" in given and strategy == "smc":
        shown += "; on `'smc'` `block_size` sets the engine's rounds, so it needs `engine=`"
    raise ValueError(
        f"`strategy={strategy!r}` does not read {shown}: each would be ignored. Drop it, or use the strategy named "
        "beside it."
    )


def _check_not_merged(model, adapters: dict[str, Any]) -> None:
    """Refuses to route through adapters that are no longer in the model (merged with `merge_and_unload`, or
    unloaded): their weights, if merged, are the model's own now, and another temperature would be sampled from
    the merged model while named after the base."""
    if not adapters:
        return
    present = adapter_names_present(model)
    gone = sorted(name for name in adapters if name not in present)
    if gone:
        temperatures = sorted({float(adapters[name].target_temperature) for name in gone})
        raise ValueError(
            f"the sequence-temperature adapter(s) {gone} (T = {temperatures}) are no longer in this model: merged "
            "with `merge_and_unload()` or unloaded. A merged model *is* the tempered model: sample it with plain "
            "`generate` (no `seq_temperature`). For another temperature, load the adapter onto the base model again "
            "(`hf_seqtemp.load_tempered`)."
        )


def generate_tempered(
    model,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    seq_temperature: float | None = None,
    **kwargs,
):
    """One entry for every family: a [`DiffusionLM`] goes to [`diffusion_generate`] (IMH, default policy
    `"confidence"`), anything else to `model.generate(custom_generate=seqtemp_generate, ...)`.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> generate_tempered(tiny_causal_lm(pad_token_id=0), torch.tensor([[1, 2]]), seq_temperature=0.5,
    ...                   max_new_tokens=3).shape
    torch.Size([1, 5])
    ```
    """
    if isinstance(model, DiffusionLM):
        return diffusion_generate(model, input_ids, attention_mask, seq_temperature=seq_temperature, **kwargs)
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask
    kwargs = seqtemp_call_kwargs({**kwargs, "seq_temperature": seq_temperature})
    return model.generate(input_ids, custom_generate=seqtemp_generate, **kwargs)
