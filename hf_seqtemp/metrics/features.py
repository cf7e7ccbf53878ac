# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Input features shared by the paired-log-likelihood `evaluate` modules (T_eff, Kendall τ, log-ratio)."""

from __future__ import annotations

import datasets


def paired_logp_features() -> list[datasets.Features]:
    """`base_logp` and `tempered_logp` per sequence, optionally with its prompt group id (`groups`, any id as text).

    `evaluate` picks whichever of the two feature sets the batch matches, so `groups` stays optional.
    """
    pair = {"base_logp": datasets.Value("float64"), "tempered_logp": datasets.Value("float64")}
    return [datasets.Features(pair), datasets.Features({**pair, "groups": datasets.Value("string")})]
