# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact oracles for the Glauber sampler on a tiny causal LM: |V| = 3, a 1-token prompt and a 3-token completion
(27 states). The transition matrices of the single-site kernels and of a full sweep (averaged over the 3! site
orders) are built by enumeration, and `pi = p^(1/T)/Z` (from the scorer, independently) must be stationary."""

import itertools
import math

import pytest
import torch
from tiny_models import tiny_causal_lm, tiny_masked_lm

from hf_seqtemp.generation.glauber import (
    _proposal_log_q,
    _site_energies,
    glauber_refine,
    mh_acceptance,
    mtm_probabilities,
)
from hf_seqtemp.likelihood import AutoregressiveScorer

V, L = 3, 4
STATES = torch.tensor([[0, *rest] for rest in itertools.product(range(V), repeat=L - 1)])
INDEX = {tuple(s.tolist()): i for i, s in enumerate(STATES)}
SITES = (1, 2, 3)


@pytest.fixture(scope="module")
def model():
    return tiny_causal_lm(V, seed=0, init_range=0.6)  # no EOS: fixed-length completions (EOS: test_answers.py)


@pytest.fixture(scope="module")
def masked_lm():
    return tiny_masked_lm(V + 1, seed=1, init_range=0.6, max_positions=512)


def _pi(model, temperature):
    with torch.no_grad():
        logp = AutoregressiveScorer()(model, STATES).double()
    return (logp / temperature).softmax(0)


def _site_kernel(model, site, temperature, proposal="model", mask_token_id=None, correct=True, eos=()):
    attn, cmask = torch.ones_like(STATES), torch.zeros_like(STATES, dtype=torch.bool)
    cmask[:, 1:] = True
    sites = torch.full((len(STATES),), site)
    with torch.no_grad():
        energies, ar_log_q = _site_energies(
            model,
            AutoregressiveScorer(),
            STATES,
            attn,
            cmask,
            sites,
            temperature,
            torch.arange(V),
            torch.tensor(eos, dtype=torch.long),
        )
        log_q = _proposal_log_q(proposal, STATES, attn, sites, ar_log_q, V, mask_token_id)
    kernel = torch.zeros(len(STATES), len(STATES), dtype=torch.float64)
    current = STATES[:, site]
    q = log_q.double().exp()
    q = q / q.sum(1, keepdim=True)  # float32 log-softmax sums to 1 within ~1e-8; multinomial renormalises too
    for v in range(V):
        proposed = torch.full_like(current, v)
        accept = mh_acceptance(energies, log_q if correct else torch.zeros_like(log_q), current, proposed).double()
        move = q[:, v] * accept
        for i, state in enumerate(STATES):
            target = state.clone()
            target[site] = v
            kernel[i, INDEX[tuple(target.tolist())]] += move[i]
            kernel[i, i] += q[i, v] - move[i]
    return kernel, energies, log_q


def _sweep(kernels):
    total = sum(kernels[a] @ kernels[b] @ kernels[c] for a, b, c in itertools.permutations(range(len(kernels))))
    return total / math.factorial(len(kernels))


@pytest.mark.parametrize("temperature,proposal", [(0.5, "model"), (2.0, "model"), (0.5, "uniform"), (1.0, "uniform")])
def test_single_site_and_sweep_kernels_leave_tempered_distribution_invariant(model, temperature, proposal):
    pi = _pi(model, temperature)
    kernels = [_site_kernel(model, s, temperature, proposal)[0] for s in SITES]
    for kernel in kernels:
        torch.testing.assert_close(kernel.sum(1), torch.ones(len(STATES), dtype=torch.float64), atol=1e-9, rtol=0)
        assert (pi @ kernel - pi).abs().max() < 1e-6
        assert (kernel.diagonal() < 1 - 1e-3).any()  # the kernel moves
    sweep = _sweep(kernels)
    assert (pi @ sweep - pi).abs().max() < 1e-6
    assert (sweep > 0).all()  # irreducible and aperiodic: pi is the unique stationary distribution
    assert (
        _pi(model, 1.0 if temperature != 1.0 else 0.5) @ sweep - _pi(model, 1.0 if temperature != 1.0 else 0.5)
    ).abs().max() > 1e-3  # and another temperature's distribution is not


def test_masked_lm_proposal_is_exact(model, masked_lm):
    pi = _pi(model, 0.5)
    kernels = [_site_kernel(model, s, 0.5, masked_lm, mask_token_id=V)[0] for s in SITES]
    assert all((pi @ k - pi).abs().max() < 1e-6 for k in kernels)


def test_dropping_the_proposal_ratio_breaks_stationarity(model):
    pi = _pi(model, 0.5)
    wrong = _site_kernel(model, 1, 0.5, "model", correct=False)[0]
    assert (pi @ wrong - pi).abs().max() > 1e-3


def test_multiple_try_kernel_is_exact(model):
    """N = 2 proposals: enumerate all V^2 proposal pairs, the selection and the acceptance."""
    n, temperature = 2, 0.5
    pi = _pi(model, temperature)
    kernels = []
    for site in SITES:
        _, energies, log_q = _site_kernel(model, site, temperature, "model")
        energies, log_q = energies.double(), log_q.double().log_softmax(1)
        log_w = -energies - log_q
        kernel = torch.zeros(len(STATES), len(STATES), dtype=torch.float64)
        for tries in itertools.product(range(V), repeat=n):
            tries_t = torch.tensor(tries)
            prob = log_q[:, tries_t].sum(1).exp()
            select, accept = mtm_probabilities(
                log_w[:, tries_t], log_w.gather(1, STATES[:, site : site + 1]).squeeze(1)
            )
            for i, state in enumerate(STATES):
                for j, v in enumerate(tries):
                    target = state.clone()
                    target[site] = v
                    move = prob[i] * select[i, j] * accept[i, j]
                    kernel[i, INDEX[tuple(target.tolist())]] += move
                    kernel[i, i] += prob[i] * select[i, j] - move
        kernels.append(kernel)
        assert (pi @ kernel - pi).abs().max() < 1e-6
    assert (pi @ _sweep(kernels) - pi).abs().max() < 1e-6


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_answer_target_with_eos_is_invariant_and_has_the_tempered_answer_marginal(model, temperature):
    """EOS = token 2. The chain's target on the 27 completions is p(answer)^(1/T) p(tail | answer), built here from
    the scorer's per-token conditionals; every site kernel keeps it invariant, and its marginal over the 15 answers
    (lengths 1-3, the last truncated) is p(answer)^(1/T) / Z with p(answer) scored on the answer alone."""
    eos = 2
    cmask = torch.zeros_like(STATES, dtype=torch.bool)
    cmask[:, 1:] = True
    with torch.no_grad():
        token_logps, _ = AutoregressiveScorer().token_logps(model, STATES, completion_mask=cmask)
    token_logps = token_logps.double()
    first_eos = [next((j for j in range(1, L) if s[j] == eos), L - 1) for s in STATES.tolist()]
    in_answer = torch.tensor([[0 < j <= e for j in range(L)] for e in first_eos])
    log_pi = (token_logps * in_answer).sum(1) / temperature + (token_logps * (cmask & ~in_answer)).sum(1)
    pi = log_pi.softmax(0)
    kernels = [_site_kernel(model, s, temperature, eos=(eos,))[0] for s in SITES]
    for kernel in kernels:
        assert (pi @ kernel - pi).abs().max() < 1e-6
    assert (_pi(model, temperature) @ _sweep(kernels) - _pi(model, temperature)).abs().max() > 1e-3
    answers = sorted({tuple(s[: e + 1]) for s, e in zip(STATES.tolist(), first_eos)})
    assert len(answers) == 1 + (V - 1) + (V - 1) ** 2 + (V - 1) ** 3  # 15: "2", "x2", "xy2", "xyz" (x, y, z != 2)
    marginal = torch.zeros(len(answers), dtype=torch.float64)
    for prob, s, e in zip(pi, STATES.tolist(), first_eos):
        marginal[answers.index(tuple(s[: e + 1]))] += prob
    with torch.no_grad():
        answer_logps = torch.stack(
            [AutoregressiveScorer()(model, torch.tensor([a])).double()[0] for a in answers]
        )  # each answer scored alone: no tail
    torch.testing.assert_close(marginal, (answer_logps / temperature).softmax(0), atol=1e-6, rtol=0)


def _tv(a, b):
    return 0.5 * float((a - b).abs().sum())


@pytest.mark.parametrize("num_candidates,proposal", [(None, "model"), (None, "uniform"), (2, "model")])
def test_sampled_chains_match_exact_distribution(model, num_candidates, proposal):
    """n chains from one start state, R rounds; compare with the exact law e_x0 S^R (S = sweep matrix).

    Tolerance: E[TV(empirical, d)] <= 1/2 sum_x sqrt(d(x)(1 - d(x))/n), and TV changes by at most 1/n per chain,
    so by McDiarmid P(TV > E[TV] + t) <= exp(-2 n t^2) = exp(-9.6) for n = 3000, t = 0.04."""
    n, rounds, temperature = 3000, 2, 0.5
    kernels = [_site_kernel(model, s, temperature, proposal)[0] for s in SITES]
    start = INDEX[(0, 2, 2, 2)]
    law = torch.linalg.matrix_power(_sweep(kernels), rounds)[start]
    out = glauber_refine(
        model,
        STATES[start].repeat(n, 1),
        seq_temperature=temperature,
        num_rounds=rounds,
        proposal=proposal,
        num_candidates=num_candidates,
        generator=torch.Generator().manual_seed(0),
    )
    counts = torch.bincount(torch.tensor([INDEX[tuple(r.tolist())] for r in out.sequences]), minlength=len(STATES))
    empirical = counts.double() / n
    tolerance = 0.5 * float((law * (1 - law) / n).sqrt().sum()) + 0.04
    assert _tv(empirical, law) < tolerance
    assert _tv(empirical, _pi(model, 1.0)) > tolerance  # the test can tell T = 0.5 from T = 1
    assert out.acceptance_rates.shape == (rounds,) and (out.acceptance_rates > 0).all()
    with torch.no_grad():
        torch.testing.assert_close(out.log_likelihoods, AutoregressiveScorer()(model, out.sequences))


def test_last_site_with_model_proposal_at_t1_always_accepts(model):
    """At the last position p(v | x_<i) is the exact conditional of p: MH accepts every proposal at T = 1."""
    cmask = torch.zeros(64, L, dtype=torch.bool)
    cmask[:, -1] = True
    out = glauber_refine(
        model,
        STATES[torch.arange(64) % 27],
        completion_mask=cmask,
        num_rounds=3,
        generator=torch.Generator().manual_seed(0),
    )
    assert out.acceptance_rates.tolist() == [1.0, 1.0, 1.0]
    torch.testing.assert_close(out.sequences[:, :-1], STATES[torch.arange(64) % 27][:, :-1])


def test_ancestral_draft_then_zero_rounds_samples_the_model(model):
    n = 4000
    out = glauber_refine(
        model,
        torch.zeros(n, L, dtype=torch.long),
        num_rounds=0,
        draft="ancestral",
        generator=torch.Generator().manual_seed(1),
    )
    counts = torch.bincount(torch.tensor([INDEX[tuple(r.tolist())] for r in out.sequences]), minlength=len(STATES))
    pi = _pi(model, 1.0)
    assert _tv(counts.double() / n, pi) < 0.5 * float((pi * (1 - pi) / n).sqrt().sum()) + 0.04


def test_errors(model):
    ids = torch.zeros(2, L, dtype=torch.long)
    with pytest.raises(ValueError, match="`input_ids` must be a 2-D"):
        glauber_refine(model, torch.zeros(L, dtype=torch.long))
    with pytest.raises(ValueError, match="`seq_temperature` must be a finite float > 0, got 0.0"):
        glauber_refine(model, ids, seq_temperature=0.0)
    with pytest.raises(ValueError, match="`num_rounds` must be an integer ≥ 0, got -1"):
        glauber_refine(model, ids, num_rounds=-1)
    with pytest.raises(ValueError, match="`proposal` must be 'model', 'uniform'"):
        glauber_refine(model, ids, proposal="gibbs")
    with pytest.raises(ValueError, match="needs `mask_token_id`"):
        glauber_refine(model, ids, proposal=torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="`num_candidates` must be an integer ≥ 1 or None"):
        glauber_refine(model, ids, num_candidates=0)
    with pytest.raises(ValueError, match="`draft` must be 'input'"):
        glauber_refine(model, ids, draft="beam")
    with pytest.raises(ValueError, match="marks position 0"):
        glauber_refine(model, ids, completion_mask=torch.ones_like(ids))
