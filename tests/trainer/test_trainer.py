# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import os

import pytest
import torch
from peft import AutoPeftModelForCausalLM, LoraConfig, PeftModel
from precision import float32_tolerance
from tiny_models import tiny_causal_lm
from toy import all_sequences, as_dataset, exact_logps, sample_sequences, tempered_kl

from hf_seqtemp import (
    AutoregressiveScorer,
    SeqTempConfig,
    SeqTempTrainer,
    SequenceTemperatureConfig,
    effective_temperature,
    load_tempered,
)


def _config(tmp_path, **overrides):
    values = {
        "output_dir": str(tmp_path),
        "target_temperature": 0.5,
        "learning_rate": 3e-3,
        "max_steps": 200,
        "per_device_train_batch_size": 64,
        "per_device_eval_batch_size": 64,
        "logging_steps": 100,
        "save_strategy": "no",
        "use_cpu": True,
        "seed": 0,
        "lr_scheduler_type": "constant",
        "disable_tqdm": True,
    }
    values.update(overrides)
    return SeqTempConfig(**values)


@pytest.mark.parametrize("loss_type", ["ratio", "ssts"])
def test_training_reduces_exact_tempered_kl_to_under_a_third(tmp_path, loss_type):
    """Enumerate all 4^3 sequences of a tiny LM: KL(p_T || q_T) before and after training toward T = 0.5."""
    model = tiny_causal_lm(4, seed=0)
    sequences = all_sequences(4, 3)
    ref = exact_logps(model, sequences)
    start = tempered_kl(ref, ref, 0.5)
    data = as_dataset(sample_sequences(model, 256, 3))
    trainer = SeqTempTrainer(model, _config(tmp_path, loss_type=loss_type, nll_weight=0.0), train_dataset=data)
    trainer.train()
    end = tempered_kl(ref, exact_logps(model.eval(), sequences), 0.5)
    assert start > 0.1
    assert end < start / 3, f"{loss_type}: KL {start:.4f} -> {end:.4f}"


def test_gradient_accumulation_matches_one_big_batch(tmp_path):
    """With T = 1 the ssts loss is the token-mean NLL; 2 x 2 accumulated must equal one batch of 4 (SGD step)."""
    data = as_dataset(sample_sequences(tiny_causal_lm(4), 4, 3, seed=1))
    params = []
    for batch, accumulation in [(4, 1), (2, 2)]:
        model = tiny_causal_lm(4, seed=0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        args = _config(
            tmp_path,
            loss_type="ssts",
            target_temperature=1.0,
            nll_weight=0.0,
            max_steps=1,
            per_device_train_batch_size=batch,
            gradient_accumulation_steps=accumulation,
            num_generations=2,
            max_grad_norm=0,
        )
        SeqTempTrainer(model, args, train_dataset=data, optimizers=(optimizer, None)).train()
        params.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    initial = torch.cat([p.detach().flatten() for p in tiny_causal_lm(4, seed=0).parameters()])
    assert (params[0] - initial).abs().max() > 1e-4
    torch.testing.assert_close(params[0], params[1], **float32_tolerance(params[1]))


def test_lora_reference_is_the_disabled_adapter_and_round_trip(tmp_path):
    base_dir = tmp_path / "base"
    tiny_causal_lm(6, seed=3).save_pretrained(base_dir)
    model = tiny_causal_lm(6, seed=3)
    model.config._name_or_path = str(base_dir)
    sequences = sample_sequences(model, 48, 4, seed=2)
    data, held_out = as_dataset(sequences[:32]), as_dataset(sequences[32:])
    lora = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj", "down_proj"], init_lora_weights=False
    )
    trainer = SeqTempTrainer(
        model,
        _config(tmp_path, max_steps=5, per_device_train_batch_size=8),
        train_dataset=data,
        eval_dataset=held_out,
        peft_config=lora,
    )
    assert trainer._ref_model is None  # no second copy of the weights
    # the precomputed reference is the base model, although the (non-zero) adapter is active
    expected = AutoregressiveScorer()(tiny_causal_lm(6, seed=3), sequences[:32]).detach()
    torch.testing.assert_close(torch.tensor(trainer.train_dataset["ref_logps"]), expected, atol=1e-5, rtol=0)
    trainer.train()
    metrics = trainer.evaluate()
    trained = trainer.model.eval()
    q = AutoregressiveScorer()(trained, sequences[32:]).detach()
    p = AutoregressiveScorer()(tiny_causal_lm(6, seed=3), sequences[32:]).detach()
    assert metrics["eval_temp/t_eff"] == pytest.approx(effective_temperature(p, q), rel=1e-4)

    out = tmp_path / "adapter"
    trainer.save_model(str(out))
    files = sorted(os.listdir(out))
    assert {"adapter_config.json", "adapter_model.safetensors", "seqtemp_config.json"} <= set(files)
    assert not [f for f in files if f.endswith((".bin", ".pt", ".pkl", ".pth"))]
    config = SequenceTemperatureConfig.from_pretrained(out)
    assert config.target_temperature == 0.5 and config.loss_type == "ratio"
    assert config.eval_t_eff == pytest.approx(metrics["eval_temp/t_eff"])
    logits = trained(input_ids=sequences[32:]).logits
    for loaded in (
        load_tempered(out, base_model=tiny_causal_lm(6, seed=3)),
        load_tempered(out),  # base resolved from the config
        PeftModel.from_pretrained(tiny_causal_lm(6, seed=3), str(out)),
        AutoPeftModelForCausalLM.from_pretrained(str(out)),
    ):
        torch.testing.assert_close(loaded.eval()(input_ids=sequences[32:]).logits, logits)
    assert load_tempered(out).seqtemp_config.target_temperature == 0.5


def test_single_process_batch_of_one_is_an_error_not_a_silent_no_op(tmp_path):
    """Contrast for the 2-process test: alone, a batch of 1 gives the ratio loss no pair; it used to train only the
    NLL term, silently. Now the trainer refuses it before training and says how to fix it."""
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 4, 3))
    for generations in (1, 2):
        args = _config(tmp_path, max_steps=2, per_device_train_batch_size=1, num_generations=generations)
        with pytest.raises(ValueError, match=r"`num_generations`=[12]"):
            SeqTempTrainer(model, args, train_dataset=data)
    with pytest.raises(
        ValueError, match=r"\(1 per device × 1 processes = 1 sequences\).*multiple of `num_generations`"
    ):
        SeqTempTrainer(model, _config(tmp_path, per_device_train_batch_size=1, num_generations=2), train_dataset=data)


def test_logs_temperature_metrics(tmp_path):
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 64, 3))
    trainer = SeqTempTrainer(
        model, _config(tmp_path, max_steps=4, logging_steps=2, per_device_train_batch_size=16), train_dataset=data
    )
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "temp/t_eff" in entry]
    assert len(logged) == 2
    for key in ("temp/kendall_tau", "temp/h_std", "loss/ratio", "loss/nll", "logps/policy", "logps/ref"):
        assert key in logged[0] and logged[0][key] == logged[0][key]  # present and not NaN
    assert -1.0 <= logged[0]["temp/kendall_tau"] <= 1.0


def test_precompute_off_uses_a_frozen_copy_without_peft(tmp_path):
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 64, 3))
    on = SeqTempTrainer(
        tiny_causal_lm(4, seed=0), _config(tmp_path, max_steps=20, per_device_train_batch_size=16), train_dataset=data
    )
    off = SeqTempTrainer(
        model,
        _config(tmp_path, max_steps=20, per_device_train_batch_size=16, precompute_ref_log_probs=False),
        train_dataset=data,
    )
    assert off._ref_model is not None and "ref_logps" not in off.train_dataset.column_names
    on.train()
    on.close()  # lets the folder go to the second run (a trainer holds its `output_dir` until then)
    off.train()
    sequences = all_sequences(4, 3)
    torch.testing.assert_close(
        exact_logps(on.model.eval(), sequences), exact_logps(off.model.eval(), sequences), atol=1e-4, rtol=0
    )


def test_init_from_token_temperature_starts_at_the_myopic_baseline(tmp_path):
    """Scaling the final norm by 1/T makes the adapter model *exactly* the token-temperature-T scorer."""
    model = tiny_causal_lm(6, seed=3)
    sequences = all_sequences(6, 2)
    myopic = AutoregressiveScorer(token_temperature=0.5)(tiny_causal_lm(6, seed=3), sequences).detach()
    lora = LoraConfig(r=2, target_modules=["q_proj", "v_proj"])
    trainer = SeqTempTrainer(
        model,
        _config(tmp_path, max_steps=1, init_from_token_temperature=True),
        train_dataset=as_dataset(sequences),
        peft_config=lora,
    )
    assert any("norm.modules_to_save" in n for n, p in trainer.model.named_parameters() if p.requires_grad)
    torch.testing.assert_close(AutoregressiveScorer()(trainer.model, sequences).detach(), myopic, atol=1e-5, rtol=0)
    # the reference is still the base model (adapter and scaled norm disabled)
    torch.testing.assert_close(
        torch.tensor(trainer.train_dataset["ref_logps"]),
        AutoregressiveScorer()(tiny_causal_lm(6, seed=3), sequences).detach(),
    )
    with pytest.raises(ValueError, match="`init_from_token_temperature=True` needs a causal LM and a `peft_config`"):
        SeqTempTrainer(
            tiny_causal_lm(6), _config(tmp_path, init_from_token_temperature=True), train_dataset=as_dataset(sequences)
        )
    with pytest.raises(ValueError, match="does not divide the logits"):
        SeqTempTrainer(
            tiny_causal_lm(6),
            _config(tmp_path, init_from_token_temperature=True),
            train_dataset=as_dataset(sequences),
            peft_config=LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False),
        )
