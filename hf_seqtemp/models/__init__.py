# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Model-family adapters and the embedded default model."""

from .base import DiffusionLM, ModelFamily

__all__ = ["DiffusionLM", "ModelFamily"]
