# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The token-temperature search says the truth where T cannot be reached (exact answers round 2): its hint was
"widen low/high" even where T_eff(t) peaks below T (at 1.03 on a toy, so T = 2 is out of reach at any t)."""

from __future__ import annotations

import math

import pytest

from hf_seqtemp.audit.grid import tune_token_temperature


def _peaked(t: float) -> float:
    return 1.03 * math.exp(-((math.log(t)) ** 2) / 2)  # T_eff(t): rises to 1.03 at t = 1, then falls


def test_a_target_above_the_peak_is_said_to_be_out_of_reach_not_out_of_range():
    with pytest.raises(
        ValueError,
        match=r"T_eff\(t\) peaks at [01]\.\d+ \(t = .*\) and falls beyond it, so no token "
        r"temperature reaches T = 2.*Train an adapter",
    ):
        tune_token_temperature(_peaked, 2.0)


def test_a_target_still_ahead_at_the_range_end_asks_for_a_wider_range():
    with pytest.raises(ValueError, match=r"T_eff is still rising at t = 4: raise `high` above 4"):
        tune_token_temperature(lambda t: 0.1 * t, 2.0, high=4.0)
    with pytest.raises(ValueError, match=r"T_eff is still above T at t = 0.05: lower `low` below 0.05"):
        tune_token_temperature(lambda t: 10 * t, 0.25)


def test_a_target_inside_a_peaked_range_is_found_on_the_rising_side():
    """Both ends of the range read below T = 0.9 (0.0116 at 0.05, 0.394 at 4): the scan inside finds the crossing,
    on the rising side, where a token temperature first gives T."""
    out = tune_token_temperature(_peaked, 0.9, high=4.0)
    assert _peaked(out["token_temperature"]) == pytest.approx(0.9, rel=0.01) and out["token_temperature"] < 1.0
