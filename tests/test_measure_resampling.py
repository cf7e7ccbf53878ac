# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`importance_resampling_logps` against the exact law of importance resampling, enumerated.

Two prompts, each with its own proposal `r` and base `p` over five answers. With N particles drawn from `r` and one
returned with probability `w_i / sum_j w_j` (`w = p^(1/T) / r`), the returned answer's law is
`q_N(x) = sum over the N-1 other particles of N r(x) prod r(y_j) w(x) / (w(x) + sum_j w(y_j))`, enumerated exactly
for N = 2 and 3. The estimator, fed a large pool of draws of `r`, must match it on every answer of both prompts; it
must be `r` itself at N = 1 and near `p^(1/T) / Z` at large N (where its T_eff against p is T); bad input is refused.
"""

import itertools

import pytest
import torch

from hf_seqtemp.measure import importance_resampling_logps, temperature_report

T = 0.5
R = [torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05]), torch.tensor([0.1, 0.2, 0.2, 0.2, 0.3])]
P = [torch.tensor([0.5, 0.1, 0.2, 0.15, 0.05]), torch.tensor([0.05, 0.05, 0.6, 0.1, 0.2])]


def _exact(r: torch.Tensor, p: torch.Tensor, n: int) -> torch.Tensor:
    r, p = r.double(), p.double()
    w = p ** (1 / T) / r
    law = torch.zeros_like(r)
    for x in range(len(r)):
        for others in itertools.product(range(len(r)), repeat=n - 1):
            mass = r[x] * torch.prod(torch.stack([r[y] for y in others])) if others else r[x]
            law[x] += n * mass * w[x] / (w[x] + sum(w[y] for y in others))
    return law


def _inputs(pool_size: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    answers = torch.arange(5)
    proposal = torch.cat([r.log()[answers] for r in R])
    ref = torch.cat([p.log()[answers] for p in P])
    groups = [0] * 5 + [1] * 5
    pools = [torch.multinomial(r, pool_size, replacement=True, generator=generator) for r in R]
    pool_proposal = torch.cat([R[g].log()[pool] for g, pool in enumerate(pools)])
    pool_ref = torch.cat([P[g].log()[pool] for g, pool in enumerate(pools)])
    pool_groups = [0] * pool_size + [1] * pool_size
    return proposal, ref, groups, pool_proposal, pool_ref, pool_groups


@pytest.mark.parametrize("particles", [2, 3])
def test_the_estimate_is_the_exact_law_of_importance_resampling(particles):
    inputs = _inputs(pool_size=6000)
    generator = torch.Generator().manual_seed(1)
    estimate = importance_resampling_logps(*inputs, T, particles, draws=6000, generator=generator).exp()
    for g in range(2):
        exact = _exact(R[g], P[g], particles)
        assert exact.sum().item() == pytest.approx(1.0)  # the oracle is a law
        torch.testing.assert_close(estimate[5 * g : 5 * g + 5], exact, rtol=0.03, atol=0.003)
        # neither r nor the target: resampling with few particles sits between them
        target = P[g].double() ** (1 / T) / (P[g].double() ** (1 / T)).sum()
        assert (exact - target).abs().max() > 0.02 and (exact - R[g].double()).abs().max() > 0.02


def test_one_particle_is_the_proposal_and_many_approach_the_target():
    proposal, ref, groups, *pool = _inputs(pool_size=4000)
    one = importance_resampling_logps(proposal, ref, groups, *pool, T, 1)
    torch.testing.assert_close(one, proposal.double())
    many = importance_resampling_logps(proposal, ref, groups, *pool, T, 400, draws=512,
                                       generator=torch.Generator().manual_seed(0)).exp()  # fmt: skip
    for g in range(2):
        target = P[g].double() ** (1 / T) / (P[g].double() ** (1 / T)).sum()
        torch.testing.assert_close(many[5 * g : 5 * g + 5], target, rtol=0.05, atol=0.01)
    # scored like a model: against p its T_eff is T within prompts
    report = temperature_report(ref, many.log().float(), torch.ones(10), groups)
    assert report["t_eff"] == pytest.approx(T, rel=0.05) and report["kendall_tau"] >= 0.9  # p ties two answers


def test_bad_input_is_refused_by_name():
    proposal, ref, groups, pool_proposal, pool_ref, pool_groups = _inputs(pool_size=2)
    with pytest.raises(ValueError, match="`num_particles` must be a positive integer, got 0"):
        importance_resampling_logps(proposal, ref, groups, pool_proposal, pool_ref, pool_groups, T, 0)
    with pytest.raises(ValueError, match="prompt 0 has 2 pool draws; .* needs at least 3"):
        importance_resampling_logps(proposal, ref, groups, pool_proposal, pool_ref, pool_groups, T, 4)
