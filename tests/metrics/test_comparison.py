# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The split-half noise of the per-prompt T_eff error, on toys whose per-prompt sequence temperatures are known,
and the paired interval over prompts."""

from __future__ import annotations

import math
import statistics

import pytest
import torch

from hf_seqtemp.metrics import paired_interval, per_prompt_effective_temperature, split_half_noise


def _toy(temperatures, samples: int, residual: float, seed: int):
    """Per prompt c: log p ~ N(−20, 5²) (long answers spread their log-likelihoods), log q = log p / T_c + a
    prompt's constant + a residual N(0, residual²) that no temperature explains."""
    generator = torch.Generator().manual_seed(seed)
    ref, policy, groups = [], [], []
    for c, t in enumerate(temperatures):
        logp = -20 + 5 * torch.randn(samples, generator=generator, dtype=torch.float64)
        noise = residual * torch.randn(samples, generator=generator, dtype=torch.float64)
        ref.append(logp)
        policy.append(logp / t + 3.0 * c + noise)
        groups += [c] * samples
    return torch.cat(ref), torch.cat(policy), groups


def test_exactly_tempered_prompts_have_no_noise_whatever_their_temperatures():
    ref, policy, groups = _toy([0.3, 0.5, 0.8, 2.0], 32, 0.0, 0)
    assert per_prompt_effective_temperature(ref, policy, groups) == pytest.approx(
        {0: 0.3, 1: 0.5, 2: 0.8, 3: 2.0}, rel=1e-9
    )
    assert split_half_noise(ref, policy, groups, 0.5) == pytest.approx(0.0, abs=1e-9)


def test_the_noise_measures_how_much_the_per_prompt_error_moves_between_independent_samples():
    """200 prompts at T_c = 0.6 scored against T = 0.5 (the error keeps one sign), a residual of 2 nats: the
    split-half noise of one data set of 64 samples per prompt is the mean |err − err'| of two independent data sets
    of 32 samples per prompt, within 10 %; and it scales as 1/√n."""
    temperatures = [0.6] * 200
    ref, policy, groups = _toy(temperatures, 64, 2.0, 1)
    noise = split_half_noise(ref, policy, groups, 0.5)
    first, second = (_toy(temperatures, 32, 2.0, seed) for seed in (2, 3))
    errors = [
        [abs(v - 0.5) / 0.5 for v in per_prompt_effective_temperature(*data).values()] for data in (first, second)
    ]
    independent = statistics.fmean(abs(a - b) for a, b in zip(*errors))
    assert noise == pytest.approx(independent, rel=0.10), (noise, independent)
    four_times = split_half_noise(*_toy(temperatures, 256, 2.0, 4), 0.5)
    assert four_times == pytest.approx(noise / 2, rel=0.15), (four_times, noise)
    assert noise > 0.01  # the toy has noise to see


def test_too_few_samples_per_prompt_are_refused():
    ref, policy, groups = _toy([0.5, 0.5], 3, 1.0, 0)
    with pytest.raises(ValueError, match="at least 4 sequences of every prompt"):
        split_half_noise(ref, policy, groups, 0.5)


def test_the_paired_interval_covers_the_mean_difference_and_shrinks_with_prompts():
    generator = torch.Generator().manual_seed(0)
    few = (0.05 + 0.02 * torch.randn(16, generator=generator)).tolist()
    many = (0.05 + 0.02 * torch.randn(256, generator=generator)).tolist()
    (low, high), (low_many, high_many) = paired_interval(few), paired_interval(many)
    assert low < statistics.fmean(few) < high and low_many < 0.05 < high_many
    assert (high_many - low_many) < (high - low) / 2
    assert high - low == pytest.approx(2 * 1.96 * statistics.stdev(few) / math.sqrt(16), rel=0.3)


def test_the_noise_of_the_mean_is_how_much_the_mean_error_moves_between_independent_samples():
    """16 prompts at known temperatures T_c (0.45-0.6) scored against T = 0.5, 64 samples each: the mean-level
    split-half noise of one data set is the mean |F − F'| of the mean error F over pairs of independent data sets
    of 32 samples per prompt (within 12 %; both averaged over enough data sets to hold 4 %), and about 1/√16 of the prompt-level noise."""
    temperatures = [0.45 + 0.01 * c for c in range(16)]
    noise = statistics.fmean(
        split_half_noise(*_toy(temperatures, 64, 2.0, seed), 0.5, level="mean", splits=16) for seed in range(32)
    )

    def mean_error(seed: int) -> float:
        return statistics.fmean(
            abs(v - 0.5) / 0.5 for v in per_prompt_effective_temperature(*_toy(temperatures, 32, 2.0, seed)).values()
        )

    independent = statistics.fmean(abs(mean_error(100 + 2 * k) - mean_error(101 + 2 * k)) for k in range(500))
    assert noise == pytest.approx(independent, rel=0.12), (noise, independent)
    per_prompt = split_half_noise(*_toy(temperatures, 64, 2.0, 0), 0.5)
    assert 0.15 < noise / per_prompt < 0.40, (noise, per_prompt)


def test_bad_levels_and_splits_are_refused():
    ref, policy, groups = _toy([0.5, 0.5], 8, 1.0, 0)
    with pytest.raises(ValueError, match="`level` must be 'prompt' or 'mean'"):
        split_half_noise(ref, policy, groups, 0.5, level="prompts")
    with pytest.raises(ValueError, match="`splits` must be a positive integer"):
        split_half_noise(ref, policy, groups, 0.5, level="mean", splits=0)


def _unbiased_toy(temperatures, samples: int, residual: float, seed: int):
    """Per prompt c: log q ~ N(−40, 10²) and log p = T_c · log q + a residual N(0, residual²): the residual is in the
    regressand of T_eff's slope, so each prompt's T_eff is T_c plus zero-mean sampling noise (a residual in log q
    instead would also bias the slope towards 0)."""
    generator = torch.Generator().manual_seed(seed)
    ref, policy, groups = [], [], []
    for c, t in enumerate(temperatures):
        logq = -40 + 10 * torch.randn(samples, generator=generator, dtype=torch.float64)
        ref.append(t * logq + residual * torch.randn(samples, generator=generator, dtype=torch.float64))
        policy.append(logq + 3.0 * c)
        groups += [c] * samples
    return torch.cat(ref), torch.cat(policy), groups


def test_the_excess_error_is_what_the_noise_does_not_explain():
    """Per-prompt temperatures known: a route exact at T has per-prompt errors that are only noise (the excess reads
    about 0 while the raw error and the split-half noise do not), and a route off by a known relative error on every
    prompt reads that error back."""
    from hf_seqtemp.metrics import excess_error

    # 256 prompts: over seeds 0-11 the exact route's excess read at most 0.45 of its raw error, the shifted one's
    # 0.092-0.102
    exact = excess_error(*_unbiased_toy([0.5] * 256, 128, 2.0, 5), 0.5)
    assert exact["rms_error"] > 0.02 and exact["rms_noise"] > 0.02  # noise to see
    assert exact["rms_excess"] < 0.6 * exact["rms_error"], exact
    off = [0.5 * (1 + (0.1 if c % 2 else -0.1)) for c in range(256)]  # |error| 0.1 on every prompt
    shifted = excess_error(*_unbiased_toy(off, 128, 2.0, 6), 0.5)
    assert shifted["rms_excess"] == pytest.approx(0.1, rel=0.1), shifted
    noiseless = excess_error(*_unbiased_toy(off, 16, 0.0, 7), 0.5)
    assert noiseless["rms_noise"] == pytest.approx(0.0, abs=1e-9)
    assert noiseless["rms_excess"] == pytest.approx(0.1, rel=1e-6)
    biased = excess_error(*_toy([0.5] * 64, 128, 2.0, 5), 0.5)  # a residual in log q biases the slope: seen
    assert biased["rms_excess"] > 0.5 * biased["rms_error"]
    with pytest.raises(ValueError, match="at least 4 sequences of every prompt"):
        excess_error(*_toy([0.5, 0.5], 3, 1.0, 0), 0.5)
