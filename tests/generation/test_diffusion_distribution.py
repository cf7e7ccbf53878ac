# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The diffusion decoder samples exactly the distribution the exact block DP scores.

With `policy="random"`, one token per step and the local sampler at token temperature 1, `diffusion_generate`
unmasks the blocks of each row in turn and, inside a block, a uniformly random masked position from the model's
conditional: the generative process whose `log p(x)` [`BlockDiffusionScorer`] computes. Both use the same block
layout (blocks counted from the first real token, prompt included) and the same token support (the mask token is
renormalised away), so the decoder's completion frequencies must pass a chi-square test against the DP's exact
probabilities, enumerated over all 4^3 completions, for every prompt length and with left padding.
"""

import itertools

import pytest
import torch
from distribution_checks import cell_counts, chi_square_pvalue
from tiny_models import tiny_bert

from hf_seqtemp.generation import diffusion_generate
from hf_seqtemp.likelihood import BlockDiffusionScorer
from hf_seqtemp.models.diffusion import BlockDiffusionWrapper

MASK, NEW, SAMPLES = 4, 3, 3000
COMPLETIONS = torch.tensor(list(itertools.product(range(MASK), repeat=NEW)))


def _model(block_size):
    # vocabulary of 5 with id 4 as the mask token; with the mask token kept in the softmax, the 64 completion
    # probabilities of this model would sum to only 0.39-0.92 (measured), so the support choice is visible here
    return BlockDiffusionWrapper(tiny_bert(seed=1, init=0.8), mask_token_id=MASK, block_size=block_size)


@torch.no_grad()
def _exact_probs(model, block_size, prompt):
    ids = torch.cat([torch.tensor([prompt]).expand(len(COMPLETIONS), -1), COMPLETIONS], dim=1)
    completion = torch.zeros_like(ids, dtype=torch.bool)
    completion[:, len(prompt) :] = True
    probs = BlockDiffusionScorer(block_size, max_batch=512)(model, ids, None, completion).double().exp()
    assert abs(probs.sum().item() - 1.0) < 1e-4  # the renormalised conditionals define a distribution
    return probs


def _prompts(block_size):
    """Prompt lengths 1, 2 and B + 1: the first completion block is shared with 1, 2 and 1 prompt tokens."""
    return [[1], [2, 0], [(3 * i + 1) % MASK for i in range(block_size + 1)]]


@pytest.mark.parametrize("block_size", [2, 3])
def test_decoder_frequencies_match_the_exact_block_dp(block_size):
    model = _model(block_size)
    for seed, prompt in enumerate(_prompts(block_size)):
        out = diffusion_generate(
            model,
            torch.tensor([prompt]).expand(SAMPLES, -1),
            max_new_tokens=NEW,
            policy="random",
            generator=torch.Generator().manual_seed(seed),
        )
        counts = cell_counts(out[:, len(prompt) :], COMPLETIONS)
        _, p_value, df = chi_square_pvalue(counts, _exact_probs(model, block_size, prompt))
        assert p_value > 1e-3, (prompt, p_value, df)


@pytest.mark.parametrize("block_size", [2, 3])
def test_left_padded_mixed_batch_matches_the_exact_block_dp(block_size):
    """The three prompts in one left-padded batch: rows sit in different blocks at the same step."""
    model = _model(block_size)
    prompts = _prompts(block_size)
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts]).repeat_interleave(SAMPLES, dim=0)
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    out = diffusion_generate(
        model,
        ids,
        attention.repeat_interleave(SAMPLES, dim=0),
        max_new_tokens=NEW,
        policy="random",
        generator=torch.Generator().manual_seed(5),
    )
    for i, prompt in enumerate(prompts):
        counts = cell_counts(out[i * SAMPLES : (i + 1) * SAMPLES, width:], COMPLETIONS)
        _, p_value, df = chi_square_pvalue(counts, _exact_probs(model, block_size, prompt))
        assert p_value > 1e-3, (prompt, p_value, df)
