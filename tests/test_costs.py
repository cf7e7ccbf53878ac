# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Paired cost comparisons (`hf_seqtemp.costs`): the verdict on the median, the alternation, the tensor peak."""

from __future__ import annotations

import pytest
import torch

from hf_seqtemp import costs


def test_paired_summary_on_known_ratios():
    s = costs.summarise([1.30, 0.95, 1.02, 1.08, 5.0], target=1.05)
    assert (s["median"], s["min"], s["max"], s["n"], s["verdict"]) == (1.08, 0.95, 5.0, 5, "not met")
    # one load spike cannot flip the verdict: the median ignores it
    assert costs.summarise([1.01, 0.99, 9.0], target=1.05)["verdict"] == "met"
    assert costs.summarise([2.0, 1.0], target=1.5)["median"] == 1.5  # even count: mean of the middle two
    assert costs.summarise([1.5], target=1.5)["verdict"] == "met"  # the target itself is met
    assert costs.summarise([3.0], target=None)["verdict"] == "no target"
    with pytest.raises(ValueError, match="`ratios` must hold at least one"):
        costs.summarise([], target=1.0)


def test_time_pairs_alternates_and_divides_ours_by_the_baseline(monkeypatch):
    clock, calls = [0.0], []
    monkeypatch.setattr(costs.time, "perf_counter", lambda: clock[0])

    def side(name, seconds):
        def run():
            calls.append(name)
            clock[0] += seconds

        return run

    out = costs.time_pairs(side("A", 2.0), side("B", 3.0), torch.device("cpu"), warmup=1, pairs=3)
    assert calls == ["A", "B"] * 4
    assert out["baseline_s"] == [2.0] * 3 and out["ours_s"] == [3.0] * 3
    assert out["ratios"] == [1.5] * 3
    seconds = costs.time_round_robin({"x": side("x", 1.0), "y": side("y", 4.0)}, torch.device("cpu"), 0, 2)
    assert costs.ratios_by_round(seconds, ours="y", baseline="x") == [4.0, 4.0]


def test_tensor_peak_is_the_peak_of_live_tensors_allocated_in_the_call():

    def work():
        x = torch.ones(16 * 2**18)  # 16 MiB
        y = x * 2  # +16 MiB: peak 32 MiB
        del x
        z = torch.ones(8 * 2**18)  # 16 + 8 MiB live
        return float(y[0] + z[0])

    peak = costs.tensor_peak(work, torch.device("cpu"))["peak_mib"]
    assert 32.0 <= peak < 32.1, peak
