# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Partition-free temperature metrics (Section 5.1 of the paper) as pure tensor functions.

Every function takes per-sequence log-likelihoods on the same sequences, as tensors or lists, and returns plain Python
floats: `ref_logps` is `log p(x)` under the reference (the base model p) and `policy_logps` is `log q(x)` under the
model being measured (TRL's words for the two models).

Prompted models are tempered per prompt (q(x|c) ∝ p(x|c)^{1/T}), so pairs, slopes, ranks and variances are taken
*within* prompt groups: pass `groups=` (one hashable id per sequence, e.g. the prompt). Across prompts log Z_T(c)
differs, and a pooled figure is wrong even for an exactly tempered model. `groups=None` treats all sequences as one
group (an unconditional model, or a single prompt).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import torch

from ..checks import check_temperature, renamed_arguments
from ..groups import group_codes, group_means, require_pairs


def _as_float64(values, name: str) -> torch.Tensor:
    tensor = torch.as_tensor(values, dtype=torch.float64, device="cpu").detach().flatten()
    if not torch.isfinite(tensor).all():
        bad = tensor[~torch.isfinite(tensor)][0].item()
        raise ValueError(f"`{name}` must contain finite log-likelihoods, found {bad}.")
    return tensor


def _paired(ref_logps, policy_logps, minimum: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    ref = _as_float64(ref_logps, "ref_logps")
    policy = _as_float64(policy_logps, "policy_logps")
    if ref.numel() != policy.numel():
        raise ValueError(
            f"`ref_logps` and `policy_logps` must score the same sequences, got {ref.numel()} and "
            f"{policy.numel()} values."
        )
    if ref.numel() < minimum:
        raise ValueError(f"need at least {minimum} sequences to form a pair, got {ref.numel()}.")
    return ref, policy


_RENAMED = renamed_arguments({"base_logp": "ref_logps", "tempered_logp": "policy_logps"}, removal="0.3.0")

Groups = Sequence[Hashable] | torch.Tensor | None


def _centred(ref: torch.Tensor, policy: torch.Tensor, groups: Groups) -> tuple[torch.Tensor, torch.Tensor]:
    codes = group_codes(groups, ref.numel(), device=ref.device)
    if groups is not None:
        require_pairs(codes)
    return ref - group_means(ref, codes), policy - group_means(policy, codes)


@_RENAMED
def effective_temperature(
    ref_logps: Sequence[float] | torch.Tensor, policy_logps: Sequence[float] | torch.Tensor, groups: Groups = None
) -> float:
    """Effective temperature T_eff of Eq. 17: the homogeneous least-squares slope of reference log-ratios on policy
    ones.

    `T_eff = Σ_{x,x'} log(p(x)/p(x')) log(q(x)/q(x')) / Σ_{x,x'} log(q(x)/q(x'))²` over all pairs of the same
    prompt group. Since `Σ_{x,x'∈g} (a_x − a_x')(b_x − b_x') = 2n_g Σ_{x∈g} (a_x − ā_g)(b_x − b̄_g)`, it is computed
    in O(n) from sums centred within groups: `T_eff = Σ_g Σ_{x∈g} (a − ā_g)(b − b̄_g) / Σ_g Σ_{x∈g} (b − b̄_g)²`
    (the groups weighted by their size). A model with `q(·|c) ∝ p(·|c)^{1/T}` has T_eff exactly `T`; the base
    model itself has 1.

    Args:
        ref_logps (`torch.Tensor` or list of `float`, shape `(n,)`): `log p(x)` of the reference (base) model.
        policy_logps (`torch.Tensor` or list of `float`, shape `(n,)`): `log q(x)` of the measured model.
        groups (list of hashables or `torch.Tensor` of shape `(n,)`, *optional*): prompt id of each sequence;
            `None`: one group.

    Returns:
        `float`: T_eff (NaN when `policy_logps` is constant within every group, where the slope is undefined).

    Raises:
        ValueError: when `groups` has the wrong length, or no two sequences share a group.

    Example:
    ```python
    >>> effective_temperature([-1.0, -2.0, -4.0], [-2.0, -4.0, -8.0])
    0.5
    >>> # two prompts with different normalisers: log q = 2 log p + log Z(c)
    >>> effective_temperature([-1.0, -2.0, -1.0, -3.0], [-1.0, -3.0, -5.0, -9.0], groups=["a", "a", "b", "b"])
    0.5
    ```
    """
    ref, policy = _paired(ref_logps, policy_logps)
    ref_c, policy_c = _centred(ref, policy, groups)
    denominator = (policy_c * policy_c).sum().item()
    if denominator == 0.0:
        return math.nan
    return (ref_c * policy_c).sum().item() / denominator


def _rows_by_prompt(groups: Groups, n: int) -> dict:
    """`{prompt id: [row, ...]}` in order of first appearance, one id per sequence."""
    ids = list(groups) if not isinstance(groups, torch.Tensor) else groups.tolist()
    if len(ids) != n:
        raise ValueError(f"`groups` must give one prompt id per sequence: {len(ids)} ids for {n}.")
    members: dict = {}
    for index, group in enumerate(ids):
        members.setdefault(group, []).append(index)
    return members


def per_prompt_effective_temperature(
    ref_logps: Sequence[float] | torch.Tensor, policy_logps: Sequence[float] | torch.Tensor, groups: Groups
) -> dict:
    """T_eff of each prompt alone ([`effective_temperature`] over the pairs of one group): `{prompt id: T_eff}`, in
    order of first appearance. A prompt with fewer than two sequences, or whose `policy_logps` are all equal, has
    no slope: NaN.

    A single scalar (token temperature t) can give the pool the right T_eff while over-tempering some prompts and
    under-tempering others; the target q(x|c) ∝ p(x|c)^{1/T} asks it of every prompt.

    Example:
    ```python
    >>> per_prompt_effective_temperature([-1.0, -2.0, -1.0, -3.0], [-1.0, -3.0, -4.0, -10.0], ["a", "a", "b", "b"])
    {'a': 0.5, 'b': 0.3333333333333333}
    ```
    """
    ref, policy = _paired(ref_logps, policy_logps)
    members = _rows_by_prompt(groups, ref.numel())
    out = {}
    for group, rows in members.items():
        a, b = ref[rows], policy[rows]
        b_c = b - b.mean()
        denominator = (b_c * b_c).sum().item()
        out[group] = ((a - a.mean()) * b_c).sum().item() / denominator if len(rows) > 1 and denominator else math.nan
    return out


def per_prompt_t_eff_error(
    ref_logps: Sequence[float] | torch.Tensor,
    policy_logps: Sequence[float] | torch.Tensor,
    groups: Groups,
    target_temperature: float,
) -> float:
    """Per-prompt fidelity: the mean over prompts of `|T_eff(c) − T| / T`, each prompt's T_eff taken over its own
    sequences ([`per_prompt_effective_temperature`]). 0 for a model tempered exactly at T on every prompt; a model
    whose pooled T_eff is T can still be far from it on each prompt. Prompts without a slope (NaN) are refused.

    With `n` samples per prompt the figure carries estimation noise (each T_eff(c) is a slope over `n` points): state
    it beside the figure, e.g. the same figure for p itself at T = 1, which is 0 without noise.

    Example:
    ```python
    >>> # prompt a tempered at T = 0.5 (error 0), prompt b not at all (T_eff 1: error 1)
    >>> per_prompt_t_eff_error([-1.0, -2.0, -1.0, -3.0], [-2.0, -4.0, -1.0, -3.0], ["a", "a", "b", "b"], 0.5)
    0.5
    ```
    """
    target = check_temperature(target_temperature, "target_temperature")
    values = per_prompt_effective_temperature(ref_logps, policy_logps, groups)
    undefined = [group for group, value in values.items() if math.isnan(value)]
    if undefined:
        raise ValueError(
            f"{len(undefined)} of {len(values)} prompts have no within-prompt slope (one sequence, or the same "
            f"log-likelihood for all; e.g. {undefined[0]!r}): give at least two distinct completions per prompt."
        )
    return sum(abs(value - target) / target for value in values.values()) / len(values)


def _concordance(ref: torch.Tensor, policy: torch.Tensor, chunk_size: int) -> float:
    """`Σ_{i≠j} sgn(a_i − a_j) sgn(b_i − b_j)` over ordered pairs, in row chunks (memory O(chunk_size · n))."""
    total = 0.0
    for start in range(0, ref.numel(), chunk_size):
        sign_ref = torch.sign(ref[start : start + chunk_size, None] - ref[None, :])
        sign_policy = torch.sign(policy[start : start + chunk_size, None] - policy[None, :])
        total += (sign_ref * sign_policy).sum().item()
    return total


@_RENAMED
def kendall_tau(
    ref_logps: Sequence[float] | torch.Tensor,
    policy_logps: Sequence[float] | torch.Tensor,
    chunk_size: int = 2048,
    groups: Groups = None,
) -> float:
    """Kendall's τ-a (Eq. 13) between the rankings of sequences by `p` and by `q`, over distinct pairs of a group.

    `τ = Σ_g Σ_{i<j∈g} sgn(a_i − a_j) sgn(b_i − b_j) / Σ_g n_g(n_g−1)/2`: 1.0 for identical rankings within every
    prompt, −1.0 for reversed ones. Ties count 0, so tied sequences lower |τ|. Computed per group in row chunks, so
    memory is O(chunk_size · n_g).

    Args:
        ref_logps (`torch.Tensor` or list of `float`, shape `(n,)`): `log p(x)` of the reference (base) model.
        policy_logps (`torch.Tensor` or list of `float`, shape `(n,)`): `log q(x)` of the measured model.
        chunk_size (`int`, *optional*, defaults to `2048`): rows compared at once.
        groups (list of hashables or `torch.Tensor` of shape `(n,)`, *optional*): prompt id of each sequence;
            `None`: one group.

    Returns:
        `float` in [−1, 1]; higher means rankings agree more.

    Example:
    ```python
    >>> kendall_tau([-1.0, -2.0, -3.0], [-5.0, -6.0, -9.0])
    1.0
    >>> kendall_tau([-1.0, -2.0, -1.0, -3.0], [-1.0, -3.0, -5.0, -9.0], groups=[0, 0, 1, 1])
    1.0
    ```
    """
    ref, policy = _paired(ref_logps, policy_logps)
    codes = group_codes(groups, ref.numel(), device=ref.device)
    if groups is None:
        return _concordance(ref, policy, chunk_size) / (ref.numel() * (ref.numel() - 1))
    require_pairs(codes)
    concordance, pairs = 0.0, 0
    for code in torch.unique(codes).tolist():
        members = codes == code
        n = int(members.sum())
        if n > 1:
            concordance += _concordance(ref[members], policy[members], chunk_size)
            pairs += n * (n - 1)
    return concordance / pairs


def per_prompt_kendall_tau(
    ref_logps: Sequence[float] | torch.Tensor, policy_logps: Sequence[float] | torch.Tensor, groups: Groups
) -> dict:
    """Kendall τ of each prompt alone ([`kendall_tau`] over the pairs of one group): `{prompt id: τ}`, in order of
    first appearance; NaN for a prompt with fewer than two sequences. Their mean is the pooled τ when every prompt
    has as many sequences; paired over prompts, two routes' τ compare prompt by prompt.

    Example:
    ```python
    >>> per_prompt_kendall_tau([-1.0, -2.0, -3.0, -1.0, -2.0], [-1.0, -3.0, -2.0, -5.0, -9.0], ["a"] * 3 + ["b"] * 2)
    {'a': 0.3333333333333333, 'b': 1.0}
    ```
    """
    ref, policy = _paired(ref_logps, policy_logps, minimum=1)
    members = _rows_by_prompt(groups, ref.numel())
    return {
        group: _concordance(ref[rows], policy[rows], 2048) / (len(rows) * (len(rows) - 1))
        if len(rows) > 1
        else math.nan
        for group, rows in members.items()
    }


def sequence_nll(
    logps: Sequence[float] | torch.Tensor, lengths: Sequence[int] | torch.Tensor | None = None
) -> dict[str, float]:
    """Mean negative log-likelihood per sequence, and per token when `lengths` is given.

    Args:
        logps (`torch.Tensor` or list of `float`, shape `(n,)`): sequence log-likelihoods (sums over tokens).
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
    values = _as_float64(logps, "logps")
    if values.numel() == 0:
        raise ValueError("`logps` is empty: score at least one sequence.")
    result = {"nll_per_sequence": -values.mean().item()}
    if lengths is not None:
        counts = torch.as_tensor(lengths, dtype=torch.float64, device="cpu").flatten()
        if counts.numel() != values.numel():
            raise ValueError(f"`lengths` has {counts.numel()} values but `logps` has {values.numel()}.")
        if (counts <= 0).any():
            raise ValueError(f"`lengths` must be positive token counts, got {counts.min().item():g}.")
        result["nll_per_token"] = -values.sum().item() / counts.sum().item()
    return result


@_RENAMED
def temperature_log_ratio(
    ref_logps: Sequence[float] | torch.Tensor,
    policy_logps: Sequence[float] | torch.Tensor,
    temperature: float,
    groups: Groups = None,
) -> dict[str, object]:
    """Temperature log-ratio `h(x) = log p(x) − T · log q(x)` of Eq. 16, with its mean and within-group variance.

    `q(·|c) ∝ p(·|c)^{1/T}` exactly when `h` is the same for every completion of a prompt (Lemma 5.1, per context),
    so a variance around the group means near 0 means the model is tempered at `T`; the mean of a group is
    `T log Z_T(c)`, not informative on its own.

    Args:
        ref_logps (`torch.Tensor` or list of `float`, shape `(n,)`): `log p(x)` of the reference (base) model.
        policy_logps (`torch.Tensor` or list of `float`, shape `(n,)`): `log q(x)` of the measured model.
        temperature (`float`): the target temperature `T > 0`.
        groups (list of hashables or `torch.Tensor` of shape `(n,)`, *optional*): prompt id of each sequence;
            `None`: one group.

    Returns:
        `dict` with `h` (list of floats), `mean` (over all sequences) and `variance` (population variance of `h`
        around its group means; lower is better).

    Example:
    ```python
    >>> out = temperature_log_ratio([-1.0, -3.0], [-2.0, -6.0], temperature=0.5)
    >>> out["h"], out["variance"]
    ([0.0, 0.0], 0.0)
    ```
    """
    temperature = check_temperature(temperature)
    ref, policy = _paired(ref_logps, policy_logps, minimum=1)
    h = ref - temperature * policy
    codes = group_codes(groups, h.numel(), device=h.device)
    if groups is not None:
        require_pairs(codes)
    centred = h - group_means(h, codes)
    return {"h": h.tolist(), "mean": h.mean().item(), "variance": (centred * centred).mean().item()}
