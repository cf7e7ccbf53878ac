# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-likelihood estimators behind one [`SequenceScorer`] interface."""

from .autoregressive import AutoregressiveScorer
from .base import SequenceScorer
from .block_diffusion import MAX_EXACT_BLOCK_SIZE, BlockDiffusionScorer
from .masked_diffusion import MaskedDiffusionScorer, sample_orders
from .schedule_variance import order_logp_variance, schedule_variance

__all__ = [
    "MAX_EXACT_BLOCK_SIZE",
    "AutoregressiveScorer",
    "BlockDiffusionScorer",
    "MaskedDiffusionScorer",
    "SequenceScorer",
    "order_logp_variance",
    "sample_orders",
    "schedule_variance",
]
