# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""SMC with a tempered adapter as the proposal (`smc_sample(..., proposal="adapter")`) against the exact tempered
answer law of the *base* model, on the enumerable toy of `test_smc.py` (|V| = 4, EOS 3, three prompts of which two
are left-padded, at most 3 new tokens: 40 answers per prompt).

The adapter is a randomly initialised LoRA (every linear layer, B != 0) plus a `modules_to_save` copy of the final
norm scaled by 2 (so both kinds of PEFT module must be switched off for `p`): a poor proposal, far from the target,
which the weights `alpha log p(x_t) - log q(x_t)` must correct. A perfect adapter is built by enumeration: its
next-token law is the tempered target's own conditional.
"""

import math

import pytest
import torch
from distribution_checks import cell_counts, chi_square_pvalue
from generation.test_smc import (
    EOS,
    NEW,
    PAD,
    PROMPT_MASK,
    PROMPTS,
    T,
    V,
    _answer_logp,
    _generate_runs,
    _oracle,
    _processed_target,
    _runs,
)
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_llama

from hf_seqtemp.generation.adapters import active_adapter
from hf_seqtemp.generation.smc import smc_sample
from hf_seqtemp.generation.smc_proposals import AdapterProposal, forward_step

ALPHA = 1 / T


def _adapted(seed=1):
    base = tiny_llama(vocab_size=V, seed=0, head_scale=3.0)
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False, modules_to_save=["model.norm"]
    )
    torch.manual_seed(seed)
    model = get_peft_model(base, config).eval()
    with torch.no_grad():
        model.base_model.model.model.norm.modules_to_save["default"].weight.mul_(2.0)
    return model


@pytest.fixture(scope="module")
def adapted():
    return _adapted()


def _run(model, runs, num_particles, seed=0, **kwargs):
    """`runs` independent SMC runs per prompt with the adapter proposing (rows `prompt * runs + r`)."""
    return _runs(model, num_particles, runs, seed, proposal="adapter", **kwargs)


def _pvalues(out, runs, targets, answers):
    return [
        chi_square_pvalue(cell_counts(out.sequences[b * runs : (b + 1) * runs], answers[b]), targets[b])[1]
        for b in range(len(answers))
    ]


def test_a_random_adapter_proposal_samples_the_base_target(adapted):
    """Chi-square of 1500 returned answers per prompt (N = 128) against the base's p^(1/T) passes on every prompt;
    against the adapter's own tempered law (what forgetting to switch the adapter off would target) it fails."""
    runs = 1500
    out = _run(adapted, runs, 128)
    with adapted.disable_adapter():
        answers, targets = _oracle(adapted)
    assert min(_pvalues(out, runs, targets, answers)) > 1e-3
    _, adapter_targets = _oracle(adapted)  # the adapter on: q's own p^(1/T)
    assert max(_pvalues(out, runs, adapter_targets, answers)) < 1e-6
    assert out.model_calls <= 2 * NEW and adapted.active_adapter == "default"


def test_the_token_proposal_weight_with_the_adapter_proposal_fails(adapted, monkeypatch):
    """The weight of the wrong proposal (Power-SMC's `log sum_v p(v)^alpha`, right only for token temperature)
    makes the returned answers miss the target: the chi-square test has power."""
    runs = 1500
    monkeypatch.setattr(AdapterProposal, "weight_before_draw", True)  # the loop then weighs with log Z_t
    out = _run(adapted, runs, 128)
    with adapted.disable_adapter():
        answers, targets = _oracle(adapted)
    assert min(_pvalues(out, runs, targets, answers)) < 1e-6


@pytest.mark.parametrize("processor", ["repetition penalty", "top-k 2"])
def test_the_adapter_proposal_keeps_the_processors_in_p(adapted, processor):
    """A repetition penalty (depends on the prefix) and top-k 2 (depends on the logits: the adapter's own top 2
    tokens are not p's) are part of p, in the weights; the adapter proposes only tokens p allows. Top-k used to end
    in `probability tensor contains either inf, nan` (a proposed token with log p = -inf). The prompts are sampled
    in one batch, so the penalty sees the left padding as `generate` lays it out."""
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        RepetitionPenaltyLogitsProcessor,
        TopKLogitsWarper,
    )

    runs = 1000
    per_prompt = []
    for b in range(len(PROMPTS)):
        padding = int((PROMPT_MASK[b] == 0).sum())
        if processor == "top-k 2":
            processors = LogitsProcessorList([TopKLogitsWarper(2)])
        else:
            processors = LogitsProcessorList([RepetitionPenaltyLogitsProcessor(3.0, prompt_ignore_length=padding)])
        out = smc_sample(
            adapted,
            PROMPTS[b : b + 1].repeat(runs, 1),
            PROMPT_MASK[b : b + 1].repeat(runs, 1),
            max_new_tokens=NEW,
            seq_temperature=T,
            num_particles=128,
            generator=torch.Generator().manual_seed(b),
            eos_token_id=EOS,
            pad_token_id=PAD,
            proposal="adapter",
            logits_processor=processors,
        )
        with adapted.disable_adapter():
            answers, plain = _oracle(adapted)
            target = _processed_target(adapted, answers[b], PROMPT_MASK[b], processors)
        counts = cell_counts(out, answers[b])
        assert counts.sum() == runs and counts[target == 0].sum() == 0  # never an answer p forbids
        assert chi_square_pvalue(counts, target)[1] > 1e-3
        per_prompt.append(chi_square_pvalue(counts, plain[b])[1])
    # against the unprocessed target: measured 1e-12, 1e-4, 3e-4 (penalty); 0 on every prompt (top-k)
    assert min(per_prompt) < 1e-8 and sorted(per_prompt)[1] < 1e-2, per_prompt


def test_the_adapter_proposal_ess_with_top_k_weighs_only_answers_p_allows(adapted):
    """`proposal_ess(..., proposal="adapter")` with top-k 2: every answer drawn has finite `log p` under the
    processed model, and each prompt's ESS / N is a number in (0, 1] (it used to end in NaN)."""
    from transformers.generation.logits_process import LogitsProcessorList, TopKLogitsWarper

    from hf_seqtemp.generation.proposal_ess import proposal_ess

    processors = LogitsProcessorList([TopKLogitsWarper(2)])
    out = proposal_ess(
        adapted, PROMPTS, PROMPT_MASK, max_new_tokens=NEW, seq_temperature=T, num_samples=64, proposal="adapter",
        logits_processor=processors, generator=torch.Generator().manual_seed(0), eos_token_id=EOS, pad_token_id=PAD,
    )  # fmt: skip
    assert bool(((out.ess_fraction > 0) & (out.ess_fraction <= 1 + 1e-6)).all()), out.ess_fraction
    with adapted.disable_adapter():
        answers, _ = _oracle(adapted)
        for b in range(len(PROMPTS)):
            target = _processed_target(adapted, answers[b], PROMPT_MASK[b], processors)
            counts = cell_counts(out.sequences[b], answers[b])
            assert counts.sum() == 64 and counts[target == 0].sum() == 0


class _Prefixes:
    """A stand-in KV cache for the perfect adapter: the rows' token ids so far, reordered like a cache."""

    def __init__(self, ids):
        self.ids = ids

    def batch_repeat_interleave(self, n):
        self.ids = self.ids.repeat_interleave(n, dim=0)

    def reorder_cache(self, index):
        self.ids = self.ids[index]


@torch.no_grad()
def _tempered_prefix_masses(model):
    """Per prompt: `pi(prefix)`, the mass of the tempered target `pi = p^alpha / Z` on the answers that start with
    each answer prefix (a finished answer is its own only continuation), and `log Z`."""
    answers, _ = _oracle(model)
    tables, log_normalizers = [], []
    for b, cells in enumerate(answers):
        logp = _answer_logp(model, cells, PROMPT_MASK[b])
        log_normalizers.append(torch.logsumexp(ALPHA * logp, 0).item())
        table = {}
        for cell, mass in zip(cells[:, 2:].tolist(), (ALPHA * logp).softmax(0).tolist()):
            answer = cell[: cell.index(EOS) + 1] if EOS in cell else cell
            for k in range(len(answer) + 1):
                table[tuple(answer[:k])] = table.get(tuple(answer[:k]), 0.0) + mass
        tables.append(table)
    return tables, log_normalizers


def test_a_perfect_adapter_gives_equal_final_weights_and_the_exact_normaliser(adapted, monkeypatch):
    """The adapter replaced by the tempered target's own conditionals `q(v | x_<t) = pi(x_<t v) / pi(x_<t)`
    (enumerated): with no resampling every final weight of a prompt is equal (ESS = N) and the normaliser estimate
    is `log Z` exactly, on every prompt. Along the way the log-weight after t tokens is `log Z - log V(x_<=t)`
    (`V` the tempered mass of the prefix's futures), which differs across particles: the prefix targets `p^alpha`
    of Power-SMC ignore the futures that a perfect adapter anticipates, so the ESS dips before the answers end."""
    with adapted.disable_adapter():
        tables, log_normalizers = _tempered_prefix_masses(adapted)

    def perfect(self, ids, attn):
        with active_adapter(self.model, None):
            logits_p, self.past_p = forward_step(self.model, ids, attn, self.past_p)
        if self.past_q is None:
            self.past_q = _Prefixes(ids.clone())
        else:
            self.past_q.ids = torch.cat([self.past_q.ids, ids], dim=1)
        logq = torch.full((self.past_q.ids.shape[0], V), -1e9)
        for r, row in enumerate(self.past_q.ids):
            table = tables[int((PROMPTS == row[:2]).all(1).nonzero()[0])]
            prefix = tuple(row[2:].tolist())
            if EOS in prefix:
                logq[r, PAD] = 0.0  # finished: the token is padding, unweighted
                continue
            for v in range(V):
                if prefix + (v,) in table:
                    logq[r, v] = math.log(table[prefix + (v,)] / table[prefix])
        self.logits_q = logq
        return logits_p

    monkeypatch.setattr(AdapterProposal, "_both", perfect)
    out = smc_sample(
        adapted,
        PROMPTS,
        PROMPT_MASK,
        max_new_tokens=NEW,
        seq_temperature=T,
        num_particles=16,
        ess_threshold=0.0,
        generator=torch.Generator().manual_seed(0),
        eos_token_id=EOS,
        pad_token_id=PAD,
        return_dict_in_generate=True,
        return_particles=True,
        proposal="adapter",
    )
    assert torch.allclose(out.ess[:, -1], torch.full((3,), 16.0), atol=1e-3), out.ess
    assert torch.allclose(out.particle_log_weights, torch.full((3, 16), -math.log(16.0)), atol=1e-4)
    assert torch.allclose(out.log_normalizer.double(), torch.tensor(log_normalizers, dtype=torch.float64), atol=1e-4)
    assert bool((out.ess[:, 0] < 15.0).any()), out.ess  # not equal along the way (see the docstring)


def test_generate_with_a_loaded_adapter_proposes_from_it_by_default():
    """`generate(seq_temperature=T, strategy="smc")` on a model whose registered adapter was trained for T proposes
    from that adapter (two calls per token) and still samples the base target (chi-square per prompt); asking for an
    adapter proposal at a temperature no adapter was trained for is refused by name."""
    import hf_seqtemp
    from hf_seqtemp import SequenceTemperatureConfig
    from hf_seqtemp.generation.adapters import register_tempered_adapter

    model = _adapted(seed=2)
    register_tempered_adapter(model, SequenceTemperatureConfig(target_temperature=T), "default")
    runs = 1000
    out = _generate_runs(model, 64, runs, return_dict_in_generate=True)
    assert out.model_calls == 2 * NEW  # the adapter proposal's two passes per token
    with model.disable_adapter():
        answers, targets = _oracle(model)
    assert min(_pvalues(out, runs, targets, answers)) > 1e-3
    with pytest.raises(ValueError, match=r"No loaded adapter was trained for `seq_temperature=0.25`"):
        model.generate(
            PROMPTS,
            attention_mask=PROMPT_MASK,
            max_new_tokens=NEW,
            custom_generate=hf_seqtemp.seqtemp_generate,
            seq_temperature=0.25,
            strategy="smc",
            proposal="adapter",
            eos_token_id=EOS,
            pad_token_id=PAD,
        )


def test_adapter_proposal_errors():
    with pytest.raises(ValueError, match=r"`proposal` must be one of \['token', 'adapter'\], got 'lora'"):
        smc_sample(tiny_llama(), PROMPTS, proposal="lora")
    with pytest.raises(ValueError, match=r"samples from the model's active PEFT adapter, and 0 are active"):
        smc_sample(tiny_llama(), PROMPTS, proposal="adapter")
