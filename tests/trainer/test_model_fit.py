# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequences and tokenizers that do not fit the model are refused by name: prompts longer than a GPT-2's positions
(torch's raw `IndexError` while the trainer was built), sequences longer than a Llama's (trained past its length
without a word), a tokenizer larger than the model's embedding (`IndexError` in `measure_held_out`), and a tokenizer
of the same size that maps words to other ids than the adapter was trained with (measured without a word)."""

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_tempered
from hf_seqtemp.measure import measure_held_out

WORDS = ["<s>", "a", "b", "c", "d", "e"]


def _tokenizer(words=WORDS):
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="e", pad_token="<s>")


def _gpt2():
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=6, n_positions=16, n_embd=16, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=5)
    return GPT2LMHeadModel(config).eval()


def _args(tmp_path, **overrides):
    values = {"output_dir": str(tmp_path / "run"), "target_temperature": 0.5, "max_steps": 1, "use_cpu": True}
    values.update(per_device_train_batch_size=4, num_generations=2, max_completion_length=4, report_to=[])
    values.update(disable_tqdm=True, save_strategy="no", **overrides)
    return SeqTempConfig(**values)


def _lora():
    return LoraConfig(r=2, lora_alpha=4, target_modules="all-linear", init_lora_weights=False)


def test_prompts_longer_than_a_gpt2s_positions_are_refused_by_name(tmp_path):
    prompts = Dataset.from_dict({"prompt": [" ".join(["a"] * 14), "b c", "c d", "d a"]})
    with pytest.raises(
        ValueError,
        match=r"`train_dataset`: 1 of 4 sequences are longer than the model's 16 positions "
        r"\(`max_position_embeddings` in its config; the longest has 19 tokens\): .*lower `max_completion_length`",
    ):
        SeqTempTrainer(
            _gpt2(), _args(tmp_path), train_dataset=prompts, processing_class=_tokenizer(), peft_config=_lora()
        )


def test_sequences_longer_than_a_llamas_positions_are_refused_by_name(tmp_path):
    """`max_position_embeddings=16`: a 20-token example used to train without a word."""
    rows = [[0, 1, 2, 3] + [1] * 16, [0, 1, 2, 3, 4], [0, 2, 3, 4, 1], [0, 2, 1, 1, 3]]
    data = Dataset.from_dict({"input_ids": rows, "completion_mask": [[0] + [1] * (len(r) - 1) for r in rows]})
    model = tiny_causal_lm(6, seed=3, max_positions=16)
    with pytest.raises(
        ValueError,
        match=r"longer than the model's 16 positions \(`max_position_embeddings`.*the "
        r"longest has 20 tokens\): set `max_length` to at most 16",
    ):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=data, peft_config=_lora())
    trainer = SeqTempTrainer(model, _args(tmp_path, max_length=16), train_dataset=data, peft_config=_lora())
    assert len(trainer.train_dataset) == 3  # the long one dropped, as `max_length` says


def test_a_tokenizer_larger_than_the_model_is_refused_by_name(tmp_path):
    held_out = Dataset.from_dict({"prompt": ["a", "a", "b", "b"], "completion": ["b c", "c", "d", "f"]})
    larger = _tokenizer([*WORDS, "f", "g"])
    model = tiny_causal_lm(6, seed=3)
    with pytest.raises(
        ValueError, match=r"the tokenizer has 8 tokens, more than the 6 token ids the model's embedding"
    ):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=held_out, processing_class=larger, peft_config=_lora())
    from peft import get_peft_model

    tempered = get_peft_model(tiny_causal_lm(6, seed=3), _lora())
    with pytest.raises(ValueError, match=r"the tokenizer has 8 tokens, more than the 6 token ids"):
        measure_held_out(tempered, held_out, 0.5, tokenizer=larger)


def test_a_tokenizer_with_another_id_mapping_than_the_adapters_is_refused_by_name(tmp_path):
    """Same size, "a" and "b" swapped: the figures would be of other token sequences than the text says."""
    data = Dataset.from_dict({"prompt": ["a", "a", "b", "b"] * 2, "completion": ["b c e", "c e", "d e", "c d e"] * 2})
    trainer = SeqTempTrainer(
        tiny_causal_lm(6, seed=3),
        _args(tmp_path),
        train_dataset=data,
        processing_class=_tokenizer(),
        peft_config=_lora(),
    )
    trainer.train()
    trainer.save_model(str(tmp_path / "adapter"))
    trainer.close()
    model = load_tempered(tmp_path / "adapter", base_model=tiny_causal_lm(6, seed=3))
    measure_held_out(model, data, 0.5, tokenizer=_tokenizer(), tuned_myopic=False)  # its own: measured
    swapped = _tokenizer(["<s>", "b", "a", "c", "d", "e"])
    with pytest.raises(ValueError, match=r"maps tokens to other ids than the one the adapter .* was saved with"):
        measure_held_out(model, data, 0.5, tokenizer=swapped, tuned_myopic=False)
