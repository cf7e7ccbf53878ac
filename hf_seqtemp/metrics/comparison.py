# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Comparing two tempered models per prompt, with the power of the comparison stated.

- [`split_half_noise`]: how much of a per-prompt T_eff error is sampling noise. Each prompt's samples are split in
  two halves (alternately, in order); the noise is the mean over prompts of `|err(c) on one half − err(c) on the
  other|`. A comparison whose difference is not well above it cannot tell the routes apart (a tie read from it is
  no tie).
- [`paired_interval`]: the mean of per-prompt differences and its 95 % percentile bootstrap interval, prompts
  resampled (never sequences: the prompt is the unit).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

import torch

from .core import Groups, per_prompt_effective_temperature


def split_half_noise(
    ref_logps: Sequence[float] | torch.Tensor,
    policy_logps: Sequence[float] | torch.Tensor,
    groups: Groups,
    target_temperature: float,
) -> float:
    """The split-half noise of the per-prompt T_eff error `|T_eff(c) − T| / T`: its mean over prompts of
    `|err(c, first half) − err(c, second half)|`, each prompt's sequences split alternately in order of appearance.

    A model tempered exactly (log q = log p / T_c + constant within each prompt) has no noise: every half gives its
    T_c. Otherwise the figure is about `2 / √π ≈ 1.13` times the standard deviation of one half's error, i.e. about
    `1.6` times that of the error on all the samples: halve it by sampling four times as many.

    Example:
    ```python
    >>> split_half_noise([-1.0, -2.0, -3.0, -4.0], [-2.0, -4.0, -6.0, -8.0], ["a"] * 4, 0.5)
    0.0
    ```
    """
    ref = torch.as_tensor(ref_logps, dtype=torch.float64, device="cpu")  # per-prompt slopes: host figures
    policy = torch.as_tensor(policy_logps, dtype=torch.float64, device="cpu")
    ids = groups.tolist() if isinstance(groups, torch.Tensor) else list(groups)
    halves: list[list[int]] = [[], []]
    seen: dict = {}
    for index, group in enumerate(ids):
        seen[group] = seen.get(group, 0) + 1
        halves[seen[group] % 2].append(index)
    if any(count < 4 for count in seen.values()):
        raise ValueError(
            "`split_half_noise` needs at least 4 sequences of every prompt (2 per half, for a slope in each): "
            f"{min(seen.values())} for some prompt. Sample more completions per prompt."
        )
    errors = []
    for rows in halves:
        values = per_prompt_effective_temperature(ref[rows], policy[rows], [ids[i] for i in rows])
        errors.append({g: abs(v - target_temperature) / target_temperature for g, v in values.items()})
    return statistics.fmean(abs(errors[0][g] - errors[1][g]) for g in errors[0])


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
