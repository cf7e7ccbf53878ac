# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`DiffusionLM` wrappers of diffusion model families, the embedded default model, and tiny random models for
examples."""

from .base import DiffusionLM, ModelFamily
from .default import DEFAULT_MODEL_ID, cache_dir, default_model_path, load_default_model
from .diffusion import (
    BlockDiffusionAdapter,
    BlockDiffusionWrapper,
    LLaDAAdapter,
    LLaDAWrapper,
    MaskedLMAdapter,
    MaskedLMWrapper,
    ShiftedLogitsAdapter,
    ShiftedLogitsWrapper,
    wrap_diffusion_model,
)
from .tiny import tiny_causal_lm, tiny_masked_lm

__all__ = [
    "DEFAULT_MODEL_ID",
    "BlockDiffusionAdapter",
    "BlockDiffusionWrapper",
    "DiffusionLM",
    "LLaDAAdapter",
    "LLaDAWrapper",
    "MaskedLMAdapter",
    "MaskedLMWrapper",
    "ModelFamily",
    "ShiftedLogitsAdapter",
    "ShiftedLogitsWrapper",
    "cache_dir",
    "default_model_path",
    "load_default_model",
    "tiny_causal_lm",
    "tiny_masked_lm",
    "wrap_diffusion_model",
]
