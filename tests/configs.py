# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The training arguments the tests run with: on the CPU, saving nothing, without progress bars; a test spells out
only the fields it is about (its seed included: `SeqTempConfig`'s default seed is TrainingArguments' 42)."""

from __future__ import annotations

from hf_seqtemp import SeqTempConfig

QUIET = {"save_strategy": "no", "use_cpu": True, "disable_tqdm": True}


def quiet_config(output_dir, **fields) -> SeqTempConfig:
    """`SeqTempConfig(output_dir, **fields)` with [`QUIET`]'s values wherever `fields` does not set them."""
    return SeqTempConfig(output_dir=str(output_dir), **{**QUIET, **fields})
