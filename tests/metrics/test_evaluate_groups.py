# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`groups` reaches the grouped `evaluate` modules through `add`, `add_batch` and `evaluate.combine` as through
`compute`: evaluate takes input names from the first feature set only."""

import evaluate
import pytest
import torch

from hf_seqtemp.metrics import module_path
from hf_seqtemp.metrics.core import effective_temperature, kendall_tau, temperature_log_ratio

GROUPED = ("effective_temperature", "kendall_tau", "temperature_log_ratio")
# three prompts with different normalisers; within a prompt log q = 2 log p + c(prompt) + noise
REF = [-1.0, -2.5, -4.0, -0.5, -3.0, -1.5, -6.0, -2.0, -2.2]
POLICY = [-3.0, -6.1, -8.8, 1.0, -3.9, -1.0, -20.0, -12.1, -12.0]
GROUPS = [7, 7, 7, "b", "b", "b", 3, 3, 3]


def _expected(name):
    text = [str(g) for g in GROUPS]
    if name == "effective_temperature":
        return {name: effective_temperature(REF, POLICY, groups=text)}
    if name == "kendall_tau":
        return {name: kendall_tau(REF, POLICY, groups=text)}
    out = temperature_log_ratio(REF, POLICY, 0.5, groups=text)
    return {"h_mean": out["mean"], "h_variance": out["variance"]}


def _extra(name):
    return {"temperature": 0.5} if name == "temperature_log_ratio" else {}


@pytest.mark.parametrize("name", GROUPED)
def test_add_batch_and_add_with_groups_equal_compute_with_groups(name):
    metric = evaluate.load(module_path(name))
    expected = _expected(name)
    assert metric.compute(base_logp=REF, tempered_logp=POLICY, groups=GROUPS, **_extra(name)) == pytest.approx(
        expected
    )
    pooled = metric.compute(base_logp=REF, tempered_logp=POLICY, **_extra(name))
    assert pooled != pytest.approx(expected)  # the grouped figure differs from the pooled one, so the checks can fail
    for start in (0, 4):  # batches that split a prompt group
        stop = start + 4 if start == 0 else len(REF)
        metric.add_batch(base_logp=REF[start:stop], tempered_logp=POLICY[start:stop], groups=GROUPS[start:stop])
    assert metric.compute(**_extra(name)) == pytest.approx(expected)
    for ref, policy, group in zip(REF, POLICY, GROUPS):
        metric.add(base_logp=ref, tempered_logp=policy, groups=group)
    assert metric.compute(**_extra(name)) == pytest.approx(expected)
    metric.add_batch(base_logp=REF, tempered_logp=POLICY, groups=torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2]))
    assert metric.compute(**_extra(name)) == pytest.approx(expected)
    metric.add_batch(base_logp=REF, tempered_logp=POLICY)  # no groups: one group, as `compute` without them
    assert metric.compute(**_extra(name)) == pytest.approx(pooled)


def test_combine_passes_groups_to_every_module():
    combined = evaluate.combine([module_path("effective_temperature"), module_path("kendall_tau")])
    combined.add_batch(base_logp=REF[:5], tempered_logp=POLICY[:5], groups=GROUPS[:5])
    combined.add_batch(base_logp=REF[5:], tempered_logp=POLICY[5:], groups=GROUPS[5:])
    expected = {**_expected("effective_temperature"), **_expected("kendall_tau")}
    assert combined.compute() == pytest.approx(expected)
    assert combined.compute(base_logp=REF, tempered_logp=POLICY, groups=GROUPS) == pytest.approx(expected)


def test_partly_missing_groups_are_refused():
    metric = evaluate.load(module_path("kendall_tau"))
    metric.add(base_logp=-1.0, tempered_logp=-2.0, groups="a")
    metric.add(base_logp=-2.0, tempered_logp=-3.0)
    with pytest.raises(ValueError, match="`groups` is missing for 1 of 2 sequences"):
        metric.compute()


def test_sequence_nll_has_a_citation():
    assert "Temperature Scaling" in evaluate.load(module_path("sequence_nll")).citation
