# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""hf_seqtemp: sequence-level temperature for Hugging Face language models — measure, train, ship, sample.

Public names are imported on first use, so `import hf_seqtemp` (and `hf-seqtemp --help`) does not load torch,
transformers, datasets or peft until something needs them.
"""

from __future__ import annotations

from ._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> the submodule that defines it
_EXPORTS = {
    "DEFAULT_MODEL_ID": "models",
    "LOSSES": "losses",
    "AutoregressiveScorer": "likelihood",
    "BlockDiffusionAdapter": "models",
    "BlockDiffusionWrapper": "models",
    "BlockDiffusionScorer": "likelihood",
    "DiffusionGenerateOutput": "generation",
    "DiffusionLM": "models",
    "GlauberGenerateOutput": "generation",
    "LLaDAAdapter": "models",
    "LLaDAWrapper": "models",
    "MaskedDiffusionScorer": "likelihood",
    "MaskedLMAdapter": "models",
    "MaskedLMWrapper": "models",
    "PowerLogitsWarper": "generation",
    "PowerSamplingOutput": "generation",
    "SeqTempConfig": "trainer",
    "SeqTempTrainer": "trainer",
    "SequenceScorer": "likelihood",
    "SequenceTemperatureConfig": "config",
    "ShiftedLogitsAdapter": "models",
    "ShiftedLogitsWrapper": "models",
    "adapter_name_for": "loading",
    "audit_decoding": "audit",
    "audit_grid": "audit",
    "diffusion_generate": "generation",
    "effective_temperature": "metrics",
    "generate_tempered": "generation",
    "glauber_refine": "generation",
    "kendall_tau": "metrics",
    "knn_precision_recall": "metrics",
    "load_default_model": "models",
    "load_tempered": "loading",
    "module_path": "metrics",
    "pass_at_k": "metrics",
    "per_prompt_effective_temperature": "metrics",
    "per_prompt_kendall_tau": "metrics",
    "per_prompt_t_eff_error": "metrics",
    "power_sample": "generation",
    "precision_recall_curve": "metrics",
    "push_to_hub": "hub",
    "sample_dataset": "trainer",
    "save_for_hub": "hub",
    "schedule_variance": "likelihood",
    "seqtemp_generate": "generation",
    "sequence_nll": "metrics",
    "temperature_log_ratio": "metrics",
    "tune_token_temperature_once": "token_tuning",
    "wrap_diffusion_model": "models",
    "write_custom_generate": "generation",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, submodules=True)
