# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Data: TRL's dataset formats, chat templates, prompt groups, and completions sampled from the reference model."""

from .ancestral import exact_ancestral_sample, exact_generate, exact_generation_config
from .formats import FORMATS, detect_format, tokenize_example, tokenize_prompt
from .grouping import GroupSampler, check_group_batching
from .prepare import (
    EXAMPLE_ID,
    GROUP_ID,
    PROMPT_IDS,
    RAGGED_COLUMNS,
    SeqTempCollator,
    is_prompt_only,
    prepare_dataset,
)
from .sampling import as_conversation, eos_ids_of, sample_completions, sample_dataset
from .split import PromptSplit, prompt_key, split_by_prompt

__all__ = [
    "EXAMPLE_ID",
    "FORMATS",
    "GROUP_ID",
    "PROMPT_IDS",
    "RAGGED_COLUMNS",
    "GroupSampler",
    "PromptSplit",
    "SeqTempCollator",
    "as_conversation",
    "check_group_batching",
    "detect_format",
    "eos_ids_of",
    "exact_ancestral_sample",
    "exact_generate",
    "exact_generation_config",
    "is_prompt_only",
    "prepare_dataset",
    "prompt_key",
    "sample_completions",
    "sample_dataset",
    "split_by_prompt",
    "tokenize_example",
    "tokenize_prompt",
]
