# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact answers from SMC: particle independent Metropolis-Hastings over whole runs (`smc_sample(pimh_steps=K)`).

The toy has the power to see the bias of one run's answer: a tiny Llama with |V| = 8 (EOS 7), three prompts (one
left-padded), answers of at most 3 tokens (400 per prompt, every one enumerated and scored), α = 2 (T = 0.5),
N = 4 particles, 2000 answers per prompt. One run's answer (`pimh_steps=0`) fails chi-square against p^α on some
prompt (its law is biased by O(1/N)); the chain's answer after 32 steps passes on every prompt, with the token
proposal and with a poor adapter proposal (a random LoRA). The acceptance rate is the diagnostic: it warns where the
chain's answers are still biased, and is quiet where they pass.
"""

import warnings

import pytest
import torch
from distribution_checks import cell_counts, chi_square_pvalue
from generation.test_smc import _oracle as smc_oracle
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_llama

from hf_seqtemp.generation.pimh import pimh_chain
from hf_seqtemp.generation.smc import smc_sample

V, EOS, PAD, NEW, T, N, ANSWERS = 8, 7, 0, 3, 0.5, 4, 2000
PROMPTS = torch.tensor([[0, 1], [2, 3], [0, 4]])
PROMPT_MASK = torch.tensor([[0, 1], [1, 1], [1, 1]])


@pytest.fixture(scope="module")
def base():
    return tiny_llama(vocab_size=V, seed=0, head_scale=3.0)


@pytest.fixture(scope="module")
def adapted():
    model = tiny_llama(vocab_size=V, seed=0, head_scale=3.0)
    torch.manual_seed(1)
    config = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
    return get_peft_model(model, config).eval()


def _oracle(model):
    """Per prompt: every padded answer and the exact p^(1/T) over them (`test_smc`'s oracle on this toy)."""
    return smc_oracle(model, V, EOS, NEW, PROMPTS, PROMPT_MASK, T)


def _answers(model, pimh_steps, seed=0, num_particles_=N, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = smc_sample(
            model,
            PROMPTS.repeat_interleave(ANSWERS, dim=0),
            PROMPT_MASK.repeat_interleave(ANSWERS, dim=0),
            max_new_tokens=NEW,
            seq_temperature=T,
            num_particles=num_particles_,
            generator=torch.Generator().manual_seed(seed),
            eos_token_id=EOS,
            pad_token_id=PAD,
            return_dict_in_generate=True,
            pimh_steps=pimh_steps,
            **kwargs,
        )
    return out, [str(w.message) for w in caught if "smc_sample" in str(w.message)]


def _pvalues(out, oracle):
    answers, targets = oracle
    return [
        chi_square_pvalue(cell_counts(out.sequences[b * ANSWERS : (b + 1) * ANSWERS], answers[b]), targets[b])[1]
        for b in range(len(answers))
    ]


@pytest.mark.parametrize("proposal", ["token", "adapter"])
def test_one_runs_answer_is_biased_and_the_chains_answer_is_exact(base, adapted, proposal):
    model = adapted if proposal == "adapter" else base
    with model.disable_adapter() if proposal == "adapter" else torch.no_grad():
        oracle = _oracle(model)
    plain, messages = _answers(model, 0, proposal=proposal)
    assert min(_pvalues(plain, oracle)) < 1e-3  # the test can see the bias of one run's answer
    # and the diagnostic says so (measured bound 0.41-0.53, where the weights' ESS / N read 0.60-0.79)
    assert len(messages) == 1 and "one run's answers are estimated at" in messages[0] and "reads low" in messages[0]
    assert float(plain.answer_bias_bound.min()) > 0.3 and float((plain.ess[:, -1] / N).mean()) > 0.5
    exact, messages = _answers(model, 32, seed=1, proposal=proposal)
    assert min(_pvalues(exact, oracle)) > 1e-3
    assert exact.pimh_acceptance.shape == (len(PROMPTS) * ANSWERS,) and not messages  # passes, nothing is said
    assert 0.2 < exact.pimh_acceptance.mean() < 1.0


def test_the_bias_bound_of_one_runs_answers_is_quiet_where_they_pass(base):
    """At N = 64 one run's answers pass chi-square on this toy (p 0.003-0.12 measured) and the bound reads 0.09-0.12:
    nothing is said. With one run per prompt there is nothing to estimate it from (NaN)."""
    oracle = _oracle(base)
    out, messages = _answers(base, 0, num_particles_=64)
    assert min(_pvalues(out, oracle)) > 1e-3 and not messages
    assert float(out.answer_bias_bound.max()) < 0.15
    single = smc_sample(base, PROMPTS, PROMPT_MASK, max_new_tokens=NEW, seq_temperature=T, num_particles=N,
                        eos_token_id=EOS, pad_token_id=PAD, return_dict_in_generate=True)  # fmt: skip
    assert bool(single.answer_bias_bound.isnan().all())


def test_the_acceptance_rate_warns_where_the_chains_answers_are_still_biased(base):
    """Measured on this toy (token proposal, N = 4): after 1, 2, 4 steps chi-square fails (p < 1e-6) and a chain is
    still at its first run with probability 0.3-0.7: warned; after 8 steps it passes and nothing is said."""
    oracle = _oracle(base)
    short, messages = _answers(base, 2, seed=3)
    assert min(_pvalues(short, oracle)) < 1e-3
    assert len(messages) == 1 and "still at its first run with probability" in messages[0]
    enough, messages = _answers(base, 8, seed=3)
    assert min(_pvalues(enough, oracle)) > 1e-3 and not [m for m in messages if "still at its first run" in m]
    # at 8 steps the chain rests on about 4 effective runs of 9: the heavy-tail warning (`RUN_ESS_LEVEL`) is
    # conservative there (one of its false alarms on the grid's table); at 32 steps nothing is said
    assert len(messages) == 1 and "effective runs" in messages[0]
    longer, messages = _answers(base, 32, seed=3)
    assert min(_pvalues(longer, oracle)) > 1e-3 and not messages


def test_the_chain_moves_by_the_ratio_of_normalisers():
    """Run k replaces the current one with probability min(1, Z_k / Z_current): an estimate twice as large is always
    taken, one half as large half the time."""
    generator = torch.Generator().manual_seed(0)
    log_z = torch.tensor([[0.0, 0.6931471805599453]]).repeat(20000, 1)
    final, rate = pimh_chain(log_z, generator)
    assert bool((final == 1).all()) and bool((rate == 1.0).all())
    final, rate = pimh_chain(log_z.flip(1), generator)
    assert abs(final.double().mean().item() - 0.5) < 0.015 and abs(rate.mean().item() - 0.5) < 0.015


def test_generate_and_the_command_line_route_pimh_steps_to_the_same_chain(base):
    """`seqtemp_generate(strategy="smc", pimh_steps=K)` is `smc_sample(..., pimh_steps=K)`: the same answers and
    acceptance at the same seed; the command line takes `--pimh_steps` with the same default."""
    from hf_seqtemp import seqtemp_generate
    from hf_seqtemp.cli.arguments import GenerateArguments

    kwargs = {
        "max_new_tokens": NEW,
        "seq_temperature": T,
        "num_particles": N,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
    }
    direct = smc_sample(
        base, PROMPTS, PROMPT_MASK, generator=torch.Generator().manual_seed(5), return_dict_in_generate=True,
        pimh_steps=6, **kwargs,
    )  # fmt: skip
    routed = base.generate(
        PROMPTS, attention_mask=PROMPT_MASK, custom_generate=seqtemp_generate, strategy="smc", pimh_steps=6,
        generator=torch.Generator().manual_seed(5), return_dict_in_generate=True, **kwargs,
    )  # fmt: skip
    assert torch.equal(routed.sequences, direct.sequences)
    assert torch.equal(routed.pimh_acceptance, direct.pimh_acceptance)
    assert GenerateArguments.__dataclass_fields__["pimh_steps"].default == 0


def test_a_pimh_call_too_large_for_memory_is_refused_before_it_runs(monkeypatch):
    """`pimh_steps=100000` on a tiny model ran all 100001 runs as one batch (1.8 GB) without a word: the call's rows
    and their memory are now estimated first, and a call over half of what the device has free is refused with the
    numbers and the fix (here the free memory is made small, so that the test allocates nothing large)."""
    from hf_seqtemp import checks

    model = tiny_llama(vocab_size=8, seed=0)
    monkeypatch.setattr(checks, "available_bytes", lambda device: 64 * 2**20)
    ids = torch.tensor([[1, 2], [3, 4]])
    with pytest.raises(
        ValueError,
        match=r"`pimh_steps=100000` \(100001 SMC runs of 4 particles for each of 2 prompt"
        r"\(s\), drawn in one batch: 800008 rows.*Use fewer `pimh_steps`",
    ):
        smc_sample(model, ids, max_new_tokens=3, num_particles=4, pimh_steps=100000, pad_token_id=0)
    smc_sample(model, ids, max_new_tokens=3, num_particles=4, pimh_steps=3, pad_token_id=0)  # a small chain runs


def test_one_particle_without_a_chain_is_said_to_be_token_temperature():
    """`num_particles=1` was accepted without a word: one particle is never reweighted, so the answers are the
    proposal's (token temperature T). With `pimh_steps` the chain corrects them and nothing is said."""
    model = tiny_llama(vocab_size=8, seed=0)
    ids = torch.tensor([[1, 2]])
    with pytest.warns(UserWarning, match=r"`num_particles=1` with `pimh_steps=0` returns the proposal's own draws"):
        smc_sample(model, ids, max_new_tokens=2, num_particles=1, pad_token_id=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*num_particles=1.*")
        smc_sample(model, ids, max_new_tokens=2, num_particles=1, pimh_steps=4, pad_token_id=0)


@pytest.mark.parametrize("proposal", ["token", "adapter"])
def test_at_alpha_4_the_chain_passes_or_warns(proposal):
    """Where users run power sampling (α = 4), on the grid's toy (|V| = 9, three prompts of 3 / 1 / 2 tokens
    left-padded, 585 answers each, 2000 answers per prompt): with the token proposal and 4 particles, 8 steps fail
    chi-square (the runs rest on about 3 effective runs) and are warned; 32 steps pass and nothing is said; a random
    LoRA proposing fails by far (one effective run, a chain that hardly moves) and is warned; the same LoRA with
    half the token proposal mixed in (`defensive_mixture=0.5`: weights bounded) passes at 32 steps, quietly. (One
    test per proposal, so that the two can run side by side.)"""
    from hf_seqtemp.models import tiny_causal_lm

    grid_toy = {"hidden_size": 32, "initializer_range": 0.5, "eos_token_id": 8, "pad_token_id": 0}
    model = tiny_causal_lm(9, seed=0, **grid_toy)
    if proposal == "adapter":
        torch.manual_seed(1)
        lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
        model = get_peft_model(model, lora).eval()
    prompts, mask = torch.tensor([[1, 2, 3], [0, 0, 4], [0, 5, 6]]), torch.tensor([[1, 1, 1], [0, 0, 1], [0, 1, 1]])
    with model.disable_adapter() if proposal == "adapter" else torch.no_grad():
        answers, targets = smc_oracle(model, 9, 8, 3, prompts, mask, 0.25)

    def cell(steps, mixture=0.0):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = smc_sample(model, prompts.repeat_interleave(ANSWERS, 0), mask.repeat_interleave(ANSWERS, 0),
                             max_new_tokens=3, seq_temperature=0.25, num_particles=4, proposal=proposal,
                             generator=torch.Generator().manual_seed(steps), eos_token_id=8, pad_token_id=0,
                             return_dict_in_generate=True, pimh_steps=steps, defensive_mixture=mixture)  # fmt: skip
        rows = [out.sequences[b * ANSWERS : (b + 1) * ANSWERS] for b in range(3)]
        pvalues = [chi_square_pvalue(cell_counts(r, a), t)[1] for r, a, t in zip(rows, answers, targets)]
        return min(pvalues), [str(w.message) for w in caught if "smc_sample" in str(w.message)]

    worst, warned = cell(8)
    assert worst < 1e-3 and warned
    worst, warned = cell(32, mixture=0.5 if proposal == "adapter" else 0.0)
    assert worst > 1e-3 and not warned, (worst, warned)


def test_the_defensive_mixture_is_refused_where_it_would_do_nothing(base, adapted):
    """`defensive_mixture` mixes the token proposal into an adapter's: with the token proposal it would change
    nothing, and 1 would be the token proposal itself; both are refused by name, as is a value outside [0, 1)."""
    ids, mask = PROMPTS[:1], PROMPT_MASK[:1]
    with pytest.raises(ValueError, match="defensive_mixture=0.5.*proposal='adapter'"):
        smc_sample(base, ids, mask, max_new_tokens=2, defensive_mixture=0.5)
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match=r"`defensive_mixture` must be in \[0, 1\)"):
            smc_sample(adapted, ids, mask, max_new_tokens=2, proposal="adapter", defensive_mixture=bad)
    with pytest.raises(TypeError, match="defensive_mixture"):
        smc_sample(adapted, ids, mask, max_new_tokens=2, proposal="adapter", defensive_mixture="0.5")


def test_the_mixed_proposal_draws_from_the_mixture_it_weighs_with():
    """The adapter proposal with `defensive_mixture=eps` proposes `eps * p^a / Z + (1 - eps) * q` (q restricted to
    p's support): checked against the formula on random logits, with a token `p` forbids."""
    from hf_seqtemp.generation.smc_proposals import AdapterProposal

    proposal = AdapterProposal.__new__(AdapterProposal)
    generator = torch.Generator().manual_seed(0)
    proposal.logits_q = torch.randn(3, 6, generator=generator)
    next_logp = torch.randn(3, 6, generator=generator).log_softmax(-1)
    next_logp[:, 2] = -torch.inf
    proposal.mixture = 0.25
    mixed = proposal.log_q(next_logp, 4.0).exp()
    token = (4.0 * next_logp).softmax(-1)
    adapter = proposal.logits_q.masked_fill(next_logp == -torch.inf, -torch.inf).softmax(-1)
    torch.testing.assert_close(mixed, 0.25 * token + 0.75 * adapter)
    assert (mixed[:, 2] == 0).all()
