# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Training objectives, selected by name from a registry (no `if/elif` on `loss_type` anywhere).

One pattern per family of losses: `<name>.py` holds pure, differentiable functions of per-sequence and per-token (or
per-step) log-probabilities, and `<name>_objectives.py` its registry entries. Each registered objective is a small
function `(inputs: LossInputs, args) -> LossOutput` ([`spec`]) that reads its hyper-parameters from the training
config `args` and only combines the pure functions of its module; it never calls a model.
"""

from __future__ import annotations

from .diffusion import reference_conditionals
from .diffusion_objectives import DIFFUSION_SSTS
from .distill import particle_weights, weighted_sequence_nll
from .distill_objectives import DISTILL_LOSSES
from .recall_objectives import RECALL_LOSSES
from .spec import LossInputs, LossOutput, LossSpec, scale_gradient
from .temperature import lhts_loss, lhts_weights, log_ratio_h, ratio_loss, suffix_logps, token_nll
from .temperature_objectives import TEMPERATURE_LOSSES

LOSSES: dict[str, LossSpec] = {**TEMPERATURE_LOSSES, **RECALL_LOSSES, **DISTILL_LOSSES}
"""What a causal LM trains with, by `loss_type`."""

DIFFUSION_LOSSES: dict[str, LossSpec] = {"ratio": LOSSES["ratio"], "ssts": DIFFUSION_SSTS}
"""What a masked / block diffusion model trains with: the same names, with per-step (not per-token) values."""


__all__ = [
    "DIFFUSION_LOSSES",
    "LOSSES",
    "LossInputs",
    "LossOutput",
    "LossSpec",
    "lhts_loss",
    "lhts_weights",
    "log_ratio_h",
    "particle_weights",
    "ratio_loss",
    "reference_conditionals",
    "scale_gradient",
    "suffix_logps",
    "token_nll",
    "weighted_sequence_nll",
]
