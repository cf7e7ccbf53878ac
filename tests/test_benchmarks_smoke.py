# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What the benchmarks compare must be the same quantity, and their statistics right: tiny models, never timed."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import torch
from scripts import load_script
from tiny_models import tiny_default_llama

from hf_seqtemp.likelihood import AutoregressiveScorer

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    return load_script(BENCHMARKS / f"{name}.py", f"bench_{name}", on_path=True)  # they import `_common`, ...


def _tiny_llama(vocab: int = 11):
    return tiny_default_llama(vocab, seed=0)


def _brute_force(model, seq: torch.Tensor) -> float:
    """log p(x_2..x_n | x_1) from the prefix conditionals, one prefix at a time."""
    total = 0.0
    with torch.no_grad():
        for i in range(1, len(seq)):
            logits = model(input_ids=seq[None, :i]).logits[0, -1].double()
            total += float(logits.log_softmax(-1)[seq[i]])
    return total


def test_scoring_ways_agree_with_brute_force_on_a_padded_batch():
    scoring = _load("scoring")
    model = _tiny_llama()
    ids, attn = scoring.make_batch(11, num_seqs=5, min_len=2, max_len=7)
    assert len(set(attn.sum(1).tolist())) > 1  # padding is exercised
    out = {}
    with torch.no_grad():
        for fn in scoring.scoring_ways(model, ids, attn, out).values():
            fn()
    oracle = torch.tensor([_brute_force(model, row[: int(n)]) for row, n in zip(ids, attn.sum(1))])
    for way in ("scorer", "trl_selective", "trl_fused", "full_fp32"):
        torch.testing.assert_close(out[way].double(), oracle.double(), atol=1e-4, rtol=0, msg=way)
    assert "forward" not in vars(model)  # the fused LM head was removed again after its call


def test_train_step_rows_group_completions_by_prompt_and_plain_nll_is_the_seqtemp_token_nll():
    train_step = _load("train_step")
    model = _tiny_llama(vocab=120)
    ids, mask = train_step.token_rows(vocab_size=120, prompts=2, generations=3, length=12)
    prompts = [tuple(t for t, m in zip(row, row_mask) if not m) for row, row_mask in zip(ids, mask)]
    assert prompts[0] == prompts[2] != prompts[3] == prompts[5] and len(set(map(tuple, ids))) == 6
    labels = torch.tensor(train_step.plain_labels(ids, mask))
    ids, mask = torch.tensor(ids), torch.tensor(mask).bool()
    with torch.no_grad():
        plain = model(input_ids=ids, labels=labels).loss
        token_logps, scored = AutoregressiveScorer().token_logps(model, ids, completion_mask=mask)
    torch.testing.assert_close(plain, -token_logps.sum() / scored.sum(), atol=1e-5, rtol=0)


class _FakeTrainer:
    """Stands in for a Trainer: `train()` runs `steps` steps and calls its callbacks' `on_step_end` after each."""

    def __init__(self, name: str, steps: int, log: list):
        self.name, self.steps, self.log, self.callbacks = name, steps, log, []

    def add_callback(self, callback):
        self.callbacks.append(callback)

    def train(self):
        for step in range(self.steps):
            self.log.append((self.name, step))
            for callback in self.callbacks:
                callback.on_step_end(None, None, None)


def test_online_step_alternation_runs_the_two_trainers_step_by_step_in_turn():
    online = _load("online_step")
    kinds = ["warmup", "time", "time", "memory"]
    log = []
    trainers = {"grpo": _FakeTrainer("grpo", 4, log), "seqtemp": _FakeTrainer("seqtemp", 4, log)}
    clocks = online.alternate(trainers, kinds, torch.device("cpu"))
    assert log == [(name, step) for step in range(4) for name in ("grpo", "seqtemp")]
    for clock in clocks.values():
        assert len(clock.seconds) == 2 and len(clock.peak_mib) == 1


def test_online_step_alternation_reports_a_failing_trainer_instead_of_hanging():
    online = _load("online_step")

    class Broken(_FakeTrainer):
        def train(self):
            raise OSError("disk full")

    trainers = {"grpo": _FakeTrainer("grpo", 2, []), "seqtemp": Broken("seqtemp", 2, [])}
    with pytest.raises(RuntimeError, match="a trainer failed") as failure:
        online.alternate(trainers, ["warmup", "time"], torch.device("cpu"))
    assert isinstance(failure.value.__cause__, OSError)


def test_samplers_benchmark_counts_calls_and_forwards_and_matches_the_exact_target():
    """`samplers.py`: SMC waits for as many sequential calls as plain sampling (one per token), feeds N particles per
    step (token-forwards = prompt + N x (new - 1)), its exact target sums to 1 per prompt, and the exact draws'
    KL (the noise floor) sits far below plain sampling's."""
    bench = _load("samplers")
    settings = {"answers": 200, "new_tokens": 3, "num_particles": 8, "mcmc_steps": 2}
    result = bench.measure(settings, alpha=2.0)
    rows = result["samplers"]
    assert rows["smc"]["sequential_calls_per_answer"] == rows["plain"]["sequential_calls_per_answer"] == 3
    assert rows["smc"]["token_forwards_per_answer"] == 2 + 8 * 2
    assert rows["plain"]["token_forwards_per_answer"] == 2 + 2
    assert rows["mh"]["sequential_calls_per_answer"] > 3
    assert result["kl_noise_floor"] < 0.2 * rows["plain"]["kl"]
    _, targets = bench.exact_targets(bench.enumerable_model(), 3, 2.0)
    assert all(abs(t.sum().item() - 1.0) < 1e-9 for t in targets)


def test_smc_proposals_kl_intervals_cover_the_true_kl_of_an_exact_and_of_a_biased_sampler():
    """`smc_proposals.py`'s KL intervals over runs, on three prompts with different targets. Runs that each return
    one draw of a known law (the target itself: an exact sampler, true KL 0; or a law biased towards one answer:
    a known KL) give a `law_kl` biased upwards by the runs' spread; the basic bootstrap interval covers the true KL in
    at least 17 of 20 repeats for both, where the percentile interval of the same replicates never covers the exact
    sampler's 0. `run_laws` turns weighted particles into per-run laws that sum to 1 and put each particle's weight
    on its own answer."""
    from types import SimpleNamespace

    bench = _load("smc_proposals")
    generator = torch.Generator().manual_seed(0)
    targets = [torch.tensor(t, dtype=torch.float64) for t in ([0.5, 0.3, 0.2], [0.7, 0.2, 0.1], [0.25, 0.25, 0.5])]
    biased = torch.tensor([0.8, 0.1, 0.1], dtype=torch.float64)
    true_biased = sum(float((biased * (biased / t).log()).sum()) for t in targets) / 3
    covered = {"exact": 0, "biased": 0, "exact_percentile": 0}
    for repeat in range(20):
        for name, laws, truth in (("exact", targets, 0.0), ("biased", [biased] * 3, true_biased)):
            runs = [
                torch.eye(3, dtype=torch.float64)[torch.multinomial(law, 300, True, generator=generator)]
                for law in laws
            ]
            point = sum(bench.law_kl(runs, targets)) / 3
            replicates = bench.bootstrap_kl(runs, targets, draws=400, seed=repeat)
            _, low, high = bench.interval(replicates, point)
            covered[name] += low <= truth <= high
            if name == "exact":
                covered["exact_percentile"] += float(torch.quantile(replicates, 0.025)) <= 0.0
    assert covered["exact"] >= 17 and covered["biased"] >= 17, covered
    assert covered["exact_percentile"] == 0, covered

    answers = [torch.tensor([[0, 1], [1, 1], [2, 3]])] * 2  # two prompts, three answers each
    particles = torch.tensor([[[1, 1], [2, 3]], [[0, 1], [0, 1]], [[2, 3], [2, 3]], [[1, 1], [0, 1]]])
    weights = torch.tensor([[0.25, 0.75], [0.5, 0.5], [0.9, 0.1], [0.6, 0.4]])
    out = SimpleNamespace(particles=particles, particle_log_weights=weights.log())
    laws = bench.run_laws(out, answers, runs=2)
    expected = [[[0.0, 0.25, 0.75], [1.0, 0.0, 0.0]], [[0.0, 0.0, 1.0], [0.4, 0.6, 0.0]]]
    torch.testing.assert_close(torch.stack(laws), torch.tensor(expected, dtype=torch.float64))


def test_median_ess_ratio_intervals_cover_the_median_they_estimate():
    """`proposal_ess.median_ratio_interval` on synthetic ESS draws with known laws. Prompts of a population whose true
    ratio adapter / token has median 2; each prompt measured with 4 noisy draws per proposal. Over unseen prompts
    (`level="prompts"`) the interval must cover the population median of the measured ratios; with the prompts fixed
    (`level="draws"`) it must cover the median of these prompts' true ratios. Each bar is checked against the other
    level's target too, where it must fail more often: the levels estimate different things."""
    module = _load("proposal_ess")

    def draw(prompts: int, generator: torch.Generator):
        token = 0.05 + 0.05 * torch.rand(prompts, generator=generator, dtype=torch.float64)
        ratio = 2.0 * (0.5 * torch.randn(prompts, generator=generator, dtype=torch.float64).clamp(-3, 3)).exp()
        return token, ratio

    def noisy(true: torch.Tensor, generator: torch.Generator) -> torch.Tensor:  # 4 draws, relative spread 0.3
        shape = torch.full((len(true), 4), 1 / 0.09, dtype=torch.float64)
        gamma = torch._standard_gamma(shape, generator=generator) * 0.09
        return true[:, None] * gamma

    generator = torch.Generator().manual_seed(0)
    token, ratio = draw(200_000, generator)
    measured = noisy(ratio * token, generator).mean(1) / noisy(token, generator).mean(1)
    population_median = float(measured.median())
    covered = {"prompts": 0, "draws": 0}
    crossed = {"prompts": 0, "draws": 0}
    for repeat in range(20):
        token, ratio = draw(16, generator)
        these_median = float(torch.quantile(ratio, 0.5))
        token_draws, adapter_draws = noisy(token, generator), noisy(ratio * token, generator)
        for level, target, other in (
            ("prompts", population_median, these_median),
            ("draws", these_median, population_median),
        ):
            low, high = module.median_ratio_interval(token_draws, adapter_draws, level=level, seed=repeat)
            covered[level] += low <= target <= high
            crossed[level] += low <= other <= high
    assert covered["prompts"] >= 17 and covered["draws"] >= 16, covered
    assert crossed["draws"] < covered["draws"], (crossed, covered)
    with pytest.raises(ValueError, match="level='prompt'"):
        module.median_ratio_interval(token_draws, adapter_draws, level="prompt")


def test_the_reachable_companion_keeps_only_prompts_where_the_goal_ratio_is_possible():
    """`proposal_ess.where_reachable`: a prompt whose token ESS / N is above 1/2 caps the ratio below 2 for any
    proposal (ESS / N <= 1), so the companion median leaves it out: here the all-prompt median is 1 (the two capped
    prompts pull it down) while the median over the three prompts where 2 is possible is 2; the boundary 1/2
    counts as reachable (a perfect proposal gives exactly 2), and a set with none says so. The prompts are chosen by
    the `selection` figures, never by the denominator's: a selection that disagrees with `token` picks other
    prompts."""
    module = _load("proposal_ess")
    token = [0.9, 0.6, 0.5, 0.1, 0.2]
    adapter = [0.45, 0.3, 1.0, 0.3, 0.2]
    ratios = [a / t for t, a in zip(token, adapter)]
    assert sorted(ratios) == pytest.approx([0.5, 0.5, 1.0, 2.0, 3.0]) and statistics.median(ratios) == 1.0
    count, median = module.where_reachable(token, token, adapter)
    assert count == 3 and median == pytest.approx(2.0)
    assert module.where_reachable(token, token, adapter, goal=4.0) == (2, pytest.approx(2.0))
    assert module.where_reachable([0.8, 0.7], [0.8, 0.7], [0.9, 0.1]) == (0, None)
    assert module.where_reachable([0.6, 0.6, 0.4, 0.4, 0.6], token, adapter) == (2, pytest.approx(2.5))  # 2 and 3 only
    summary = {"prompts_where_2_is_reachable": 0, "ess_ratio_where_2_is_reachable": None}
    assert "no prompt where 2 is reachable" in module.reachable_text(summary)
    summary = {"train_prompts_where_2_is_reachable": 3, "train_ess_ratio_where_2_is_reachable": 2.0}
    assert module.reachable_text(summary, "train_") == (
        "median 2.00 over the 3 prompts where 2 is reachable (token ESS/N <= 1/2)"
    )


def _token_temperature_adapter(vocab: int, temperature: float):
    """A tiny Llama (EOS = the last id) with an adapter whose proposal IS token temperature `temperature`: LoRA at
    its zero start and the final norm's copy scaled by 1 / T (the LM head is linear, so every logit is divided by T)."""
    from peft import LoraConfig, get_peft_model
    from tiny_models import tiny_llama

    base = tiny_llama(vocab_size=vocab, seed=0, head_scale=4.0)
    base.config.eos_token_id = vocab - 1
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"], modules_to_save=["model.norm"])
    model = get_peft_model(base, config).eval()
    with torch.no_grad():
        model.base_model.model.model.norm.modules_to_save["default"].weight.mul_(1 / temperature)
    return model


def test_the_reachable_companion_is_unbiased_where_the_true_ratio_is_one():
    """An adapter equal to token temperature: the true ESS ratio is 1 on every prompt. 60 prompts of a tiny Llama
    (about half of them with token ESS/N <= 1/2), N = 16, 4 draws per prompt, 20 independent runs of
    `compare_proposal_draws`. The companion (median ratio over the prompts where 2 is reachable, chosen on
    independent token draws) must centre on 1: mean log within 0.015 of 0 and above 1 in 3-17 of 20 runs. Selecting
    on the denominator's own draws (what the JSONs before issue 47 did), recomputed from the same rows, reads high
    in every run (mean log above 0.025): the test tells the two apart. The token and adapter particles come from
    independent streams (equal laws, unequal draws), and the selection draws are not the denominator's."""
    import itertools
    import math

    module = _load("proposal_ess")
    temperature, vocab = 0.5, 8
    model = _token_temperature_adapter(vocab, temperature)
    prompts = torch.tensor(list(itertools.product(range(1, vocab - 1), repeat=3)))[:60]
    mask = torch.ones_like(prompts)
    with torch.no_grad():  # precondition: the adapter's logits are token temperature's
        tempered = model(input_ids=prompts).logits
        with model.disable_adapter():
            torch.testing.assert_close(tempered, model(input_ids=prompts).logits / temperature)
    independent, biased, reachable = [], [], []
    for run in range(20):
        rows, summary = module.compare_proposal_draws(
            model, prompts, mask, temperature, [vocab - 1], 0, list(range(len(prompts))),
            num_samples=16, repeats=4, max_new_tokens=2, prompts_per_batch=60, seed=run,
        )  # fmt: skip
        token = [r["token_ess_fraction"] for r in rows]
        adapter = [r["adapter_ess_fraction"] for r in rows]
        assert token != adapter and token != [r["token_ess_fraction_selection"] for r in rows]
        assert "independent" in summary["reachable_selected_on"]
        independent.append(math.log(summary["ess_ratio_where_2_is_reachable"]))
        biased.append(math.log(module.where_reachable(token, token, adapter)[1]))
        reachable.append(summary["prompts_where_2_is_reachable"])
    assert 15 <= statistics.fmean(reachable) <= 45, reachable  # the selection keeps some prompts and drops others
    assert abs(statistics.fmean(independent)) < 0.015, independent
    assert 3 <= sum(v > 0 for v in independent) <= 17, independent  # Binomial(20, 1/2) outside: p < 0.001
    assert statistics.fmean(biased) > 0.025 and all(v > 0 for v in biased), biased
