# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Brute-force oracles for IMH global tempering on a tiny random masked LM (|V| = 4 real tokens, L = 3)."""

import itertools
import math

import torch
from tiny_models import TinyMaskedLM, tiny_bert

from hf_seqtemp.generation import diffusion_generate, imh_transition_matrix, lookahead_correction

PROMPT = [1, 2]
MASK = 4
REAL = 4  # real tokens 0..3


def _marginals(model, ids):
    """q(x_j = u | s) over the real tokens, by dropping the mask column (independent of the package's code path)."""
    return model(torch.tensor([ids]))[0, :, :REAL].double().softmax(-1)


def _brute_force_delta(model, state, alpha):
    """log sum over every suffix of prod_j q(x_j | s')^alpha: Eq. 8's mean-field joint, enumerated."""
    q = _marginals(model, state)
    remaining = [j for j, t in enumerate(state) if t == MASK]
    total = 0.0
    for suffix in itertools.product(range(REAL), repeat=len(remaining)):
        total += math.prod(q[j, u].item() ** alpha for j, u in zip(remaining, suffix))
    return math.log(total)


def _eq8_target(model, alpha, position=2, length=3):
    state = PROMPT + [MASK] * length
    logp = _marginals(model, state)[position].log()
    deltas = []
    for v in range(REAL):
        child = list(state)
        child[position] = v
        deltas.append(_brute_force_delta(model, child, alpha))
    deltas = torch.tensor(deltas, dtype=torch.float64)
    proposal = (alpha * logp).softmax(-1)
    target = (alpha * logp + deltas).softmax(-1)
    return proposal, target, deltas


def test_lookahead_equals_brute_force(masked_lm):
    state = PROMPT + [3, MASK, MASK]
    for alpha in (0.5, 2.0, 4.0):
        logits = masked_lm(torch.tensor([state]))
        logits[..., MASK] = -math.inf
        remaining = torch.tensor([[t == MASK for t in state]])
        ours = lookahead_correction(logits.log_softmax(-1), remaining, alpha).item()
        assert math.isclose(ours, _brute_force_delta(masked_lm, state, alpha), rel_tol=1e-4, abs_tol=1e-5)


def test_alpha_one_gives_zero_correction_and_accepts_everything(masked_lm):
    logits = masked_lm(torch.tensor([PROMPT + [MASK] * 3]))[..., :REAL]
    remaining = torch.ones(1, 5, dtype=torch.bool)
    assert abs(lookahead_correction(logits.log_softmax(-1), remaining, 1.0).item()) < 1e-5
    out = diffusion_generate(
        masked_lm,
        torch.tensor([PROMPT] * 8),
        max_new_tokens=3,
        seq_temperature=1.0,
        num_proposals=6,
        generator=torch.Generator().manual_seed(0),
        return_dict_in_generate=True,
    )
    assert torch.equal(out.acceptance_rate, torch.ones(8))


def test_imh_commit_matches_chain_law_and_eq8_target():
    # this seed/initialisation gives a proposal (0.0, 0.38, 0.62, 0.0) whose corrected target differs by TV 0.29
    masked_lm = TinyMaskedLM(tiny_bert(seed=2, init=1.0), mask_token_id=MASK)
    alpha, num_proposals, runs = 4.0, 12, 20000
    proposal, target, deltas = _eq8_target(masked_lm, alpha)
    # exact law of the committed token: initial state ~ r, then N IMH steps with kernel K (App. D)
    chain_law = proposal @ torch.linalg.matrix_power(imh_transition_matrix(proposal, deltas), num_proposals)
    kernel = imh_transition_matrix(proposal, deltas)
    assert torch.allclose(target @ kernel, target, atol=1e-12)  # Eq. 8 target is stationary
    # the oracle must discriminate: the locally tempered proposal is far from the corrected target
    assert 0.5 * (proposal - target).abs().sum() > 0.2
    assert 0.5 * (chain_law - target).abs().sum() < 0.01

    def committed_law(**temperature):  # the law of the first committed token over `runs` left-to-right draws
        out = diffusion_generate(masked_lm, torch.tensor([PROMPT] * runs), max_new_tokens=3, policy="left_to_right",
                                 generator=torch.Generator().manual_seed(0), **temperature)  # fmt: skip
        return torch.bincount(out[:, 2], minlength=REAL).double() / runs

    empirical = committed_law(seq_temperature=1 / alpha, num_proposals=num_proposals)
    # TV tolerance: with n = 20000 draws over 4 cells, E[TV] <= 0.5 * sum_v sqrt(p_v (1 - p_v) / n) <= 0.5 * 2 / sqrt(n)
    # = 0.0071, and each cell's error has sd <= 0.0036; 0.025 is > 6 sd above the largest plausible noise, yet far
    # below the 0.2 gap between proposal and target checked above, so a sampler without the correction fails.
    assert 0.5 * (empirical - chain_law).abs().sum() < 0.025
    assert 0.5 * (empirical - target).abs().sum() < 0.03

    local_law = committed_law(token_temperature=1 / alpha)
    assert 0.5 * (local_law - proposal).abs().sum() < 0.025
    assert 0.5 * (local_law - target).abs().sum() > 0.2
