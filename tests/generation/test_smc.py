# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Power-SMC (`smc_sample`, `strategy="smc"`) against the exact tempered answer law of an enumerable model.

Tiny Llama, |V| = 4 with EOS = 3, three prompts (two left-padded), at most 3 new tokens: 40 answers per prompt
("3", "x3", "xy3" and the truncated "xyz", padded with 0 after the EOS), a third of p's mass on the 1-token answer.
The target is `p(answer | prompt)^(1/T) / Z(prompt)` per prompt. SMC is consistent, not exact: with N particles
the returned answer's law is `E[sum_i wbar_i delta_{x_i}]` (the returned answer is drawn from the normalised
weights), biased by O(1/N). The tests estimate that law from the weighted particles of many independent runs
(Rao-Blackwellised: far less noise than counting returned answers), and test the returned answers themselves with
a chi-square test at the largest N.
"""

import itertools

import pytest
import torch
from distribution_checks import cell_counts, chi_square_pvalue, plug_in_kl
from tiny_models import tiny_llama

import hf_seqtemp
from hf_seqtemp.generation import power_sample, smc_particles
from hf_seqtemp.generation.answers import answer_mask, pad_after_answer
from hf_seqtemp.generation.smc import smc_sample
from hf_seqtemp.likelihood import AutoregressiveScorer

V, EOS, PAD, NEW, T = 4, 3, 0, 3, 0.5
PROMPTS = torch.tensor([[0, 1], [2, 1], [0, 2]])
PROMPT_MASK = torch.tensor([[0, 1], [1, 1], [0, 1]])


@pytest.fixture(scope="module")
def model():
    return tiny_llama(vocab_size=V, seed=0, head_scale=3.0)


@torch.no_grad()
def _answer_logp(model, cells, prompt_mask, eos=EOS, scorer=None):
    """log p of each padded answer in `cells` (rows: the prompt, as wide as `prompt_mask`, then the answer, padded
    after its EOS) in float64 (`scorer`: an `AutoregressiveScorer`, by default p's). Scored from column 2 on: with a
    wider prompt that adds its last tokens' log p, one constant per prompt, which no law over its answers sees."""
    completion = torch.zeros_like(cells, dtype=torch.bool)
    completion[:, 2:] = True
    in_answer = answer_mask(cells, completion, torch.tensor([eos]))
    new = cells.shape[1] - prompt_mask.shape[-1]
    attention = torch.cat([prompt_mask.expand(len(cells), -1), torch.ones(len(cells), new, dtype=torch.long)], 1)
    return (scorer or AutoregressiveScorer())(model, cells, attention, in_answer).double()


@torch.no_grad()
def _oracle(model, vocab=V, eos=EOS, new=NEW, prompts=PROMPTS, prompt_mask=PROMPT_MASK, temperature=T):
    """Per prompt: every padded answer (the 40 of this toy, `(40, 2 + NEW)`) and the exact target `p^(1/T) / Z`
    over them (`p` the model as called: pass it with its adapters off for a base target)."""
    V, EOS, NEW, PROMPTS, PROMPT_MASK, T = vocab, eos, new, prompts, prompt_mask, temperature
    tails = torch.tensor(list(itertools.product(range(V), repeat=NEW)))
    answers, targets = [], []
    for prompt, mask in zip(PROMPTS, PROMPT_MASK):
        strings = torch.cat([prompt.expand(len(tails), -1), tails], dim=1)
        completion = torch.zeros_like(strings, dtype=torch.bool)
        completion[:, 2:] = True
        unique = torch.unique(pad_after_answer(strings, completion, torch.tensor([EOS]), PAD), dim=0)
        logp = _answer_logp(model, unique, mask, EOS)
        answers.append(unique)
        targets.append((logp / T).softmax(0))
    return answers, targets


def _runs(model, num_particles, runs, seed=0, **kwargs):
    """`runs` independent SMC runs per prompt in one batch (rows `prompt * runs + r`)."""
    return smc_sample(
        model,
        PROMPTS.repeat_interleave(runs, dim=0),
        PROMPT_MASK.repeat_interleave(runs, dim=0),
        max_new_tokens=NEW,
        seq_temperature=T,
        num_particles=num_particles,
        generator=torch.Generator().manual_seed(seed),
        eos_token_id=EOS,
        pad_token_id=PAD,
        return_dict_in_generate=True,
        return_particles=True,
        **kwargs,
    )


def _generate_runs(model, num_particles, runs, seed=0, **kwargs):
    """`_runs` through `model.generate(..., custom_generate=hf_seqtemp.seqtemp_generate, strategy="smc")`."""
    return model.generate(
        PROMPTS.repeat_interleave(runs, dim=0),
        attention_mask=PROMPT_MASK.repeat_interleave(runs, dim=0),
        max_new_tokens=NEW,
        custom_generate=hf_seqtemp.seqtemp_generate,
        seq_temperature=T,
        strategy="smc",
        num_particles=num_particles,
        generator=torch.Generator().manual_seed(seed),
        eos_token_id=EOS,
        pad_token_id=PAD,
        **kwargs,
    )


def _answer_law_kls(model, out, runs):
    """Per prompt, KL(law of the returned answer || target), the law estimated from the weighted particles."""
    answers, targets = _oracle(model)
    kls = []
    for b, (cells, target) in enumerate(zip(answers, targets)):
        rows = slice(b * runs, (b + 1) * runs)
        particles = out.particles[rows].flatten(0, 1)
        weights = out.particle_log_weights[rows].flatten().double().exp()
        match = (particles[:, None, :] == cells[None]).all(-1).double()
        assert bool((match.sum(1) == 1).all())
        kls.append(plug_in_kl(weights @ match, target))
    return kls


def test_smc_answer_law_approaches_the_tempered_target_as_particles_grow(model):
    torch.set_num_threads(1)
    runs = {1: 4096, 4: 4096, 16: 2048, 64: 512, 256: 256}  # independent runs per prompt
    kls = {n: sum(_answer_law_kls(model, _runs(model, n, r), r)) / 3 for n, r in runs.items()}
    # measured (mean over the prompts; seeds 0-2 with twice the runs): N=1 (token temperature T) 0.61, N=4 0.056,
    # N=16 0.0024, N=64 0.00026, N=256 0.00007 (at N = 256 mostly the estimate's own noise)
    assert kls[1] > 0.3 and kls[4] < 0.2 * kls[1], kls
    assert kls[4] > kls[16] > kls[64] > kls[256] and kls[256] < 0.0005, kls


def _returned_kls(model, sequences, runs):
    answers, targets = _oracle(model)
    counts = [cell_counts(sequences[b * runs : (b + 1) * runs], answers[b]) for b in range(len(answers))]
    return counts, targets, max(plug_in_kl(c, t) for c, t in zip(counts, targets))


def test_smc_returned_answers_pass_chi_square_and_match_mh(model):
    runs = 1500
    out = _runs(model, 256, runs)
    counts, targets, _ = _returned_kls(model, out.sequences, runs)
    for c, t in zip(counts, targets):  # the O(1/N) bias at N = 256 (KL < 1e-4) is far below what 1500 answers resolve
        assert chi_square_pvalue(c, t)[1] > 1e-3
    # N = 64 is no worse than MH power sampling with 10 steps per (one-token) block, same number of answers;
    # both sit near the plug-in floor (cells - 1) / (2 n) = 0.013, so "no worse" allows that noise once
    _, _, kl_smc_64 = _returned_kls(model, _runs(model, 64, runs, seed=1).sequences, runs)
    mh = power_sample(
        model,
        PROMPTS.repeat_interleave(runs, dim=0),
        PROMPT_MASK.repeat_interleave(runs, dim=0),
        max_new_tokens=NEW,
        seq_temperature=T,
        mcmc_steps=10,
        block_size=1,
        generator=torch.Generator().manual_seed(2),
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    _, _, kl_mh = _returned_kls(model, mh, runs)
    assert kl_smc_64 <= kl_mh + 0.013, (kl_smc_64, kl_mh)


def test_the_weights_are_the_sum_of_powered_conditionals(model):
    """Without resampling, a particle's log-weight is `sum_t log sum_v p(v | x_<t)^alpha` over its answer's steps
    (up to a constant per prompt), checked against a full-sequence forward pass of every particle."""
    out = _runs(model, 16, 4, ess_threshold=0.0)
    particles = out.particles.flatten(0, 1)
    attention = torch.cat([PROMPT_MASK.repeat_interleave(4 * 16, 0), torch.ones(len(particles), NEW).long()], 1)
    completion = torch.zeros_like(particles, dtype=torch.bool)
    completion[:, 2:] = True
    in_answer = answer_mask(particles, completion, torch.tensor([EOS]))
    with torch.no_grad():
        positions = (attention.cumsum(1) - 1).clamp(min=0)
        logp = model(particles, attention_mask=attention, position_ids=positions).logits.float().log_softmax(-1)
    step_weights = (logp[:, 1:-1] / T).logsumexp(-1)  # the weight at each completion position
    expected = (step_weights * in_answer[:, 2:]).sum(1).view(out.particle_log_weights.shape)
    expected = expected - expected.logsumexp(dim=1, keepdim=True)
    torch.testing.assert_close(out.particle_log_weights, expected, atol=1e-5 * expected.abs().max().item(), rtol=0)
    assert out.num_resamples.sum() == 0


def test_a_wrong_incremental_weight_fails(model, monkeypatch):
    """With a wrong weight the answer law moves far from the target and the chi-square test sees it: no weight
    (token-temperature sampling with resampling), or the exponent confused with the temperature (`sum_v p(v)^T`)."""
    runs = 1000
    wrong = {
        "none": lambda next_logp, alpha: torch.zeros_like(next_logp[:, 0]),
        "temperature": lambda next_logp, alpha: (next_logp / alpha).logsumexp(dim=-1),
    }
    for name, weight in wrong.items():
        with monkeypatch.context() as patch:
            patch.setattr(smc_particles, "incremental_log_weight", weight)
            counts, targets, _ = _returned_kls(model, _runs(model, 64, runs).sequences, runs)
        assert max(chi_square_pvalue(c, t)[1] for c, t in zip(counts, targets)) < 1e-6, name


@torch.no_grad()
def _processed_target(model, answers, mask, processors):
    """`p~(answer)^(1/T) / Z` with `p~(x_t | x_<t) = softmax(processors(x_<t, logits_t))`, scored one prefix at a time."""
    attention = torch.cat([mask.expand(len(answers), -1), torch.ones(len(answers), NEW, dtype=torch.long)], 1)
    positions = (attention.cumsum(1) - 1).clamp(min=0)
    logits = model(answers, attention_mask=attention, position_ids=positions).logits.float()
    completion = torch.zeros_like(answers, dtype=torch.bool)
    completion[:, 2:] = True
    in_answer = answer_mask(answers, completion, torch.tensor([EOS]))
    logp = torch.zeros(len(answers), dtype=torch.float64)
    for t in range(2, 2 + NEW):
        step = processors(answers[:, :t], logits[:, t - 1]).log_softmax(-1).gather(1, answers[:, t : t + 1])[:, 0]
        logp += torch.where(in_answer[:, t], step, torch.zeros_like(step)).double()
    return (logp / T).softmax(0)


def test_generate_smc_targets_the_processed_model_with_a_ramp(model):
    """`model.generate(..., strategy="smc")` keeps the user's processors in `p` (here a repetition penalty, which
    depends on the prefix), in the proposal and in the weights; with a ramp of the exponent over 2 tokens the target
    stays `p~^(1/T)`: chi-square against it passes on every prompt, against the unprocessed target it fails (on the
    prompts where the penalty moves the target most: the first prompt's changes by TV 0.04 only)."""
    from transformers.generation.logits_process import LogitsProcessorList, RepetitionPenaltyLogitsProcessor

    runs = 1000
    out = _generate_runs(model, 128, runs, alpha_ramp_tokens=2, repetition_penalty=3.0)
    answers, plain_targets = _oracle(model)
    against_plain = []
    for b in range(len(answers)):
        counts = cell_counts(out[b * runs : (b + 1) * runs], answers[b])
        padding = int((PROMPT_MASK[b] == 0).sum())  # `generate` leaves the left padding out of the penalty
        processors = LogitsProcessorList([RepetitionPenaltyLogitsProcessor(3.0, prompt_ignore_length=padding)])
        target = _processed_target(model, answers[b], PROMPT_MASK[b], processors)
        assert chi_square_pvalue(counts, target)[1] > 1e-3
        against_plain.append(chi_square_pvalue(counts, plain_targets[b])[1])
    assert sorted(against_plain)[1] < 1e-6, against_plain


def test_smc_errors():
    model = tiny_llama()
    for kwargs, match in [
        ({"num_particles": 0}, "`num_particles` must be an integer ≥ 1, got 0"),
        ({"alpha_ramp_tokens": -1}, "`alpha_ramp_tokens` must be an integer ≥ 0, got -1"),
        ({"ess_threshold": 2.0}, r"`ess_threshold` must be a float in \[0, 1\], got 2.0"),
        ({"resampling": "stratified"}, "`resampling` must be one of"),
    ]:
        with pytest.raises(ValueError, match=match):
            smc_sample(model, torch.tensor([[0]]), **kwargs)


def test_generate_passes_resampling_and_ess_threshold_to_smc(model):
    """`generate(..., strategy="smc", resampling=..., ess_threshold=...)` draws exactly what `smc_sample` draws with
    the same settings and seed; multinomial and systematic resampling draw different answers from the same seed (so
    the option reaches the sampler), and a bad value is the sampler's error."""

    def through_generate(**kwargs):
        return model.generate(
            PROMPTS.repeat_interleave(50, dim=0),
            attention_mask=PROMPT_MASK.repeat_interleave(50, dim=0),
            max_new_tokens=NEW,
            custom_generate=hf_seqtemp.seqtemp_generate,
            seq_temperature=T,
            strategy="smc",
            num_particles=8,
            generator=torch.Generator().manual_seed(3),
            eos_token_id=EOS,
            pad_token_id=PAD,
            **kwargs,
        )

    direct = smc_sample(
        model,
        PROMPTS.repeat_interleave(50, dim=0),
        PROMPT_MASK.repeat_interleave(50, dim=0),
        max_new_tokens=NEW,
        seq_temperature=T,
        num_particles=8,
        ess_threshold=1.0,
        resampling="multinomial",
        generator=torch.Generator().manual_seed(3),
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    multinomial = through_generate(resampling="multinomial", ess_threshold=1.0)
    assert torch.equal(multinomial, direct)
    assert not torch.equal(through_generate(resampling="systematic", ess_threshold=1.0), multinomial)
    with pytest.raises(ValueError, match="`resampling` must be one of"):
        through_generate(resampling="stratified")


def test_smc_warns_when_a_few_particles_decide_the_answers():
    """SMC's returned answer, at N = 4 with a poor proposal, was far from p^alpha (total variation 0.25-0.67) without a
    word. The warning reads the ESS of the weights each answer was drawn from: silent where the weights stay even
    (alpha = 1: every particle weighs the same), given where they collapse (a peaked model at alpha = 10 over 20
    tokens without resampling)."""
    import warnings

    prompts = torch.tensor([[1, 2], [3, 1], [2, 2]])
    options = {"generator": torch.Generator().manual_seed(0), "return_dict_in_generate": True, "num_particles": 8}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        out = smc_sample(tiny_llama(8, seed=2), prompts, max_new_tokens=6, seq_temperature=1.0, **options)
    torch.testing.assert_close(out.ess[:, -1], torch.full((3,), 8.0))
    peaked = tiny_llama(8, seed=2, head_scale=6.0)
    with pytest.warns(UserWarning, match=r"mean ESS / N 0\.\d\d \(N = 8\), below 0.5: a few particles decided"):
        out = smc_sample(peaked, prompts, max_new_tokens=20, seq_temperature=0.1, ess_threshold=0.0, **options)
    assert float((out.ess[:, -1] / 8).mean()) < 0.5
