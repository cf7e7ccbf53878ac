# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature training: `SeqTempConfig` + `SeqTempTrainer`, and dataset helpers."""

from .config import SeqTempConfig
from .data import SeqTempCollator, prepare_dataset, sample_dataset
from .trainer import SeqTempTrainer

__all__ = ["SeqTempCollator", "SeqTempConfig", "SeqTempTrainer", "prepare_dataset", "sample_dataset"]
