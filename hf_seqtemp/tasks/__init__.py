# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Small checkable tasks for examples and tests."""

from .arithmetic import ArithmeticTask, ArithmeticTokenizer, check_answer


__all__ = ["ArithmeticTask", "ArithmeticTokenizer", "check_answer"]
