# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: mean schedule variance Var_π log p(x; π) from per-order log-likelihoods."""

import datasets
import evaluate

from hf_seqtemp.likelihood.schedule_variance import order_logp_variance
from hf_seqtemp.metrics.modules import PAPER_CITATION, DescribedModule

_DESCRIPTION = """
Schedule variance of a masked or block diffusion LM: how much the sequence log-likelihood log p(x; π) depends on
the unmasking order π (Sec. 6 and the "Variance" columns of Tables 4-5 of the temperature-scaling paper). Each row
is one sequence and holds its log-likelihoods under several orders (e.g. from
`MaskedDiffusionScorer(...).order_logps(model, ...)`); the module computes each sequence's sample variance and
averages over sequences.

This module aggregates values: it never runs a model. The exact variance of a block diffusion model (uniform order
inside each block, block DP) is computed on the model by the pure function
`hf_seqtemp.likelihood.schedule_variance(model, input_ids, block_size=B)`; average its output directly.
"""

_KWARGS_DESCRIPTION = """
Args:
    order_logps (`list` of `list` of `float`): per sequence, log p(x; π_j) for the sampled orders π_j (rows may
        differ in length; each needs >= 2 values when `unbiased=True`).
    unbiased (`bool`, *optional*, defaults to `True`): divisor k - 1 (as `schedule_variance(method="mc")`) or k.
Returns:
    schedule_variance (`float`): mean over sequences of Var_π log p(x; π), in nats², >= 0; lower means the
        likelihood depends less on the order (0 for an AR-like model whose conditionals ignore the order).
Examples:
    >>> metric = evaluate.load(module_path("schedule_variance"))
    >>> metric.compute(order_logps=[[-1.0, -3.0], [-2.0, -2.0, -2.0]])
    {'schedule_variance': 1.0}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ScheduleVariance(DescribedModule, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, PAPER_CITATION
    _module_features = staticmethod(
        lambda: datasets.Features({"order_logps": datasets.Sequence(datasets.Value("float64"))})
    )

    def _compute(self, order_logps, unbiased=True):
        return {"schedule_variance": float(order_logp_variance(order_logps, unbiased=unbiased).mean())}
