# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The engine tests' servers: a tiny random Llama saved to a folder and served by vLLM, once per test run.

Two servers of the same weights start together (about 30-60 s on two cores): the *base* server samples p and
scores, and the *proposal* server serves a random LoRA adapter by name (vLLM's CPU build crashes its engine on
prompt log-probabilities when LoRA is enabled, so a LoRA server does not score). Both run from `.venv-vllm`
(`make venv-vllm`) under the package's watchdog: the session's finaliser stops each by its process group, and a
pytest that dies (even by SIGKILL) has its servers stopped by the watchdog.

Without `.venv-vllm` the engine tests are skipped with the reason, except in CI (`CI` set), where they fail: a CI
run must not pass without them.
"""

from __future__ import annotations

import os
import types

import pytest
import torch
from engine_models import engine_llama, word_tokenizer  # the engine tests import them from here

from hf_seqtemp.engine import EngineServer, EngineSettings, engine_python

V, EOS, T = 4, 3, 0.5
NEW = 3
PROMPTS = ([0, 1], [2, 1, 0], [0, 2])  # three prompts of two lengths (the engine takes each as it is)
START_TIMEOUT = 3600.0  # seconds in all: a busy machine (load 10-30) starts two servers slowly, but they work
STALL_TIMEOUT = 300.0  # seconds without a log line or CPU time: a hung start fails here, whatever the load
REQUEST_TIMEOUT = 300.0


def lora_of(model, seed: int = 2, scale: float = 0.3):
    """A random LoRA (rank 8, every projection vLLM serves, and the LM head: vLLM #51594 reports an `lm_head` delta
    dropped from `prompt_logprobs`) on `model`: a poor proposal the weights must correct."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=8,
        lora_alpha=8,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"],
        init_lora_weights=False,
    )
    torch.manual_seed(seed)
    peft = get_peft_model(model, config).eval()
    with torch.no_grad():
        for name, parameter in peft.named_parameters():
            if "lora_B" in name:
                parameter.mul_(scale)
    return peft


def _engine_or_skip():
    try:
        return engine_python()
    except FileNotFoundError as error:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the engine tests, and the engine's venv is missing: {error}", pytrace=False)
        pytest.skip(f"the engine tests need vLLM's venv (not in CI, so skipped): {error}")


@pytest.fixture(scope="session")
def engine(tmp_path_factory):
    """The served tiny model: `.base` / `.proposer` clients, the local `.model` and `.peft` of the same weights."""
    yield from _served(tmp_path_factory, V)


@pytest.fixture(scope="module")
def engine8(tmp_path_factory):
    """As `engine`, for the |V| = 8 model (EOS 7): for the slow tests with the power to see one SMC run's bias."""
    yield from _served(tmp_path_factory, 8)


def served_weights(vocab_size: int = V):
    """The served toy's weights, local: the model and, on a copy of it, the random LoRA the proposal server serves."""
    init = 0.3 if vocab_size == V else 0.1
    return engine_llama(vocab_size, init), lora_of(engine_llama(vocab_size, init))


@pytest.fixture(scope="session", params=["transformers", "engine"])
def backend(request):
    """One sampler, either backend: the exactness tests take this instead of `engine` and run once per backend.

    `.model` / `.peft` are the local weights every oracle scores with; `.smc(...)` and `.power(...)` call
    `smc_sample` / `power_sample` on the local model (`proposal="adapter"`: on the PEFT model, its adapter
    proposing) or on the base server's client (the adapter served by name on the proposal server). `block` is the
    engine's tokens per round; the transformers backend advances one token per step whatever it is.
    """
    if request.param == "engine":
        engine = request.getfixturevalue("engine")
        return Backend("engine", engine.model, engine.peft, engine)
    return Backend("transformers", *served_weights())


class Backend:
    def __init__(self, name, model, peft, engine=None):
        self.name, self.model, self.peft, self.engine = name, model, peft, engine

    def smc(self, input_ids, attention_mask, proposal="token", block=None, **options):
        from hf_seqtemp.generation.smc import smc_sample

        if self.engine is None:
            sampler = self.peft if proposal == "adapter" else self.model
            adapter = {"proposal": "adapter", "adapter_name": "default"} if proposal == "adapter" else {}
            return smc_sample(sampler, input_ids, attention_mask, **adapter, **options)
        if proposal == "adapter":
            options.update(proposal="adapter", adapter_name="lora", proposal_client=self.engine.proposer)
        return smc_sample(self.engine.base, input_ids, attention_mask, block_size=block, **options)

    def power(self, input_ids, attention_mask, **options):
        from hf_seqtemp.generation.power_sampling import power_sample

        sampler = self.model if self.engine is None else self.engine.base
        return power_sample(sampler, input_ids, attention_mask, **options)


def _served(tmp_path_factory, vocab_size: int):
    python = _engine_or_skip()
    folder = tmp_path_factory.mktemp("engine") / "tiny"
    model, peft = served_weights(vocab_size)
    model.save_pretrained(folder)
    if vocab_size == V:
        word_tokenizer().save_pretrained(folder)  # for the command line; the servers take token ids only
    peft.save_pretrained(folder.parent / "lora")
    common = {"model": str(folder), "max_model_len": 64, "skip_tokenizer_init": True, "threads": 1}
    common.update(kv_cache_memory_bytes=1 << 28, served_model_name="tiny")
    logs = folder.parent
    base = EngineServer(EngineSettings(**common, log_file=str(logs / "base.log")), python=python)
    lora = EngineSettings(**common, adapters={"lora": str(folder.parent / "lora")}, log_file=str(logs / "lora.log"))
    proposer = EngineServer(lora, python=python)
    try:
        base.launch()
        proposer.launch()
        base.wait_until_up(START_TIMEOUT, stall_timeout=STALL_TIMEOUT)
        proposer.wait_until_up(START_TIMEOUT, stall_timeout=STALL_TIMEOUT)
        yield types.SimpleNamespace(
            base=base.client(REQUEST_TIMEOUT),
            proposer=proposer.client(REQUEST_TIMEOUT),
            servers=(base, proposer),
            folder=folder,
            model=model,
            peft=peft,
        )
    finally:
        base.stop()
        proposer.stop()


def pytest_collection_modifyitems(config, items):
    """Every engine test on one worker under `pytest -n 2 --dist loadgroup`: they share the two servers, which
    each worker would otherwise start for itself."""
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.xdist_group("engine"))
