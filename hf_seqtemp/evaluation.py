# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Harness: run a sampler on a checkable task and report pass@k and the number of distinct answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .metrics.pass_at_k_math import pass_at_k


def evaluate_sampler(
    sample: Callable[[Any, int], Sequence[Any]],
    problems: Sequence[Any],
    is_correct: Callable[[Any, Any], bool],
    num_samples: int,
    ks: Sequence[int] = (1, 8),
) -> dict[str, float]:
    """Draws `num_samples` answers per problem and averages pass@k (Eq. 2 of Fang et al.) over problems.

    Args:
        sample (`Callable`): `sample(problem, num_samples) -> answers`, one answer per sample (any hashable).
        problems (`Sequence`): the task's problems.
        is_correct (`Callable`): `is_correct(problem, answer) -> bool`.
        num_samples (`int`): `n`, samples per problem; must be `>= max(ks)`.
        ks (`Sequence[int]`, *optional*, defaults to `(1, 8)`): budgets `k` to report.

    Returns:
        `dict` with `pass@{k}` for each `k` and `distinct_answers` (mean number of different answers per problem),
        all plain floats.

    Example:
    ```python
    >>> evaluate_sampler(lambda p, n: [p % 3 + i % 2 for i in range(n)], [0, 1], lambda p, a: a == 1, 4, ks=(1, 2))
    {'pass@1': 0.5, 'pass@2': 0.8333333333333333, 'distinct_answers': 2.0}
    ```
    """
    if not problems:
        raise ValueError("`problems` must hold at least one problem, got an empty sequence.")
    scores = {k: 0.0 for k in ks}
    distinct = 0
    for problem in problems:
        answers = list(sample(problem, num_samples))
        if len(answers) != num_samples:
            raise ValueError(f"`sample` returned {len(answers)} answers, expected `num_samples`={num_samples}.")
        correct = sum(bool(is_correct(problem, answer)) for answer in answers)
        for k in ks:
            scores[k] += pass_at_k(num_samples, correct, k)
        distinct += len(set(answers))
    result = {f"pass@{k}": scores[k] / len(problems) for k in ks}
    result["distinct_answers"] = distinct / len(problems)
    return result
