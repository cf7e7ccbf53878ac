# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Unbiased pass@k estimator (Eq. 2 of Fang et al., after Chen et al. 2021): the math behind the `pass_at_k` evaluate
module."""

from __future__ import annotations

from ..checks import check_int


def pass_at_k(num_samples: int, num_correct: int, k: int) -> float:
    """Probability that at least one of `k` samples drawn without replacement from `n` is correct.

    `1 - C(n - c, k) / C(n, k)`, computed as `1 - prod_{i = n - c + 1}^{n} (1 - k / i)`, a product of numbers in
    `[0, 1]` that neither overflows (no binomials) nor cancels; exactly 1 when `n - c < k`.

    Args:
        num_samples (`int`): samples generated for the problem, `n >= 1`.
        num_correct (`int`): how many of them are correct, `0 <= c <= n`.
        k (`int`): budget, `1 <= k <= n`.

    Returns:
        `float` in `[0, 1]`; higher is better. Averaged over problems it estimates pass@k.

    Example:
    ```python
    >>> round(pass_at_k(10, 3, 1), 6), round(pass_at_k(10, 3, 5), 6), pass_at_k(10, 8, 5)
    (0.3, 0.916667, 1.0)
    ```
    """
    n = check_int(num_samples, "num_samples")
    c = check_int(num_correct, "num_correct", 0)
    k = check_int(k, "k")
    if c > n:
        raise ValueError(f"`num_correct` ({c}) cannot exceed `num_samples` ({n}).")
    if k > n:
        raise ValueError(f"`k` ({k}) cannot exceed `num_samples` ({n}); generate at least k samples per problem.")
    if n - c < k:
        return 1.0
    survive = 1.0
    for i in range(n - c + 1, n + 1):
        survive *= 1.0 - k / i
    return 1.0 - survive
