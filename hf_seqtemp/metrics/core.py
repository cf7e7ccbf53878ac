# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Partition-free temperature metrics (Section 5.1 of the paper) as pure tensor functions.

Every function takes per-sequence log-likelihoods (`log p(x)` of the base model, `log q(x)` of the model being
measured) on the same sequences, as tensors or lists, and returns plain Python floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def _as_float64(values, name: str) -> torch.Tensor:
    tensor = torch.as_tensor(values, dtype=torch.float64).detach().cpu().flatten()
    if not torch.isfinite(tensor).all():
        bad = tensor[~torch.isfinite(tensor)][0].item()
        raise ValueError(f"`{name}` must contain finite log-likelihoods, found {bad}.")
    return tensor


def _paired(base_logp, tempered_logp, minimum: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    base = _as_float64(base_logp, "base_logp")
    tempered = _as_float64(tempered_logp, "tempered_logp")
    if base.numel() != tempered.numel():
        raise ValueError(
            f"`base_logp` and `tempered_logp` must score the same sequences, got {base.numel()} and "
            f"{tempered.numel()} values."
        )
    if base.numel() < minimum:
        raise ValueError(f"need at least {minimum} sequences to form a pair, got {base.numel()}.")
    return base, tempered


def effective_temperature(
    base_logp: Sequence[float] | torch.Tensor, tempered_logp: Sequence[float] | torch.Tensor
) -> float:
    """Effective temperature T_eff of Eq. 17: the homogeneous least-squares slope of base log-ratios on tempered ones.

    `T_eff = Σ_{x,x'} log(p(x)/p(x')) log(q(x)/q(x')) / Σ_{x,x'} log(q(x)/q(x'))²` over all pairs. Since
    `Σ_{x,x'} (a_x − a_x')(b_x − b_x') = 2n Σ_x (a_x − ā)(b_x − b̄)`, this is computed in O(n) from centred sums.
    A model with `q ∝ p^{1/T}` has T_eff exactly `T`; the base model itself has 1.

    Args:
        base_logp (`torch.Tensor` or list of `float`, shape `(n,)`): `log p(x)` of the base model.
        tempered_logp (`torch.Tensor` or list of `float`, shape `(n,)`): `log q(x)` of the measured model.

    Returns:
        `float`: T_eff (NaN when every `tempered_logp` is equal, where the slope is undefined).

    Example:
    ```python
    >>> effective_temperature([-1.0, -2.0, -4.0], [-2.0, -4.0, -8.0])
    0.5
    ```
    """
    base, tempered = _paired(base_logp, tempered_logp)
    base_c, tempered_c = base - base.mean(), tempered - tempered.mean()
    denominator = (tempered_c * tempered_c).sum().item()
    if denominator == 0.0:
        return math.nan
    return (base_c * tempered_c).sum().item() / denominator


def kendall_tau(
    base_logp: Sequence[float] | torch.Tensor, tempered_logp: Sequence[float] | torch.Tensor, chunk_size: int = 2048
) -> float:
    """Kendall's τ-a (Eq. 13) between the rankings of sequences by `p` and by `q`, over all distinct pairs.

    `τ = Σ_{i<j} sgn(a_i − a_j) sgn(b_i − b_j) / (n(n−1)/2)`: 1.0 for identical rankings, −1.0 for reversed ones.
    Ties count 0, so tied sequences lower |τ|. Computed in row chunks, so memory is O(chunk_size · n).

    Args:
        base_logp (`torch.Tensor` or list of `float`, shape `(n,)`): `log p(x)` of the base model.
        tempered_logp (`torch.Tensor` or list of `float`, shape `(n,)`): `log q(x)` of the measured model.
        chunk_size (`int`, *optional*, defaults to `2048`): rows compared at once.

    Returns:
        `float` in [−1, 1]; higher means rankings agree more.

    Example:
    ```python
    >>> kendall_tau([-1.0, -2.0, -3.0], [-5.0, -6.0, -9.0])
    1.0
    ```
    """
    base, tempered = _paired(base_logp, tempered_logp)
    n = base.numel()
    concordance = 0.0
    for start in range(0, n, chunk_size):
        sign_base = torch.sign(base[start : start + chunk_size, None] - base[None, :])
        sign_tempered = torch.sign(tempered[start : start + chunk_size, None] - tempered[None, :])
        concordance += (sign_base * sign_tempered).sum().item()
    return concordance / (n * (n - 1))


def sequence_nll(
    logp: Sequence[float] | torch.Tensor, lengths: Sequence[int] | torch.Tensor | None = None
) -> dict[str, float]:
    """Mean negative log-likelihood per sequence, and per token when `lengths` is given.

    Args:
        logp (`torch.Tensor` or list of `float`, shape `(n,)`): sequence log-likelihoods (sums over tokens).
        lengths (`torch.Tensor` or list of `int`, shape `(n,)`, *optional*): number of scored tokens per sequence.

    Returns:
        `dict` with `nll_per_sequence` (mean of −log p(x)) and, with `lengths`, `nll_per_token`
        (Σ −log p(x) / Σ lengths); lower is better.

    Example:
    ```python
    >>> sequence_nll([-2.0, -4.0], lengths=[2, 4])
    {'nll_per_sequence': 3.0, 'nll_per_token': 1.0}
    ```
    """
    values = _as_float64(logp, "logp")
    if values.numel() == 0:
        raise ValueError("`logp` is empty: score at least one sequence.")
    result = {"nll_per_sequence": -values.mean().item()}
    if lengths is not None:
        counts = torch.as_tensor(lengths, dtype=torch.float64).flatten()
        if counts.numel() != values.numel():
            raise ValueError(f"`lengths` has {counts.numel()} values but `logp` has {values.numel()}.")
        if (counts <= 0).any():
            raise ValueError(f"`lengths` must be positive token counts, got {counts.min().item():g}.")
        result["nll_per_token"] = -values.sum().item() / counts.sum().item()
    return result


def temperature_log_ratio(
    base_logp: Sequence[float] | torch.Tensor, tempered_logp: Sequence[float] | torch.Tensor, temperature: float
) -> dict[str, object]:
    """Temperature log-ratio `h(x) = log p(x) − T · log q(x)` of Eq. 16, with its mean and variance.

    `q ∝ p^{1/T}` exactly when `h` is the same for every sequence (Lemma 5.1), so a variance near 0 means the
    model is tempered at `T`; the mean is `−T log Z`, not informative on its own.

    Args:
        base_logp (`torch.Tensor` or list of `float`, shape `(n,)`): `log p(x)` of the base model.
        tempered_logp (`torch.Tensor` or list of `float`, shape `(n,)`): `log q(x)` of the measured model.
        temperature (`float`): the target temperature `T > 0`.

    Returns:
        `dict` with `h` (list of floats), `mean` and `variance` (population variance; lower is better).

    Example:
    ```python
    >>> out = temperature_log_ratio([-1.0, -3.0], [-2.0, -6.0], temperature=0.5)
    >>> out["h"], out["variance"]
    ([0.0, 0.0], 0.0)
    ```
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"`temperature` must be a float > 0, got {type(temperature).__name__}.")
    if not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"`temperature` must be a finite float > 0, got {temperature}.")
    base, tempered = _paired(base_logp, tempered_logp, minimum=1)
    h = base - float(temperature) * tempered
    return {"h": h.tolist(), "mean": h.mean().item(), "variance": h.var(unbiased=False).item()}
