# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Tiny random models shared by the generation tests."""

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, LlamaConfig, LlamaForCausalLM

from hf_seqtemp.models.base import DiffusionLM

torch.set_num_threads(1)  # tiny models: thread start-up costs more than it saves on shared cores


class TinyMaskedLM(DiffusionLM):
    """Local stand-in for the package's masked-LM adapter: position ids follow the attention mask (left padding)."""

    def __init__(self, model, mask_token_id):
        super().__init__(model, mask_token_id)
        self.calls = 0

    def forward(self, input_ids, attention_mask=None):
        self.calls += 1
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        position_ids = (attention_mask.long().cumsum(1) - 1).clamp(min=0)
        return self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits


def tiny_bert(vocab_size=5, seed=0, init=0.6):
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        initializer_range=init,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return BertForMaskedLM(config).eval()


@pytest.fixture
def masked_lm():
    """Vocabulary of 5 with id 4 as the mask token: 4 real tokens."""
    return TinyMaskedLM(tiny_bert(), mask_token_id=4)


def tiny_llama(vocab_size=4, seed=0, head_scale=1.0):
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=0,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(head_scale)
    return model
