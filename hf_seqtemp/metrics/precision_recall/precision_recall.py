# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: exact precision and recall of a model distribution Q against a data distribution P."""

import datasets
import evaluate
import torch

from hf_seqtemp.metrics.modules import DescribedModule
from hf_seqtemp.metrics.precision_recall_math import precision_recall_curve, support_precision, support_recall

_DESCRIPTION = """
Exact precision and recall of a model distribution Q against a data distribution P over an enumerated support (a
tiny vocabulary, a toy task whose answer set is known). Each row is one outcome x with its probabilities P(x) and
Q(x); both columns must sum to 1 over all rows. Support precision is Q(supp P) (the model's mass on valid outcomes),
support recall P(supp Q) (the data mass the model can produce). The curve alpha_λ = Σ_x min(λ P(x), Q(x))
(precision) and beta_λ = alpha_λ / λ (recall) trades one for the other; alpha_1 = beta_1 = 1 - TV(P, Q).
"""

_KWARGS_DESCRIPTION = """
Args:
    p (`list` of `float`): P(x), the data distribution, one value per outcome.
    q (`list` of `float`): Q(x), the model distribution over the same outcomes, in the same order.
    lambdas (`list` of `float`, *optional*, defaults to `[1.0]`): positive trade-off values λ for the curve.
Returns:
    support_precision (`float`): Q(supp P) in [0, 1]; higher is better.
    support_recall (`float`): P(supp Q) in [0, 1]; higher is better.
    lambdas (`list` of `float`): the λ values, as given.
    precision (`list` of `float`): alpha_λ for each λ, in [0, 1]; higher is better.
    recall (`list` of `float`): beta_λ for each λ, in [0, 1]; higher is better.
Examples:
    >>> metric = evaluate.load(module_path("precision_recall"))
    >>> metric.compute(p=[0.5, 0.5, 0.0], q=[0.8, 0.0, 0.2])
    {'support_precision': 0.8, 'support_recall': 0.5, 'lambdas': [1.0], 'precision': [0.5], 'recall': [0.5]}
"""

_CITATION = """
@inproceedings{sajjadi2018assessing,
  title={Assessing Generative Models via Precision and Recall},
  author={Sajjadi, Mehdi S. M. and Bachem, Olivier and Lucic, Mario and Bousquet, Olivier and Gelly, Sylvain},
  booktitle={Advances in Neural Information Processing Systems},
  year={2018}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PrecisionRecall(DescribedModule, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    _module_features = staticmethod(
        lambda: datasets.Features({"p": datasets.Value("float64"), "q": datasets.Value("float64")})
    )

    def _compute(self, p, q, lambdas=(1.0,)):
        p = torch.tensor(p, dtype=torch.float64, device="cpu")
        q = torch.tensor(q, dtype=torch.float64, device="cpu")
        lam, precision, recall = precision_recall_curve(p, q, list(lambdas))
        return {
            "support_precision": float(support_precision(p, q)),
            "support_recall": float(support_recall(p, q)),
            "lambdas": [float(value) for value in lam],
            "precision": [float(value) for value in precision],
            "recall": [float(value) for value in recall],
        }
