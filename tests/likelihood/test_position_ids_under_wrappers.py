# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A model with absolute positions (GPT-2) under a PEFT wrapper: a left-padded prompt is scored and sampled as the
same prompt without padding. PEFT's `forward(*args, **kwargs)` hides `position_ids` from a signature check; without
them the padded row would sit at shifted positions (a RoPE model would not notice, GPT-2 does)."""

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

from hf_seqtemp.generation.smc import smc_sample
from hf_seqtemp.likelihood import AutoregressiveScorer

IDS = torch.tensor([[0, 0, 1, 2, 3, 4], [5, 1, 1, 2, 3, 4]])
MASK = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])


def _models():
    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=8, n_embd=16, n_layer=1, n_head=2, n_positions=32)).eval()
    lora = LoraConfig(r=2, target_modules=["c_attn"], task_type="CAUSAL_LM", fan_in_fan_out=True)
    return {"plain": base, "peft": get_peft_model(base, lora).eval()}


@pytest.mark.parametrize("wrapper", ["plain", "peft"])
def test_a_left_padded_prompt_scores_and_samples_as_without_padding(wrapper):
    model = _models()[wrapper]
    completion = torch.zeros_like(IDS, dtype=torch.bool)
    completion[:, 4:] = True
    padded = AutoregressiveScorer()(model, IDS[:1], MASK[:1], completion[:1])
    plain = AutoregressiveScorer()(model, IDS[:1, 2:], MASK[:1, 2:], completion[:1, 2:])
    shifted = AutoregressiveScorer()(model, IDS[1:], MASK[1:], completion[1:])  # other positions: other value
    assert padded.item() == pytest.approx(plain.item(), abs=1e-5)
    assert abs(shifted.item() - plain.item()) > 1e-3
    runs = {}
    for name, (ids, mask) in {"padded": (IDS[:1], MASK[:1]), "plain": (IDS[:1, 2:], MASK[:1, 2:])}.items():
        runs[name] = smc_sample(
            model, ids, mask, max_new_tokens=4, seq_temperature=0.5, num_particles=8, eos_token_id=7,
            pad_token_id=0, generator=torch.Generator().manual_seed(1), return_dict_in_generate=True,
        )  # fmt: skip
    assert torch.equal(runs["padded"].sequences[:, 2:], runs["plain"].sequences)
    assert runs["padded"].log_normalizer.item() == pytest.approx(runs["plain"].log_normalizer.item(), abs=1e-4)
