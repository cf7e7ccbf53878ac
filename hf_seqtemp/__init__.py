# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""hf_seqtemp: sequence-level temperature for Hugging Face language models — measure, train, ship, sample."""

from .config import SequenceTemperatureConfig
from .likelihood import AutoregressiveScorer, SequenceScorer
from .loading import adapter_name_for, load_tempered
from .losses import LOSSES
from .metrics import effective_temperature, kendall_tau, module_path, sequence_nll, temperature_log_ratio
from .models import DEFAULT_MODEL_ID, DiffusionLM, load_default_model
from .trainer import SeqTempConfig, SeqTempTrainer, sample_dataset


__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MODEL_ID",
    "LOSSES",
    "AutoregressiveScorer",
    "DiffusionLM",
    "SeqTempConfig",
    "SeqTempTrainer",
    "SequenceScorer",
    "SequenceTemperatureConfig",
    "adapter_name_for",
    "effective_temperature",
    "kendall_tau",
    "load_default_model",
    "load_tempered",
    "module_path",
    "sample_dataset",
    "sequence_nll",
    "temperature_log_ratio",
]
