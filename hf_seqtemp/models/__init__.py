# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Model-family adapters and the embedded default model."""

from .base import DiffusionLM, ModelFamily
from .default import DEFAULT_MODEL_ID, cache_dir, default_model_path, load_default_model
from .diffusion import (
    BlockDiffusionAdapter,
    LLaDAAdapter,
    MaskedLMAdapter,
    ShiftedLogitsAdapter,
    wrap_diffusion_model,
)

__all__ = [
    "DEFAULT_MODEL_ID",
    "BlockDiffusionAdapter",
    "DiffusionLM",
    "LLaDAAdapter",
    "MaskedLMAdapter",
    "ModelFamily",
    "ShiftedLogitsAdapter",
    "cache_dir",
    "default_model_path",
    "load_default_model",
    "wrap_diffusion_model",
]
