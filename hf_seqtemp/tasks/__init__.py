# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Toy tasks whose data distribution is known exactly, so precision and recall are exact."""

from .multiplication import MultiplicationBatch, MultiplicationTask

__all__ = ["MultiplicationBatch", "MultiplicationTask"]
