# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""pass@k against brute force over all k-subsets, stability for large n, errors; the evaluation harness."""

import itertools
import math

import pytest

from hf_seqtemp.evaluation import evaluate_sampler
from hf_seqtemp.metrics.pass_at_k_math import pass_at_k


@pytest.mark.parametrize("n,c,k", [(1, 0, 1), (1, 1, 1), (5, 2, 2), (6, 1, 3), (7, 3, 4), (7, 0, 7), (8, 5, 4)])
def test_matches_subset_enumeration(n, c, k):
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets), abs=1e-12)


def test_stable_for_large_n():
    # C(2000, 1000) overflows a float; the product form stays exact to float precision
    expected = 1 - math.comb(1990, 1000) / math.comb(2000, 1000)
    assert pass_at_k(2000, 10, 1000) == pytest.approx(expected, rel=1e-12)
    assert pass_at_k(10**6, 1, 1) == pytest.approx(1e-6, rel=1e-9)


@pytest.mark.parametrize(
    "args,match",
    [
        ((0, 0, 1), "`num_samples` must be an integer ≥ 1, got 0"),
        ((5, -1, 1), "`num_correct` must be an integer ≥ 0, got -1"),
        ((5, 1, 0), "`k` must be an integer ≥ 1, got 0"),
        ((5, 6, 1), r"`num_correct` \(6\) cannot exceed `num_samples` \(5\)"),
        ((5, 1, 6), r"`k` \(6\) cannot exceed `num_samples` \(5\)"),
        ((5.0, 1, 1), "`num_samples` must be an integer ≥ 1, got 5.0"),
    ],
)
def test_errors(args, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(*args)


def test_harness_reports_pass_at_k_and_distinct_answers():
    answers = {"a": ["x", "y", "y", "z"], "b": ["w", "w", "w", "w"]}
    result = evaluate_sampler(lambda p, n: answers[p][:n], ["a", "b"], lambda p, a: a == "y", 4, ks=(1, 2))
    assert result == pytest.approx({"pass@1": (0.5 + 0.0) / 2, "pass@2": (1 - 1 / 6) / 2, "distinct_answers": 2.0})
    with pytest.raises(ValueError, match="`sample` returned 3 answers, expected `num_samples`=4"):
        evaluate_sampler(lambda p, n: ["x"] * 3, ["a"], lambda p, a: True, 4)
    with pytest.raises(ValueError, match="`problems` must hold at least one problem"):
        evaluate_sampler(lambda p, n: [], [], lambda p, a: True, 4)
