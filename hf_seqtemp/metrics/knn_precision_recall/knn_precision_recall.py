# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`evaluate` module: k-nearest-neighbour (improved) precision and recall of generated against real embeddings."""

import datasets
import evaluate
import torch

from hf_seqtemp.metrics.modules import DescribedModule
from hf_seqtemp.metrics.precision_recall_math import knn_precision_recall

_DESCRIPTION = """
Improved precision and recall (Kynkäänniemi et al., 2019) on embeddings. The real manifold is the union of balls
around each real embedding, with radius its distance to its k-th nearest real neighbour; likewise the generated
manifold. Precision is the fraction of generated embeddings inside the real manifold, recall the fraction of real
embeddings inside the generated manifold. Each row pairs one generated embedding (`predictions`) with one real
embedding (`references`), so both sets have the same size here; for sets of different sizes call
`hf_seqtemp.metrics.knn_precision_recall(real, generated, k)` directly. Embed texts with any
model beforehand (the module never loads one).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `float`): embeddings of generated samples, all of the same size.
    references (`list` of `list` of `float`): embeddings of real samples, same size as the predictions.
    k (`int`, *optional*, defaults to `3`): neighbourhood size; each set needs more than k rows.
Returns:
    precision (`float`): in [0, 1]; higher is better (generated samples look real).
    recall (`float`): in [0, 1]; higher is better (the real data's variety is covered).
Examples:
    >>> metric = evaluate.load(module_path("knn_precision_recall"))
    >>> metric.compute(predictions=[[0.5], [1.5], [2.5], [10.0]], references=[[0.0], [1.0], [2.0], [3.0]], k=1)
    {'precision': 0.75, 'recall': 1.0}
"""

_CITATION = """
@inproceedings{kynkaanniemi2019improved,
  title={Improved Precision and Recall Metric for Assessing Generative Models},
  author={Kynk{\\"a}{\\"a}nniemi, Tuomas and Karras, Tero and Laine, Samuli and Lehtinen, Jaakko and Aila, Timo},
  booktitle={Advances in Neural Information Processing Systems},
  year={2019}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class KnnPrecisionRecall(DescribedModule, evaluate.Metric):
    _module_description, _module_inputs, _module_citation = _DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION
    _module_features = staticmethod(
        lambda: datasets.Features(
            {
                "predictions": datasets.Sequence(datasets.Value("float64")),
                "references": datasets.Sequence(datasets.Value("float64")),
            }
        )
    )

    def _compute(self, predictions, references, k=3):
        real = torch.tensor(references, dtype=torch.float64, device="cpu")
        generated = torch.tensor(predictions, dtype=torch.float64, device="cpu")
        return {name: float(value) for name, value in knn_precision_recall(real, generated, k=k).items()}
