# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A model hf_seqtemp cannot score fails once, up front, with an error that says what is supported and the fix."""

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_causal_lm, tiny_llama_config, tiny_masked_lm, tiny_t5
from toy import as_dataset
from transformers import (
    LlamaForSequenceClassification,
    LlamaModel,
)

from hf_seqtemp import AutoregressiveScorer, MaskedLMWrapper, SeqTempConfig, SeqTempTrainer, hub
from hf_seqtemp.measure import score_dataset
from hf_seqtemp.models.validation import check_model_kind
from hf_seqtemp.peft_compat import peft_deprecations_silenced

FIX = r"AutoModelForCausalLM\.from_pretrained"
SUPPORTED = r"supports causal LMs with a language-model head .* wrapped as a `DiffusionLM`"


def _peft(model):
    with peft_deprecations_silenced():
        return get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))


@pytest.mark.parametrize(
    "build,what",
    [
        (lambda: LlamaModel(tiny_llama_config()), "LlamaModel, a model without a language-model head"),
        (
            lambda: LlamaForSequenceClassification(tiny_llama_config()),
            "LlamaForSequenceClassification, a model without a language-model head",
        ),
        (tiny_t5, "T5ForConditionalGeneration, an encoder-decoder model"),
        (lambda: _peft(LlamaModel(tiny_llama_config())), "LlamaModel, a model without"),
    ],
)
def test_trainer_rejects_a_model_that_is_not_a_causal_lm_before_any_work(tmp_path, build, what, monkeypatch):
    calls = []
    monkeypatch.setattr(SeqTempTrainer, "_prepare_dataset", lambda *args: calls.append(args))
    args = SeqTempConfig(str(tmp_path), use_cpu=True, max_steps=1, save_strategy="no")
    with pytest.raises(TypeError, match=f"`model` is a {what}.*{SUPPORTED}.*{FIX}"):
        SeqTempTrainer(build(), args, train_dataset=Dataset.from_dict({"input_ids": [[0, 1, 2], [0, 2, 1]]}))
    assert calls == []  # failed before tokenising or scoring anything


def test_supported_models_pass():
    models = [
        tiny_causal_lm(4),
        _peft(tiny_causal_lm(4)),
        tiny_masked_lm(),  # a raw masked LM: the trainer wraps it as a DiffusionLM
        MaskedLMWrapper(tiny_masked_lm(), mask_token_id=5),
        torch.nn.Linear(2, 2),  # no config: its output is checked where it is called
    ]
    assert [check_model_kind(model) for model in models] == [None] * len(models)  # none raises


def test_autoregressive_entry_points_reject_diffusion_and_headless_models():
    held_out = as_dataset(torch.tensor([[0, 1, 2], [0, 2, 3]]))
    with pytest.raises(TypeError, match=r"`model` is a BertForMaskedLM, a masked \(diffusion\) language model.*"):
        score_dataset(tiny_masked_lm(), held_out)
    with pytest.raises(TypeError, match="is a MaskedLMWrapper \\(a diffusion model\\), but this needs a causal LM"):
        hub.measure_held_out(MaskedLMWrapper(tiny_masked_lm(), mask_token_id=5), held_out, 0.5)
    with pytest.raises(TypeError, match=f"LlamaModel, a model without a language-model head.*{FIX}"):
        hub.measure_held_out(LlamaModel(tiny_llama_config()), held_out, 0.5)
    with pytest.raises(TypeError, match=r"`model` must be a model \(a `torch.nn.Module`"):
        score_dataset("HuggingFaceTB/SmolLM2-135M-Instruct", held_out)


def test_scorer_names_what_a_custom_module_returned():
    class Hidden(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return torch.zeros(*input_ids.shape, 4)  # a tensor, not an output with `.logits`

    class Pooled(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return type("Out", (), {"logits": torch.zeros(input_ids.shape[0], 4)})()

    ids = torch.tensor([[0, 1, 2]])
    with pytest.raises(TypeError, match=r"`model` \(Hidden\) returned Tensor with no `.logits`.*" + FIX):
        AutoregressiveScorer()(Hidden(), ids)
    with pytest.raises(TypeError, match=r"returned Out with `.logits` of shape \(1, 4\).*\(1, 3\) \+ \(vocab,\)"):
        AutoregressiveScorer()(Pooled(), ids)
