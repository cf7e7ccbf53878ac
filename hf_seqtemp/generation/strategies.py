# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The sampling strategies of `generate(..., seq_temperature=T)`, selected by name from a registry.

Each strategy is a function of one prepared [`GenerateCall`] that returns what `generate` returns; [`seqtemp_generate`]
resolves `strategy="auto"`, looks the name up in [`STRATEGY_REGISTRY`] and calls it, with no `if` chain over names.

Logits processors (rule for every strategy): the token-level warpers
([`~hf_seqtemp.generation.processed.TOKEN_WARPERS`]) are replaced by the sequence temperature and dropped with a
warning naming them; every other processor of the call is kept. `"adapter"` applies them while sampling the
adapter; the training-free strategies (`"mcmc"`, `"glauber"`, and any new one) include them in their *target*: the
base distribution is the processed `p̃(x_t | x_<t) = softmax(processors(x_<t, logits_t))` evaluated on each
prefix, the target `∝ Π_t p̃^(1/T)`, used alike in proposals and acceptance ratios
([`~hf_seqtemp.generation.processed`]); a processor that cannot be included (a state across steps, a batch layout
of its own) is refused with a `ValueError` naming it.
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
from transformers.generation.logits_process import LogitsProcessorList, TopKLogitsWarper
from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria
from transformers.utils import logging

from ..checks import check_int
from .adapters import active_adapter, active_peft_adapters
from .answers import pad_after_answer, resolve_eos_and_pad
from .engine_checks import engine_for, engine_smc_options, refuse_on_engine
from .glauber import GlauberGenerateOutput, ancestral_draft, check_site_memory, glauber_refine
from .power_sampling import power_sample
from .processed import TOKEN_WARPERS, processed_conditionals
from .smc import smc_sample

logger = logging.get_logger(__name__)


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
        eos = [] if eos is None else torch.as_tensor(eos, device="cpu").flatten().tolist()
        pad = getattr(config, "_pad_token_tensor", None)
        pad = config.pad_token_id if pad is None else pad
        return eos, None if pad is None else int(torch.as_tensor(pad, device="cpu").flatten()[0])

    def sampler_kwargs(self) -> dict[str, Any]:
        """What every training-free sampler takes from the call, whichever backend draws (the transformers loop or
        an engine): the answer length, T, the generator, the return format, the EOS ids and the pad id."""
        eos, pad = self.eos_and_pad()
        return {
            "max_new_tokens": self.max_new_tokens, "seq_temperature": self.seq_temperature,
            "generator": self.options["generator"], "return_dict_in_generate": self.return_dict,
            "eos_token_id": eos, "pad_token_id": pad,
        }  # fmt: skip

    def smc_kwargs(self) -> dict[str, Any]:
        """[`sampler_kwargs`] and SMC's own options, with their defaults, on either backend."""
        options = self.options
        return {
            **self.sampler_kwargs(), "num_particles": options.get("num_particles", 16),
            "ess_threshold": options.get("ess_threshold", 0.5), "resampling": options.get("resampling", "systematic"),
            "return_particles": options.get("return_particles", False), "pimh_steps": options.get("pimh_steps", 0),
        }  # fmt: skip

    def target_processors(self) -> LogitsProcessorList:
        """The call's logits processors that shape the target: all but the token-level warpers (temperature, top-k,
        top-p, min-p, top-h, typical, epsilon, eta), which the sequence temperature replaces; a warning names the
        warpers dropped. The training-free strategies include these processors in their target."""
        processors = list(self.logits_processor or [])
        dropped = sorted(
            {type(p).__name__ for p in processors if isinstance(p, TOKEN_WARPERS) and not self._default(p)}
        )
        if dropped:
            logger.warning_once(
                f"`seq_temperature` replaces token-level sampling: {', '.join(dropped)} (from the `generate` call or "
                "the model's `generation_config`) are not applied. Other logits processors shape the target."
            )
        return LogitsProcessorList([p for p in processors if not isinstance(p, TOKEN_WARPERS)])

    def _default(self, processor) -> bool:
        """Whether `processor` is only transformers' global default (`top_k=50`, which `generate` fills in when
        neither the call nor the model's `generation_config` sets `top_k`): dropped without a warning, since nobody
        asked for it."""
        model_top_k = getattr(getattr(self.model, "generation_config", None), "top_k", None)
        return isinstance(processor, TopKLogitsWarper) and processor.top_k == 50 and model_top_k is None

    def refuse_stopping_criteria(self, strategy: str) -> None:
        """The training-free strategies end an answer at EOS or after `max_new_tokens`, nowhere else: a stopping
        criterion of the call that could end it elsewhere (a custom `StoppingCriteria`, `stop_strings`, `max_time`)
        is refused by name rather than ignored."""
        allowed = (MaxLengthCriteria, EosTokenCriteria)
        extra = sorted({type(c).__name__ for c in self.stopping_criteria or [] if not isinstance(c, allowed)})
        if extra:
            raise ValueError(
                f"`strategy={strategy!r}` samples whole answers that end at EOS or after `max_new_tokens`, so it "
                f"cannot honour the call's stopping criteria {extra} (a custom `StoppingCriteria`, `stop_strings` or "
                "`max_time`, from the call or the model's `generation_config`): remove them and bound answers with "
                "`max_new_tokens` and `eos_token_id`, or use `strategy='adapter'`, which samples token by token."
            )

    def on_base_model(self, strategy: str):
        """Every adapter off, so that `p` is the base model (training-free strategies temper `p`): a model with
        sequence-temperature adapters has them all switched off. A model whose active PEFT adapter hf_seqtemp does
        not know (loaded with `PeftModel.from_pretrained`, or by transformers from an adapter folder) is refused
        unless `allow_active_adapters=True`: tempering a tempered adapter again would target q^(1/T), not p^(1/T).
        """
        if self.adapters:
            return active_adapter(self.model, None)
        unknown = active_peft_adapters(self.model)
        if unknown and not self.options.get("allow_active_adapters"):
            raise ValueError(
                f"`strategy={strategy!r}` tempers the model it is given, and this one has active PEFT adapter(s) "
                f"{unknown} that hf_seqtemp does not know: if one is a sequence-tempered adapter (e.g. the adapter "
                f"of the repository whose `custom_generate` this is), p^(1/T) would be tempered twice. Load the "
                "adapter with `hf_seqtemp.load_tempered` (training-free strategies then switch it off and "
                "`strategy='adapter'` samples it), sample the base inside `with model.disable_adapter():`, or pass "
                "`allow_active_adapters=True` to temper the adapted model as it is (e.g. an SFT adapter)."
            )
        return contextlib.nullcontext()


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
    """`_sample` at token temperature 1 with every token-level warper removed (it would distort `p^(1/T)`); with a
    `generator`, the draws come from it (transformers' loop draws from the global RNG: it is seeded from the
    generator inside a forked RNG state, so the same generator state gives the same completions)."""
    generator = call.options.get("generator")
    if generator is None:
        return _plain_sampling(call)
    with seeded_from(generator, call.model):
        return _plain_sampling(call)


@contextlib.contextmanager
def seeded_from(generator: torch.Generator, model):
    """The global RNG (the CPU's and the model's GPU's) seeded from `generator`, restored afterwards."""
    seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device))
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield


def _plain_sampling(call: GenerateCall):
    config = copy.deepcopy(call.generation_config)
    config.do_sample, config.top_k, config.top_p, config.temperature = True, 0, 1.0, 1.0
    processors = call.target_processors()
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
    if call.options.get("engine") is not None:
        refuse_on_engine("adapter")
    if not call.adapters:
        raise ValueError(
            "`strategy='adapter'` needs a model with sequence-temperature adapters (load one with `load_tempered`); "
            "without adapters use `strategy='mcmc'`."
        )
    with active_adapter(call.model, _matching_adapter(call.adapters, call.seq_temperature)):
        return plain_sampling(call)


def _mcmc_strategy(call: GenerateCall):
    """Training-free power sampling ([`power_sample`]) of the base model, the call's processors included in the
    target (`p̃(answer)^(1/T)`, see [`~hf_seqtemp.generation.processed`]); with `engine=`, the same sampler on the
    engine, once its `log p` is checked ([`~hf_seqtemp.generation.engine_checks`])."""
    processors = call.target_processors()
    backend = call.model
    if call.options.get("engine") is not None:
        backend = engine_for(call, "mcmc", processors)
    call.refuse_stopping_criteria("mcmc")
    with call.on_base_model("mcmc"):
        return power_sample(
            backend, call.input_ids, call.model_kwargs.get("attention_mask"), **call.sampler_kwargs(),
            mcmc_steps=call.options["mcmc_steps"], block_size=call.options["block_size"], logits_processor=processors,
        )  # fmt: skip


def _smc_proposal(call: GenerateCall) -> tuple[str, str | None]:
    """The SMC proposal and its adapter: the loaded adapter trained for `seq_temperature` when `proposal` is
    `"adapter"`, or by default when there is one; else token temperature."""
    proposal = call.options.get("proposal")
    if proposal not in (None, "token", "adapter"):
        raise ValueError(
            f"`proposal` must be 'token' or 'adapter' (or None: 'adapter' when one is loaded), got {proposal!r}."
        )
    if proposal == "token":
        return "token", None
    matching = [
        n for n, c in call.adapters.items() if math.isclose(c.target_temperature, call.seq_temperature, rel_tol=1e-6)
    ]
    if proposal is None:
        return ("adapter", matching[0]) if matching else ("token", None)
    if not call.adapters:
        raise ValueError(
            "`proposal='adapter'` needs a sequence-temperature adapter trained for `seq_temperature` (load one with "
            "`hf_seqtemp.load_tempered`); without one use `proposal='token'`."
        )
    name = _matching_adapter(call.adapters, call.seq_temperature)
    if name is None:
        raise ValueError(
            "`proposal='adapter'` at `seq_temperature=1`: the target is the base model itself; sample it."
        )
    return "adapter", name


def _smc_strategy(call: GenerateCall):
    """Power-SMC ([`smc_sample`]) of the base model, proposing from token temperature or from the loaded adapter
    trained for `seq_temperature`; the user's processors (token-level warpers removed) are part of `p`, in the
    proposal and in the weights; with `engine=`, the same sampler on the engine, once its `log p` (and the served
    adapter's `log q`) is checked ([`~hf_seqtemp.generation.engine_checks`])."""
    proposal, name = _smc_proposal(call)
    processors = call.target_processors()
    if call.options.get("engine") is not None:
        backend = engine_for(call, "smc", processors)
        options = engine_smc_options(call, backend, proposal, name)
    else:
        backend = call.model
        options = {
            "alpha_ramp_tokens": call.options.get("alpha_ramp_tokens", 0), "logits_processor": processors,
            "adapter_name": name, "defensive_mixture": call.options.get("defensive_mixture", 0.0),
        }  # fmt: skip
    call.refuse_stopping_criteria("smc")
    # the adapter proposal switches adapters itself (q on, p off) and restores them
    with call.on_base_model("smc") if proposal == "token" else contextlib.nullcontext():
        return smc_sample(
            backend, call.input_ids, call.model_kwargs.get("attention_mask"), **call.smc_kwargs(), proposal=proposal,
            **options,
        )  # fmt: skip


def _check_glauber(call: GenerateCall) -> None:
    check_int(call.options["glauber_rounds"], "glauber_rounds", 0, fix="0 returns the draft.")
    if call.max_new_tokens < 1:
        raise ValueError(f"`max_new_tokens` must be >= 1 for `strategy='glauber'`, got {call.max_new_tokens}.")
    check_int(call.options["num_candidates"], "num_candidates", allow_none=True, fix="None scores all |V| tokens.")
    batch, prompt_length = call.input_ids.shape
    check_site_memory(call.model, batch, prompt_length + call.max_new_tokens, call.options["num_candidates"])


def _glauber_strategy(call: GenerateCall):
    """Ancestral draft of `max_new_tokens` tokens of the base model, then `glauber_rounds` Glauber sweeps targeting
    `p^(1/T)` over answers ([`glauber_refine`]); with the call's processors, `p̃` in both (see
    [`~hf_seqtemp.generation.processed`])."""
    if call.options.get("engine") is not None:
        refuse_on_engine("glauber")
    _check_glauber(call)
    call.refuse_stopping_criteria("glauber")
    processors = call.target_processors()
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
    with call.on_base_model("glauber"):
        draft = ancestral_draft(call.model, ids, attn, cmask, generator, processed_conditionals(processors))
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
            logits_processor=processors,
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
"""`strategy` name → the function that samples a prepared call (`"auto"` resolves to `"adapter"` or `"smc"`)."""

STRATEGIES = ("auto", *STRATEGY_REGISTRY)
