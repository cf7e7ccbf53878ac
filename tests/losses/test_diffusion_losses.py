# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Diffusion losses against brute force on an enumerable toy: 3 binary tokens, every order, every state."""

import itertools
import math

import pytest
import torch

from hf_seqtemp.losses.diffusion import (
    diffusion_ssts_loss,
    mdlm_elbo_loss,
    monte_carlo_log_likelihood,
    monte_carlo_ratio_loss,
)
from hf_seqtemp.losses.temperature import ratio_loss

LENGTH, VOCAB = 3, 2
SEQUENCES = list(itertools.product(range(VOCAB), repeat=LENGTH))
COUNTS = torch.tensor([6, 4, 3, 2, 2, 1, 1, 1])  # the data set: p(x) = count / 20, each x repeated `count` times
P = COUNTS.double() / COUNTS.sum()
ORDERS = list(itertools.permutations(range(LENGTH)))
STATES = list(itertools.product(range(-1, VOCAB), repeat=LENGTH))  # -1 = masked
STATE_INDEX = {state: index for index, state in enumerate(STATES)}


def local_ratio_loss(h):
    """Mean over distinct pairs of (h_i - h_j)^2 (the main developer's `ratio_loss`, restated for the tests)."""
    n = h.numel()
    return (h[:, None] - h[None, :]).pow(2).sum() / (n * (n - 1))


def reveal(x, positions):
    return tuple(x[i] if i in positions else -1 for i in range(LENGTH))


def log_marginal(state):
    """log p(x_S) of the revealed tokens of `state` under the toy joint."""
    keep = [k for k, x in enumerate(SEQUENCES) if all(s in (-1, v) for s, v in zip(state, x))]
    return torch.log(P[keep].sum())


def build_index(rows):
    """Table lookups (state, position, token) and `log p(x | state)` for every (row, order, step)."""
    shape = (len(rows), len(ORDERS), LENGTH)
    state_idx, position, token = (torch.zeros(shape, dtype=torch.long) for _ in range(3))
    ref = torch.zeros(shape, dtype=torch.float64)
    for r, k in enumerate(rows):
        x = SEQUENCES[k]
        for o, order in enumerate(ORDERS):
            for s in range(LENGTH):
                state = reveal(x, set(order[:s]))
                state_idx[r, o, s], position[r, o, s], token[r, o, s] = STATE_INDEX[state], order[s], x[order[s]]
                ref[r, o, s] = torch.log(P[k]) - log_marginal(state)
    return state_idx, position, token, ref.float()


DATA_ROWS = [k for k, count in enumerate(COUNTS.tolist()) for _ in range(count)]
DATA_INDEX = build_index(DATA_ROWS)
ALL_INDEX = build_index(list(range(len(SEQUENCES))))


def step_logq(theta, index):
    state_idx, position, token, _ = index
    return torch.log_softmax(theta, dim=-1)[state_idx, position, token]


def log_q(theta):
    """Exact log q(x) = log mean over all orders of prod_s q(x_{pi_s} | state) for each of the 8 sequences."""
    return monte_carlo_log_likelihood(step_logq(theta, ALL_INDEX).sum(dim=2))


def kl_tempered(theta, temperature):
    log_pt = torch.log_softmax(torch.log(P).float() / temperature, dim=0)
    return (log_pt.exp() * (log_pt - log_q(theta))).sum()


def tempered_conditionals(temperature):
    """theta with q(x_i | x_S) = p_T(x_i | x_S) for every state, computed by summing p^{1/T} over completions."""
    theta = torch.zeros(len(STATES), LENGTH, VOCAB)
    for state, i, v in itertools.product(STATES, range(LENGTH), range(VOCAB)):
        fixed = tuple(v if j == i else s for j, s in enumerate(state))
        match = [k for k, x in enumerate(SEQUENCES) if all(s in (-1, y) for s, y in zip(fixed, x))]
        theta[STATE_INDEX[state], i, v] = torch.log((P[match] ** (1 / temperature)).sum())
    return theta


def ssts(theta, temperature, **kwargs):
    return diffusion_ssts_loss(step_logq(theta, DATA_INDEX), DATA_INDEX[3], temperature, **kwargs)


@pytest.mark.parametrize("normalization", ["self", "baseline"])
def test_ssts_at_temperature_one_is_the_diffusion_objective(normalization):
    theta = torch.randn(len(STATES), LENGTH, VOCAB, generator=torch.Generator().manual_seed(0))
    out = ssts(theta, 1.0, normalization=normalization)
    assert torch.equal(out.log_weights, torch.zeros_like(out.log_weights))
    expected = -step_logq(theta, DATA_INDEX).sum(dim=2).mean()  # Eq. 4 averaged over all orders of the data
    torch.testing.assert_close(out.loss, expected)
    assert out.effective_sample_size.item() == pytest.approx(len(DATA_ROWS) * len(ORDERS))
    impossible = diffusion_ssts_loss(torch.zeros(2, 1, 2), torch.full((2, 1, 2), float("-inf")), 1.0)
    assert torch.equal(impossible.log_weights, torch.zeros(2, 1, 2))


@pytest.mark.parametrize("temperature", [0.5, 2.0])
@pytest.mark.parametrize("normalization", ["self", "baseline"])
def test_ssts_is_stationary_exactly_at_the_tempered_model(temperature, normalization):
    theta = tempered_conditionals(temperature).requires_grad_()
    assert kl_tempered(theta, temperature).abs().item() < 1e-5  # the oracle really is p_T
    ssts(theta, temperature, normalization=normalization).loss.backward()
    assert theta.grad.abs().max().item() < 1e-5
    untempered = tempered_conditionals(1.0).requires_grad_()  # q = p is not a stationary point for T != 1
    ssts(untempered, temperature, normalization=normalization).loss.backward()
    assert untempered.grad.abs().max().item() > 1e-2


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_ssts_gradient_points_where_kl_to_tempered_target_decreases(temperature):
    for seed in range(5):
        theta = torch.randn(len(STATES), LENGTH, VOCAB, generator=torch.Generator().manual_seed(seed))
        theta.requires_grad_()
        (grad_loss,) = torch.autograd.grad(ssts(theta, temperature).loss, theta)
        (grad_kl,) = torch.autograd.grad(kl_tempered(theta, temperature), theta)
        assert (grad_loss * grad_kl).sum().item() > 0


def train(temperature, steps=300):
    theta = torch.zeros(len(STATES), LENGTH, VOCAB, requires_grad=True)
    optimizer = torch.optim.Adam([theta], lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        ssts(theta, temperature).loss.backward()
        optimizer.step()
    return theta.detach()


def test_ssts_training_reaches_the_tempered_distribution_and_plain_diffusion_does_not():
    temperature = 0.5
    start = kl_tempered(torch.zeros(len(STATES), LENGTH, VOCAB), temperature).item()
    tempered = kl_tempered(train(temperature), temperature).item()
    plain = kl_tempered(train(1.0), temperature).item()
    assert tempered < 1e-3 < plain < start
    assert plain == pytest.approx(kl_tempered(tempered_conditionals(1.0), temperature).item(), abs=1e-3)


def test_ssts_weights_favour_likely_sequences_below_temperature_one():
    state_first = DATA_INDEX[3][:, 0, 0]  # log p(x): the first step of every order conditions on nothing
    for temperature, sign in [(0.5, 1.0), (2.0, -1.0)]:
        log_w = ssts(torch.zeros(len(STATES), LENGTH, VOCAB), temperature).log_weights[:, 0, 0]
        expected = (1 - temperature) / temperature * state_first
        expected = expected - torch.logsumexp(expected, 0) + math.log(len(expected))  # self-normalised: mean w = 1
        torch.testing.assert_close(log_w, expected)
        assert sign * (log_w[0] - log_w[-1]).item() > 0  # row 0 is the most likely sequence, the last the least


def test_ssts_effective_sample_size_and_padding_steps():
    logq = torch.log(torch.rand(4, 1, 3, generator=torch.Generator().manual_seed(1)))
    uniform = diffusion_ssts_loss(logq, torch.zeros(4, 1, 3), 0.5)
    assert uniform.effective_sample_size.item() == pytest.approx(4.0)
    peaked = diffusion_ssts_loss(logq, torch.tensor([0.0, -60.0, -60.0, -60.0]).view(4, 1, 1).expand(4, 1, 3), 0.5)
    assert peaked.effective_sample_size.item() == pytest.approx(1.0, abs=1e-6)
    padded_logq = torch.cat([logq, torch.full((4, 1, 2), -7.0)], dim=2)
    padded_ref = torch.cat([torch.zeros(4, 1, 3), torch.full((4, 1, 2), 123.0)], dim=2)
    step_mask = torch.arange(5).expand(4, 1, 5) < 3
    padded = diffusion_ssts_loss(padded_logq, padded_ref, 0.5, step_mask=step_mask)
    torch.testing.assert_close(padded.loss, uniform.loss)
    assert padded.effective_sample_size.item() == pytest.approx(4.0)


def test_mdlm_elbo_loss_integrates_to_the_order_averaged_diffusion_objective():
    theta = torch.randn(len(STATES), LENGTH, VOCAB, generator=torch.Generator().manual_seed(3))
    log_cond = torch.log_softmax(theta, dim=-1)
    grid = (torch.arange(4000, dtype=torch.float32) + 0.5) / 4000  # midpoint rule on t in (0, 1]
    for k, x in enumerate(SEQUENCES):
        estimate = torch.zeros(())
        for mask in itertools.product([False, True], repeat=LENGTH):
            state = STATE_INDEX[tuple(-1 if m else v for m, v in zip(mask, x))]
            token_logps = log_cond[state, torch.arange(LENGTH), torch.tensor(x)].expand(len(grid), LENGTH)
            masked = torch.tensor(mask).expand(len(grid), LENGTH)
            per_t = mdlm_elbo_loss(token_logps, masked, grid, reduction="none")
            density = grid ** sum(mask) * (1 - grid) ** (LENGTH - sum(mask))  # P(this mask | t)
            estimate = estimate + (per_t * density).mean()
        order_average = -step_logq(theta, ALL_INDEX)[k].sum(dim=1).mean()  # Eq. 4 over all 3! orders
        assert estimate.item() == pytest.approx(order_average.item(), rel=1e-4)


def test_mdlm_elbo_loss_reductions_and_weighting():
    token_logps = torch.log(torch.tensor([[0.5, 0.25], [0.1, 1.0]]))
    masked = torch.tensor([[True, False], [True, True]])
    per_row = mdlm_elbo_loss(token_logps, masked, torch.tensor([0.5, 1.0]), reduction="none")
    torch.testing.assert_close(per_row, torch.tensor([2 * math.log(2), math.log(10)]))
    torch.testing.assert_close(mdlm_elbo_loss(token_logps, masked, torch.tensor([0.5, 1.0])), per_row.mean())
    torch.testing.assert_close(mdlm_elbo_loss(token_logps, masked, torch.tensor([0.5, 1.0]), "sum"), per_row.sum())


def test_monte_carlo_ratio_loss_is_zero_exactly_at_the_tempered_model():
    temperature = 0.5
    ref_orders = ALL_INDEX[3][:, 0, :1]  # log p(x | nothing revealed) = log p(x; pi) for every order
    for theta, is_zero in [(tempered_conditionals(temperature), True), (tempered_conditionals(1.0), False)]:
        order_logq = step_logq(theta, ALL_INDEX).sum(dim=2)  # all 3! orders: Eq. 23 is exact
        loss = monte_carlo_ratio_loss(ref_orders, order_logq, temperature, ratio_loss=local_ratio_loss)
        assert (loss.item() < 1e-8) == is_zero
    torch.testing.assert_close(log_q(tempered_conditionals(temperature)).exp().sum(), torch.tensor(1.0))


def test_monte_carlo_ratio_loss_uses_the_package_ratio_loss_by_default():
    ref = torch.log(torch.tensor([[0.2, 0.4], [0.1, 0.3], [0.5, 0.05]]))
    logq = torch.log(torch.tensor([[0.3], [0.2], [0.4]]))
    h = torch.log(ref.exp().mean(1)) - 0.5 * logq[:, 0]  # log p~ - T log q~ with k_p = 2, k_q = 1
    expected = sum((h[i] - h[j]) ** 2 for i in range(3) for j in range(3) if i != j) / 6  # Eq. 20 over all pairs
    torch.testing.assert_close(monte_carlo_ratio_loss(ref, logq, 0.5), expected)
    torch.testing.assert_close(ratio_loss(h), expected)


def test_monte_carlo_log_likelihood_is_log_mean_exp():
    order_logps = torch.tensor([[-1.0, -3.0, -2.0], [-700.0, -700.0, -700.0]])
    expected = torch.log(torch.exp(torch.tensor([-1.0, -3.0, -2.0])).mean())
    torch.testing.assert_close(monte_carlo_log_likelihood(order_logps), torch.stack([expected, torch.tensor(-700.0)]))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: diffusion_ssts_loss(torch.zeros(2, 1, 3), torch.zeros(2, 1, 3), 0.0), ValueError, "`temperature`"),
        (lambda: diffusion_ssts_loss(torch.zeros(2, 1, 3), torch.zeros(2, 1, 3), "1"), TypeError, "`temperature`"),
        (lambda: diffusion_ssts_loss(torch.zeros(2, 3), torch.zeros(2, 3), 1.0), ValueError, "num_orders, steps"),
        (lambda: diffusion_ssts_loss(torch.zeros(2, 1, 3), torch.zeros(2, 1, 2), 1.0), ValueError, "num_orders"),
        (
            lambda: diffusion_ssts_loss(torch.zeros(2, 1, 3), torch.zeros(2, 1, 3), 1.0, step_mask=torch.ones(2, 3)),
            ValueError,
            "`step_mask`",
        ),
        (
            lambda: diffusion_ssts_loss(torch.zeros(2, 1, 3), torch.zeros(2, 1, 3), 1.0, normalization="clip"),
            ValueError,
            "`normalization`",
        ),
        (lambda: mdlm_elbo_loss(torch.zeros(2, 3), torch.ones(2, 2).bool(), torch.ones(2)), ValueError, "`masked`"),
        (lambda: mdlm_elbo_loss(torch.zeros(2, 3), torch.ones(2, 3).bool(), torch.ones(3)), ValueError, "`t`"),
        (lambda: mdlm_elbo_loss(torch.zeros(1, 3), torch.ones(1, 3).bool(), torch.zeros(1)), ValueError, r"\(0, 1\]"),
        (
            lambda: mdlm_elbo_loss(torch.zeros(1, 3), torch.ones(1, 3).bool(), torch.ones(1), reduction="avg"),
            ValueError,
            "`reduction`",
        ),
        (lambda: monte_carlo_log_likelihood(torch.zeros(2, 0)), ValueError, "k >= 1"),
        (
            lambda: monte_carlo_ratio_loss(torch.zeros(2, 3), torch.zeros(3, 1), 1.0, ratio_loss=local_ratio_loss),
            ValueError,
            "same batch",
        ),
    ],
)
def test_errors_name_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()
