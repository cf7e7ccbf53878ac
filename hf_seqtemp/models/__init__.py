# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Model-family adapters and the embedded default model."""

from .base import DiffusionLM, ModelFamily
from .diffusion import (
    BlockDiffusionAdapter,
    LLaDAAdapter,
    MaskedLMAdapter,
    ShiftedLogitsAdapter,
    wrap_diffusion_model,
)


__all__ = [
    "BlockDiffusionAdapter",
    "DiffusionLM",
    "LLaDAAdapter",
    "MaskedLMAdapter",
    "ModelFamily",
    "ShiftedLogitsAdapter",
    "wrap_diffusion_model",
]
