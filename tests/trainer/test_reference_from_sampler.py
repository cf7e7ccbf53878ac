# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The reference log p of freshly drawn completions comes from the sampler's own logits, with no second forward
pass, and equals a rescoring of the rows: several prompts of different lengths (left padding while sampling),
completions of variable length (EOS) and truncated ones."""

import torch
from configs import quiet_config
from datasets import Dataset
from tiny_models import conditional_lm, tiny_default_llama

from hf_seqtemp import SeqTempTrainer
from hf_seqtemp.data import sample_completions
from hf_seqtemp.likelihood import AutoregressiveScorer


def _rescored(model, prompt, completion):
    ids = torch.tensor([list(prompt) + list(completion)])
    completion_mask = torch.zeros_like(ids, dtype=torch.bool)
    completion_mask[:, len(prompt) :] = True
    with torch.no_grad():
        token_logps, _ = AutoregressiveScorer().token_logps(model, ids, torch.ones_like(ids), completion_mask)
    return token_logps[0]


def _assert_close(value, expected):
    """Equal to 1e-5 of the magnitude (float32 cached decoding against one full forward pass)."""
    value, expected = torch.as_tensor(value, dtype=torch.float32), torch.as_tensor(expected, dtype=torch.float32)
    scale = max(1.0, expected.abs().max().item())
    torch.testing.assert_close(value, expected, atol=1e-5 * scale, rtol=0)


def test_sampler_logps_equal_a_rescoring():
    torch.manual_seed(0)
    model = tiny_default_llama(vocab_size=8, seed=3).eval()  # EOS 2
    prompts = [[1], [1, 5, 6], [1, 7, 3, 4, 5], [1, 4]] * 6
    completions, logps = sample_completions(model, prompts, 6, {2}, pad_token_id=0, batch_size=8, return_logps=True)
    lengths = [len(c) for c in completions]
    assert min(lengths) < 6 and 6 in lengths and any(c[-1] == 2 for c in completions)  # ended and truncated
    for prompt, completion, token_logps in zip(prompts, completions, logps):
        assert len(token_logps) == len(completion)
        rescored = _rescored(model, prompt, completion)
        _assert_close(token_logps, rescored[len(prompt) :])


def _eos_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"<s>": 0, "x": 1, "y": 2, "z": 3}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="z")


def test_the_completion_pool_takes_the_reference_from_the_sampler(tmp_path, monkeypatch):
    model = conditional_lm(4)
    args = quiet_config(
        output_dir=str(tmp_path),
        target_temperature=0.5,
        loss_type="ssts",  # stores the per-token reference too
        num_generations=4,
        max_completion_length=4,
        sample_every_steps=1,
        per_device_train_batch_size=12,
        seed=0,
    )
    data = Dataset.from_dict({"prompt": ["x", "x y", "y x y"]})  # 2, 3 and 4 tokens with BOS: left padding
    trainer = SeqTempTrainer(model, args, train_dataset=data, processing_class=_eos_tokenizer())

    def no_forward(*args, **kwargs):
        raise AssertionError("the reference was scored by a second forward pass")

    monkeypatch.setattr(trainer, "_reference_values", no_forward)
    batch = trainer.data_collator([{"pool_index": i} for i in range(12)])
    assert "ref_logps" in batch
    rows = trainer.train_dataset.rows
    lengths = {sum(r["completion_mask"]) for r in rows}
    assert len(lengths) > 1  # variable lengths (EOS "z")
    for row in rows:
        prompt_length = len(row["input_ids"]) - sum(row["completion_mask"])
        rescored = _rescored(model, row["input_ids"][:prompt_length], row["input_ids"][prompt_length:])
        _assert_close(row["ref_token_logps"], rescored)
        _assert_close(row["ref_logps"], rescored.sum())


def test_sampled_prompt_only_datasets_take_the_reference_from_the_sampler(tmp_path, monkeypatch):
    """The completions sampled once before training (train and eval) carry the sampler's log p as their reference
    columns: no scoring pass, and the values equal a rescoring of every row (ratio: sequence values only; SSTS: the
    per-token values too)."""
    from hf_seqtemp.trainer.reference import ReferenceMixin

    def no_forward(*args, **kwargs):
        raise AssertionError("the reference was scored by a second forward pass")

    monkeypatch.setattr(ReferenceMixin, "_reference_values", no_forward)
    data = Dataset.from_dict({"prompt": ["x", "x y", "y x y"]})  # 2, 3 and 4 tokens with BOS: left padding
    for loss_type in ("ratio", "ssts"):
        model = conditional_lm(4)
        args = quiet_config(
            output_dir=str(tmp_path),
            target_temperature=0.5,
            loss_type=loss_type,
            num_generations=4,
            max_completion_length=4,
            per_device_train_batch_size=12,
            seed=0,
        )
        trainer = SeqTempTrainer(model, args, train_dataset=data, eval_dataset=data, processing_class=_eos_tokenizer())
        for dataset in (trainer.train_dataset, trainer.eval_dataset):
            assert len({sum(row["completion_mask"]) for row in dataset}) > 1  # variable lengths (EOS "z")
            for row in dataset:
                prompt_length = len(row["input_ids"]) - sum(row["completion_mask"])
                rescored = _rescored(model, row["input_ids"][:prompt_length], row["input_ids"][prompt_length:])
                _assert_close(row["ref_logps"], rescored.sum())
                if loss_type == "ssts":
                    _assert_close(row["ref_token_logps"], rescored)
                else:
                    assert "ref_token_logps" not in dataset.column_names
