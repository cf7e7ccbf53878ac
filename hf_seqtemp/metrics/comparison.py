# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Comparing two tempered models per prompt, with the power of the comparison stated.

- [`split_half_noise`]: how much of a per-prompt T_eff error is sampling noise. Each prompt's samples are split in
  two halves; the noise is `|err on one half − err on the other|`, of each prompt's error (`level="prompt"`) or of
  their mean over prompts (`level="mean"`, the figure routes are compared on). A comparison whose difference is not
  well above it cannot tell the routes apart (a tie read from it is no tie).
- [`excess_error`]: the per-prompt T_eff error that sampling noise does not explain. Where a route is (nearly)
  exact, its measured per-prompt error is noise folded by `|·|` and the split-half noise is about twice it at any
  sample size; `excess_error` subtracts the noise's share from the mean square and says whether anything is left.
- [`paired_interval`]: the mean of per-prompt differences and its 95 % percentile bootstrap interval, prompts
  resampled (never sequences: the prompt is the unit).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

import torch

from .core import Groups, per_prompt_effective_temperature


def _per_prompt_errors(ref_logps, policy_logps, groups: Groups, target_temperature: float, caller: str):
    """Each prompt's rows (`{prompt id: [row, ...]}`, at least 4 each: 2 per half, for a slope in each) and the
    function of a subset of rows that gives each prompt's signed relative T_eff error `(T_eff(c) − T) / T` on it."""
    ref = torch.as_tensor(ref_logps, dtype=torch.float64, device="cpu")  # per-prompt slopes: host figures
    policy = torch.as_tensor(policy_logps, dtype=torch.float64, device="cpu")
    ids = groups.tolist() if isinstance(groups, torch.Tensor) else list(groups)
    members: dict = {}
    for index, group in enumerate(ids):
        members.setdefault(group, []).append(index)
    if any(len(rows) < 4 for rows in members.values()):
        raise ValueError(
            f"`{caller}` needs at least 4 sequences of every prompt (2 per half, for a slope in each): "
            f"{min(len(rows) for rows in members.values())} for some prompt. Sample more completions per prompt."
        )

    def errors(rows: list[int]) -> dict:
        values = per_prompt_effective_temperature(ref[rows], policy[rows], [ids[i] for i in rows])
        return {g: (v - target_temperature) / target_temperature for g, v in values.items()}

    return members, errors


def split_half_noise(
    ref_logps: Sequence[float] | torch.Tensor,
    policy_logps: Sequence[float] | torch.Tensor,
    groups: Groups,
    target_temperature: float,
    *,
    level: str = "prompt",
    splits: int = 64,
    seed: int = 0,
) -> float:
    """The split-half noise of the per-prompt T_eff error `|T_eff(c) − T| / T`.

    - `level="prompt"`: the noise of one prompt's error, `|err(c, first half) − err(c, second half)|` averaged over
      prompts, each prompt's sequences split alternately in order of appearance. Where it is as large as the errors,
      each prompt's error is mostly noise (|·| turns noise into error).
    - `level="mean"`: the noise of the figure two routes are compared on, the mean over prompts of err(c):
      `|mean_c err(c, A) − mean_c err(c, B)|` averaged over `splits` random halvings of every prompt's sequences
      (`seed`). About `1/√(number of prompts)` of the prompt-level figure; it says whether two means differ by more
      than their sampling noise.

    A model tempered exactly (log q = log p / T_c + constant within each prompt) has no noise: every half gives its
    T_c. Otherwise the figure is about `2 / √π ≈ 1.13` times the standard deviation of one half's error, i.e. about
    `1.6` times that of the error on all the samples: halve it by sampling four times as many.

    Example:
    ```python
    >>> split_half_noise([-1.0, -2.0, -3.0, -4.0], [-2.0, -4.0, -6.0, -8.0], ["a"] * 4, 0.5)
    0.0
    ```
    """
    if level not in ("prompt", "mean"):
        raise ValueError(f"`level` must be 'prompt' or 'mean', got {level!r}.")
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
        raise ValueError(f"`splits` must be a positive integer (random halvings for level='mean'), got {splits!r}.")
    members, signed = _per_prompt_errors(ref_logps, policy_logps, groups, target_temperature, "split_half_noise")

    def errors(rows: list[int]) -> dict:
        return {g: abs(v) for g, v in signed(rows).items()}

    if level == "prompt":
        halves = [[i for rows in members.values() for i in rows[start::2]] for start in (0, 1)]
        first, second = errors(halves[0]), errors(halves[1])
        return statistics.fmean(abs(first[g] - second[g]) for g in first)
    rng = random.Random(seed)
    gaps = []
    for _ in range(splits):
        halves = [[], []]
        for rows in members.values():
            shuffled = rng.sample(rows, len(rows))
            halves[0] += shuffled[: len(rows) // 2]
            halves[1] += shuffled[len(rows) // 2 :]
        gaps.append(abs(statistics.fmean(errors(halves[0]).values()) - statistics.fmean(errors(halves[1]).values())))
    return statistics.fmean(gaps)


def excess_error(
    ref_logps: Sequence[float] | torch.Tensor,
    policy_logps: Sequence[float] | torch.Tensor,
    groups: Groups,
    target_temperature: float,
) -> dict[str, float]:
    """The root-mean-square per-prompt T_eff error, split into sampling noise and what is left.

    Per prompt c, the measured error `e_c = (T_eff(c) − T) / T` is the true error `b_c` plus sampling noise of
    variance `v_c`, so `E[e_c²] = b_c² + v_c`. `v_c` is estimated from the two halves of the prompt's samples (split
    alternately, as [`split_half_noise`]): `(e_c(A) − e_c(B))² / 4` (the difference of two independent halves has
    twice the variance of one half, which has twice the variance of the whole). Returns
    `{"rms_error": √mean e_c², "rms_noise": √mean v_c, "excess_mean_square": mean(e_c² − v_c),
    "rms_excess": √max(0, excess_mean_square)}`: an `excess_mean_square` at or below 0 says that the per-prompt
    errors are sampling noise (the route is exact within what the samples can show), and then no sample size makes
    the noise small beside the error.

    Example:
    ```python
    >>> out = excess_error([-1.0, -2.0, -3.0, -4.0], [-2.0, -4.0, -6.0, -8.0], ["a"] * 4, 0.4)
    >>> round(out["rms_error"], 6), round(out["rms_noise"], 6), round(out["rms_excess"], 6)  # exact at 0.5
    (0.25, 0.0, 0.25)
    ```
    """
    members, errors = _per_prompt_errors(ref_logps, policy_logps, groups, target_temperature, "excess_error")
    whole = errors([i for rows in members.values() for i in rows])
    first, second = (errors([i for rows in members.values() for i in rows[start::2]]) for start in (0, 1))
    square = statistics.fmean(whole[g] ** 2 for g in members)
    noise = statistics.fmean((first[g] - second[g]) ** 2 / 4 for g in members)
    excess = square - noise
    return {"rms_error": square**0.5, "rms_noise": noise**0.5, "excess_mean_square": excess,
            "rms_excess": max(excess, 0.0) ** 0.5}  # fmt: skip


def paired_interval(differences: Sequence[float], seed: int = 0, replicates: int = 4000) -> list[float]:
    """The 95 % percentile bootstrap interval of the mean of per-prompt `differences` (prompts resampled).

    Example:
    ```python
    >>> low, high = paired_interval([0.1, 0.2, 0.15, 0.12, 0.18])
    >>> 0.1 <= low < high <= 0.2
    True
    ```
    """
    if not differences:
        raise ValueError("`differences` is empty: give one per-prompt difference per prompt.")
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(differences, k=len(differences))) for _ in range(replicates))
    return [means[int(0.025 * replicates)], means[int(0.975 * replicates) - 1]]
