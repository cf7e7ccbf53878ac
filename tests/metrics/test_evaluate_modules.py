# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import evaluate
import pytest
import torch
from tiny_models import tiny_masked_lm

from hf_seqtemp.likelihood import MaskedDiffusionScorer, schedule_variance
from hf_seqtemp.likelihood.schedule_variance import order_logp_variance
from hf_seqtemp.metrics import available_modules, module_path
from hf_seqtemp.metrics.pass_at_k_math import pass_at_k
from hf_seqtemp.metrics.precision_recall_math import (
    knn_precision_recall,
    precision_recall_curve,
    support_precision,
    support_recall,
)
from hf_seqtemp.models import MaskedLMWrapper

NEW_MODULES = ("knn_precision_recall", "pass_at_k", "precision_recall", "schedule_variance")


def test_new_modules_are_listed_and_the_pure_modules_still_import():
    assert set(NEW_MODULES) <= set(available_modules())
    # the module folders sit next to the pure-function files of the same name: the files must still win on import
    assert callable(pass_at_k) and callable(knn_precision_recall)


def test_pass_at_k_module_equals_mean_of_pure_function():
    n, c = [10, 10, 16, 8], [3, 0, 15, 8]
    got = evaluate.load(module_path("pass_at_k")).compute(num_samples=n, num_correct=c, k=[1, 5, 8])
    for k in (1, 5, 8):
        assert got[f"pass@{k}"] == pytest.approx(sum(pass_at_k(a, b, k) for a, b in zip(n, c)) / len(n))
    assert got["pass@1"] == pytest.approx((0.3 + 0.0 + 15 / 16 + 1.0) / 4)
    single = evaluate.load(module_path("pass_at_k")).compute(num_samples=[4], num_correct=[1])
    assert single == {"pass@1": 0.25}
    with pytest.raises(ValueError, match="`k` \\(9\\) cannot exceed `num_samples` \\(8\\)"):
        evaluate.load(module_path("pass_at_k")).compute(num_samples=n, num_correct=c, k=9)


def test_schedule_variance_module_equals_the_sampled_pure_function():
    adapter = MaskedLMWrapper(tiny_masked_lm(6, seed=0, init_range=0.02, max_positions=512), mask_token_id=5)
    input_ids = torch.tensor([[1, 2, 3, 4], [4, 3, 2, 1]])
    with torch.no_grad():
        logps = MaskedDiffusionScorer(num_orders=6, seed=3).order_logps(adapter, input_ids)
    expected = schedule_variance(adapter, input_ids, num_orders=6, seed=3)  # same seed: the same orders
    got = evaluate.load(module_path("schedule_variance")).compute(order_logps=logps.tolist())
    assert got["schedule_variance"] == pytest.approx(float(expected.mean()), rel=1e-5)
    assert float(expected.mean()) > 0  # a random bidirectional model's likelihood depends on the order


def test_schedule_variance_module_handles_ragged_rows_and_both_divisors():
    rows = [[-1.0, -3.0], [-2.0, -2.0, -2.0], [0.0, -1.0, -2.0, -3.0]]
    metric = evaluate.load(module_path("schedule_variance"))
    assert metric.compute(order_logps=rows)["schedule_variance"] == pytest.approx((2.0 + 0.0 + 5 / 3) / 3)
    biased = metric.compute(order_logps=rows, unbiased=False)["schedule_variance"]
    assert biased == pytest.approx((1.0 + 0.0 + 1.25) / 3)
    assert order_logp_variance(torch.tensor([[1.0, 3.0]])).tolist() == [2.0]


def test_order_logp_variance_errors():
    with pytest.raises(ValueError, match="`order_logps\\[1\\]` holds 1 value"):
        order_logp_variance([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="`order_logps` must be a non-empty"):
        order_logp_variance(torch.ones(3))
    with pytest.raises(ValueError, match="`order_logps` must be a non-empty"):
        order_logp_variance([])


def test_precision_recall_module_equals_the_pure_functions():
    p = [0.4, 0.3, 0.3, 0.0, 0.0]
    q = [0.1, 0.5, 0.0, 0.25, 0.15]
    lambdas = [0.25, 1.0, 4.0]
    got = evaluate.load(module_path("precision_recall")).compute(p=p, q=q, lambdas=lambdas)
    tp, tq = torch.tensor(p, dtype=torch.float64), torch.tensor(q, dtype=torch.float64)
    _, precision, recall = precision_recall_curve(tp, tq, lambdas)
    assert got["support_precision"] == pytest.approx(support_precision(tp, tq)) == pytest.approx(0.6)
    assert got["support_recall"] == pytest.approx(support_recall(tp, tq)) == pytest.approx(0.7)
    assert got["lambdas"] == lambdas
    assert got["precision"] == pytest.approx(precision.tolist())
    assert got["recall"] == pytest.approx(recall.tolist())
    # at lambda = 1 both equal 1 - TV(p, q) = sum min(p, q) = 0.1 + 0.3
    assert got["precision"][1] == pytest.approx(0.4) and got["recall"][1] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="`lambdas` must be finite and > 0"):
        evaluate.load(module_path("precision_recall")).compute(p=p, q=q, lambdas=[0.0])


def test_knn_precision_recall_module_equals_the_pure_function():
    generator = torch.Generator().manual_seed(0)
    real = torch.randn(12, 3, generator=generator, dtype=torch.float64)
    generated = torch.randn(12, 3, generator=generator, dtype=torch.float64) * 2 + 0.5
    got = evaluate.load(module_path("knn_precision_recall")).compute(
        predictions=generated.tolist(), references=real.tolist(), k=2
    )
    assert got == pytest.approx(knn_precision_recall(real, generated, k=2))
    assert 0 < got["precision"] < 1  # a non-trivial case, so a swap of the two sets would be caught
    swapped = knn_precision_recall(generated, real, k=2)
    assert (got["precision"], got["recall"]) != (swapped["precision"], swapped["recall"])
