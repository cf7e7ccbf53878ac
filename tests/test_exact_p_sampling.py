# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""p means p: the samplers of the reference draw exactly from the model, whatever its `generation_config` sets
(penalties, n-gram bans, suppressed tokens, minimum lengths, truncation warpers, a forced EOS, ...), and a completion
ends at any of the config's EOS ids, where `generate` stopped, so the scored event is the sampled one."""

import itertools

import pytest
import torch
from configs import quiet_config
from datasets import Dataset
from distribution_checks import chi_square_pvalue
from tiny_models import BOS, tiny_causal_lm

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.data import eos_ids_of, exact_generation_config, sample_completions, sample_dataset

VOCAB, NEW = 5, 3
EOS_IDS = (3, 4)  # the tokenizer knows 3 only; the model's generation config stops at either
PROMPTS = {"a": [BOS, 1], "b": [BOS, 2], "a b": [BOS, 1, 2]}
DISTORTIONS = {
    "do_sample": True,
    "temperature": 0.7,
    "top_k": 3,
    "top_p": 0.9,
    "repetition_penalty": 2.0,
    "no_repeat_ngram_size": 2,
    "suppress_tokens": [2],
    "begin_suppress_tokens": [1],
    "bad_words_ids": [[1, 1]],
    "sequence_bias": {(0,): 2.0},
    "min_new_tokens": 2,
    "min_p": 0.1,
    "typical_p": 0.9,
    "epsilon_cutoff": 0.02,
    "forced_eos_token_id": 4,
    "exponential_decay_length_penalty": (1, 1.5),
    "renormalize_logits": True,
    "remove_invalid_values": True,
    "guidance_scale": 1.5,
    "max_time": 1e-9,
    "stop_strings": ["b"],
    "num_return_sequences": 2,
    "return_dict_in_generate": True,
    "eos_token_id": list(EOS_IDS),
}


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "a": 1, "b": 2, "</s>": 3, "<eot>": 4}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<s>")


def _distorted_model():
    from transformers.generation import WatermarkingConfig

    model = tiny_causal_lm(VOCAB, seed=3, init_range=0.8)
    for name, value in {**DISTORTIONS, "watermarking_config": WatermarkingConfig(bias=5.0)}.items():
        setattr(model.generation_config, name, value)
    return model


@torch.no_grad()
def _answer_probs(model, prompt: list[int]) -> dict[tuple, float]:
    """Exact p of every answer of at most NEW tokens: up to the first of either EOS id, or cut at NEW tokens."""
    probs = {}
    for tail in itertools.product(range(VOCAB), repeat=NEW):
        end = next((i for i, t in enumerate(tail) if t in EOS_IDS), NEW - 1)
        answer = tail[: end + 1]
        if answer not in probs:
            ids = torch.tensor([prompt + list(answer)])
            logps = model(input_ids=ids).logits[0, :-1].double().log_softmax(-1)
            probs[answer] = logps.gather(-1, ids[0, 1:, None])[len(prompt) - 1 :].sum().exp().item()
    return probs


def _assert_exact_p(model, prompt, completions):
    """Every completion ends where sampling stopped (its first EOS, either id, is its last token), and the
    completions pass a chi-square test against the exact p over answers."""
    exact = _answer_probs(model, prompt)
    assert abs(sum(exact.values()) - 1) < 1e-5  # float32 conditionals
    answers = list(exact)
    counts = torch.zeros(len(answers))
    for completion in completions:
        assert tuple(completion) in exact, (prompt, completion)  # ends at its first EOS of either id, kept
        counts[answers.index(tuple(completion))] += 1
    assert all(any(a[-1] == eos for a in answers if counts[answers.index(a)]) for eos in EOS_IDS)  # both ids seen
    _, p_value, _ = chi_square_pvalue(counts, torch.tensor([exact[a] for a in answers]))
    assert p_value > 1e-3, (prompt, p_value)


def test_eos_ids_are_every_id_of_the_generation_config_and_the_tokenizers():
    model = _distorted_model()
    assert eos_ids_of(model, _tokenizer()) == set(EOS_IDS)
    before = model.generation_config.to_dict()
    sample_completions(model, [[BOS, 1]], NEW, set(EOS_IDS), desc=None)
    assert model.generation_config.to_dict() == before  # the model's own config is hidden, then restored
    config = exact_generation_config(4, {4, 3}, pad_token_id=0)
    assert config.eos_token_id == [3, 4] and config.top_k == 0 and config.min_new_tokens == 0


def test_prompt_only_training_data_are_exact_samples_of_p_despite_the_generation_config(tmp_path):
    model, draws = _distorted_model(), 900
    args = quiet_config(
        output_dir=str(tmp_path),
        num_generations=draws,
        max_completion_length=NEW,
        per_device_train_batch_size=draws,
        per_device_eval_batch_size=512,
        precompute_ref_log_probs=False,
        seed=0,
        report_to="none",
    )
    data = Dataset.from_dict({"prompt": list(PROMPTS)})
    trainer = SeqTempTrainer(model, args, train_dataset=data, processing_class=_tokenizer())
    rows = trainer.train_dataset
    for group, prompt in enumerate(PROMPTS.values()):
        completions = [
            [t for t, m in zip(row["input_ids"], row["completion_mask"]) if m]
            for row in rows
            if row["group_id"] == rows[group * draws]["group_id"]
        ]
        assert len(completions) == draws
        assert all(rows[group * draws + i]["input_ids"][: len(prompt)] == prompt for i in range(draws))
        _assert_exact_p(model, prompt, completions)


@pytest.mark.parametrize("batch_size", [64, 700])
def test_sample_dataset_draws_exactly_from_p_despite_the_generation_config(batch_size):
    model, tokenizer, draws = _distorted_model(), _tokenizer(), 700
    data = sample_dataset(
        model, tokenizer, list(PROMPTS), num_samples=draws, max_new_tokens=NEW, seed=1, batch_size=batch_size
    )
    assert len(data) == len(PROMPTS) * draws
    for index, (text, prompt) in enumerate(PROMPTS.items()):
        rows = data.select(range(index * draws, (index + 1) * draws))
        assert set(rows["prompt"]) == {text}
        completions = [ids[len(prompt) :] for ids in rows["input_ids"]]
        assert all(ids[: len(prompt)] == prompt for ids in rows["input_ids"])
        assert all(sum(mask) == len(c) for mask, c in zip(rows["completion_mask"], completions))
        _assert_exact_p(model, prompt, completions)


def test_fresh_samples_drawn_during_training_are_exact_samples_of_p_despite_the_generation_config(tmp_path):
    model, draws = _distorted_model(), 900
    args = quiet_config(
        output_dir=str(tmp_path),
        num_generations=4,
        max_completion_length=NEW,
        per_device_train_batch_size=4,
        sample_every_steps=1,
        seed=0,
        report_to="none",
    )
    data = Dataset.from_dict({"prompt": list(PROMPTS)})
    trainer = SeqTempTrainer(model, args, train_dataset=data, processing_class=_tokenizer())
    torch.manual_seed(0)
    for index, prompt in enumerate(PROMPTS.values()):
        drawn = trainer._draw([prompt] * draws, [index * draws])  # a stream per (seed, rank, generation, first slot)
        _assert_exact_p(model, prompt, drawn[0] if isinstance(drawn, tuple) else drawn)


def test_exact_sampling_makes_generate_warn_nothing():
    """The neutral config pins `min_new_tokens` and leaves `min_length` alone: both set, `generate` logs "Both
    `min_new_tokens` and `min_length` seem to have been set" on every call of every sampler of p."""
    from transformers.testing_utils import CaptureLogger
    from transformers.utils import logging as hf_logging

    model = tiny_causal_lm(vocab_size=VOCAB)
    with CaptureLogger(hf_logging.get_logger("transformers.generation.utils")) as captured:
        sample_completions(model, [[BOS, 1], [BOS, 2]], NEW, set(EOS_IDS), desc=None)
    assert "seem to have been set" not in captured.out, captured.out


def test_many_prompts_share_a_sampling_call_sized_in_tokens(tmp_path, monkeypatch):
    """Before training, the completions of many prompts are drawn in one `generate` call (`sampling_batch_tokens`),
    not one prompt's `num_generations` per call: 30 prompts × 8 completions of at most 3 tokens take one call by
    default (30 calls before, at `per_device_eval_batch_size` 8), and 4 calls when the budget holds 60 rows."""
    from hf_seqtemp.trainer import prompt_only

    calls = []
    original = prompt_only.sample_completions

    def counted(model, chunk, *args, **kwargs):
        calls.append(len(chunk))
        return original(model, chunk, *args, **kwargs)

    monkeypatch.setattr(prompt_only, "sample_completions", counted)
    words = ["a", "b", "a b", "b a", "a a", "b b"]
    prompts = [" ".join([w] * (1 + i // 6)) for i, w in enumerate(words * 5)][:30]
    data = Dataset.from_dict({"prompt": prompts})
    options = {"output_dir": str(tmp_path), "max_completion_length": NEW, "per_device_train_batch_size": 8}
    options.update(precompute_ref_log_probs=False, save_strategy="no", use_cpu=True, disable_tqdm=True)
    SeqTempTrainer(_distorted_model(), SeqTempConfig(**options), train_dataset=data, processing_class=_tokenizer())
    assert calls == [240]
    longest = max(len(_tokenizer()(p)["input_ids"]) for p in prompts)
    calls.clear()
    budget = 60 * (longest + NEW)
    SeqTempTrainer(_distorted_model(), SeqTempConfig(**options, sampling_batch_tokens=budget), train_dataset=data,
                   processing_class=_tokenizer())  # fmt: skip
    assert calls == [60, 60, 60, 60]
