# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The engine tests' served model and its word tokenizer (`tests/engine/conftest.py` serves them; tests outside
`tests/engine`, which `make test` runs without the engine, build the same model from here)."""

from __future__ import annotations

from hf_seqtemp.models.tiny import tiny_causal_lm

V = 4
"""The served model's vocabulary: tokens 0-3, EOS 3."""


def engine_llama(vocab_size: int = V, initializer_range: float = 0.3):
    """The served model: one layer, head size 32 (vLLM's CPU attention takes 32, 64, 80, ...), |V| = 4 with EOS 3,
    conditionals far from uniform but not degenerate (entropy about 0.8 nats per token, EOS about a third); with
    `vocab_size=8` (EOS 7) and `initializer_range=0.1`, near-uniform conditionals, the toy on which one SMC run's
    answers are visibly biased at N = 4 (bias bounds 0.27-0.45 measured on its local copy)."""
    return tiny_causal_lm(
        vocab_size=vocab_size,
        seed=1,
        hidden_size=64,
        max_position_embeddings=64,
        initializer_range=initializer_range,
        bos_token_id=0,
        eos_token_id=vocab_size - 1,
        pad_token_id=None,
    )


def word_tokenizer():
    """The served model's words: "x", "y" are tokens 1 and 2, "z" (token 3) is EOS, "<s>" (0) is prepended."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"<s>": 0, "x": 1, "y": 2, "z": 3}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="z", pad_token="<s>")
