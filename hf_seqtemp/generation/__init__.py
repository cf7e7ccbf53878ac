# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Samplers for sequence-tempered distributions: diffusion decoding (policies × IMH) and AR power sampling."""

from .adapters import register_tempered_adapter, tempered_adapters
from .answer_level import majority_vote, sharpen_answers
from .custom_generate import write_custom_generate
from .diffusion import DiffusionGenerateOutput, diffusion_generate
from .glauber import GlauberGenerateOutput, GlauberOutput, glauber_refine
from .imh import imh_chain, imh_transition_matrix, lookahead_correction
from .logits_process import PowerLogitsWarper
from .policies import POSITION_POLICIES, select_positions
from .power_sampling import PowerSamplingOutput, power_sample
from .proposal_ess import ProposalESS, proposal_ess
from .routing import STRATEGIES, generate_tempered, seqtemp_generate
from .smc import SMCOutput, smc_sample
from .strategies import STRATEGY_REGISTRY, GenerateCall

__all__ = [
    "POSITION_POLICIES",
    "STRATEGIES",
    "STRATEGY_REGISTRY",
    "DiffusionGenerateOutput",
    "GenerateCall",
    "GlauberGenerateOutput",
    "GlauberOutput",
    "PowerLogitsWarper",
    "PowerSamplingOutput",
    "ProposalESS",
    "SMCOutput",
    "diffusion_generate",
    "generate_tempered",
    "glauber_refine",
    "imh_chain",
    "imh_transition_matrix",
    "lookahead_correction",
    "majority_vote",
    "power_sample",
    "proposal_ess",
    "register_tempered_adapter",
    "select_positions",
    "seqtemp_generate",
    "sharpen_answers",
    "smc_sample",
    "tempered_adapters",
    "write_custom_generate",
]
