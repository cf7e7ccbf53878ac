# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What every `evaluate` module of the package shares: its `MetricInfo` built from four class attributes
([`DescribedModule`]), the paper's citation and the `groups` argument's text.

A module's folder (`hf_seqtemp/metrics/<name>/`) keeps what the Hub needs (its script, README and requirements) and
its own compute function; the script's class lists [`DescribedModule`] (and [`GroupedInputs`] for paired
log-likelihoods) before `evaluate.Metric`, which `evaluate.load` takes as the module's class.
"""

from __future__ import annotations

PAPER_CITATION = """
@article{scheufele2026temperature,
  title={Temperature Scaling in Discrete Sequence (Language) Models},
  author={Scheufele, Hannah and Blohm, Peter and Garg, Vikas},
  year={2026}
}
"""
"""The citation of the paper whose equations the temperature modules compute."""

GROUPS_ARGUMENT = """    groups (`list`, *optional*): the prompt id of each sequence (any ids; compared as text). With it, every pair,
        slope, rank and variance is taken within prompts, as a prompted model is tempered per prompt. Accepted
        by `compute`, `add` and `add_batch` alike (through `evaluate.combine`, pass `groups=None` for one group).
"""
"""The `groups` argument of the paired-log-likelihood modules, as their `Args:` list gives it."""


class DescribedModule:
    """Mixin of an `evaluate.Metric` (listed before it): `_info` from the class attributes `_module_description`,
    `_module_inputs`, `_module_citation` and `_module_features` (a function returning the `datasets.Features`).
    Not a `Metric` itself: `evaluate.load` takes the first `Metric` subclass it finds in a module."""

    _module_description: str
    _module_inputs: str
    _module_citation: str

    @staticmethod
    def _module_features():
        raise NotImplementedError("a module sets `_module_features` to a function returning its features")

    def _info(self):
        import evaluate

        return evaluate.MetricInfo(
            description=self._module_description,
            citation=self._module_citation,
            inputs_description=self._module_inputs,
            features=self._module_features(),
        )
