# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact block DP and schedule variance against brute force over all block-respecting orders."""

import math

import pytest
import torch
from diffusion_oracles import (
    all_orders,
    block_respecting_orders,
    naive_log_marginal,
    orders_to_ranks,
    real_log_softmax,
)
from precision import float32_tolerance
from tiny_models import MASK, tiny_masked_lm

from hf_seqtemp.likelihood.block_diffusion import MAX_EXACT_BLOCK_SIZE, BlockDiffusionScorer, block_subsets
from hf_seqtemp.likelihood.schedule_variance import schedule_variance
from hf_seqtemp.models.diffusion import BlockDiffusionWrapper, MaskedLMWrapper

# (input_ids, attention_mask, completion_mask); all of length 5
CASES = {
    "all_completion": ([1, 2, 3, 4, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]),
    "prompt": ([2, 0, 4, 1, 3], [1, 1, 1, 1, 1], [1, 0, 1, 1, 1]),
    "right_padding": ([3, 1, 0, 2, 0], [1, 1, 1, 1, 0], [0, 1, 1, 1, 0]),
    "left_padding": ([0, 4, 4, 1, 2], [0, 1, 1, 1, 1], [0, 0, 1, 1, 1]),
}
BATCH = [CASES[name] for name in CASES]


def _tensors(rows):
    return [torch.tensor([row[i] for row in rows]) for i in range(3)]


@pytest.fixture(scope="module")
def base():
    return tiny_masked_lm()


@pytest.mark.parametrize("block_size", [1, 2, 3, 4])
@pytest.mark.parametrize("adapter_kind", ["block", "masked"])
def test_exact_dp_equals_brute_force(base, block_size, adapter_kind):
    """The whole padded batch at once, against the average of p(x; π) over every block-respecting order, per row."""
    model = BlockDiffusionWrapper(base, MASK, block_size) if adapter_kind == "block" else MaskedLMWrapper(base, MASK)
    ids, attention, completion = _tensors(BATCH)
    with torch.no_grad():
        got = BlockDiffusionScorer(block_size, max_batch=5)(model, ids, attention, completion)
        expected = torch.stack(
            [naive_log_marginal(model, *row, block_respecting_orders(row[1], row[2], block_size))[0] for row in BATCH]
        )
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_block_size_one_is_the_left_to_right_product(base):
    """B = 1: p(x) = Π_i p(x_i | x_<i), each conditional computed on the *truncated* prefix x_<i + [MASK]."""
    ids = [1, 2, 3, 4]
    with torch.no_grad():
        got = BlockDiffusionScorer(1)(
            BlockDiffusionWrapper(base, MASK, 1), torch.tensor([ids]), None, torch.ones(1, 4)
        )
        steps = [
            real_log_softmax(base(input_ids=torch.tensor([ids[:i] + [MASK]])).logits[0, i])[ids[i]] for i in range(4)
        ]
    torch.testing.assert_close(got[0], torch.stack(steps).sum(), atol=1e-5, rtol=0)


def test_block_diffusion_differs_from_unrestricted_orders(base):
    """Guard against a DP that silently averages over all L! orders: B = 2 and B = 4 give different values."""
    ids = torch.tensor([CASES["all_completion"][0][:4]])
    model = MaskedLMWrapper(base, MASK)
    with torch.no_grad():
        two, four = (
            BlockDiffusionScorer(2)(model, ids, None, torch.ones_like(ids)),
            BlockDiffusionScorer(4)(model, ids, None, torch.ones_like(ids)),
        )
    assert abs(two - four) > 1e-2


def test_completion_shorter_than_a_block(base):
    """A completion of m < B positions is a block with m! orders; no error and the brute-force value."""
    ids, attention, completion = [3, 1, 4, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 0, 0]
    model = BlockDiffusionWrapper(base, MASK, 4)
    with torch.no_grad():
        got = BlockDiffusionScorer(4)(model, *_tensors([(ids, attention, completion)]))
        expected, _ = naive_log_marginal(
            model, ids, attention, completion, block_respecting_orders(attention, completion, 4)
        )
        empty = BlockDiffusionScorer(4)(model, torch.tensor([ids]), None, torch.zeros(1, 5))
    torch.testing.assert_close(got[0], expected, atol=1e-5, rtol=0)
    assert empty.item() == 0.0


def test_left_padding_is_absent(base):
    model = BlockDiffusionWrapper(base, MASK, 2)
    with torch.no_grad():
        plain = BlockDiffusionScorer(2)(model, torch.tensor([[4, 4, 1, 2]]), None, torch.tensor([[0, 1, 1, 1]]))
        padded = BlockDiffusionScorer(2)(
            model,
            torch.tensor([[0, 0, 4, 4, 1, 2]]),
            torch.tensor([[0, 0, 1, 1, 1, 1]]),
            torch.tensor([[0, 0, 0, 1, 1, 1]]),
        )
    torch.testing.assert_close(padded, plain, **float32_tolerance(plain))


def test_gradient_equals_brute_force_gradient(base):
    """The DP is a training loss: its gradient (finite under padding and prompts) matches the brute-force one."""
    model = BlockDiffusionWrapper(base, MASK, 3)
    ids, attention, completion = _tensors(BATCH)
    BlockDiffusionScorer(3)(model, ids, attention, completion).sum().backward()
    dp_grads = [p.grad.clone() for p in base.parameters()]
    base.zero_grad()
    sum(naive_log_marginal(model, *row, block_respecting_orders(row[1], row[2], 3))[0] for row in BATCH).backward()
    for dp_grad, p in zip(dp_grads, base.parameters()):
        assert torch.isfinite(dp_grad).all()
        torch.testing.assert_close(dp_grad, p.grad, atol=1e-4, rtol=1e-4)
    base.zero_grad()


def test_mc_with_all_block_orders_equals_exact(base):
    model = BlockDiffusionWrapper(base, MASK, 2)
    _, attention, completion = CASES["prompt"]
    orders = orders_to_ranks(block_respecting_orders(attention, completion, 2), 5)
    with torch.no_grad():
        exact = BlockDiffusionScorer(2)(model, *_tensors([CASES["prompt"]]))
        mc = BlockDiffusionScorer(2, method="mc").mc.score_orders(model, *_tensors([CASES["prompt"]]), orders[None])
        sampled = BlockDiffusionScorer(2, method="mc", num_orders=3, seed=0)(model, *_tensors([CASES["prompt"]]))
    torch.testing.assert_close(mc, exact, atol=1e-5, rtol=0)
    assert sampled.shape == (1,) and sampled.item() <= 0


def test_dp_call_count(base):
    """One forward per (block, revealed subset S ⊊ M), stacked max_batch at a time."""
    calls = []
    hook = lambda module, args, kwargs: calls.append(kwargs["input_ids"].shape[0])
    handle = base.register_forward_pre_hook(hook, with_kwargs=True)
    ids, attention, completion = _tensors(BATCH)
    with torch.no_grad():
        BlockDiffusionScorer(2, max_batch=1000)(BlockDiffusionWrapper(base, MASK, 2), ids, attention, completion)
    handle.remove()
    # completion positions per block (pairs of real tokens), per row: (2,2,1), (1,2,1), (1,2), (1,2)
    # -> sum of 2^m - 1 = 7 + 5 + 4 + 4 = 20 states in one call
    assert calls == [20]


@pytest.mark.parametrize("block_size", [2, 3])
def test_schedule_variance_exact_equals_brute_force(base, block_size):
    model = BlockDiffusionWrapper(base, MASK, block_size)
    with torch.no_grad():
        got = schedule_variance(model, *_tensors(BATCH), block_size=block_size)
        expected = []
        for row in BATCH:
            _, logps = naive_log_marginal(model, *row, block_respecting_orders(row[1], row[2], block_size))
            expected.append(torch.stack(logps).double().var(unbiased=False))
    torch.testing.assert_close(got, torch.stack(expected), atol=1e-4, rtol=1e-5)
    assert got.dtype == torch.float64 and (got > 0.05).any()


def test_schedule_variance_sampled_unrestricted(base):
    """Sample variance over k uniform orders vs the exact variance over all 4! orders, within 4 standard errors."""
    model = MaskedLMWrapper(base, MASK)
    row = CASES["prompt"]
    with torch.no_grad():
        _, logps = naive_log_marginal(model, *row, all_orders(row[2]))
        got = schedule_variance(model, *_tensors([row]), num_orders=800, seed=0, max_batch=1024)
    logps = torch.stack(logps).double()
    exact = logps.var(unbiased=False)
    fourth = ((logps - logps.mean()) ** 4).mean()
    assert abs(got[0] - exact) < 4 * math.sqrt((fourth - exact**2) / 800)


def test_block_subsets_enumerates_proper_subsets():
    assert sorted(block_subsets(0b1011)) == [0, 1, 2, 3, 8, 9, 10]
    assert block_subsets(0) == []


def test_bad_arguments_and_inputs(base):
    with pytest.raises(ValueError, match='Use `method="mc"`'):
        BlockDiffusionScorer(MAX_EXACT_BLOCK_SIZE + 1)
    assert BlockDiffusionScorer(MAX_EXACT_BLOCK_SIZE + 1, method="mc").method == "mc"
    with pytest.raises(ValueError, match="`block_size` must be an integer ≥ 1, got 0"):
        BlockDiffusionScorer(0)
    with pytest.raises(ValueError, match="`method` must be 'exact' or 'mc'"):
        BlockDiffusionScorer(2, method="dp")
    with pytest.raises(ValueError, match="`num_orders` must be an integer ≥ 1, got 0"):
        BlockDiffusionScorer(2, method="mc", num_orders=0)
    with pytest.raises(ValueError, match="wrapper uses block_size=3"):
        BlockDiffusionScorer(2)(BlockDiffusionWrapper(base, MASK, 3), torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match='Use `method="mc"`'):
        schedule_variance(MaskedLMWrapper(base, MASK), torch.tensor([[1, 2]]), block_size=17)
    with pytest.raises(ValueError, match="`num_orders` must be an integer ≥ 2, got 1"):
        schedule_variance(MaskedLMWrapper(base, MASK), torch.tensor([[1, 2]]), num_orders=1)
    with pytest.raises(ValueError, match="`method` must be 'exact' or 'mc'"):
        schedule_variance(MaskedLMWrapper(base, MASK), torch.tensor([[1, 2]]), method="dp")
