# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Small checkable tasks whose answers (and, for multiplication, the whole data distribution) are known exactly."""

from .arithmetic import ArithmeticTask, ArithmeticTokenizer, check_answer
from .multiplication import MultiplicationBatch, MultiplicationTask

__all__ = ["ArithmeticTask", "ArithmeticTokenizer", "MultiplicationBatch", "MultiplicationTask", "check_answer"]
