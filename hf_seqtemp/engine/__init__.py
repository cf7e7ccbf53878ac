# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sampling on an inference engine: a vLLM server in its own venv, reached over HTTP (no `import vllm` here).

- [`EngineServer`] / [`EngineSettings`]: start a server with the settings exact sampling needs, stop it by its
  process group (`hf-seqtemp serve MODEL` on the command line).
- [`EngineClient`]: exact sampling and scoring with token ids.
- [`engine_sample_completions`]: samples of the reference p with their log p (the trainer's `use_vllm=True`).
- [`probe_engine`] / [`check_against_scorer`]: the server's model and log-prob mode, measured against the scorer.

SMC and MH power sampling on the engine are [`~hf_seqtemp.generation.smc.smc_sample`] and
[`~hf_seqtemp.generation.power_sampling.power_sample`] given an `EngineClient` (one sampler per route, with the
engine drawing).
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "Completion": "client",
    "EngineClient": "client",
    "EngineError": "replies",
    "EngineMismatchError": "agreement",
    "EngineProbe": "agreement",
    "EngineReplyError": "replies",
    "EngineServer": "server",
    "EngineSettings": "server",
    "SeedStream": "sampling",
    "check_against_scorer": "agreement",
    "engine_python": "server",
    "engine_sample_completions": "sampling",
    "probe_engine": "agreement",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
