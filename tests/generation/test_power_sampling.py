# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Power sampling on an enumerable tiny AR model (vocab 4, completions of length 3: 64 sequences)."""

import itertools

import pytest
import torch
from tiny_models import tiny_llama

from hf_seqtemp.generation import power_sample, seqtemp_generate
from hf_seqtemp.likelihood import AutoregressiveScorer

T = 0.5
SEQUENCES = torch.tensor([[0, *s] for s in itertools.product(range(4), repeat=3)])


def _empirical_kl(samples, target):
    """KL(empirical || target) over the 64 completions (plug-in; finite since the target has full support)."""
    index = (samples[:, 1:] * torch.tensor([16, 4, 1])).sum(1)
    empirical = torch.bincount(index, minlength=64).double() / len(index)
    seen = empirical > 0
    return (empirical[seen] * (empirical[seen] / target[seen]).log()).sum().item()


def test_mcmc_approaches_sequence_tempered_target():
    torch.set_num_threads(1)
    # seed 8 with a 30x output head: token tempering and sequence tempering differ by KL 0.27 on this model
    model = tiny_llama(seed=8, head_scale=30.0)
    with torch.no_grad():
        target = (AutoregressiveScorer()(model, SEQUENCES) / T).softmax(0).double()
    prompts = torch.zeros(2000, 1, dtype=torch.long)
    kls = {}
    for steps in (0, 1, 4):
        out = power_sample(
            model,
            prompts,
            max_new_tokens=3,
            seq_temperature=T,
            mcmc_steps=steps,
            block_size=1,
            generator=torch.Generator().manual_seed(0),
            return_dict_in_generate=True,
        )
        kls[steps] = _empirical_kl(out.sequences, target)
    # mcmc_steps=0 is token-temperature-0.5 sampling; the plug-in noise floor is ~(cells - 1) / (2 n) <= 0.016
    assert kls[0] > 0.15
    assert kls[1] < 0.5 * kls[0]
    assert kls[4] < kls[1] and kls[4] < 0.04


def test_generate_with_custom_generate_mcmc_on_tiny_llama():
    model = tiny_llama(vocab_size=8, seed=1)
    prompts = torch.tensor([[0, 0, 5, 6], [1, 2, 3, 4]])
    attention = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    torch.manual_seed(0)
    out = model.generate(
        input_ids=prompts,
        attention_mask=attention,
        max_new_tokens=5,
        custom_generate=seqtemp_generate,
        seq_temperature=0.5,
        strategy="mcmc",
        mcmc_steps=3,
        block_size=2,
        return_dict_in_generate=True,
    )
    assert out.sequences.shape == (2, 9) and torch.equal(out.sequences[:, :4], prompts)
    assert ((out.acceptance_rate >= 0) & (out.acceptance_rate <= 1)).all()
    with torch.no_grad():
        completion = torch.zeros(2, 9, dtype=torch.bool)
        completion[:, 4:] = True
        rescored = AutoregressiveScorer()(
            model, out.sequences, torch.cat([attention, torch.ones(2, 5)], 1).long(), completion
        )
    # the log-probs carried through the chain equal an independent rescoring (left padding included)
    assert torch.allclose(out.sequence_logps, rescored, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mcmc_steps": -1}, "`mcmc_steps` must be an integer ≥ 0, got -1"),
        ({"max_new_tokens": 0}, "`max_new_tokens` must be an integer ≥ 1, got 0"),
        ({"block_size": 0}, "`block_size` must be an integer ≥ 1 or None"),
        ({"seq_temperature": -1.0}, "`seq_temperature` must be a finite float > 0, got -1.0"),
    ],
)
def test_power_sample_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        power_sample(tiny_llama(), torch.tensor([[0]]), **kwargs)
    with pytest.raises(ValueError, match="`input_ids` must be a 2-D tensor"):
        power_sample(tiny_llama(), torch.tensor([0]))


def test_power_sample_on_an_engine_refuses_logits_processors_before_any_request():
    """Given an engine client the chain targets the served p itself: a processor it cannot apply is refused by name
    (before any request: nothing listens at this address), never dropped."""
    from transformers import LogitsProcessorList, SuppressTokensLogitsProcessor

    from hf_seqtemp.engine import EngineClient

    client = EngineClient("http://127.0.0.1:9", timeout=1.0)
    processors = LogitsProcessorList([SuppressTokensLogitsProcessor([2])])
    with pytest.raises(ValueError, match="`logits_processor` cannot be applied by an engine"):
        power_sample(client, torch.tensor([[1, 2]]), max_new_tokens=2, eos_token_id=3, logits_processor=processors)


def test_the_rows_of_a_batch_are_independent_chains():
    """Each row draws its own MH boundary, so the rows of a batch (several answers of one prompt) are independent
    chains. The engine tests' toy (|V| = 4, EOS 3), three prompts (two left-padded), 1000 rows each, α = 4, blocks of
    one token with one MH step after each: across twelve seeds the first answer token's law must be the same (chi-square of homogeneity, per prompt). One boundary drawn for the whole batch failed this (p
    2.6e-11 on the second prompt): a seed whose steps never resampled the first token left all its rows at the
    proposal's law, one that did moved them all toward p^α."""
    from engine_models import engine_llama
    from scipy.stats import chi2_contingency

    model, prompts, runs, seeds = engine_llama(), ([0, 1], [2, 1, 0], [0, 2]), 1000, 12
    ids = torch.tensor([[0] * (3 - len(p)) + p for p in prompts]).repeat_interleave(runs, 0)
    mask = torch.tensor([[0] * (3 - len(p)) + [1] * len(p) for p in prompts]).repeat_interleave(runs, 0)
    tables = torch.zeros(len(prompts), seeds, 4)
    for seed in range(seeds):
        out = power_sample(model, ids, mask, max_new_tokens=3, seq_temperature=0.25, mcmc_steps=1, block_size=1,
                           generator=torch.Generator().manual_seed(seed), eos_token_id=3, return_dict_in_generate=True)  # fmt: skip
        first = out.sequences[:, 3].view(len(prompts), runs)
        tables[:, seed] = torch.stack([torch.bincount(row, minlength=4) for row in first]).float()
    pvalues = [chi2_contingency(table[:, table.sum(0) > 0].numpy()).pvalue for table in tables]
    assert min(pvalues) > 1e-4, pvalues
