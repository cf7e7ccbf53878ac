# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import itertools
import math

import evaluate
import pytest
import torch
from tiny_models import tiny_causal_lm
from toy import all_sequences, exact_logps

from hf_seqtemp.metrics import (
    available_modules,
    effective_temperature,
    kendall_tau,
    module_path,
    sequence_nll,
    temperature_log_ratio,
)


def _pairs(n):
    return [(i, j) for i, j in itertools.product(range(n), repeat=2) if i != j]


def _t_eff_direct(a, b):
    num = sum((a[i] - a[j]) * (b[i] - b[j]) for i, j in _pairs(len(a)))
    return num / sum((b[i] - b[j]) ** 2 for i, j in _pairs(len(a)))


def _tau_direct(a, b):
    sgn = lambda v: (v > 0) - (v < 0)
    return sum(sgn(a[i] - a[j]) * sgn(b[i] - b[j]) for i, j in _pairs(len(a))) / (len(a) * (len(a) - 1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_agree_with_quadratic_definitions(seed):
    gen = torch.Generator().manual_seed(seed)
    a = (torch.randn(37, generator=gen, dtype=torch.float64) * 3).tolist()
    b = [x * 1.7 + 0.5 * y for x, y in zip(a, torch.randn(37, generator=gen, dtype=torch.float64).tolist())]
    b[3] = b[4]  # a tie
    assert effective_temperature(a, b) == pytest.approx(_t_eff_direct(a, b), rel=1e-12)
    assert kendall_tau(a, b) == pytest.approx(_tau_direct(a, b), abs=1e-12)
    assert kendall_tau(a, b, chunk_size=5) == pytest.approx(_tau_direct(a, b), abs=1e-12)


@pytest.mark.parametrize("temperature", [0.25, 0.5, 2.0])
def test_effective_temperature_is_exact_for_a_hand_tempered_model(temperature):
    """q ∝ p^{1/T}, normalised by brute force over every sequence of a tiny LM, has T_eff = T and τ = 1."""
    logp = exact_logps(tiny_causal_lm(4, seed=5), all_sequences(4, 3))
    logq = logp / temperature - torch.logsumexp(logp / temperature, 0)
    assert effective_temperature(logp, logq) == pytest.approx(temperature, abs=1e-10)
    assert kendall_tau(logp, logq) == pytest.approx(1.0)
    assert temperature_log_ratio(logp, logq, temperature)["variance"] == pytest.approx(0.0, abs=1e-18)
    assert kendall_tau(logp, -logq) == pytest.approx(-1.0)


def test_sequence_nll_and_log_ratio_values():
    assert sequence_nll([-2.0, -4.0]) == {"nll_per_sequence": 3.0}
    assert sequence_nll([-2.0, -4.0], [1, 3]) == {"nll_per_sequence": 3.0, "nll_per_token": 1.5}
    out = temperature_log_ratio([-1.0, -2.0], [-1.0, -3.0], 0.5)
    assert out["h"] == [-0.5, -0.5] and out["mean"] == -0.5 and out["variance"] == 0.0
    assert math.isnan(effective_temperature([1.0, 2.0], [3.0, 3.0]))


def test_metric_errors_name_the_argument():
    with pytest.raises(ValueError, match="must score the same sequences, got 2 and 3"):
        effective_temperature([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 2 sequences"):
        kendall_tau([1.0], [1.0])
    with pytest.raises(ValueError, match="`policy_logps` must contain finite"):
        effective_temperature([1.0, 2.0], [1.0, float("-inf")])
    with pytest.raises(ValueError, match="`logps` is empty"):
        sequence_nll([])
    with pytest.raises(ValueError, match="`lengths` has 1 values"):
        sequence_nll([-1.0, -2.0], [3])
    with pytest.raises(ValueError, match="`lengths` must be positive"):
        sequence_nll([-1.0], [0])
    with pytest.raises(ValueError, match="`temperature` must be a finite float > 0, got -1"):
        temperature_log_ratio([1.0], [1.0], -1.0)
    with pytest.raises(TypeError, match="`temperature` must be a float"):
        temperature_log_ratio([1.0], [1.0], None)
    with pytest.raises(ValueError, match="`name` must be one of"):
        module_path("accuracy")


def test_evaluate_modules_load_offline_and_match_the_pure_functions():
    assert {"effective_temperature", "kendall_tau", "sequence_nll", "temperature_log_ratio"} <= set(
        available_modules()
    )
    base, tempered = [-1.0, -2.5, -4.0, -3.0], [-2.0, -4.0, -9.0, -6.5]
    t_eff = evaluate.load(module_path("effective_temperature")).compute(base_logp=base, tempered_logp=tempered)
    assert t_eff["effective_temperature"] == pytest.approx(effective_temperature(base, tempered))
    tau = evaluate.load(module_path("kendall_tau")).compute(base_logp=base, tempered_logp=tempered)
    assert tau["kendall_tau"] == pytest.approx(kendall_tau(base, tempered))
    nll = evaluate.load(module_path("sequence_nll")).compute(logp=base, lengths=[1, 2, 3, 4])
    assert nll == pytest.approx(sequence_nll(base, [1, 2, 3, 4]))
    h = evaluate.load(module_path("temperature_log_ratio")).compute(
        base_logp=base, tempered_logp=tempered, temperature=0.5
    )
    assert h["h_variance"] == pytest.approx(temperature_log_ratio(base, tempered, 0.5)["variance"])
