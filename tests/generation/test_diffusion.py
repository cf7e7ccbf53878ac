# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Diffusion decoding: policies, call counts, batching, reproducibility and argument errors."""

import math

import pytest
import torch

from hf_seqtemp.generation import PowerLogitsWarper, diffusion_generate, imh_chain, select_positions


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_policies_rank_positions():
    probs = torch.tensor([[[0.4, 0.4, 0.2], [0.7, 0.3, 0.0], [0.6, 0.2, 0.2], [0.34, 0.33, 0.33]]])
    everywhere = torch.ones(1, 4, dtype=torch.bool)
    assert select_positions("confidence", probs, everywhere, 1).tolist() == [[1]]
    assert select_positions("entropy", probs, everywhere, 1).tolist() == [[1]]  # H(.7,.3) is the lowest
    assert select_positions("margin", probs, everywhere, 2).tolist() == [[2, 1]]  # gaps .4 and .4 > 0
    assert select_positions("left_to_right", probs, torch.tensor([[False, False, True, True]]), 2).tolist() == [[2, 3]]
    picks = {tuple(select_positions("random", probs, everywhere, 1, _gen(s)).tolist()[0]) for s in range(30)}
    assert picks == {(0,), (1,), (2,), (3,)}
    masked_out = select_positions("confidence", probs, torch.tensor([[True, False, True, True]]), 1)
    assert masked_out.tolist() == [[2]]


def test_entropy_and_margin_differ_from_confidence():
    # confidence prefers position 0 (max .5); entropy prefers position 1 (mass on two tokens only)
    probs = torch.tensor([[[0.5, 0.1, 0.1, 0.1, 0.1, 0.1], [0.45, 0.45, 0.1, 0.0, 0.0, 0.0]]])
    everywhere = torch.ones(1, 2, dtype=torch.bool)
    assert select_positions("confidence", probs, everywhere, 1).tolist() == [[0]]
    assert select_positions("entropy", probs, everywhere, 1).tolist() == [[1]]
    assert select_positions("margin", probs, everywhere, 1).tolist() == [[0]]


def test_imh_chain_follows_log_ratio():
    # proposal 1 is much worse than the initial state, proposal 2 better: with these weights the chain must
    # reject 1 (probability e^-50) and accept 2 (ratio > 1)
    chosen, accepted = imh_chain(torch.tensor([[0.0, -50.0, 1.0]]), _gen())
    assert chosen.tolist() == [2] and accepted.tolist() == [1]


@pytest.mark.parametrize("block_length,tokens_per_step", [(None, 1), (3, 1), (2, 1), (6, 2), (3, 2)])
def test_imh_makes_as_many_sequential_calls_as_confidence(masked_lm, block_length, tokens_per_step):
    prompts = torch.tensor([[1, 2], [3, 0]])
    kwargs = {"max_new_tokens": 6, "block_length": block_length, "tokens_per_step": tokens_per_step}
    masked_lm.calls = 0
    conf = diffusion_generate(masked_lm, prompts, policy="confidence", return_dict_in_generate=True, **kwargs)
    confidence_calls = masked_lm.calls
    masked_lm.calls = 0
    imh = diffusion_generate(
        masked_lm,
        prompts,
        seq_temperature=0.5,
        num_proposals=5,
        generator=_gen(),
        return_dict_in_generate=True,
        **kwargs,
    )
    blocks = 6 // (block_length or 6)
    steps = blocks * math.ceil((block_length or 6) / tokens_per_step)
    assert confidence_calls == conf.num_model_calls == steps
    assert masked_lm.calls == imh.num_model_calls == steps
    assert (imh.sequences[:, 2:] != masked_lm.mask_token_id).all()


def test_duplicates_evaluated_once_and_max_batch_only_splits(masked_lm):
    def draw(**options):
        return diffusion_generate(masked_lm, torch.tensor([[1, 2]] * 3), max_new_tokens=3, seq_temperature=0.5,
                                  num_proposals=20, generator=_gen(3), return_dict_in_generate=True, **options)  # fmt: skip

    out = draw()
    # first call: 3 rows; two lookahead calls with at most 4 distinct tokens per row (not 21 candidates)
    assert out.num_evaluated_states <= 3 + 2 * 3 * 4
    masked_lm.calls = 0
    split = draw(max_batch=2)
    assert torch.equal(split.sequences, out.sequences)
    assert split.num_model_calls == out.num_model_calls and masked_lm.calls > out.num_model_calls


def test_left_padding_matches_unpadded_prompt(masked_lm):
    short, long = [3, 1], [2, 0, 3, 1]
    padded = torch.tensor([[0, 0] + short, long])
    attention = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    batch = diffusion_generate(masked_lm, padded, attention, max_new_tokens=4, do_sample=False)
    alone = diffusion_generate(masked_lm, torch.tensor([short]), max_new_tokens=4, do_sample=False)
    assert torch.equal(batch[0, 2:], alone[0])
    assert torch.equal(batch[:, :4], padded)


def test_generator_makes_runs_reproducible(masked_lm):
    prompts = torch.tensor([[1, 2]] * 4)
    kwargs = {"max_new_tokens": 4, "seq_temperature": 2.0, "policy": "random", "num_proposals": 3}
    first = diffusion_generate(masked_lm, prompts, generator=_gen(7), **kwargs)
    assert torch.equal(first, diffusion_generate(masked_lm, prompts, generator=_gen(7), **kwargs))
    others = [diffusion_generate(masked_lm, prompts, generator=_gen(s), **kwargs) for s in range(8, 12)]
    assert any(not torch.equal(first, other) for other in others)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"policy": "lowest"}, "`policy` must be one of"),
        ({"block_length": 0}, "`block_length` must be an integer ≥ 1"),
        ({"tokens_per_step": 0}, "`tokens_per_step` must be an integer ≥ 1"),
        ({"num_proposals": 0}, "`num_proposals` must be an integer ≥ 1"),
        ({"max_batch": 0}, "`max_batch` must be an integer ≥ 1"),
        ({"max_new_tokens": 0}, "`max_new_tokens` must be an integer ≥ 1"),
        ({"seq_temperature": 0.0}, "`seq_temperature` must be a finite float > 0, got 0.0"),
        ({"seq_temperature": float("nan")}, "`seq_temperature` must be a finite float > 0, got nan"),
        ({"seq_temperature": 0.5, "token_temperature": 0.7}, "`token_temperature` must be 1.0 when"),
        ({"seq_temperature": 0.5, "do_sample": False}, "`do_sample=False` cannot be combined"),
        ({"token_temperature": 0.0}, "`token_temperature` must be a finite float > 0"),
    ],
)
def test_bad_arguments_raise(masked_lm, kwargs, match):
    kwargs = {"max_new_tokens": 6, **kwargs}
    with pytest.raises(ValueError, match=match):
        diffusion_generate(masked_lm, torch.tensor([[1, 2]]), **kwargs)


def test_bad_model_and_inputs_raise(masked_lm):
    with pytest.raises(TypeError, match="`diffusion_model` must be a `hf_seqtemp.models.DiffusionLM`"):
        diffusion_generate(masked_lm.model, torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="`input_ids` must be a 2-D tensor"):
        diffusion_generate(masked_lm, torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="`seq_temperature` must be a float > 0, got '0.5'"):
        diffusion_generate(masked_lm, torch.tensor([[1, 2]]), seq_temperature="0.5")
    masked_lm.block_size = 3  # a block-diffusion model defines blocks of 3: decoding in blocks of 2 is refused
    with pytest.raises(ValueError, match="`block_length` is 2 but the block-diffusion model uses block_size=3"):
        diffusion_generate(masked_lm, torch.tensor([[1, 2]]), block_length=2)


def test_power_warper():
    scores = torch.tensor([[0.0, math.log(2.0)]])
    assert torch.allclose(PowerLogitsWarper(3)(None, scores).softmax(-1), torch.tensor([[1 / 9, 8 / 9]]))
    with pytest.raises(ValueError, match="`alpha` must be a finite float > 0, got 0.0"):
        PowerLogitsWarper(0.0)
    with pytest.raises(TypeError, match="`alpha` must be a float > 0, got 'a'"):
        PowerLogitsWarper("a")
