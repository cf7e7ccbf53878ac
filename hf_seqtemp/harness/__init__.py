# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""EleutherAI's lm-evaluation-harness running every sequence-temperature route (`pip install 'hf-seqtemp[eval]'`).

Importing this package registers the harness model `seqtemp` ([`SeqTempLM`]) with lm-eval's model registry (and
has lm-eval's results name a `default_model=True` run by the embedded model's id: [`name_embedded_model`]);
`python -m hf_seqtemp.harness ...` is lm-eval's own command line with it registered (docs/evaluate.md).
"""

from __future__ import annotations

try:
    import lm_eval  # noqa: F401
except ImportError as error:  # pragma: no cover - what a user without the extra sees
    raise ImportError(
        "hf_seqtemp.harness needs lm-evaluation-harness: pip install 'hf-seqtemp[eval]' (lm-eval[hf]==0.4.13)."
    ) from error

from ..costs import ForwardCounter
from .flags import name_embedded_model
from .model import ROUTE_OPTIONS, WHOLE_ANSWER, Route, SeqTempLM, prompt_seed, resolve_route

name_embedded_model()

__all__ = [
    "ROUTE_OPTIONS",
    "WHOLE_ANSWER",
    "ForwardCounter",
    "Route",
    "SeqTempLM",
    "name_embedded_model",
    "prompt_seed",
    "resolve_route",
]
