# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The lm-evaluation-harness model `seqtemp`: lm-eval's [`HFLM`] with generation routed through [`seqtemp_generate`]
and likelihoods scored under the route's distribution."""

from __future__ import annotations

import contextlib
import copy
import math
import zlib
from dataclasses import dataclass

import torch
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils_hf import get_dtype, stop_sequences_criteria
from transformers.utils import logging

from ..checks import check_temperature
from ..costs import ForwardCounter
from ..generation.adapters import active_adapter, tempered_adapters
from ..generation.routing import STRATEGIES, seqtemp_generate
from ..loading import load_tempered
from ..models.default import default_model_path, load_default_model
from .flags import check_batch_size, check_device, refuse_likelihoods_ahead

logger = logging.get_logger(__name__)

ROUTE_OPTIONS = (
    "mcmc_steps", "block_size", "glauber_rounds", "num_candidates", "num_particles", "alpha_ramp_tokens", "proposal",
    "ess_threshold", "resampling", "pimh_steps", "defensive_mixture", "allow_active_adapters",
)  # fmt: skip
"""`seqtemp_generate`'s options a `--model_args` (or a request's `--gen_kwargs`) may set, passed on as they are."""

TOKEN_SETTINGS = ("do_sample", "temperature", "top_k", "top_p", "min_p", "repetition_penalty")
"""A request's decoding settings that a route with its own distribution (token or sequence temperature) replaces."""

WHOLE_ANSWER = ("smc", "mcmc", "glauber", "imh")
"""Strategies that draw whole answers (ending at EOS or after `max_gen_toks`), with no density to score."""

LENGTH_NAMES = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens", "max_completion_length")
"""The names of an answer's length a request may use: lm-eval's, transformers', the OpenAI API's and TRL's
(`max_completion_length`); all read as lm-eval's `max_gen_toks`."""

REFUSED_GEN_KWARGS = {
    **dict.fromkeys(
        ("seq_temperature", "strategy", "token_temperature", "adapter"),
        "it chooses the route, which is the model's: pass it in `--model_args` (one route per run, so that the "
        "results' cost and route describe every answer)",
    ),
    **dict.fromkeys(
        ("num_generations", "num_return_sequences"),
        "the answers drawn per question are the task's `repeats` (each is scored by the task's metrics); set "
        "`repeats` in the task's YAML",
    ),
    "generator": "each batch draws from `prompt_seed(seed, its prompts)`: set lm-eval's `--seed`, or `seed` in `--model_args`",
}
"""Generation settings a request (a task's `generation_kwargs`, `--gen_kwargs`) may not set, with why and where they
belong."""


def map_gen_kwargs(generation_kwargs: dict) -> dict:
    """A request's generation settings in lm-eval's names: TRL's `max_completion_length`, transformers'
    `max_new_tokens` and the OpenAI API's `max_tokens` / `max_completion_tokens` become `max_gen_toks`, and replace a
    task's own `max_gen_toks` (`--gen_kwargs` is merged into the task's settings: a name tasks do not use is the
    user's); two of those names that disagree, and the [`REFUSED_GEN_KWARGS`], are refused by name.

    Example:
    ```python
    >>> map_gen_kwargs({"max_completion_length": 32, "do_sample": True, "until": []})
    {'do_sample': True, 'until': [], 'max_gen_toks': 32}
    ```
    """
    kwargs = dict(generation_kwargs)
    for name, why in REFUSED_GEN_KWARGS.items():
        if name in kwargs:
            raise ValueError(f"`{name}` cannot be a request's generation setting (got {kwargs[name]!r}): {why}.")
    lengths = {name: kwargs.pop(name) for name in LENGTH_NAMES if kwargs.get(name) is not None}
    task_length = lengths.pop("max_gen_toks", None)
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"the request sets the answer's length twice, differently: {lengths}. Keep one of them "
            "(`max_completion_length` in TRL's names, `max_new_tokens` in transformers', `max_gen_toks` in lm-eval's)."
        )
    if lengths:
        name, value = next(iter(lengths.items()))
        if task_length is not None and task_length != value:
            logger.warning_once(f"seqtemp: `{name}={value}` replaces the task's `max_gen_toks={task_length}`.")
        kwargs["max_gen_toks"] = value
    elif task_length is not None:
        kwargs["max_gen_toks"] = task_length
    return kwargs


def prompt_seed(seed: int, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> int:
    """The seed of one batch of prompts: `seed` and the prompts' token ids (padding left out), through CRC-32.

    An answer thus depends on its batch's prompts and `seed`, not on the order lm-eval schedules its requests in;
    with `batch_size=1`, on its own prompt only.

    Example:
    ```python
    >>> prompt_seed(0, torch.tensor([[5, 1, 2]]), torch.tensor([[0, 1, 1]])) == prompt_seed(0, torch.tensor([[1, 2]]))
    True
    ```
    """
    mask = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
    rows = ";".join(",".join(map(str, row[keep].tolist())) for row, keep in zip(input_ids.cpu(), mask.cpu()))
    return zlib.crc32(f"{seed}|{rows}".encode())


@dataclass(frozen=True)
class Route:
    """The distribution a `seqtemp` model samples and scores: `strategy` is `"p"` (the model as loaded), `"token"`
    (token temperature `token_temperature`), `"adapter"` (the adapter `adapter_name` trained for `seq_temperature`;
    `None`: `p` itself at `seq_temperature=1`) or a whole-answer strategy of [`WHOLE_ANSWER`]."""

    strategy: str
    seq_temperature: float | None = None
    token_temperature: float | None = None
    adapter_name: str | None = None

    @property
    def has_density(self) -> bool:
        return self.strategy not in WHOLE_ANSWER

    def describe(self, options: dict) -> str:
        if self.strategy == "p":
            return "p (the model as loaded)"
        if self.strategy == "token":
            return f"token temperature {self.token_temperature:g}"
        if self.strategy == "adapter":
            return f"the adapter {self.adapter_name!r} (sequence temperature {self.seq_temperature:g})"
        pimh = options.get("pimh_steps") or 0
        extra = f", PIMH {pimh} step{'s' * (pimh != 1)}" if self.strategy == "smc" and pimh else ""
        return f"strategy={self.strategy!r}{extra} at sequence temperature {self.seq_temperature:g}"


def resolve_route(strategy: str | None, seq_temperature, token_temperature, adapters: dict) -> Route:
    """The [`Route`] of a `seqtemp` model's arguments, with `adapters` (`{name: SequenceTemperatureConfig}`) loaded:
    `strategy="auto"` is the adapter with one, SMC without (as in [`seqtemp_generate`]); no `seq_temperature` with an
    adapter is the adapter's own temperature; neither temperature is `p`."""
    strategy = "auto" if strategy is None else strategy
    if strategy not in (*STRATEGIES, "p", "token"):
        raise ValueError(f"`strategy` must be one of {[*STRATEGIES, 'p', 'token']}, got {strategy!r}.")
    if token_temperature is not None or strategy == "token":
        if strategy not in ("auto", "token") or seq_temperature is not None or adapters:
            raise ValueError(
                "`token_temperature` is its own route (p at a token temperature): drop `seq_temperature`, `adapter` "
                f"and `strategy={strategy!r}`, or drop `token_temperature`."
            )
        return Route("token", token_temperature=check_temperature(token_temperature, "token_temperature"))
    if seq_temperature is None and adapters:
        seq_temperature = next(iter(adapters.values())).target_temperature
    if seq_temperature is None:
        if strategy not in ("auto", "p"):
            raise ValueError(f"`strategy={strategy!r}` needs `seq_temperature`; pass e.g. `seq_temperature=0.25`.")
        return Route("p")
    seq_temperature = check_temperature(seq_temperature, "seq_temperature")
    strategy = ("adapter" if adapters else "smc") if strategy == "auto" else strategy
    if strategy == "p":
        raise ValueError("`strategy='p'` samples the model as loaded: drop `seq_temperature`.")
    if strategy != "adapter":
        return Route(strategy, seq_temperature)
    names = [n for n, c in adapters.items() if math.isclose(c.target_temperature, seq_temperature, rel_tol=1e-6)]
    if not names and not math.isclose(seq_temperature, 1.0, rel_tol=1e-6):
        available = sorted(float(c.target_temperature) for c in adapters.values())
        raise ValueError(
            f"`strategy='adapter'` at `seq_temperature={seq_temperature}` needs an adapter trained for it; loaded: "
            f"{available}. Pass `adapter=FOLDER` of one, or a training-free strategy (`strategy=smc`)."
        )
    return Route("adapter", seq_temperature, adapter_name=names[0] if names else None)


@register_model("seqtemp")
class SeqTempLM(HFLM):
    """lm-eval's [`HFLM`] sampling and scoring a sequence-temperature route.

    Generation requests (`generate_until`) go through `model.generate(..., custom_generate=seqtemp_generate)` with
    the route's arguments; likelihood requests (`loglikelihood`, `loglikelihood_rolling`) are scored under the route's
    distribution where it has a density: p, p at a token temperature, or the adapter q; the whole-answer strategies
    (`smc` with or without PIMH, `mcmc`, `glauber`) have none and refuse them by name. The model calls and
    token-forwards of each kind of request land in the results under `config.seqtemp.cost`
    ([`~hf_seqtemp.costs.ForwardCounter`]). A request's settings (`--gen_kwargs`) take TRL's and transformers'
    length names and may not change the route ([`map_gen_kwargs`]).

    Args:
        pretrained (`str`, *optional*): the base model p (a Hub id or folder); required unless `default_model=True`.
        adapter (`str`, *optional*): a tempered adapter folder or Hub id, loaded onto the base with [`load_tempered`].
        default_model (`bool`, *optional*, defaults to `False`): the embedded SmolLM2-135M-Instruct
            ([`load_default_model`], offline) as the base.
        strategy (`str`, *optional*, defaults to `"auto"`): a strategy of [`seqtemp_generate`], `"p"` or `"token"`.
        seq_temperature (`float`, *optional*): the sequence temperature T; with `adapter`, defaults to its own.
        token_temperature (`float`, *optional*): the route "p at token temperature τ" (sampling and scoring).
        seed (`int`, *optional*): each batch samples from [`prompt_seed`]`(seed, its prompts)`; by default `seed` is
            lm-eval's torch seed (`--seed`, whose third value it is; `simple_evaluate(torch_random_seed=...)`), read
            when the requests run. The results record the seed used and where it came from.
        **kwargs: `seqtemp_generate`'s options ([`ROUTE_OPTIONS`]: `num_particles`, `pimh_steps`, `mcmc_steps`, ...),
            then [`HFLM`]'s own (`batch_size`, `device`, `dtype`, `max_length`, ...).
    """

    def __init__(
        self,
        pretrained: str | None = None,
        adapter: str | None = None,
        default_model: bool = False,
        strategy: str | None = "auto",
        seq_temperature: float | None = None,
        token_temperature: float | None = None,
        seed: int | None = None,
        **kwargs,
    ) -> None:
        if default_model == (pretrained is not None):
            raise ValueError("pass exactly one of `pretrained=BASE` and `default_model=True`.")
        if adapter is not None and kwargs.get("peft"):
            raise ValueError("`adapter` and `peft` both load an adapter: pass `adapter` (a tempered folder) alone.")
        check_device(kwargs.get("device"))
        self._adapter, self._default_model = adapter, bool(default_model)
        self.route_options = {name: kwargs.pop(name) for name in ROUTE_OPTIONS if name in kwargs}
        self._seed = None if seed is None else int(seed)
        self._seeds_used: list[int] = []
        super().__init__(str(default_model_path()) if default_model else pretrained, **kwargs)
        self.route = resolve_route(strategy, seq_temperature, token_temperature, tempered_adapters(self._model))
        check_batch_size(self.batch_size, self.route.has_density, self.route.describe(self.route_options))
        self.cost = ForwardCounter(self._model)
        seeded = f"`seed={self._seed}`" if self._seed is not None else f"lm-eval's torch seed ({self.seed} now)"
        logger.warning(
            f"seqtemp: sampling and scoring {self.route.describe(self.route_options)}; draws seeded by {seeded}"
        )

    def _create_model(self, pretrained: str, dtype="auto", **kwargs) -> None:
        """HFLM's loading, or the embedded default model; then the tempered adapter with [`load_tempered`]."""
        if self._default_model:
            dtype = torch.float32 if dtype in (None, "auto") else get_dtype(dtype)
            self._model, _ = load_default_model(dtype=dtype)
        else:
            super()._create_model(pretrained, dtype=dtype, **kwargs)
        if self._adapter is not None:
            self._model = load_tempered(self._adapter, base_model=self._model)

    # Likelihoods: under the route's distribution

    def _density(self):
        if not self.route.has_density:
            raise ValueError(
                f"the `seqtemp` route {self.route.describe(self.route_options)} draws whole answers and has no "
                "density: it cannot score loglikelihood requests. Score with `strategy=adapter` (the adapter q), "
                "`token_temperature=...` or no `seq_temperature` (p), and sample with this route."
            )
        adapters = tempered_adapters(self._model)
        if self.route.strategy == "adapter" or adapters:
            return active_adapter(self._model, self.route.adapter_name)
        return contextlib.nullcontext()

    def _model_call(self, inps, attn_mask=None, labels=None):
        with self._density():
            logits = super()._model_call(inps, attn_mask, labels)
        return logits / self.route.token_temperature if self.route.strategy == "token" else logits

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        self._density()
        with self.cost.counting("loglikelihood", len(requests)):
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        self._density()
        with self.cost.counting("loglikelihood_rolling", len(requests)):
            return super().loglikelihood_rolling(requests, disable_tqdm=disable_tqdm)

    # Generation: through `seqtemp_generate`

    def generate_until(self, requests, disable_tqdm: bool = False):
        if not self.route.has_density:
            refuse_likelihoods_ahead(self.route.describe(self.route_options))
        # TRL's and transformers' names in lm-eval's, on copies: a request stays as lm-eval made it, which its
        # `--use_cache` stores each answer under
        mapped = []
        for request in requests:
            context, generation_kwargs = request.args
            mapped.append(copy.copy(request))
            mapped[-1].arguments = (context, map_gen_kwargs(generation_kwargs))
        self._seeds_used.append(self.seed)
        with self.cost.counting("generate_until", len(requests)):
            return super().generate_until(mapped, disable_tqdm=disable_tqdm)

    @property
    def seed(self) -> int:
        """The seed of the draws: the model argument `seed=`, else lm-eval's torch seed (`--seed`), which lm-eval
        sets before it builds the model and runs the requests."""
        return self._seed if self._seed is not None else torch.initial_seed()

    def _detect_batch_size(self, requests=None, pos: int = 0):
        """HFLM's `batch_size=auto` probe, left out of the recorded cost (it answers no request)."""
        with self.cost.paused():
            return super()._detect_batch_size(requests, pos)

    def _route_kwargs(self, generation_kwargs: dict) -> dict:
        """The `generate` keywords of one batch: the request's, the route's distribution in place of its token
        settings, and the route's options (a request's `--gen_kwargs` of the same name win)."""
        kwargs = {**self.route_options, **generation_kwargs}
        if self.route.strategy == "p":
            if kwargs.setdefault("temperature", 0.0) == 0.0 and kwargs.get("do_sample") is None:
                kwargs["do_sample"] = False
            if kwargs.get("do_sample") is False:
                kwargs.pop("temperature")
            return kwargs
        dropped = sorted(name for name in TOKEN_SETTINGS if kwargs.pop(name, None) is not None)
        if dropped:
            logger.warning_once(f"seqtemp: the route's distribution replaces the requests' {dropped}.")
        kwargs.update(do_sample=True, top_k=0, top_p=1.0)
        if self.route.strategy == "token":
            return {**kwargs, "temperature": self.route.token_temperature}
        return {
            **kwargs,
            "temperature": 1.0,
            "strategy": self.route.strategy,
            "seq_temperature": self.route.seq_temperature,
        }

    def _model_generate(self, context, max_length: int, stop: list[str], **generation_kwargs) -> torch.Tensor:
        kwargs = self._route_kwargs(generation_kwargs)
        if self.route.strategy not in WHOLE_ANSWER:  # token by token: the stop strings end it too
            kwargs["stopping_criteria"] = stop_sequences_criteria(
                self.tokenizer, stop, context.shape[1], context.shape[0]
            )
        seed = prompt_seed(self.seed, context, generation_kwargs.get("attention_mask"))
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(seed)
            generator = torch.Generator(device=self.device).manual_seed(seed)
            return self.model.generate(
                input_ids=context,
                max_length=max_length,
                pad_token_id=self.tokenizer.pad_token_id,
                custom_generate=seqtemp_generate,
                generator=generator,
                **kwargs,
            )

    def get_model_info(self) -> dict:
        """HFLM's model information, and the route with its cost and the seed its draws used (`config.seqtemp` in the
        results)."""
        seeds = sorted(set(self._seeds_used)) or [self.seed]
        route = {
            "route": self.route.describe(self.route_options),
            "strategy": self.route.strategy,
            "seq_temperature": self.route.seq_temperature,
            "token_temperature": self.route.token_temperature,
            "adapter": self._adapter,
            "seed": seeds[0] if len(seeds) == 1 else seeds,
            "seed_from": "the model argument `seed=`" if self._seed is not None else "lm-eval's torch seed (`--seed`)",
            "options": dict(self.route_options),
            "cost": self.cost.summary(),
        }
        return {**super().get_model_info(), "seqtemp": route}
