# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A TRL user's habits, round 3: the numbers under bf16 and dropout, `evaluate()` and `predict()` on raw sets, TRL's
data and adapters that would train the wrong thing, `hub_strategy`, and a forward hook on the LM head."""

import warnings

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences
from trainer.test_trl_habits import LORA, _config, _data

from hf_seqtemp import SeqTempConfig, SeqTempTrainer


def _logged(trainer, name):
    return [entry[name] for entry in trainer.state.log_history if name in entry]


# ---------------------------------------------------------------------------------------------------- precision
@pytest.mark.parametrize("data", ["completions, precomputed", "completions, scored in the step", "prompt-only"])
def test_an_untrained_adapter_reads_t_eff_1_under_bf16(tmp_path, data):
    """Under `bf16=True` the policy was scored under bf16 autocast and the precomputed reference in float32: an
    untrained adapter (LoRA's B = 0, learning rate 0) at T = 1 read T_eff 0.9956. Both are in the policy's precision
    now, precomputed or not, and for completions sampled from p (whose sampler's log-probabilities are float32)."""
    from conditional_toy import word_tokenizer

    torch.manual_seed(0)
    args = _config(
        tmp_path, target_temperature=1.0, learning_rate=0.0, bf16=True, logging_steps=1, num_generations=4,
        max_completion_length=4, precompute_ref_log_probs=data != "completions, scored in the step",
    )  # fmt: skip
    train = Dataset.from_dict({"prompt": ["x", "y", "z", "x y"]}) if data == "prompt-only" else _data()
    tokenizer = word_tokenizer() if data == "prompt-only" else None
    model = tiny_causal_lm(6, seed=3)
    trainer = SeqTempTrainer(
        model, args, train_dataset=train, processing_class=tokenizer, peft_config=LoraConfig(**LORA)
    )
    trainer.train()
    t_eff = _logged(trainer, "temp/t_eff")
    assert t_eff and all(abs(value - 1.0) < 1e-4 for value in t_eff), t_eff


# ---------------------------------------------------------------------------------------------------- dropout
def _dropout_rates(model) -> list[float]:
    return [module.p for module in model.modules() if isinstance(module, torch.nn.Dropout)]


@pytest.mark.parametrize("adapter", ["peft_config", "PeftModel"])
def test_disable_dropout_turns_the_adapters_dropout_off_however_it_arrives(tmp_path, adapter):
    """One `LoraConfig(lora_dropout=0.1)`, two trainings: passed as `peft_config` its dropout stayed 0.1 (turned off
    before the adapter was added), passed as a `PeftModel` it was 0. TRL turns dropout off after adding it."""
    lora = LoraConfig(**LORA, lora_dropout=0.1)
    model = tiny_causal_lm(6, seed=3)
    model = get_peft_model(model, lora) if adapter == "PeftModel" else model
    options = {"peft_config": lora} if adapter == "peft_config" else {}
    trainer = SeqTempTrainer(model, _config(tmp_path), train_dataset=_data(), **options)
    rates = _dropout_rates(trainer.model)
    assert len(rates) >= 2 and set(rates) == {0.0}  # LoRA's q_proj and v_proj dropouts
    kept = SeqTempTrainer(
        tiny_causal_lm(6, seed=3), _config(tmp_path, disable_dropout=False), train_dataset=_data(),
        peft_config=LoraConfig(**LORA, lora_dropout=0.1),
    )  # fmt: skip
    assert set(_dropout_rates(kept.model)) == {0.1}


# ---------------------------------------------------------------------------------------------------- evaluation
def _layouts():
    completions = ["x y", "y z", "z", "x x z", "y", "z x", "y y x", "x"]
    return {
        "input_ids": as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 8, 4, seed=5)),
        "prompt/completion": Dataset.from_dict({"prompt": ["x", "y"] * 4, "completion": completions}),
        "prompt-only": Dataset.from_dict({"prompt": ["x", "y", "z"]}),
    }


@pytest.mark.parametrize("layout", ["input_ids", "prompt/completion", "prompt-only"])
def test_evaluate_and_predict_prepare_a_raw_set_as_the_constructor_does(tmp_path, layout):
    """`trainer.evaluate(eval_dataset=raw)` and `trainer.predict(raw)` raised `KeyError: 'input_ids'` for every
    layout; GRPOTrainer evaluates a raw set passed this way. Now the figures equal those of the same set given to
    the constructor."""
    from conditional_toy import word_tokenizer

    raw = _layouts()[layout]
    args = _config(tmp_path, num_generations=4, max_completion_length=3)
    build = lambda **extra: SeqTempTrainer(
        tiny_causal_lm(6, seed=3), args, train_dataset=_data(), processing_class=word_tokenizer(),
        peft_config=LoraConfig(**LORA, init_lora_weights=False), **extra,
    )  # fmt: skip
    given = build(eval_dataset=raw).evaluate()
    trainer = build()
    passed = trainer.evaluate(eval_dataset=raw)
    assert {key: passed[key] for key in given if "temp/" in key} == {k: v for k, v in given.items() if "temp/" in k}
    assert passed["eval_temp/t_eff"] == given["eval_temp/t_eff"] and abs(given["eval_temp/t_eff"] - 1) > 1e-3
    predicted = trainer.predict(raw)
    assert predicted.predictions.shape[1] == 2 and predicted.metrics["test_temp/t_eff"] == given["eval_temp/t_eff"]
    named = trainer.evaluate(eval_dataset={"held": raw})
    assert named["eval_held_temp/t_eff"] == given["eval_temp/t_eff"]


# ---------------------------------------------------------------------------------------------------- the LM head
def test_a_forward_hook_on_the_lm_head_sees_the_logits(tmp_path):
    """A forward hook doubling the head's output used to be applied to the chunked head's log-probabilities (scores
    moved by up to 15.9 nats). Now the hook gets the logits, as in a plain forward: the scores are the log-softmax
    of twice the logits."""
    from hf_seqtemp import AutoregressiveScorer

    model = tiny_causal_lm(6, seed=3).eval()
    ids = torch.tensor([[0, 1, 2, 3, 4, 5, 1], [0, 2, 2, 1, 3, 3, 4]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[:, :2] = False
    with torch.no_grad():
        logits = model(input_ids=ids).logits * 2
    expected = logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None])[..., 0].masked_fill(~mask[:, 1:], 0).sum(1)
    handle = model.get_output_embeddings().register_forward_hook(lambda module, args, output: output * 2)
    try:
        scored = AutoregressiveScorer()(model, ids, torch.ones_like(ids), mask)
    finally:
        handle.remove()
    torch.testing.assert_close(scored, expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------------- data and models
def test_kto_data_is_refused_with_the_conversion(tmp_path):
    """TRL's KTO rows (`prompt`/`completion`/`label`) trained on every row, the `label=False` answers included."""
    kto = Dataset.from_dict({"prompt": ["x", "y"], "completion": ["y", "z"], "label": [True, False]})
    with pytest.raises(
        ValueError, match=r"unpaired preference format \(KTO's .*dataset.filter\(lambda row: row\['label'\]\)"
    ):
        SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path), train_dataset=kto, peft_config=LoraConfig(**LORA))


def test_a_peft_model_with_a_trained_adapter_is_warned_about_what_p_is(tmp_path):
    """Passed a PeftModel whose adapter was already trained, p (target and sampler) silently became the base with
    that adapter off (lr 0 at T = 1 logged T_eff 0.541)."""
    trained = get_peft_model(tiny_causal_lm(6, seed=3), LoraConfig(**LORA, init_lora_weights=False))
    with pytest.warns(UserWarning, match=r"adapter is already trained .*merge_and_unload\(\)"):
        SeqTempTrainer(trained, _config(tmp_path), train_dataset=_data())
    fresh = get_peft_model(tiny_causal_lm(6, seed=3), LoraConfig(**LORA))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        SeqTempTrainer(fresh, _config(tmp_path), train_dataset=_data())


@pytest.mark.parametrize("strategy", ["checkpoint", "all_checkpoints"])
def test_a_hub_strategy_that_uploads_checkpoints_is_refused_by_name(tmp_path, strategy):
    """`push_to_hub=True, hub_strategy="checkpoint"` uploaded nothing during training, where Trainer pushes every
    checkpoint."""
    with pytest.raises(ValueError, match=rf"`hub_strategy='{strategy}'` .*checkpoints are not uploaded"):
        _config(tmp_path, push_to_hub=True, hub_strategy=strategy, hub_model_id="me/x")


# ---------------------------------------------------------------------------------------------------- logged names
def test_grpos_num_tokens_and_completions_metrics_are_logged(tmp_path):
    """GRPO logs `num_tokens` and `completions/*`; they were missing. Oracle: four completions of one prompt, two
    ending at the model's EOS (id 5) after 2 and 4 tokens, two cut after 3 and 6."""
    rows = [[0, 1, 2, 5], [0, 1, 3, 2, 4, 5], [0, 1, 2, 3, 4], [0, 1, 3, 3, 4, 1, 2, 3]]
    masks = [[0, 0] + [1] * (len(row) - 2) for row in rows]
    data = Dataset.from_dict({"input_ids": rows, "completion_mask": masks, "prompt_id": [0] * 4})
    model = tiny_causal_lm(6, seed=3)
    model.generation_config.eos_token_id = 5
    args = _config(tmp_path, per_device_train_batch_size=4, num_generations=2, logging_steps=1, max_steps=2)
    trainer = SeqTempTrainer(model, args, train_dataset=data, peft_config=LoraConfig(**LORA))
    trainer.train()
    first, second = [entry for entry in trainer.state.log_history if "num_tokens" in entry]
    assert first["completions/mean_length"] == (2 + 4 + 3 + 6) / 4
    assert (first["completions/min_length"], first["completions/max_length"]) == (2, 6)
    assert first["completions/clipped_ratio"] == 0.5 and first["completions/mean_terminated_length"] == 3
    assert (first["num_tokens"], second["num_tokens"]) == (4 + 6 + 5 + 8, 2 * (4 + 6 + 5 + 8))


# ---------------------------------------------------------------------------------------------------- the docs
def _docs_table(marker: str) -> list[str]:
    """The first cells of the table between `<!-- marker:begin -->` and `<!-- marker:end -->` of docs/training.md."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text(encoding="utf-8")
    table = text.split(f"<!-- {marker}:begin -->")[1].split(f"<!-- {marker}:end -->")[0]
    return [line.split("|")[1].strip() for line in table.strip().splitlines()[2:]]


def _defaults(cls) -> dict:
    import dataclasses

    return {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(cls)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }


def test_every_default_that_differs_from_trls_grpo_is_in_the_docs_table():
    """`gradient_checkpointing`, `bf16` and `max_completion_length` used to differ from TRL's GRPO without a word,
    the command line's LoRA defaults too."""
    from trl import GRPOConfig, ModelConfig

    from hf_seqtemp.cli.arguments import TrainScriptArguments

    ours, theirs = _defaults(SeqTempConfig), _defaults(GRPOConfig)
    differ = {f"`{name}`" for name in ours if name in theirs and ours[name] != theirs[name]}
    script, model = _defaults(TrainScriptArguments), _defaults(ModelConfig)
    same_meaning = {"dtype"}  # None loads float32 here, as TRL's "float32" does
    differ |= {
        f"`--{n}` (command line)" for n in script if n in model and script[n] != model[n] and n not in same_meaning
    }
    assert differ == set(_docs_table("grpo-defaults"))


def test_every_logged_metric_is_named_in_the_docs(tmp_path):
    import fnmatch

    trainer = SeqTempTrainer(
        tiny_causal_lm(6, seed=3), _config(tmp_path, logging_steps=1, loss_type="ssts"), train_dataset=_data(),
        eval_dataset=_data(seed=5), peft_config=LoraConfig(**LORA),
    )  # fmt: skip
    trainer.train()
    names = {key for entry in trainer.state.log_history for key in entry} | set(trainer.evaluate())
    trainers_own = {"loss", "grad_norm", "learning_rate", "epoch", "step", "eval_loss", "eval_runtime", "total_flos"}
    trainers_own |= {name for name in names if name.startswith(("train_", "eval_samples", "eval_steps"))}
    documented = [pattern.strip("`").replace("<loss_type>", "*") for row in _docs_table("logged-metrics")
                  for pattern in row.split(", ")]  # fmt: skip
    for name in names - trainers_own:
        bare = name.removeprefix("eval_")
        assert any(fnmatch.fnmatch(bare, pattern) for pattern in documented), name
