# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: the temperature log-ratio h(x) = log p(x) - T log q(x) (Eq. 16), its mean and variance."""

import evaluate

from hf_seqtemp.metrics.core import temperature_log_ratio
from hf_seqtemp.metrics.features import GroupedInputs, paired_logp_features
from hf_seqtemp.metrics.modules import GROUPS_ARGUMENT, PAPER_CITATION, DescribedModule

_DESCRIPTION = """
Temperature log-ratio h(x) = log p(x) - T log q(x) (Eq. 16 of Scheufele, Blohm and Garg). A model q is tempered
at sequence temperature T exactly when h is constant over sequences (Lemma 5.1), so its variance measures the
distance from q ∝ p^{1/T} without a partition function.
"""

_KWARGS_DESCRIPTION = (
    """
Args:
    base_logp (`list` of `float`): sequence log-likelihoods log p(x) under the base model.
    tempered_logp (`list` of `float`): log q(x) of the same sequences under the measured model.
"""
    + GROUPS_ARGUMENT
    + """    temperature (`float`): the target temperature T > 0.
Returns:
    h_mean (`float`): mean of h (equals -T log Z at the optimum; not a quality score on its own).
    h_variance (`float`): >= 0, lower is better; 0 when q ∝ p^{1/T} on these sequences.
Examples:
    >>> metric = evaluate.load(module_path("temperature_log_ratio"))
    >>> metric.compute(base_logp=[-1.0, -3.0], tempered_logp=[-2.0, -6.0], temperature=0.5)
    {'h_mean': 0.0, 'h_variance': 0.0}
"""
)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TemperatureLogRatio(DescribedModule, GroupedInputs, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, PAPER_CITATION
    _module_features = staticmethod(paired_logp_features)

    def _compute(self, base_logp, tempered_logp, groups=None, temperature=1.0):
        out = temperature_log_ratio(base_logp, tempered_logp, temperature, groups=self._groups(groups))
        return {"h_mean": float(out["mean"]), "h_variance": float(out["variance"])}
