# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Every tiny model the tests build, in one place.

All are one-layer models of native transformers classes built by `hf_seqtemp.models.tiny` and seeded, so a test's
exact figures (and the thresholds tuned on them) do not move when a factory is shared. Each is built on the CPU,
from the CPU's random stream, and then moved to the suite's device (`devices.TEST_DEVICE`), as a user's model is
loaded and then moved: the CUDA suite tests the same weights as the CPU suite. The oracles that score them
live in `toy.py` (causal LMs), `conditional_toy.py` (prompted causal LMs) and `diffusion_oracles.py` (masked LMs).
"""

from __future__ import annotations

import functools

import devices
import pytest
import torch

from hf_seqtemp.models.base import DiffusionLM
from hf_seqtemp.models.tiny import tiny_causal_lm as _cpu_llama
from hf_seqtemp.models.tiny import tiny_masked_lm as _cpu_bert


def _built_on_cpu(factory):
    """`factory` run with the CPU as torch's default device (its weights drawn from the CPU's stream), its model
    then moved to the suite's device."""

    @functools.wraps(factory)
    def build(*args, **kwargs):
        with torch.device("cpu"):
            model = factory(*args, **kwargs)
        return model.to(devices.TEST_DEVICE)

    return build


_llama, _bert = _built_on_cpu(_cpu_llama), _built_on_cpu(_cpu_bert)

BOS = 0
MASK = 5  # the mask token of `tiny_masked_lm()` (vocabulary of 6)


# ---------------------------------------------------------------------------------------------------- causal LMs
def tiny_causal_lm(
    vocab_size: int = 4, seed: int = 0, init_range: float = 0.6, hidden: int = 16, max_positions: int = 128
):
    """An enumerable causal LM whose conditionals are far from uniform (large init), no EOS and no pad id. Its
    positions (rotary: the weights and every log-probability are the same for any `max_positions`) leave room for
    the command line's default `--max_completion_length`."""
    return _llama(
        vocab_size,
        seed,
        hidden,
        max_position_embeddings=max_positions,
        initializer_range=init_range,
        bos_token_id=BOS,
        eos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
    )


def conditional_lm(vocab_size: int = 4, seed: int = 4, hidden: int = 16):
    """The prompted oracle's model: its prompts' conditionals differ in entropy (see `conditional_toy.py`)."""
    return tiny_causal_lm(vocab_size, seed=seed, init_range=0.8, hidden=hidden)


def tiny_llama(vocab_size: int = 4, seed: int = 0, head_scale: float = 1.0, **config):
    """The samplers' causal LM: pad id 0, no EOS (fixed-length completions unless `eos_token_id` is given), the LM
    head scaled by `head_scale` (sharper or flatter conditionals)."""
    values = {"max_position_embeddings": 32, "bos_token_id": 0, "eos_token_id": None, "pad_token_id": 0, **config}
    model = _llama(vocab_size, seed, **values)
    with torch.no_grad():
        model.lm_head.weight.mul_(head_scale)
    return model


def tiny_default_llama(vocab_size: int = 8, seed: int = 0):
    """A causal LM with transformers' default initialisation and token ids (BOS 1, EOS 2, no pad id)."""
    return _llama(vocab_size, seed)


def tiny_llama_config(**overrides):
    """A `LlamaConfig` for building other Llama classes (a bare `LlamaModel`, a classifier)."""
    return _llama(6, hidden_size=8, pad_token_id=0, **overrides).config


@_built_on_cpu
def tiny_t5():
    """An encoder-decoder, the kind hf_seqtemp refuses."""
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(vocab_size=6, d_model=8, d_ff=16, num_layers=1, num_heads=2, d_kv=4))


# ---------------------------------------------------------------------------------------------------- masked LMs
def tiny_masked_lm(vocab_size: int = 6, seed: int = 0, init_range: float = 0.5, max_positions: int = 16):
    """A BERT masked LM with large weights, so conditionals depend strongly on context (orders really differ)."""
    return _bert(vocab_size, seed, max_position_embeddings=max_positions, initializer_range=init_range)


def tiny_bert(vocab_size: int = 5, seed: int = 0, init: float = 0.6):
    """The samplers' masked LM (mask token `vocab_size - 1`), without dropout."""
    return _bert(
        vocab_size,
        seed,
        max_position_embeddings=16,
        initializer_range=init,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )


@_built_on_cpu
def tiny_modernbert(seed: int = 0):
    """A ModernBERT masked LM (vocabulary of 6, mask token 5)."""
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    torch.manual_seed(seed)
    config = ModernBertConfig(
        vocab_size=6,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        cls_token_id=1,
        sep_token_id=2,
        global_attn_every_n_layers=1,
    )
    return ModernBertForMaskedLM(config).eval()


class TinyMaskedLM(DiffusionLM):
    """A minimal `DiffusionLM` wrapper that counts its calls: position ids follow the attention mask (left padding)."""

    def __init__(self, model, mask_token_id):
        super().__init__(model, mask_token_id)
        self.calls = 0

    def forward(self, input_ids, attention_mask=None):
        self.calls += 1
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        position_ids = (attention_mask.long().cumsum(1) - 1).clamp(min=0)
        return self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits


@pytest.fixture
def masked_lm():
    """Vocabulary of 5 with id 4 as the mask token: 4 real tokens."""
    return TinyMaskedLM(tiny_bert(), mask_token_id=4)


# ------------------------------------------------------------------------------------------------ word tokenizer
WORD_VOCAB = {"<s>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "<pad>": 5}


def word_tokenizer(chat_template: str | None = None):
    """A whitespace word tokenizer over `WORD_VOCAB` ("a" … "d", BOS `<s>` prepended, pad `<pad>` = 5, no EOS), with
    `chat_template` when given: the vocabulary of `tiny_causal_lm(6, ...)` models saved as a folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(WORD_VOCAB, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", pad_token="<pad>")
    tokenizer.chat_template = chat_template
    return tokenizer


def save_word_base(folder, chat_template: str | None = None, seed: int = 3):
    """Saves `tiny_causal_lm(6, seed)` (pad id 5) and its `word_tokenizer` to `folder`, as a user's base model
    folder; returns the folder."""
    model = tiny_causal_lm(6, seed=seed)
    model.config.pad_token_id = 5
    model.save_pretrained(folder)
    word_tokenizer(chat_template).save_pretrained(folder)
    return folder
