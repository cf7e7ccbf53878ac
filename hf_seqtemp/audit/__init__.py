# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Decoding audit: what a `generate` setting (temperature, top-k, top-p, min-p, ...) does to whole answers, measured
with transformers' own logits processors against the model's exact p; and the tuned-myopic baseline."""

from .decoding import (
    DECODING_FLAGS,
    NEUTRAL_DECODING,
    ScoredCompletions,
    all_eos_ids,
    as_setting,
    decoding_config,
    logits_processors,
    sample_completions_with,
    score_completions,
)
from .grid import audit_grid, parse_grid, tune_token_temperature
from .output import markdown_table, plot_audit, write_audit
from .report import RARE_QUANTILE, audit_decoding, prompt_token_ids, rare_thresholds

__all__ = [
    "DECODING_FLAGS",
    "NEUTRAL_DECODING",
    "RARE_QUANTILE",
    "ScoredCompletions",
    "all_eos_ids",
    "as_setting",
    "audit_decoding",
    "audit_grid",
    "decoding_config",
    "logits_processors",
    "markdown_table",
    "parse_grid",
    "plot_audit",
    "prompt_token_ids",
    "rare_thresholds",
    "sample_completions_with",
    "score_completions",
    "tune_token_temperature",
    "write_audit",
]
