# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature training: `SeqTempConfig` + `SeqTempTrainer`, and dataset helpers.

Names are imported on first use, so `hf_seqtemp.trainer.config` (all `hf-seqtemp train --help` needs) loads
without the trainer, datasets or peft.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "SeqTempCollator": "data",
    "SeqTempConfig": "config",
    "SeqTempTrainer": "trainer",
    "prepare_dataset": "data",
    "sample_dataset": "data",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
