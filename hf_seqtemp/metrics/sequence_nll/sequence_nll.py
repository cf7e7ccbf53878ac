# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: mean negative log-likelihood per sequence and per token."""

import datasets
import evaluate

from hf_seqtemp.metrics.core import sequence_nll
from hf_seqtemp.metrics.modules import PAPER_CITATION, DescribedModule

_DESCRIPTION = """
Mean negative log-likelihood of sequences: per sequence (mean of -log p(x)) and per token (sum of -log p(x) over
the sum of scored token counts), from sequence log-likelihoods that are sums over tokens.
"""

_KWARGS_DESCRIPTION = """
Args:
    logp (`list` of `float`): sequence log-likelihoods (sums over the scored tokens).
    lengths (`list` of `int`): the number of scored tokens of each sequence.
Returns:
    nll_per_sequence (`float`): >= 0, lower is better.
    nll_per_token (`float`): >= 0, lower is better.
Examples:
    >>> metric = evaluate.load(module_path("sequence_nll"))
    >>> metric.compute(logp=[-2.0, -4.0], lengths=[2, 4])
    {'nll_per_sequence': 3.0, 'nll_per_token': 1.0}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SequenceNll(DescribedModule, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, PAPER_CITATION
    _module_features = staticmethod(
        lambda: datasets.Features({"logp": datasets.Value("float64"), "lengths": datasets.Value("int64")})
    )

    def _compute(self, logp, lengths):
        return {name: float(value) for name, value in sequence_nll(logp, lengths).items()}
