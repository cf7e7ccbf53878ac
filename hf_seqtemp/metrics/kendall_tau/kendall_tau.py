# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: Kendall's tau-a between the sequence rankings of a model and its base."""

import evaluate

from hf_seqtemp.metrics.core import kendall_tau
from hf_seqtemp.metrics.features import GroupedInputs, paired_logp_features
from hf_seqtemp.metrics.modules import GROUPS_ARGUMENT, DescribedModule

_DESCRIPTION = """
Kendall's tau-a over all distinct pairs of sequences (Eq. 13 of Scheufele, Blohm and Garg): the agreement of the
rankings of sequences by log p(x) (base model) and by log q(x) (measured model). Temperature scaling preserves the
ranking, so a well-tempered model has tau = 1. Ties count 0.
"""

_KWARGS_DESCRIPTION = (
    """
Args:
    base_logp (`list` of `float`): sequence log-likelihoods log p(x) under the base model.
    tempered_logp (`list` of `float`): log q(x) of the same sequences under the measured model.
"""
    + GROUPS_ARGUMENT
    + """Returns:
    kendall_tau (`float`): in [-1, 1]; higher is better, 1.0 for identical rankings.
Examples:
    >>> metric = evaluate.load(module_path("kendall_tau"))
    >>> metric.compute(base_logp=[-1.0, -2.0, -3.0], tempered_logp=[-5.0, -6.0, -9.0])
    {'kendall_tau': 1.0}
"""
)

_CITATION = """
@article{kendall1938measure,
  title={A New Measure of Rank Correlation},
  author={Kendall, Maurice G.},
  journal={Biometrika},
  year={1938}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KendallTau(DescribedModule, GroupedInputs, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    _module_features = staticmethod(paired_logp_features)

    def _compute(self, base_logp, tempered_logp, groups=None):
        return {"kendall_tau": float(kendall_tau(base_logp, tempered_logp, groups=self._groups(groups)))}
