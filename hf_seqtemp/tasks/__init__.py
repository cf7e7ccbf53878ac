# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Small checkable tasks whose answers (and, for multiplication, the whole data distribution) are known exactly."""

from .arithmetic import ArithmeticTask, ArithmeticTokenizer, check_answer
from .multiplication import MultiplicationBatch, MultiplicationTask
from .prompts import long_prompt_pool, prompt_pool, split_long_prompts, split_prompts, training_extension

__all__ = [
    "ArithmeticTask",
    "ArithmeticTokenizer",
    "MultiplicationBatch",
    "MultiplicationTask",
    "check_answer",
    "long_prompt_pool",
    "prompt_pool",
    "split_long_prompts",
    "split_prompts",
    "training_extension",
]
