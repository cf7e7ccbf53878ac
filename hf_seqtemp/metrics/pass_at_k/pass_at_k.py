# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: unbiased pass@k (Eq. 2 of Fang et al., after Chen et al. 2021), averaged over problems."""

import datasets
import evaluate

from hf_seqtemp.metrics.modules import DescribedModule
from hf_seqtemp.metrics.pass_at_k_math import pass_at_k

_DESCRIPTION = """
Unbiased pass@k: for each problem, n samples were drawn and c of them are correct; the probability that at least one
of k samples drawn without replacement from those n is correct is 1 - C(n - c, k) / C(n, k). The module averages it
over problems. Each row is one problem.
"""

_KWARGS_DESCRIPTION = """
Args:
    num_samples (`list` of `int`): n, the samples drawn for each problem (>= k).
    num_correct (`list` of `int`): c, how many of them are correct (0 <= c <= n).
    k (`int` or `list` of `int`, *optional*, defaults to `1`): the budget(s) to report.
Returns:
    pass@{k} (`float`): one entry per requested k, in [0, 1]; higher is better.
Examples:
    >>> metric = evaluate.load(module_path("pass_at_k"))
    >>> metric.compute(num_samples=[10, 10], num_correct=[3, 0], k=[1, 5])
    {'pass@1': 0.15, 'pass@5': 0.4583333333333333}
"""

_CITATION = """
@article{chen2021evaluating,
  title={Evaluating Large Language Models Trained on Code},
  author={Chen, Mark and others},
  journal={arXiv preprint arXiv:2107.03374},
  year={2021}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PassAtK(DescribedModule, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    _module_features = staticmethod(
        lambda: datasets.Features({"num_samples": datasets.Value("int64"), "num_correct": datasets.Value("int64")})
    )

    def _compute(self, num_samples, num_correct, k=1):
        ks = [k] if isinstance(k, int) else list(k)
        pairs = list(zip(num_samples, num_correct))
        return {
            f"pass@{budget}": float(sum(pass_at_k(int(n), int(c), budget) for n, c in pairs) / len(pairs))
            for budget in ks
        }
