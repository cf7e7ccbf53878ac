# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Goodness-of-fit checks of samplers against exact, enumerated target distributions."""

from __future__ import annotations

import torch


def chi_square_pvalue(
    counts: torch.Tensor, probs: torch.Tensor, min_expected: float = 5.0
) -> tuple[float, float, int]:
    """Pearson's chi-square test of observed `counts` against the exact distribution `probs` over the same cells.

    Cells whose expected count `n * p` is below `min_expected` are pooled into one cell (the usual validity rule of
    the chi-square approximation); the p-value is the chi-square survival function `Q(df / 2, X^2 / 2)` with
    `df = cells - 1`. Returns `(statistic, p_value, df)`.

    A test asserts `p_value > 1e-3`: a correct sampler fails with probability 1e-3 (once per thousand seeds), and
    the tolerance on the frequencies shrinks as `1 / sqrt(n)` with the sample size `n`.
    """
    counts, probs = counts.double().flatten(), probs.double().flatten()
    n = counts.sum()
    expected = n * probs / probs.sum()
    small = expected < min_expected
    obs = torch.cat([counts[~small], counts[small].sum().view(1)])
    exp = torch.cat([expected[~small], expected[small].sum().view(1)])
    keep = exp > 0
    if (obs[~keep] > 0).any():
        return float("inf"), 0.0, int(keep.sum()) - 1  # a sample where the target has no mass
    obs, exp = obs[keep], exp[keep]
    statistic = ((obs - exp) ** 2 / exp).sum()
    df = obs.numel() - 1
    p_value = torch.special.gammaincc(torch.tensor(df / 2.0, dtype=torch.float64), statistic / 2.0)
    return float(statistic), float(p_value), df


def total_variation(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """`0.5 * sum |counts / n - probs|`."""
    counts, probs = counts.double().flatten(), probs.double().flatten()
    return 0.5 * float((counts / counts.sum() - probs / probs.sum()).abs().sum())


def plug_in_kl(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """KL(empirical || target); its noise floor for a correct sampler is about `(cells - 1) / (2 n)`."""
    counts, probs = counts.double().flatten(), probs.double().flatten()
    empirical = counts / counts.sum()
    seen = empirical > 0
    return float((empirical[seen] * (empirical[seen] / probs[seen]).log()).sum())


def cell_counts(completions: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """How often each row of `cells` (shape `(K, L)`) occurs among the rows of `completions` (shape `(n, L)`)."""
    match = (completions[:, None, :] == cells[None, :, :]).all(dim=-1)
    if not bool((match.sum(dim=1) == 1).all()):
        raise AssertionError("a sampled completion is not among the enumerated cells")
    return match.sum(dim=0)
