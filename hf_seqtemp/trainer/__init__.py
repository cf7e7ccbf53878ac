# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature training: `SeqTempConfig` + `SeqTempTrainer`, and dataset helpers.

Names are imported on first use, so `hf_seqtemp.trainer.config` (all `hf-seqtemp train --help` needs) loads
without the trainer, datasets or peft.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "SeqTempCollator": "data",
    "SeqTempConfig": "config",
    "SeqTempTrainer": "trainer",
    "prepare_dataset": "data",
    "sample_dataset": "data",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
