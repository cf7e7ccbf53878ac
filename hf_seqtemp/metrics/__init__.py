# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Metrics: pure functions (`core` for the temperature metrics, `<name>_math` for pass@k and precision/recall), and
`evaluate` modules in one folder each (`<name>/<name>.py`, thin calls into the pure functions)."""

from __future__ import annotations

from pathlib import Path

from .comparison import excess_error, paired_interval, split_half_noise
from .core import (
    effective_temperature,
    kendall_tau,
    per_prompt_effective_temperature,
    per_prompt_kendall_tau,
    per_prompt_t_eff_error,
    sequence_nll,
    temperature_log_ratio,
)
from .pass_at_k_math import pass_at_k
from .precision_recall_math import (
    embedding_precision_recall,
    knn_precision_recall,
    precision_recall_curve,
    support_precision,
    support_recall,
)

_MODULE_DIR = Path(__file__).resolve().parent


def available_modules() -> list[str]:
    """Names of the `evaluate` modules that ship with hf_seqtemp."""
    return sorted(p.name for p in _MODULE_DIR.iterdir() if (p / f"{p.name}.py").is_file())


def module_path(name: str) -> str:
    """Path of a bundled `evaluate` module, for `evaluate.load` offline.

    Example:
    ```python
    >>> import evaluate
    >>> from hf_seqtemp.metrics import module_path
    >>> metric = evaluate.load(module_path("effective_temperature"))
    >>> metric.compute(base_logp=[-1.0, -2.0, -4.0], tempered_logp=[-2.0, -4.0, -8.0])
    {'effective_temperature': 0.5}
    ```
    """
    folder = _MODULE_DIR / name
    if not (folder / f"{name}.py").is_file():
        raise ValueError(f"`name` must be one of {available_modules()}, got {name!r}.")
    return str(folder)


__all__ = [
    "available_modules",
    "effective_temperature",
    "embedding_precision_recall",
    "excess_error",
    "kendall_tau",
    "knn_precision_recall",
    "module_path",
    "paired_interval",
    "pass_at_k",
    "per_prompt_effective_temperature",
    "per_prompt_kendall_tau",
    "per_prompt_t_eff_error",
    "precision_recall_curve",
    "sequence_nll",
    "split_half_noise",
    "support_precision",
    "support_recall",
    "temperature_log_ratio",
]
