# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import pytest
import torch
from precision import float32_tolerance
from tiny_models import tiny_causal_lm
from toy import all_sequences, brute_force_logps

from hf_seqtemp import AutoregressiveScorer
from hf_seqtemp.likelihood.base import default_completion_mask


@pytest.mark.parametrize("vocab_size,length", [(4, 3), (8, 2), (3, 4)])
def test_scorer_matches_brute_force_and_normalises(vocab_size, length):
    model = tiny_causal_lm(vocab_size, seed=vocab_size)
    sequences = all_sequences(vocab_size, length)
    scores = AutoregressiveScorer()(model, sequences).double()
    torch.testing.assert_close(scores, brute_force_logps(model, sequences), atol=1e-5, rtol=0)
    assert abs(scores.exp().sum().item() - 1.0) < 1e-4


def test_token_temperature_is_the_myopic_product_of_tempered_conditionals():
    model = tiny_causal_lm(4, seed=1)
    sequences = all_sequences(4, 3)
    scores = AutoregressiveScorer(token_temperature=0.5)(model, sequences).double()
    expected = []
    with torch.no_grad():
        for seq in sequences:
            total = 0.0
            for i in range(1, seq.shape[0]):
                logits = model(input_ids=seq[None, :i]).logits[0, -1].double() / 0.5
                total += logits.log_softmax(-1)[seq[i]].item()
            expected.append(total)
    torch.testing.assert_close(scores, torch.tensor(expected, dtype=torch.float64), atol=1e-5, rtol=0)
    # myopic tempering renormalises every step, so the sequence distribution still sums to one ...
    assert abs(scores.exp().sum().item() - 1.0) < 1e-4
    # ... but it is not p^{1/T}/Z: the log-ratios are not twice the base ones
    base = AutoregressiveScorer()(model, sequences).double()
    assert not torch.allclose(scores - scores[0], 2 * (base - base[0]), atol=1e-3)


def test_left_and_right_padding_and_prompt_mask_give_the_unpadded_scores():
    model = tiny_causal_lm(5, seed=2)
    scorer = AutoregressiveScorer()
    a, b = torch.tensor([0, 1, 2, 3, 4]), torch.tensor([0, 4, 2])
    expected = torch.stack([scorer(model, a[None])[0], scorer(model, b[None])[0]])
    left = torch.tensor([[0, 1, 2, 3, 4], [9 % 5, 9 % 5, 0, 4, 2]])
    left_mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    torch.testing.assert_close(scorer(model, left, left_mask), expected, atol=1e-5, rtol=0)
    right = torch.tensor([[0, 1, 2, 3, 4], [0, 4, 2, 1, 1]])
    right_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    torch.testing.assert_close(scorer(model, right, right_mask), expected, atol=1e-5, rtol=0)
    # a prompt of two tokens: only the completion's conditionals count
    completion = torch.tensor([[0, 0, 1, 1, 1]])
    full = scorer(model, a[None])
    prefix = scorer(model, a[None, :2])
    torch.testing.assert_close(scorer(model, a[None], completion_mask=completion), full - prefix, atol=1e-5, rtol=0)


@pytest.mark.parametrize("chunk_size", [1, 4, 512, None])
def test_every_chunking_of_the_flattened_positions_gives_the_brute_force_scores(chunk_size):
    # 3 rows x 9 positions = 27 flattened positions: chunk 4 leaves a partial last chunk that spans two rows
    model = tiny_causal_lm(6, seed=3)
    ids = torch.randint(0, 6, (3, 9), generator=torch.Generator().manual_seed(0))
    scores = AutoregressiveScorer(chunk_size=chunk_size)(model, ids).double()
    torch.testing.assert_close(scores, brute_force_logps(model, ids), atol=1e-5, rtol=0)
    token_logps, _ = AutoregressiveScorer(chunk_size=chunk_size, token_temperature=0.7).token_logps(model, ids)
    with torch.no_grad():
        expected = (model(input_ids=ids).logits[:, :-1].double() / 0.7).log_softmax(-1)
    expected = expected.gather(-1, ids[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(token_logps[:, 1:].double(), expected, atol=1e-5, rtol=0)
    assert (token_logps[:, 0] == 0).all()


def test_default_completion_mask_skips_first_real_token():
    mask = default_completion_mask(torch.tensor([[0, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]]))
    assert mask.int().tolist() == [[0, 0, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0]]


def test_scorer_rejects_bad_input():
    model = tiny_causal_lm(4)
    with pytest.raises(ValueError, match="`token_temperature` must be a finite float > 0, got 0.0"):
        AutoregressiveScorer(token_temperature=0.0)
    with pytest.raises(ValueError, match="`token_temperature`.*nan"):
        AutoregressiveScorer(token_temperature=float("nan"))
    with pytest.raises(TypeError, match="`token_temperature` must be a float"):
        AutoregressiveScorer(token_temperature="hot")
    with pytest.raises(ValueError, match="`chunk_size` must be an integer ≥ 1 or None"):
        AutoregressiveScorer(chunk_size=0)
    scorer = AutoregressiveScorer()
    with pytest.raises(ValueError, match="`input_ids` must be a 2-D tensor"):
        scorer(model, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="`attention_mask` must have the shape"):
        scorer(model, torch.tensor([[0, 1, 2]]), torch.ones(1, 2))
    with pytest.raises(ValueError, match="`completion_mask` must have the shape"):
        scorer(model, torch.tensor([[0, 1, 2]]), completion_mask=torch.ones(1, 2))
    with pytest.raises(ValueError, match="marks padding positions"):
        scorer(model, torch.tensor([[0, 1, 2]]), torch.tensor([[1, 1, 0]]), torch.tensor([[0, 1, 1]]))
    with pytest.raises(ValueError, match="marks position 0"):
        scorer(model, torch.tensor([[0, 1, 2]]), completion_mask=torch.tensor([[1, 1, 1]]))


def test_gradients_through_the_chunks_equal_those_of_one_full_log_softmax():
    model = tiny_causal_lm(6, seed=4)
    ids = torch.randint(0, 6, (3, 7), generator=torch.Generator().manual_seed(1))
    weights = torch.tensor([1.0, -2.0, 0.5])  # a loss that weighs the sequences differently

    def grads(score_fn):
        model.zero_grad()
        (weights * score_fn()).sum().backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    def direct():
        logits = model(input_ids=ids).logits[:, :-1].float()
        return logits.log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1).sum(1)

    expected = grads(direct)
    for chunk_size in (1, 4, None):
        got = grads(lambda c=chunk_size: AutoregressiveScorer(chunk_size=c)(model, ids))
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("peft", [False, True])
def test_the_lm_head_runs_only_from_the_first_scored_token_with_the_same_scores_and_gradients(peft):
    """Prompts of different lengths, left- and right-padded: the head sees only the positions from the one before
    the batch's earliest scored token (transformers' `logits_to_keep`, through PEFT too), and the per-token
    log-probabilities and their gradients equal those taken from the full logits."""
    model = tiny_causal_lm(7, seed=5)
    if peft:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        model = get_peft_model(model, lora)
    ids = torch.randint(0, 7, (3, 9), generator=torch.Generator().manual_seed(2))
    attention = torch.tensor([[1] * 9, [0, 0] + [1] * 7, [1] * 6 + [0] * 3])
    completion = torch.tensor([[0] * 4 + [1] * 5, [0] * 6 + [1] * 3, [0] * 3 + [1] * 3 + [0] * 3]).bool()
    head_positions = []
    head = model.get_output_embeddings()
    hook = head.register_forward_hook(lambda module, args, output: head_positions.append(output.shape[1]))
    weights = torch.tensor([1.0, -0.5, 2.0])

    def grads(token_logps):
        model.zero_grad()
        (weights[:, None] * token_logps).sum().backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    token_logps, _ = AutoregressiveScorer().token_logps(model, ids, attention, completion)
    hook.remove()
    assert head_positions == [9 - 2]  # the earliest scored token is at position 3: logits from position 2 on
    got = grads(token_logps)
    positions = (attention.cumsum(1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=attention, position_ids=positions).logits.float()
    full = logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    expected_logps = torch.cat([full.new_zeros(3, 1), full], 1).masked_fill(~completion, 0.0)
    torch.testing.assert_close(token_logps, expected_logps, **float32_tolerance(expected_logps))
    for g, e in zip(got, grads(expected_logps)):
        torch.testing.assert_close(g, e, **float32_tolerance(e))
