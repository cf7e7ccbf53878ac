# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import evaluate
import pytest
import torch
from conditional_toy import completion_logps, draw, entropies, enumerate_completions
from tiny_models import conditional_lm

from hf_seqtemp.metrics import effective_temperature, kendall_tau, module_path, temperature_log_ratio


def _tempered_by_hand(ref: torch.Tensor, groups: torch.Tensor, temperature: float) -> torch.Tensor:
    """log q(x|c) = log p(x|c)/T − log Z_T(c), normalised over each prompt's enumerated completions."""
    out = ref / temperature
    for g in torch.unique(groups):
        out[groups == g] -= torch.logsumexp(out[groups == g], 0)
    return out


@pytest.fixture(scope="module")
def oracle():
    model = conditional_lm(4)
    ids, groups = enumerate_completions(4, 3)
    ref = completion_logps(model, ids, prompt_length=2)
    spread = entropies(ref, groups)
    assert max(spread) - min(spread) > 1.0, spread  # the prompts' conditionals differ in entropy
    return ref, groups


def _evaluation_set(ref, groups, temperature):
    """6 distinct samples of p per prompt, as an evaluation set is; log q normalised exactly over all completions."""
    picked = draw(ref, groups, 6, seed=1)
    return ref[picked], _tempered_by_hand(ref, groups, temperature)[picked], groups[picked]


@pytest.mark.parametrize("temperature", [0.25, 0.5, 2.0])
def test_within_prompt_metrics_are_exact_for_a_hand_tempered_conditional_model(oracle, temperature):
    ref, tempered, groups = _evaluation_set(*oracle, temperature)
    assert effective_temperature(ref, tempered, groups=groups.tolist()) == pytest.approx(temperature, rel=1e-9)
    assert kendall_tau(ref, tempered, groups=[f"prompt {g}" for g in groups.tolist()]) == 1.0
    assert temperature_log_ratio(ref, tempered, temperature, groups=groups)["variance"] == pytest.approx(0, abs=1e-18)
    # pooled over prompts, log Z_T(c) leaks in and the same perfect model fails
    assert abs(effective_temperature(ref, tempered) / temperature - 1) > 0.05
    assert kendall_tau(ref, tempered) < 0.93
    assert temperature_log_ratio(ref, tempered, temperature)["variance"] > 0.01


def test_groups_of_the_wrong_length_or_without_pairs_are_errors_naming_the_fix(oracle):
    ref, _ = oracle
    with pytest.raises(ValueError, match=r"`groups` must hold one id per sequence: got 3 ids for 256"):
        effective_temperature(ref, ref, groups=[0, 1, 2])
    with pytest.raises(ValueError, match=r"group of its own.*at least two completions per prompt"):
        kendall_tau(ref[:3], ref[:3], groups=[0, 1, 2])
    with pytest.raises(TypeError, match="one id per sequence"):
        temperature_log_ratio(ref[:2], ref[:2], 0.5, groups="ab")


def test_evaluate_modules_accept_a_groups_column(oracle):
    ref, tempered, groups = _evaluation_set(*oracle, 0.5)
    inputs = {"base_logp": ref.tolist(), "tempered_logp": tempered.tolist(), "groups": groups.tolist()}
    t_eff = evaluate.load(module_path("effective_temperature")).compute(**inputs)["effective_temperature"]
    tau = evaluate.load(module_path("kendall_tau")).compute(**inputs)["kendall_tau"]
    ratio = evaluate.load(module_path("temperature_log_ratio")).compute(**inputs, temperature=0.5)
    assert t_eff == pytest.approx(0.5, rel=1e-9) and tau == 1.0
    assert ratio["h_variance"] == pytest.approx(0, abs=1e-12)
    pooled = evaluate.load(module_path("effective_temperature")).compute(
        base_logp=ref.tolist(), tempered_logp=tempered.tolist()
    )
    assert abs(pooled["effective_temperature"] - 0.5) > 0.025


def test_former_keyword_names_still_work_with_a_future_warning():
    with pytest.warns(FutureWarning, match="`base_logp` is renamed `ref_logps`"):
        value = effective_temperature(base_logp=[-1.0, -2.0, -4.0], tempered_logp=[-2.0, -4.0, -8.0])
    assert value == 0.5
    with pytest.raises(TypeError, match="pass `ref_logps` only"):
        kendall_tau([-1.0, -2.0], base_logp=[-1.0, -2.0], ref_logps=[-1.0, -2.0])


def test_per_prompt_kendall_tau_counts_each_prompts_pairs_alone():
    """Three prompts of different sizes, interleaved: each prompt's τ is its own concordant minus discordant pairs
    over its pairs (brute force), ties count 0, and a one-sequence prompt has none (NaN)."""
    import itertools
    import math

    from hf_seqtemp.metrics import per_prompt_kendall_tau

    generator = torch.Generator().manual_seed(3)
    groups = ["c", "a", "b", "a", "c", "a", "b", "a", "c", "d", "b", "a"]
    ref = torch.randn(len(groups), generator=generator).round(decimals=1)
    policy = (ref + torch.randn(len(groups), generator=generator)).round(decimals=1)
    policy[3] = policy[1]  # a tie within prompt a

    def brute(rows):
        signs = [
            torch.sign(ref[i] - ref[j]).item() * torch.sign(policy[i] - policy[j]).item()
            for i, j in itertools.combinations(rows, 2)
        ]
        return sum(signs) / len(signs)

    got = per_prompt_kendall_tau(ref, policy, groups)
    assert list(got) == ["c", "a", "b", "d"]  # order of first appearance
    for group in ("a", "b", "c"):
        assert got[group] == pytest.approx(brute([i for i, g in enumerate(groups) if g == group]), abs=1e-12)
    assert math.isnan(got["d"])
    assert len({got[g] for g in "abc"}) > 1  # the prompts differ: a pooled figure would hide it
