# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-likelihood estimators behind one [`SequenceScorer`] interface."""

from .autoregressive import AutoregressiveScorer
from .base import SequenceScorer

__all__ = ["AutoregressiveScorer", "SequenceScorer"]
