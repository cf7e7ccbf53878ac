# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The scorer applies the LM head a chunk of positions at a time to the last hidden states (the `(batch, length,
vocab)` logits never exist): the sequence log-likelihoods and their gradients (the chunked backward of a linear
head) equal those of the full-logits path, for chunks that cut rows unevenly, on a Llama, a GPT-2 (absolute
positions, tied head), a PEFT model whose LoRA adapts the head itself (chunked without gradients, full logits with),
with a token temperature and left-padded rows; a model whose logits are more than the head's output (Gemma 2's
soft-capping) is scored from its full logits."""

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import Gemma2Config, Gemma2ForCausalLM, GPT2Config, GPT2LMHeadModel

from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.likelihood.chunked_head import plain_output_head
from hf_seqtemp.models import tiny_causal_lm


def _gpt2():
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=11, n_positions=16, n_embd=16, n_layer=1, n_head=2, initializer_range=0.5)
    return GPT2LMHeadModel(config).eval()


def _lora_on_head():
    model = tiny_causal_lm(11, seed=2, hidden_size=16)
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "lm_head"], init_lora_weights=False)
    torch.manual_seed(3)
    return get_peft_model(model, config)


def _gemma2():
    torch.manual_seed(0)
    config = Gemma2Config(
        vocab_size=11, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, head_dim=8, max_position_embeddings=16, final_logit_softcapping=2.0,
    )  # fmt: skip
    return Gemma2ForCausalLM(config).eval()


MODELS = {
    "llama": lambda: tiny_causal_lm(11, seed=1, hidden_size=16),
    "gpt2": _gpt2,
    "lora on the head": _lora_on_head,
    "gemma2 soft-capping": _gemma2,
}


def _batch():
    ids = torch.randint(1, 11, (3, 7), generator=torch.Generator().manual_seed(5))
    attention = torch.ones_like(ids)
    attention[1, :2] = 0  # a left-padded row
    completion = torch.zeros_like(ids, dtype=torch.bool)
    completion[:, 3:] = True
    return ids, attention, completion


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_the_chunked_head_gives_the_full_logits_scores_and_gradients(name, temperature):
    model = MODELS[name]()
    ids, attention, completion = _batch()
    trainable = [p for p in model.parameters() if p.requires_grad]
    results = {}
    for chunk_head, chunk_size in ((False, None), (True, 4), (True, None)):
        model.zero_grad()
        scorer = AutoregressiveScorer(token_temperature=temperature, chunk_size=chunk_size, chunk_head=chunk_head)
        scores = scorer(model, ids, attention, completion)
        (scores * torch.tensor([1.0, -2.0, 0.5])).sum().backward()
        results[(chunk_head, chunk_size)] = (scores.detach(), [p.grad.clone() for p in trainable])
    reference_scores, reference_grads = results[(False, None)]
    for key in ((True, 4), (True, None)):
        scores, grads = results[key]
        torch.testing.assert_close(scores, reference_scores, rtol=1e-5, atol=1e-5)
        for grad, reference in zip(grads, reference_grads):
            torch.testing.assert_close(grad, reference, rtol=1e-4, atol=1e-5)
    assert (plain_output_head(model) is None) == (name == "gemma2 soft-capping")
    # with gradients a LoRA layer on the head has no chunked backward: it is scored from the full logits
    assert (plain_output_head(model, with_grad=True) is None) == (name in ("gemma2 soft-capping", "lora on the head"))


def test_the_chunked_backward_matches_autograd_with_a_bias_and_under_bf16_autocast():
    """`gather_token_logps_from_hidden` with gradients on a linear head with a bias: the gradients of the hidden
    states, weight and bias equal autograd's through the full log-softmax (float32), and under bf16 autocast they
    agree to bf16's precision."""
    from hf_seqtemp.likelihood.chunked_head import gather_token_logps_from_hidden

    torch.manual_seed(0)
    head = torch.nn.Linear(6, 9)
    hidden = torch.randn(2, 5, 6, requires_grad=True)
    targets = torch.randint(0, 9, (2, 5))
    weights = torch.randn(2, 5)
    for autocast in (False, True):
        grads = []
        for chunked in (True, False):
            head.zero_grad()
            hidden.grad = None
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                if chunked:
                    logps = gather_token_logps_from_hidden(hidden, head, targets, 0.7, chunk_size=3)
                else:
                    logits = head(hidden).float() / 0.7
                    logps = logits.log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)
            (logps * weights).sum().backward()
            grads.append((logps.detach(), hidden.grad.clone(), head.weight.grad.clone(), head.bias.grad.clone()))
        tolerance = {"rtol": 2e-2, "atol": 2e-2} if autocast else {"rtol": 1e-5, "atol": 1e-6}
        for chunked, full in zip(*grads):
            torch.testing.assert_close(chunked, full, **tolerance)


def test_the_head_is_applied_by_chunks_and_restored(monkeypatch):
    """With the chunked head, the head's call inside the model's forward returns the targets' log-probabilities
    (width 1, not the vocabulary of 11): a linear head is multiplied by its weight chunk by chunk, with or without
    gradients (the module is called once); a LoRA layer on the head is itself called on chunks of at most 4
    positions. Afterwards the head is the model's own again. (Observed without forward hooks, which would make the
    scorer give the head's hooks real logits: `tests/trainer/test_trl_habits_3.py`.)"""
    from hf_seqtemp.likelihood.chunked_head import HeadAsTokenLogps

    shapes, real_call = [], HeadAsTokenLogps._token_logps

    def recorded(self, *args, **kwargs):
        out = real_call(self, *args, **kwargs)
        shapes.append(tuple(out.shape))
        return out

    monkeypatch.setattr(HeadAsTokenLogps, "_token_logps", recorded)
    model = tiny_causal_lm(11, seed=1, hidden_size=16)
    head = model.get_output_embeddings()
    ids, attention, completion = _batch()
    with torch.no_grad():
        AutoregressiveScorer(chunk_size=4)(model, ids, attention, completion)
    assert [shape[-1] for shape in shapes] == [1]  # a linear head: multiplied by its weight, chunk by chunk
    shapes.clear()
    AutoregressiveScorer(chunk_size=4)(model, ids, attention, completion).sum().backward()
    assert [shape[-1] for shape in shapes] == [1]
    shapes.clear()
    lora = _lora_on_head()  # a LoRA layer: the module itself is called on each chunk of at most 4 positions
    lora_head = lora.get_base_model().get_output_embeddings()
    chunks, real_forward = [], type(lora_head).forward

    def recorded_forward(self, x, *args, **kwargs):
        out = real_forward(self, x, *args, **kwargs)
        if self is lora_head:  # the class's other layers (the adapted projections) are not the head
            chunks.append(tuple(out.shape))
        return out

    monkeypatch.setattr(type(lora_head), "forward", recorded_forward)
    with torch.no_grad():
        AutoregressiveScorer(chunk_size=4)(lora, ids, attention, completion)
    monkeypatch.undo()
    assert shapes and shapes[-1][-1] == 1 and all(shape[-1] == 11 for shape in chunks)  # the chunks, then the call
    assert len(chunks) > 1 and max(shape[0] for shape in chunks) == 4
    assert "forward" not in head.__dict__ and model(ids).logits.shape[-1] == 11
