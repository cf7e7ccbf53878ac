# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., seq_temperature=T, engine=URL)`: what the engine backend needs before the one sampler of a route runs.

The `"smc"` and `"mcmc"` strategies ([`~hf_seqtemp.generation.strategies`]) call the same sampler on either backend
([`~hf_seqtemp.generation.smc.smc_sample`], [`~hf_seqtemp.generation.power_sampling.power_sample`]); with `engine=`
they give it the engine's client in place of the model, after what this module does once per server. The local
model, which `generate` was called on, is the judge: before the first draw on a server, the server's `log p` is
checked against the scorer on the local base model and its log-prob mode is measured
([`~hf_seqtemp.engine.probe_engine`]); an adapter proposal's `log q` is checked against the local adapter. The
target is the served `p` itself: logits processors (other than the token-level warpers the sequence temperature
replaces), the SMC exponent ramp and the defensive mixture cannot be applied by the engine and are refused by name.
"""

from __future__ import annotations

from ..engine.agreement import check_against_scorer, probe_engine
from ..engine.client import EngineClient
from ..engine.sampling import SeedStream
from .adapters import active_adapter
from .engine_proposal import prompts_of

TOLERANCE = 1e-3
"""Largest |engine − scorer| log-probability per token accepted by the first-use checks."""


_CLIENTS: dict[str, EngineClient] = {}


def as_client(engine, name: str = "engine") -> EngineClient:
    """An [`EngineClient`] from a client or a URL (one client per URL, so a server is checked once)."""
    if isinstance(engine, EngineClient):
        return engine
    if isinstance(engine, str):
        return _CLIENTS.setdefault(engine.rstrip("/").removesuffix("/v1"), EngineClient(engine))
    raise TypeError(f"`{name}` must be an engine server's URL or an `EngineClient`, got {type(engine).__name__}.")


def _refuse_what_the_engine_cannot_apply(call, strategy: str, processors) -> None:
    if len(processors):
        names = sorted({type(p).__name__ for p in processors})
        raise ValueError(
            f"`strategy={strategy!r}` on an engine targets the served model's own p, and the call has logits "
            f"processors {names} (from the call or the model's `generation_config`) that the engine cannot apply "
            "exactly: drop them, or sample without `engine=` (the transformers loop includes them in p)."
        )
    if call.options.get("alpha_ramp_tokens", 0):
        raise ValueError(
            "`alpha_ramp_tokens` is not available on an engine (a round draws a block at one token temperature): "
            "leave it 0, or sample without `engine=`."
        )
    if call.options.get("defensive_mixture", 0.0):
        raise ValueError(
            "`defensive_mixture` is not available on an engine (a round draws a block from one served model, not "
            "from a mixture token by token): leave it 0, or sample without `engine=`."
        )
    call.refuse_stopping_criteria(strategy)


def _check_once(client: EngineClient, model, prompts, eos) -> None:
    """The server's log p against the local base model, and its log-prob mode, once per (server, model)."""
    if id(model) in client.checked:
        return
    probe_engine(client, model, prompts[:4], eos, TOLERANCE)
    client.checked.add(id(model))


def _check_adapter_once(proposer: EngineClient, model, adapter: str, local_name: str | None, prompts, eos) -> None:
    """The served adapter's log q of its own samples against the local adapter (when the model has it)."""
    key = (id(model), adapter)
    if key in proposer.checked or local_name is None:
        return
    prompts = [list(p) for p in prompts[:4]]
    drawn = proposer.sample(prompts, 8, eos, SeedStream(0).take([1] * len(prompts)), 1, 1.0, adapter)
    sequences = [p + d[0].tokens for p, d in zip(prompts, drawn)]
    with active_adapter(model, local_name):
        check_against_scorer(
            f"the adapter {adapter!r} served at {proposer.base_url}",
            model,
            sequences,
            [len(p) for p in prompts],
            [d[0].logps for d in drawn],
            TOLERANCE,
        )
    proposer.checked.add(key)


def engine_for(call, strategy: str, processors) -> EngineClient:
    """The client of `call.options["engine"]`, after the refusals of what it cannot apply and the first-use check of
    its `log p` against the local base model."""
    _refuse_what_the_engine_cannot_apply(call, strategy, processors)
    client = as_client(call.options["engine"])
    eos, _ = call.eos_and_pad()
    prompts = prompts_of(call.input_ids, call.model_kwargs.get("attention_mask"))
    with call.on_base_model(strategy):
        _check_once(client, call.model, prompts, eos)
    return client


def engine_smc_options(call, client: EngineClient, proposal: str, local_adapter: str | None) -> dict:
    """SMC's engine-only options: the rounds' `block_size`, and with `proposal="adapter"` the served adapter's name
    and server, its `log q` checked once against the local adapter."""
    options = {"block_size": call.options.get("block_size") or None}
    if proposal == "adapter":
        adapter = call.options.get("engine_adapter") or local_adapter
        proposer = as_client(call.options.get("proposal_engine") or client, "proposal_engine")
        eos, _ = call.eos_and_pad()
        prompts = prompts_of(call.input_ids, call.model_kwargs.get("attention_mask"))
        _check_adapter_once(proposer, call.model, adapter, local_adapter, prompts, eos)
        options.update(adapter_name=adapter, proposal_client=proposer)
    return options


def refuse_on_engine(strategy: str) -> None:
    """The strategies with no engine version are refused by name when `engine=` is given."""
    raise ValueError(
        f"`strategy={strategy!r}` has no engine version: on an engine use `strategy='smc'` (SMC, token or adapter "
        "proposal) or `strategy='mcmc'` (MH power sampling), or drop `engine=` to sample with the transformers "
        "loop."
    )
