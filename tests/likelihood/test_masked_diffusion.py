# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""MaskedDiffusionScorer against brute force over all L! unmasking orders on a tiny random masked LM."""

import math

import pytest
import torch
from diffusion_oracles import all_orders, naive_log_marginal, orders_to_ranks
from tiny_models import MASK, tiny_masked_lm

from hf_seqtemp.likelihood.masked_diffusion import MaskedDiffusionScorer, sample_orders
from hf_seqtemp.models.diffusion import MaskedLMWrapper, ShiftedLogitsWrapper

CASES = {
    "all_completion": ([1, 2, 3, 4], [1, 1, 1, 1], [1, 1, 1, 1]),
    "prompt": ([2, 0, 4, 1, 3], [1, 1, 1, 1, 1], [1, 1, 0, 1, 1]),
    "right_padding": ([3, 1, 0, 2, 0], [1, 1, 1, 1, 0], [0, 1, 1, 1, 0]),
    "left_padding": ([0, 0, 4, 4, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]),
}


@pytest.fixture(scope="module")
def model():
    return MaskedLMWrapper(tiny_masked_lm(), mask_token_id=MASK)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("estimator", ["mc", "elbo"])
def test_all_orders_equal_brute_force(model, case, estimator):
    ids, attention, completion = CASES[case]
    orders = all_orders(completion)
    with torch.no_grad():
        expected, logps = naive_log_marginal(model, ids, attention, completion, orders)
        ranks = orders_to_ranks(orders, len(ids))[None]
        scorer = MaskedDiffusionScorer(num_orders=1, estimator=estimator, max_batch=7)
        got = scorer.score_orders(
            model, torch.tensor([ids]), torch.tensor([attention]), torch.tensor([completion]), ranks
        )
    if estimator == "elbo":
        expected = torch.stack(logps).mean()
    torch.testing.assert_close(got[0], expected, atol=1e-5, rtol=0)
    # the orders really disagree, so averaging them is not trivially the same as one order
    assert torch.stack(logps).std() > 0.1


def test_padding_is_absent(model):
    """A left- or right-padded row scores exactly like the row without its padding."""
    ids, attention, completion = [4, 2, 1], [1, 1, 1], [0, 1, 1]
    ranks = orders_to_ranks(all_orders(completion), 3)
    scorer = MaskedDiffusionScorer()
    with torch.no_grad():
        plain = scorer.score_orders(model, torch.tensor([ids]), None, torch.tensor([completion]), ranks[None])
        padded = scorer.score_orders(
            model,
            torch.tensor([[0, 0] + ids, ids + [3, 3]]),
            torch.tensor([[0, 0] + attention, attention + [0, 0]]),
            torch.tensor([[0, 0] + completion, completion + [0, 0]]),
            torch.stack(
                [
                    torch.cat([torch.full((len(ranks), 2), -1), ranks], 1),
                    torch.cat([ranks, torch.full((len(ranks), 2), -1)], 1),
                ]
            ),
        )
    torch.testing.assert_close(padded, plain.expand(2), atol=1e-5, rtol=0)


def test_sampled_orders_average_converges_to_exact(model):
    """exp(score) = (1/k) Σ p(x; π_j) is unbiased for p(x); its mean over N rows is within 4 standard errors.

    The standard error sd(p(x; π)) / sqrt(k N) is computed from the exact distribution over all 3! orders, so the
    tolerance is the Monte-Carlo noise of this very estimator (a 4-sigma band: a false failure has probability < 1e-4,
    and with the seed fixed the test is deterministic).
    """
    ids, attention, completion = CASES["prompt"]
    with torch.no_grad():
        log_p, logps = naive_log_marginal(model, ids, attention, completion, all_orders(completion))
        probs = torch.stack(logps).exp()
        rows, k = 400, 2
        scorer = MaskedDiffusionScorer(num_orders=k, seed=0, max_batch=512)
        scores = scorer(
            model, torch.tensor([ids] * rows), torch.tensor([attention] * rows), torch.tensor([completion] * rows)
        )
    stderr = probs.std(unbiased=False) / math.sqrt(k * rows)
    assert abs(scores.exp().mean() - log_p.exp()) < 4 * stderr
    assert stderr < 0.1 * log_p.exp()  # the band is tight enough to mean something
    # Jensen: the log of a k-sample mean is biased low, on average
    assert scores.mean() < log_p


def test_seed_reproduces_orders_and_scores(model):
    ids, attention, completion = torch.tensor([CASES["prompt"][0]]), None, torch.tensor([CASES["prompt"][2]])
    with torch.no_grad():
        first, second = MaskedDiffusionScorer(num_orders=3, seed=7), MaskedDiffusionScorer(num_orders=3, seed=7)
        a, b = first(model, ids, attention, completion), second(model, ids, attention, completion)
        again = first.score_orders(model, ids, attention, completion, first.last_orders)
    assert torch.equal(first.last_orders, second.last_orders)
    assert torch.equal(a, b) and torch.equal(a, again)


def test_batching_and_call_count(model):
    """All k * m partial states go through ceil(states / max_batch) forward calls, with identical results."""
    calls = []
    model.register_forward_pre_hook(lambda module, args: calls.append(args[0].shape[0]))
    ids = torch.tensor([CASES["prompt"][0], CASES["all_completion"][0] + [0]])
    attention = torch.tensor([[1] * 5, [1, 1, 1, 1, 0]])
    completion = torch.tensor([CASES["prompt"][2], CASES["all_completion"][2] + [0]]).bool()
    orders = sample_orders(attention, completion, 3, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        results = []
        for max_batch in (1, 5, 100):
            calls.clear()
            results.append(
                MaskedDiffusionScorer(max_batch=max_batch).score_orders(model, ids, attention, completion, orders)
            )
            assert len(calls) == math.ceil(3 * (4 + 4) / max_batch)
    model._forward_pre_hooks.clear()
    torch.testing.assert_close(results[0], results[1])
    torch.testing.assert_close(results[0], results[2])


def test_sample_orders_respect_blocks_and_completion():
    attention = torch.tensor([[0, 1, 1, 1, 1, 1]])
    completion = torch.tensor([[0, 0, 1, 1, 1, 1]]).bool()
    orders = sample_orders(attention, completion, 50, block_size=2, generator=torch.Generator().manual_seed(1))
    assert (orders[0, :, :2] == -1).all()
    # real-token blocks are {1,2}, {3,4}, {5}: position 2 first, then 3 and 4 in either order, then 5
    assert (orders[0, :, 2] == 0).all() and (orders[0, :, 5] == 3).all()
    assert set(orders[0, :, 3].tolist()) == {1, 2}


def test_gradients_flow(model):
    scorer = MaskedDiffusionScorer(num_orders=2, seed=0)
    score = scorer(model, torch.tensor([[1, 2, 3]]))
    score.sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    model.zero_grad()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_orders": 0}, ValueError, "`num_orders` must be an integer ≥ 1, got 0"),
        ({"num_orders": 2.0}, ValueError, "`num_orders` must be an integer ≥ 1, got 2.0"),
        ({"estimator": "iwae"}, ValueError, "`estimator` must be 'mc' or 'elbo'"),
        ({"max_batch": 0}, ValueError, "`max_batch`"),
        ({"token_temperature": 0.0}, ValueError, "`token_temperature`"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        MaskedDiffusionScorer(**kwargs)


def test_bad_inputs(model):
    scorer = MaskedDiffusionScorer()
    ids = torch.tensor([[1, 2, 3]])
    with pytest.raises(TypeError, match="wrap_diffusion_model"):
        scorer(tiny_masked_lm(), ids)
    with pytest.raises(ValueError, match="contains the mask token 5"):
        scorer(model, torch.tensor([[1, MASK, 3]]))
    with pytest.raises(ValueError, match="`orders` must be a tensor of shape"):
        scorer.score_orders(model, ids, orders=torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="steps 0..m-1"):
        scorer.score_orders(model, ids, orders=torch.tensor([[[-1, 0, 0]]]))
    shifted = ShiftedLogitsWrapper(tiny_masked_lm(), mask_token_id=MASK)
    with pytest.raises(ValueError, match="first real token"):
        scorer(shifted, ids, completion_mask=torch.ones_like(ids))
