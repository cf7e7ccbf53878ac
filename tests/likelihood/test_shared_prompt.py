# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Completions of one prompt share one forward pass of it, in scoring (with gradients) and in sampling: the same
conditionals, the same gradients and the same samples as one pass per row, for fewer token-forwards; and never where
two passes would change what is computed (a DDP wrapper, active dropout, gradient checkpointing, bf16)."""

import pytest
import torch
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_causal_lm

from hf_seqtemp.data.ancestral import exact_generate, shared_prompt_cache
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.likelihood import autoregressive as scoring
from hf_seqtemp.likelihood.shared_prompt import SharedPrompts, can_share_prompts
from hf_seqtemp.models import tiny_causal_lm as package_tiny_causal_lm

# two prompts, two completions each, and a fifth row of the first prompt; right-padded with 0
IDS = torch.tensor(
    [[5, 6, 7, 1, 3, 0], [5, 6, 7, 2, 3, 4], [8, 9, 4, 5, 0, 0], [8, 9, 4, 6, 6, 0], [5, 6, 7, 9, 0, 0]]
)
COMPLETION = torch.tensor(
    [[0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 0, 0], [0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 0, 0]]
).bool()


def _token_logps(model, ids, attention, completion, share: bool, monkeypatch):
    monkeypatch.setattr(scoring, "can_share_prompts", lambda m: share)
    model.zero_grad()
    logps, _ = AutoregressiveScorer().token_logps(model, ids, attention, completion)
    (logps.sum() * 1.7).backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return logps.detach(), grads


def _decoder_tokens(model) -> list[int]:
    counted = []
    decoder = model.get_base_model().get_decoder() if hasattr(model, "get_base_model") else model.get_decoder()
    decoder.register_forward_pre_hook(lambda module, args, kwargs: counted.append(kwargs["input_ids"].numel()),
                                      with_kwargs=True)  # fmt: skip
    return counted


@pytest.mark.parametrize("padding", ["right", "left"])
def test_shared_prompts_give_the_same_conditionals_and_gradients(padding, monkeypatch):
    base = tiny_causal_lm(12, seed=0)
    model = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))
    model.train()
    ids, completion = IDS, COMPLETION
    if padding == "left":  # move each row's tokens to the right end
        lengths = (IDS > 0).sum(1)
        ids = torch.stack([row.roll(int(IDS.shape[1] - n)) for row, n in zip(IDS, lengths)])
        completion = torch.stack([row.roll(int(IDS.shape[1] - n)) for row, n in zip(COMPLETION, lengths)])
    attention = (ids > 0).long()
    assert can_share_prompts(model) and SharedPrompts.of(ids, attention, completion) is not None
    one, one_grad = _token_logps(model, ids, attention, completion, False, monkeypatch)
    counted = _decoder_tokens(model)
    shared, shared_grad = _token_logps(model, ids, attention, completion, True, monkeypatch)
    torch.testing.assert_close(shared, one, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(shared_grad, one_grad, rtol=1e-4, atol=1e-5)
    assert len(counted) == 2 and sum(counted) < ids.numel()  # the prompts once, then every row's rest


def test_sharing_is_refused_where_two_passes_would_mean_something_else():
    model = tiny_causal_lm(12, seed=0).eval()
    assert can_share_prompts(model)
    assert not can_share_prompts(torch.nn.Sequential(model))  # a wrapper (DDP, DeepSpeed): one forward per step
    lora = get_peft_model(tiny_causal_lm(12, seed=0), LoraConfig(r=2, target_modules=["q_proj"], lora_dropout=0.1))
    assert not can_share_prompts(lora.train())  # its rows would share one dropout mask of the prompt
    assert can_share_prompts(lora.eval())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not can_share_prompts(model)  # a split pass rounds otherwise than one pass in bf16
    assert not can_share_prompts(tiny_causal_lm(12, seed=0).to(torch.bfloat16).eval())
    model.gradient_checkpointing_enable()
    assert not can_share_prompts(model.train())  # checkpointing turns the cache off
    distinct = IDS[[0, 2]]
    assert SharedPrompts.of(distinct, (distinct > 0).long(), COMPLETION[[0, 2]]) is None  # nothing repeats


def test_sampling_with_shared_prompts_draws_the_same_completions():
    model = package_tiny_causal_lm(12, seed=0, eos_token_id=2).eval()
    ids = torch.tensor([[0, 0, 3, 4], [0, 0, 3, 4], [5, 6, 7, 8], [5, 6, 7, 8], [0, 9, 9, 3]])
    attention = (ids != 0).long()
    outputs = []
    for share in (False, True):
        torch.manual_seed(0)
        outputs.append(exact_generate(model, ids, attention, 6, {2}, 0, return_logits=True, share_prompts=share))
    assert torch.equal(outputs[0].sequences, outputs[1].sequences)
    for plain, shared in zip(outputs[0].logits, outputs[1].logits):
        torch.testing.assert_close(shared, plain, rtol=1e-5, atol=1e-5)
    cache = shared_prompt_cache(model, ids, attention)
    assert cache.get_seq_length() == 3 and cache.layers[0].keys.shape[0] == len(ids)
    assert shared_prompt_cache(model, ids[[0, 2, 4]], attention[[0, 2, 4]]) is None  # no row repeats
