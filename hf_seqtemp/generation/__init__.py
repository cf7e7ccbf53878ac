# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Samplers for sequence-tempered distributions: diffusion decoding (policies × IMH) and AR power sampling."""

from .diffusion import DiffusionGenerateOutput, diffusion_generate
from .imh import imh_chain, imh_transition_matrix, lookahead_correction
from .logits_process import PowerLogitsWarper
from .policies import POSITION_POLICIES, select_positions


__all__ = [
    "POSITION_POLICIES",
    "DiffusionGenerateOutput",
    "PowerLogitsWarper",
    "diffusion_generate",
    "imh_chain",
    "imh_transition_matrix",
    "lookahead_correction",
    "select_positions",
]
