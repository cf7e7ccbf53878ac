# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact oracles: on a categorical over the 9 sequences of length 2 on a 3-token vocabulary, the expectation under P
of each loss's gradient (computed by enumeration, `sample_weights = P`) equals the autograd gradient of the enumerated
divergence. Every loss's docstring predicts the constant factor 1 (lambda-PR: w.r.t. its normalised divergence)."""

import itertools

import pytest
import torch

from hf_seqtemp.losses.recall import RollingQuantile, c_div_loss, lambda_pr_loss, trunc_r_loss

V = 3
SEQS = torch.tensor(list(itertools.product(range(V), repeat=2)))  # (9, 2), row index = 3 * x1 + x2


def _p(full_support=False):
    g = torch.Generator().manual_seed(0)
    p = torch.rand(V * V, generator=g, dtype=torch.float64) + 0.2
    if not full_support:
        p[[2, 4, 7]] = 0.0  # sparse data: some sequences are invalid, x1 = 2 keeps only one continuation
    return p / p.sum()


def _theta(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(V * V, generator=g, dtype=torch.float64).requires_grad_()


def _token_logps(log_joint):
    """Per-token conditionals of a joint over (x1, x2): log Q(x1) and log Q(x2 | x1), one row per sequence."""
    joint = log_joint.reshape(V, V)
    log_first = joint.logsumexp(dim=1)
    log_second = joint - log_first[:, None]
    return torch.stack([log_first[SEQS[:, 0]], log_second[SEQS[:, 0], SEQS[:, 1]]], dim=1)


def _expected_grad(loss_fn, theta, p):
    """E_{x~P}[grad loss(x)], exactly: the batch is the support of P, weighted by P."""
    keep = p > 0
    token_logps = _token_logps(theta.log_softmax(0))[keep]
    loss, _ = loss_fn(token_logps, torch.ones_like(token_logps, dtype=torch.bool), p[keep])
    return torch.autograd.grad(loss, theta)[0]


def _divergence_grad(div_fn, theta):
    return torch.autograd.grad(div_fn(theta.log_softmax(0)), theta)[0]


def _tsallis(p, q, alpha):
    return ((p.pow(alpha) * q.pow(1 - alpha)).sum(-1) - 1) / (alpha - 1)


def _conditional_tsallis(log_q, p, alpha):
    q = log_q.exp().reshape(V, V)
    p2 = p.reshape(V, V)
    p_first = p2.sum(1)
    div = _tsallis(p_first, q.sum(1), alpha)
    for x1 in range(V):
        if p_first[x1] > 0:
            div = div + p_first[x1] * _tsallis(p2[x1] / p_first[x1], q[x1] / q[x1].sum(), alpha)
    return div


@pytest.mark.parametrize("alpha", [1.4, 2.5])
def test_c_div_gradient_is_conditional_tsallis_gradient(alpha):
    p, theta = _p(), _theta()
    data_token_logps = _token_logps(p.log())[p > 0]

    def loss_fn(logps, mask, w):
        return c_div_loss(logps, mask, alpha=alpha, data_token_logps=data_token_logps, sample_weights=w)

    expected = _expected_grad(loss_fn, theta, p)
    target = _divergence_grad(lambda log_q: _conditional_tsallis(log_q, p, alpha), theta)
    torch.testing.assert_close(expected, target, atol=1e-10, rtol=1e-4)
    nll = _expected_grad(lambda l, m, w: (-(w * l.sum(1)).sum(), {}), theta, p)
    assert (expected - nll).abs().max() > 1e-2  # a different objective from NLL


def test_c_div_one_hot_is_power_cross_entropy_with_tempered_minimiser():
    alpha, p, theta = 1.4, _p(), _theta()

    def power_ce(log_q):
        token = _token_logps(log_q)[p > 0]
        return (p[p > 0][:, None] * (token.exp().pow(1 - alpha) - 1) / (alpha - 1)).sum()

    expected = _expected_grad(lambda l, m, w: c_div_loss(l, m, alpha=alpha, sample_weights=w), theta, p)
    torch.testing.assert_close(expected, _divergence_grad(power_ce, theta), atol=1e-10, rtol=1e-4)
    # Stationary point: every data conditional at token temperature alpha.
    p_full = _p(full_support=True)
    tempered = _token_logps(p_full.log()) / alpha
    first = tempered[::V, 0].log_softmax(0)
    second = tempered[:, 1].reshape(V, V).log_softmax(1)
    theta_star = (first[:, None] + second).reshape(-1).clone().requires_grad_()
    grad = _expected_grad(lambda l, m, w: c_div_loss(l, m, alpha=alpha, sample_weights=w), theta_star, p_full)
    assert grad.abs().max() < 1e-10
    grad_at_p = _expected_grad(
        lambda l, m, w: c_div_loss(l, m, alpha=alpha, sample_weights=w),
        p_full.log().clone().requires_grad_(),
        p_full,
    )
    assert grad_at_p.abs().max() > 1e-3  # P itself is not the minimiser of the one-hot version


@pytest.mark.parametrize("tau", [-2.5, -1.7])
def test_trunc_r_gradient_is_coverage_divergence_gradient(tau):
    p, theta = _p(), _theta()
    expected = _expected_grad(lambda l, m, w: trunc_r_loss(l, m, threshold=tau, sample_weights=w), theta, p)

    def coverage(log_q):
        return (p * (tau - log_q).clamp(min=0)).sum()

    torch.testing.assert_close(expected, _divergence_grad(coverage, theta), atol=1e-10, rtol=1e-4)
    log_q = theta.detach().log_softmax(0)
    assert ((log_q < tau) & (p > 0)).any() and ((log_q > tau) & (p > 0)).any()  # truncation is active


@pytest.mark.parametrize("lam", [0.3, 1.0, 2.0])
def test_lambda_pr_gradient_is_pr_divergence_gradient(lam):
    p, theta = _p(), _theta(seed=3)
    data_logps = p[p > 0].log()

    def loss_fn(logps, mask, w):
        return lambda_pr_loss(logps, mask, data_logps=data_logps, lam=lam, sample_weights=w)

    expected = _expected_grad(loss_fn, theta, p)

    def pr_divergence(log_q):  # D_lambda = min(lambda, 1) - alpha_lambda, normalised by min(lambda, 1)
        alpha_lam = torch.minimum(lam * p, log_q.exp()).sum()
        return (min(lam, 1.0) - alpha_lam) / min(lam, 1.0)

    torch.testing.assert_close(expected, _divergence_grad(pr_divergence, theta), atol=1e-10, rtol=1e-4)
    assert expected.abs().max() > 1e-3


def test_masked_positions_do_not_count():
    logps = torch.tensor([[-1.0, -2.0, -5.0]], requires_grad=True)
    mask = torch.tensor([[0, 1, 1]])
    for loss, _ in (
        c_div_loss(logps, mask),
        trunc_r_loss(logps, mask, threshold=0.0),
        lambda_pr_loss(logps, mask, data_logps=torch.tensor([0.0])),
    ):
        (grad,) = torch.autograd.grad(loss, logps)
        assert grad[0, 0] == 0 and (grad[0, 1:] != 0).all()


def test_rolling_quantile_matches_torch_quantile_over_window():
    buffer = RollingQuantile(quantile=0.3, capacity=7)
    values = torch.randn(20, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for chunk in values.split(3):
        buffer.update(chunk)
    assert len(buffer) == 7
    assert buffer.value() == pytest.approx(float(torch.quantile(values[-7:], 0.3)))


def test_trunc_r_with_buffer_trains_only_below_quantile():
    buffer = RollingQuantile(quantile=0.5, capacity=8)
    logps = torch.tensor([[0.0, -1.0], [0.0, -2.0], [0.0, -3.0], [0.0, -4.0]], requires_grad=True)
    loss, info = trunc_r_loss(logps, torch.tensor([[0, 1]] * 4), threshold=buffer)
    assert info["threshold"] == pytest.approx(-2.5) and info["kept_fraction"] == 0.5
    assert float(loss.detach()) == pytest.approx((3.0 + 4.0) / 4)


def test_errors():
    logps, mask = torch.zeros(2, 3), torch.ones(2, 3)
    with pytest.raises(ValueError, match="`token_logps` must be a 2-D"):
        c_div_loss(torch.zeros(3), torch.ones(3))
    with pytest.raises(ValueError, match="`completion_mask` must have the shape"):
        c_div_loss(logps, torch.ones(2, 2))
    with pytest.raises(ValueError, match="`sample_weights` must have shape"):
        c_div_loss(logps, mask, sample_weights=torch.ones(3))
    with pytest.raises(ValueError, match="`alpha` must be finite and > 1"):
        c_div_loss(logps, mask, alpha=1.0)
    with pytest.raises(TypeError, match="`alpha` must be a float"):
        c_div_loss(logps, mask, alpha="1.4")
    with pytest.raises(ValueError, match="`data_token_logps` must have the shape"):
        c_div_loss(logps, mask, data_token_logps=torch.zeros(2, 2))
    with pytest.raises(TypeError, match="`threshold` must be a float, a `RollingQuantile` or a tensor"):
        trunc_r_loss(logps, mask, threshold=None)
    with pytest.raises(ValueError, match="`data_logps` must be a tensor of shape"):
        lambda_pr_loss(logps, mask, data_logps=torch.zeros(3))
    with pytest.raises(ValueError, match="`lam` must be finite and > 0"):
        lambda_pr_loss(logps, mask, data_logps=torch.zeros(2), lam=-1.0)
    with pytest.raises(ValueError, match="`quantile` must be in"):
        RollingQuantile(quantile=1.5)
    with pytest.raises(ValueError, match="`quantile` must be finite and > 0"):
        RollingQuantile(quantile=0.0)
    with pytest.raises(ValueError, match="`capacity` must be an integer ≥ 1"):
        RollingQuantile(capacity=0)
    with pytest.raises(ValueError, match="empty buffer"):
        RollingQuantile().value()
