# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""hf_seqtemp: sequence-level temperature for Hugging Face language models — measure, train, ship, sample."""

from .config import SequenceTemperatureConfig
from .generation import (
    DiffusionGenerateOutput,
    GlauberGenerateOutput,
    PowerLogitsWarper,
    PowerSamplingOutput,
    diffusion_generate,
    generate_tempered,
    glauber_refine,
    power_sample,
    seqtemp_generate,
    write_custom_generate,
)
from .hub import push_to_hub, save_for_hub
from .likelihood import (
    AutoregressiveScorer,
    BlockDiffusionScorer,
    MaskedDiffusionScorer,
    SequenceScorer,
    schedule_variance,
)
from .loading import adapter_name_for, load_tempered
from .losses import LOSSES
from .metrics import effective_temperature, kendall_tau, module_path, sequence_nll, temperature_log_ratio
from .metrics.pass_at_k import pass_at_k
from .metrics.precision_recall import knn_precision_recall, precision_recall_curve
from .models import (
    DEFAULT_MODEL_ID,
    BlockDiffusionAdapter,
    DiffusionLM,
    LLaDAAdapter,
    MaskedLMAdapter,
    ShiftedLogitsAdapter,
    load_default_model,
    wrap_diffusion_model,
)
from .trainer import SeqTempConfig, SeqTempTrainer, sample_dataset

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MODEL_ID",
    "LOSSES",
    "AutoregressiveScorer",
    "BlockDiffusionAdapter",
    "BlockDiffusionScorer",
    "DiffusionGenerateOutput",
    "DiffusionLM",
    "GlauberGenerateOutput",
    "LLaDAAdapter",
    "MaskedDiffusionScorer",
    "MaskedLMAdapter",
    "PowerLogitsWarper",
    "PowerSamplingOutput",
    "SeqTempConfig",
    "SeqTempTrainer",
    "SequenceScorer",
    "SequenceTemperatureConfig",
    "ShiftedLogitsAdapter",
    "adapter_name_for",
    "diffusion_generate",
    "effective_temperature",
    "generate_tempered",
    "glauber_refine",
    "kendall_tau",
    "knn_precision_recall",
    "load_default_model",
    "load_tempered",
    "module_path",
    "pass_at_k",
    "power_sample",
    "precision_recall_curve",
    "push_to_hub",
    "sample_dataset",
    "save_for_hub",
    "schedule_variance",
    "seqtemp_generate",
    "sequence_nll",
    "temperature_log_ratio",
    "wrap_diffusion_model",
    "write_custom_generate",
]
