# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import itertools

import pytest
import torch

from hf_seqtemp.metrics.precision_recall_math import (
    embedding_precision_recall,
    knn_precision_recall,
    precision_recall_curve,
    support_precision,
    support_recall,
)

P = torch.tensor([0.5, 0.3, 0.2, 0.0, 0.0], dtype=torch.float64)
Q = torch.tensor([0.1, 0.0, 0.4, 0.3, 0.2], dtype=torch.float64)


def test_curve_matches_hand_computation_and_limits():
    _, precision, recall = precision_recall_curve(P, Q, [0.5, 1.0, 2.0])
    # lambda=0.5: min(.25,.1)+min(.15,0)+min(.1,.4) = 0.2 ; lambda=1: .1+0+.2 = .3 ; lambda=2: .1+0+.4 = .5
    torch.testing.assert_close(precision, torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64))
    torch.testing.assert_close(recall, torch.tensor([0.4, 0.3, 0.25], dtype=torch.float64))
    tv = 0.5 * (P - Q).abs().sum()
    assert abs(float(precision[1]) - (1 - float(tv))) < 1e-9
    _, precision_inf, _ = precision_recall_curve(P, Q, [1e9])
    _, _, recall_zero = precision_recall_curve(P, Q, [1e-9])
    assert abs(float(precision_inf[0]) - support_precision(P, Q)) < 1e-8
    assert abs(float(recall_zero[0]) - support_recall(P, Q)) < 1e-8
    assert support_precision(P, Q) == pytest.approx(0.5) and support_recall(P, Q) == pytest.approx(0.7)


def test_default_lambdas_are_monotone_curve():
    lam, precision, recall = precision_recall_curve(P, Q)
    assert lam.shape == (101,) and (lam.diff() > 0).all()
    assert (precision.diff() >= -1e-12).all() and (recall.diff() <= 1e-12).all()


def _brute_knn(real, gen, k):
    def radius(points, i):
        return sorted(float((points[i] - points[j]).norm()) for j in range(len(points)) if j != i)[k - 1]

    prec = sum(any(float((g - r).norm()) <= radius(real, i) for i, r in enumerate(real)) for g in gen) / len(gen)
    rec = sum(any(float((r - g).norm()) <= radius(gen, i) for i, g in enumerate(gen)) for r in real) / len(real)
    return prec, rec


@pytest.mark.parametrize("k", [1, 2, 4])
def test_knn_matches_brute_force(k):
    g = torch.Generator().manual_seed(k)
    real = torch.randn(12, 3, generator=g)
    gen = torch.randn(9, 3, generator=g) * 1.5 + 0.7
    out = knn_precision_recall(real, gen, k=k)
    prec, rec = _brute_knn(real.double(), gen.double(), k)
    assert out["precision"] == pytest.approx(prec) and out["recall"] == pytest.approx(rec)


def test_knn_detects_mode_collapse():
    real = torch.tensor([[float(i), float(j)] for i, j in itertools.product(range(5), range(5))])
    collapsed = real[:5] + 0.01
    out = knn_precision_recall(real, collapsed, k=2)
    assert out["precision"] == 1.0 and out["recall"] < 0.5


def test_embedding_helper_uses_callable():
    embed = lambda texts: torch.tensor([[float(len(t)), float(t.count("a"))] for t in texts])
    out = embedding_precision_recall(embed, ["a", "ab", "abc", "aaaa"], ["a", "ab", "abc", "aaaa"], k=1)
    assert out == {"precision": 1.0, "recall": 1.0}


def test_errors():
    with pytest.raises(ValueError, match="sum to 1"):
        support_precision(torch.tensor([0.5, 0.2]), torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="1-D tensor"):
        support_recall(torch.ones(2, 2) / 4, torch.ones(2, 2) / 4)
    with pytest.raises(ValueError, match="same outcomes"):
        support_recall(torch.tensor([1.0]), torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="`lambdas` must be finite"):
        precision_recall_curve(P, Q, [0.0])
    with pytest.raises(ValueError, match="`k` must be an integer ≥ 1"):
        knn_precision_recall(torch.zeros(3, 1), torch.zeros(3, 1), k=0)
    with pytest.raises(ValueError, match="needs at least k"):
        knn_precision_recall(torch.zeros(2, 1), torch.zeros(3, 1), k=2)
    with pytest.raises(ValueError, match="2-D tensor"):
        knn_precision_recall(torch.zeros(3), torch.zeros(3, 1), k=1)
    with pytest.raises(ValueError, match="same embedding size"):
        knn_precision_recall(torch.zeros(3, 1), torch.zeros(3, 2), k=1)
    with pytest.raises(TypeError, match="`embed` must be a callable"):
        embedding_precision_recall("model", ["a"], ["b"])
    with pytest.raises(TypeError, match="must return a torch.Tensor"):
        embedding_precision_recall(lambda t: [[0.0]] * len(t), ["a", "b"], ["b", "c"], k=1)
