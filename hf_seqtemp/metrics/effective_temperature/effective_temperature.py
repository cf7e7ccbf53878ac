# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: effective temperature T_eff (Eq. 17) of a model against its base."""

import evaluate

from hf_seqtemp.metrics.core import effective_temperature, per_prompt_t_eff_error
from hf_seqtemp.metrics.features import GroupedInputs, paired_logp_features
from hf_seqtemp.metrics.modules import GROUPS_ARGUMENT, PAPER_CITATION, DescribedModule

_DESCRIPTION = """
Effective temperature T_eff: the least-squares slope of log p(x)/p(x') (base model) on log q(x)/q(x') (measured
model) over all pairs of sequences (Eq. 17 of Scheufele, Blohm and Garg). A model tempered exactly at sequence
temperature T (q ∝ p^{1/T}) has T_eff = T; the base model has 1. No partition function is needed.
"""

_KWARGS_DESCRIPTION = (
    """
Args:
    base_logp (`list` of `float`): sequence log-likelihoods log p(x) under the base model.
    tempered_logp (`list` of `float`): log q(x) of the same sequences under the measured model.
"""
    + GROUPS_ARGUMENT
    + """    target_temperature (`float`, *optional*): the temperature the model was tempered to. With it and `groups`,
        `per_prompt_t_eff_error` is returned too: the mean over prompts of |T_eff(c) − T| / T, each prompt's
        T_eff over its own sequences (a pooled T_eff of T can hide prompts tempered too much and too little).
Returns:
    effective_temperature (`float`): > 0 for a model that preserves the ranking; the target is the temperature
        the model was tempered to (closer is better).
    per_prompt_t_eff_error (`float`, with `target_temperature`): 0 for a model tempered at T on every prompt.
Examples:
    >>> metric = evaluate.load(module_path("effective_temperature"))
    >>> metric.compute(base_logp=[-1.0, -2.0, -4.0], tempered_logp=[-2.0, -4.0, -8.0])
    {'effective_temperature': 0.5}
"""
)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class EffectiveTemperature(DescribedModule, GroupedInputs, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, PAPER_CITATION
    _module_features = staticmethod(paired_logp_features)

    def _compute(self, base_logp, tempered_logp, groups=None, target_temperature=None):
        groups = self._groups(groups)
        out = {"effective_temperature": float(effective_temperature(base_logp, tempered_logp, groups=groups))}
        if target_temperature is not None:
            if groups is None:
                raise ValueError(
                    "`target_temperature` asks for the per-prompt T_eff error, which needs `groups` (the prompt id "
                    "of each sequence)."
                )
            out["per_prompt_t_eff_error"] = per_prompt_t_eff_error(
                base_logp, tempered_logp, groups, target_temperature
            )
        return out
