# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Precision and recall of a model distribution Q against a data distribution P: the math behind the
`precision_recall` and `knn_precision_recall` evaluate modules.

Two estimators, both pure functions returning plain floats or tensors:

- exact, for distributions that can be enumerated (tiny vocabularies, toy tasks with a known answer set): the
  precision-recall curve `alpha_lambda = sum_x min(lambda P(x), Q(x))` (precision) and
  `beta_lambda = alpha_lambda / lambda` (recall), and the support versions `Q(supp P)` / `P(supp Q)`;
- sample-based, for anything else: k-nearest-neighbour improved precision/recall on embeddings of real and
  generated samples (a generated sample is "precise" when it falls inside some real sample's k-NN ball, a real sample
  is "recalled" when it falls inside some generated sample's k-NN ball).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..checks import check_int


def _check_distribution(name: str, probs: torch.Tensor) -> torch.Tensor:
    if not isinstance(probs, torch.Tensor) or probs.dim() != 1:
        raise ValueError(
            f"`{name}` must be a 1-D tensor of probabilities, got {getattr(probs, 'shape', type(probs))}."
        )
    probs = probs.double()
    if (probs < 0).any() or abs(float(probs.sum()) - 1.0) > 1e-6:
        raise ValueError(
            f"`{name}` must be non-negative and sum to 1, got sum {float(probs.sum()):.6g}: normalise it first "
            "(`probs / probs.sum()`), or pass the probabilities of *every* outcome."
        )
    return probs


def _check_pair(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    p, q = _check_distribution("p", p), _check_distribution("q", q)
    if p.shape != q.shape:
        raise ValueError(
            f"`p` and `q` must be indexed by the same outcomes, got shapes {tuple(p.shape)} and {tuple(q.shape)}."
        )
    return p, q


def precision_recall_curve(
    p: torch.Tensor, q: torch.Tensor, lambdas: Sequence[float] | torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact precision-recall curve of `q` against `p` over a range of trade-off parameters `lambda`.

    `alpha_lambda = sum_x min(lambda * p(x), q(x))` is the precision and `beta_lambda = alpha_lambda / lambda` the
    recall at `lambda`. As `lambda -> inf`, `alpha` tends to the support precision `q(supp p)`; as `lambda -> 0`,
    `beta` tends to the support recall `p(supp q)`. `alpha_1 = beta_1 = 1 - TV(p, q)`.

    Args:
        p (`torch.Tensor` of shape `(num_outcomes,)`): the data distribution.
        q (`torch.Tensor` of shape `(num_outcomes,)`): the model distribution over the same outcomes.
        lambdas (sequence of `float` or `torch.Tensor`, *optional*): positive trade-off values. Defaults to 101
            values `tan(theta)` for `theta` evenly spaced in `(0, pi/2)`.

    Returns:
        A tuple `(lambdas, precision, recall)` of float64 tensors of shape `(num_lambdas,)`.

    Example:
    ```python
    >>> p = torch.tensor([0.5, 0.5, 0.0])
    >>> q = torch.tensor([0.8, 0.0, 0.2])
    >>> lam, precision, recall = precision_recall_curve(p, q, [1.0])
    >>> round(float(precision[0]), 4), round(float(recall[0]), 4)
    (0.5, 0.5)
    ```
    """
    p, q = _check_pair(p, q)
    if lambdas is None:
        theta = torch.linspace(0, torch.pi / 2, 103, dtype=torch.float64, device="cpu")[1:-1]
        lambdas = torch.tan(theta)
    lambdas = torch.as_tensor(lambdas, dtype=torch.float64, device="cpu").reshape(-1)
    if (lambdas <= 0).any() or not torch.isfinite(lambdas).all():
        raise ValueError(f"`lambdas` must be finite and > 0, got {lambdas.tolist()}.")
    precision = torch.minimum(lambdas[:, None] * p[None, :], q[None, :]).sum(dim=1)
    return lambdas, precision, precision / lambdas


def support_precision(p: torch.Tensor, q: torch.Tensor) -> float:
    """Mass the model puts on valid outcomes, `q(supp p)` (higher is better, in `[0, 1]`).

    Example:
    ```python
    >>> round(support_precision(torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.8, 0.0, 0.2])), 6)
    0.8
    ```
    """
    p, q = _check_pair(p, q)
    return round(float(q[p > 0].sum()), 12)


def support_recall(p: torch.Tensor, q: torch.Tensor) -> float:
    """Data mass the model can produce at all, `p(supp q)` (higher is better, in `[0, 1]`).

    Example:
    ```python
    >>> support_recall(torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.8, 0.0, 0.2]))
    0.5
    ```
    """
    p, q = _check_pair(p, q)
    return round(float(p[q > 0].sum()), 12)


def _check_embeddings(name: str, x: torch.Tensor, k: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"`{name}` must be a 2-D tensor (num_samples, dim), got {getattr(x, 'shape', type(x))}.")
    if x.shape[0] <= k:
        raise ValueError(
            f"`{name}` has {x.shape[0]} samples but `k`={k} needs at least k + 1: lower `k` or add samples."
        )
    return x.double()


def _knn_radii(x: torch.Tensor, k: int) -> torch.Tensor:
    """Distance of each row to its k-th nearest *other* row."""
    dist = torch.cdist(x, x)
    return dist.kthvalue(k + 1, dim=1).values  # the 1st smallest is the row itself (distance 0)


def _coverage(points: torch.Tensor, centres: torch.Tensor, radii: torch.Tensor) -> torch.Tensor:
    """1.0 for every point inside at least one ball `(centre, radius)`, else 0.0."""
    return (torch.cdist(points, centres) <= radii[None, :]).any(dim=1).double()


def knn_precision_recall(real: torch.Tensor, generated: torch.Tensor, k: int = 3) -> dict[str, float]:
    """Improved precision and recall (k-nearest-neighbour manifolds) of generated against real embeddings.

    The real manifold is the union of balls around each real embedding with radius its distance to its k-th nearest
    real neighbour; likewise the generated manifold. Precision is the fraction of generated embeddings inside the
    real manifold, recall the fraction of real embeddings inside the generated manifold. Both in `[0, 1]`, higher is
    better.

    Args:
        real (`torch.Tensor` of shape `(num_real, dim)`): embeddings of samples from the data distribution.
        generated (`torch.Tensor` of shape `(num_generated, dim)`): embeddings of model samples.
        k (`int`, *optional*, defaults to `3`): neighbourhood size; each set needs more than `k` rows.

    Returns:
        `dict` with float entries `precision` and `recall`.

    Example:
    ```python
    >>> real = torch.tensor([[0.0], [1.0], [2.0], [3.0]])
    >>> knn_precision_recall(real, torch.tensor([[0.5], [1.5], [2.5], [10.0]]), k=1)
    {'precision': 0.75, 'recall': 1.0}
    ```
    """
    check_int(k, "k")
    real, generated = _check_embeddings("real", real, k), _check_embeddings("generated", generated, k)
    if real.shape[1] != generated.shape[1]:
        raise ValueError(
            f"`real` and `generated` must have the same embedding size, got {real.shape[1]} and {generated.shape[1]}."
        )
    precision = _coverage(generated, real, _knn_radii(real, k)).mean()
    recall = _coverage(real, generated, _knn_radii(generated, k)).mean()
    return {"precision": float(precision), "recall": float(recall)}


def embedding_precision_recall(
    embed: Callable[[list[str]], torch.Tensor], real_texts: Sequence[str], generated_texts: Sequence[str], k: int = 3
) -> dict[str, float]:
    """[`knn_precision_recall`] on texts, embedded by any callable `embed(texts) -> Tensor[num_texts, dim]`.

    The embedding model is the caller's choice (a sentence encoder, mean-pooled hidden states of an LM, ...).

    Example:
    ```python
    >>> embed = lambda texts: torch.tensor([[float(len(t))] for t in texts])
    >>> embedding_precision_recall(embed, ["a", "bb", "ccc"], ["a", "bb", "zzzzzzz"], k=1)
    {'precision': 0.6666666666666666, 'recall': 1.0}
    ```
    """
    if not callable(embed):
        raise TypeError(f"`embed` must be a callable mapping a list of texts to a tensor, got {type(embed).__name__}.")
    real = embed(list(real_texts))
    generated = embed(list(generated_texts))
    for name, value in (("real", real), ("generated", generated)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"`embed` must return a torch.Tensor, got {type(value).__name__} for the {name} texts.")
    return knn_precision_recall(real.detach(), generated.detach(), k=k)
