# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A TRL user's habits hold in `SeqTempTrainer`: callbacks see the temperature metrics, `compute_metrics` is called,
several eval sets work, gradient accumulation is one big batch for token means, `push_to_hub` fails where
`Trainer`'s does, the card is hf_seqtemp's, TRL names that mean something else here are refused by name, dropout is
off as in TRL, progress bars and messages follow the switches transformers users set, and a token-temperature start
folds into Gemma 3's offset norm."""

import json
import logging

import pytest
import torch
from datasets import Dataset, IterableDataset
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import all_sequences, as_dataset, sample_sequences
from transformers import EarlyStoppingCallback, TrainerCallback

from hf_seqtemp import AutoregressiveScorer, SeqTempConfig, SeqTempTrainer, effective_temperature

LORA = {"r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"]}


def _config(tmp_path, **overrides):
    values = {"output_dir": str(tmp_path / "run"), "target_temperature": 0.5, "max_steps": 2, "seed": 0}
    values.update(per_device_train_batch_size=8, per_device_eval_batch_size=8, learning_rate=1e-2)
    values.update(save_strategy="no", use_cpu=True, disable_tqdm=True, report_to=[])
    return SeqTempConfig(**{**values, **overrides})


def _data(seed=2, num=16):
    return as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), num, 4, seed=seed))


def _trainer(tmp_path, model=None, eval_dataset=None, **overrides):
    torch.manual_seed(0)
    model = model if model is not None else tiny_causal_lm(6, seed=3)
    return SeqTempTrainer(
        model, _config(tmp_path, **overrides), train_dataset=_data(), eval_dataset=eval_dataset,
        peft_config=LoraConfig(**LORA, init_lora_weights=False),
    )  # fmt: skip


class _Seen(TrainerCallback):
    def __init__(self):
        self.metrics = []

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.metrics.append(dict(metrics))


# ---------------------------------------------------------------------------------------------------- evaluation
def test_on_evaluate_callbacks_and_early_stopping_see_the_temperature_metrics(tmp_path):
    """`EarlyStoppingCallback(metric_for_best_model="temp/h_std")` used to print "did not find eval_temp/h_std so
    early stopping is disabled" and run every step: the metrics reached `log()` only."""
    seen = _Seen()
    trainer = _trainer(
        tmp_path, eval_dataset=_data(seed=5), max_steps=6, eval_strategy="steps", eval_steps=1,
        metric_for_best_model="temp/h_std", greater_is_better=True, load_best_model_at_end=True,
        save_strategy="steps", save_steps=1,
    )  # fmt: skip
    trainer.add_callback(seen)
    trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=1))
    trainer.train()
    assert {"eval_temp/h_std", "eval_temp/t_eff", "eval_temp/kendall_tau", "eval_loss"} <= set(seen.metrics[0])
    # h_std grows as q moves away from p^(1/T)'s shape only if it does; "greater is better" on a metric that cannot
    # keep growing stops the run early: fewer evaluations than steps
    assert len(seen.metrics) < 6 and trainer.state.global_step < 6


def test_compute_metrics_gets_each_sequences_log_q_log_p_and_prompt(tmp_path):
    """`compute_metrics` used to be accepted and never called. It receives `(log q, log p)` per held-out sequence
    and its prompt group id; a T_eff computed from them equals the one the trainer logs."""
    held_out = _data(seed=5, num=12)
    calls = []

    def compute_metrics(prediction):
        calls.append(prediction)
        q, p = prediction.predictions[:, 0], prediction.predictions[:, 1]
        return {"my_t_eff": effective_temperature(p, q, groups=prediction.label_ids.tolist())}

    trainer = _trainer(tmp_path, eval_dataset=held_out)
    trainer.compute_metrics = compute_metrics
    trainer.train()
    metrics = trainer.evaluate()
    assert len(calls) == 1 and calls[0].predictions.shape == (12, 2)
    ids = torch.tensor(held_out["input_ids"])
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[:, 0] = False
    with torch.no_grad():
        policy = AutoregressiveScorer()(trainer.model, ids, completion_mask=mask)
    torch.testing.assert_close(torch.as_tensor(calls[0].predictions[:, 0]), policy, rtol=1e-5, atol=1e-5)
    assert metrics["eval_my_t_eff"] == pytest.approx(metrics["eval_temp/t_eff"], rel=1e-5)


def test_a_dict_of_eval_sets_is_evaluated_set_by_set_and_a_streamed_one_is_refused(tmp_path):
    """A dict `eval_dataset` used to raise `AttributeError`, an `IterableDataset` `TypeError: ... has no len()`."""
    trainer = _trainer(tmp_path, eval_dataset={"near": _data(seed=5), "far": _data(seed=6)})
    metrics = trainer.evaluate()
    assert {"eval_near_temp/t_eff", "eval_far_temp/t_eff", "eval_near_loss", "eval_far_loss"} <= set(metrics)
    assert metrics["eval_near_temp/t_eff"] != metrics["eval_far_temp/t_eff"]
    streamed = IterableDataset.from_generator(lambda: iter(_data(seed=5)))
    with pytest.raises(TypeError, match=r"`eval_dataset` is a datasets.IterableDataset: .* map-style"):
        _trainer(tmp_path, eval_dataset=streamed)


# ---------------------------------------------------------------------------------------------------- the loss
def _lengths_dataset():
    """Four completions of one prompt, two of 2 tokens and two of 6 (plus EOS-free fixed rows): token means then
    differ between one batch and its halves."""
    rows = [[0, 1, 2, 3], [0, 1, 4, 2], [0, 1, 2, 3, 4, 5, 1, 2], [0, 1, 5, 4, 3, 2, 1, 3]]
    masks = [[0, 0] + [1] * (len(row) - 2) for row in rows]
    return Dataset.from_dict({"input_ids": rows, "completion_mask": masks, "prompt_id": [0] * 4})


def _one_sgd_step(tmp_path, batch, accumulation, **overrides):
    torch.manual_seed(0)
    model = tiny_causal_lm(6, seed=3)
    args = _config(
        tmp_path, target_temperature=1.0, nll_weight=1.0, max_steps=1, per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation, optim="sgd", learning_rate=1.0, num_generations=2,
        lr_scheduler_type="constant", logging_steps=1, **overrides,
    )  # fmt: skip
    trainer = SeqTempTrainer(model, args, train_dataset=_lengths_dataset(), peft_config=LoraConfig(**LORA))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.train()
    return torch.cat([(p.detach() - before[n]).flatten() for n, p in trainer.model.named_parameters() if n in before])


def test_gradient_accumulation_weighs_tokens_as_one_big_batch(tmp_path):
    """At T = 1 with LoRA's B = 0 (q = p, the ratio term has no gradient) the update is the token-mean NLL's: two
    2-token and two 6-token completions as one batch of 4 and as 2 x 2 accumulated used to differ (update norm
    2.415 against 2.224), each micro-batch taking its own token mean. Counting the tokens of the whole
    accumulated batch (`num_items_in_batch`, as transformers does) makes them equal."""
    whole = _one_sgd_step(tmp_path / "a", 4, 1)
    accumulated = _one_sgd_step(tmp_path / "b", 2, 2)
    assert whole.norm() > 1e-3
    assert (
        (accumulated - whole).norm() / whole.norm()
    ).item() < 5e-5  # was 8 % (2.224 against 2.415); float32 sums: 1.00002e-5 on AVX2


@pytest.mark.parametrize("loss_type", ["ratio", "ssts", "c_div", "trunc_r", "lambda_pr"])
def test_gradient_accumulation_is_one_big_batch_for_the_recall_losses(tmp_path, loss_type):
    """Their main term is a mean over sequences and their NLL term a mean over tokens: the whole loss was scaled as a
    token mean, and 2 x 2 accumulated differed from one batch of 4 by 28.0 % (c_div), 21.6 % (trunc_r) and 27.5 %
    (lambda_pr) with these uneven lengths. Now each term is weighed as what it is."""
    extra = {"lambda_pr_lambda": 2.0} if loss_type == "lambda_pr" else {}  # λ > 1: q = p is in its active region
    whole = _one_sgd_step(tmp_path / "a", 4, 1, loss_type=loss_type, **extra)
    accumulated = _one_sgd_step(tmp_path / "b", 2, 2, loss_type=loss_type, **extra)
    assert whole.norm() > 1e-3
    assert (
        (accumulated - whole).norm() / whole.norm()
    ).item() < 5e-5  # float32 sums in another order (AVX2 kernels: 1.00002e-5)


# ---------------------------------------------------------------------------------------------------- the Hub
def test_push_to_hub_offline_fails_at_construction_as_trainers_does(tmp_path, monkeypatch):
    """`push_to_hub=True` offline used to construct and train, failing only at the end."""
    from huggingface_hub import constants
    from huggingface_hub.errors import OfflineModeIsEnabled
    from transformers import Trainer, TrainingArguments

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OfflineModeIsEnabled):
        Trainer(tiny_causal_lm(6, seed=3), TrainingArguments(str(tmp_path / "t"), push_to_hub=True, use_cpu=True))
    with pytest.raises(OfflineModeIsEnabled, match="offline mode is on"):
        _trainer(tmp_path, push_to_hub=True, hub_model_id="me/x")


def test_the_card_is_ours_with_the_trainers_card_arguments(tmp_path, monkeypatch):
    """`create_model_card()` used to replace the measured card with transformers' generic one, and
    `push_to_hub(dataset_name=...)` raised `TypeError`; the card was tagged `trl` though TRL trains nothing here."""
    from hf_seqtemp import hub

    trainer = _trainer(tmp_path, eval_dataset=_data(seed=5))
    trainer.train()
    trainer.create_model_card(dataset="me/prompts", tags=["my-tag"])
    card = (tmp_path / "run" / "README.md").read_text(encoding="utf-8")
    assert "T_eff" in card and "me/prompts" in card and "my-tag" in card
    assert "\n- trl\n" not in card and "generated_from_trainer" in card
    with pytest.raises(TypeError, match=r"got \['license'\], which hf_seqtemp's card does not take"):
        trainer.create_model_card(license="mit")
    uploads = []
    monkeypatch.setattr(hub, "check_can_push", lambda token=None: None)
    monkeypatch.setattr(hub, "push_to_hub", lambda folder, repo_id, **kwargs: uploads.append(folder))
    monkeypatch.setattr(hub, "create_repo", lambda repo_id, private=None, token=None: f"me/{repo_id}")
    trainer.push_to_hub(dataset_name="me/other", tags="pushed")
    pushed = (tmp_path / "run" / "hub" / "README.md").read_text(encoding="utf-8")
    assert uploads and "me/other" in pushed and "pushed" in pushed


# ---------------------------------------------------------------------------------------------------- TRL names
@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("steps_per_generation", 2, "use `sample_every_steps=k`"),
        ("generation_batch_size", 16, "use `sample_every_steps=k`"),
        ("generation_kwargs", {"top_k": 5}, "exact samples of p"),
        ("chat_template_kwargs", {"enable_thinking": False}, "tokenizer.chat_template"),
        ("dataset_num_proc", 4, "main process"),
        ("log_completions", True, "not available"),
    ],
)
def test_trl_names_that_mean_something_else_here_are_refused_by_name(tmp_path, name, value, words):
    with pytest.raises(ValueError, match=rf"`{name}` is not supported by SeqTempConfig, got .*{words}"):
        _config(tmp_path, **{name: value})


def test_preference_data_is_refused_by_name(tmp_path):
    """`prompt` + `chosen` + `rejected` used to be read silently as prompt-only data."""
    data = Dataset.from_dict({"prompt": ["a b"], "chosen": ["c"], "rejected": ["d"]})
    with pytest.raises(ValueError, match=r"\['chosen', 'rejected'\] of TRL's preference format"):
        SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path), train_dataset=data)


def test_model_init_kwargs_load_a_model_given_by_path(tmp_path):
    folder = tmp_path / "base"
    tiny_causal_lm(6, seed=3).save_pretrained(folder)
    args = _config(tmp_path, model_init_kwargs={"dtype": "bfloat16"})
    trainer = SeqTempTrainer(str(folder), args, train_dataset=_data())
    assert next(trainer.model.parameters()).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="`model_init_kwargs` is given but `model` is already built"):
        SeqTempTrainer(tiny_causal_lm(6, seed=3), args, train_dataset=_data())


# ---------------------------------------------------------------------------------------------------- dropout
def _gpt2(**config):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    values = {"vocab_size": 6, "n_positions": 16, "n_embd": 16, "n_layer": 2, "n_head": 2, "bos_token_id": 0}
    return GPT2LMHeadModel(GPT2Config(**values, **config))


def _opt():
    from transformers import OPTConfig, OPTForCausalLM

    torch.manual_seed(0)
    config = OPTConfig(
        vocab_size=6, hidden_size=16, num_hidden_layers=2, ffn_dim=32, num_attention_heads=2, word_embed_proj_dim=16,
        max_position_embeddings=16, dropout=0.1, attention_dropout=0.1, bos_token_id=0, pad_token_id=1,
    )  # fmt: skip
    return OPTForCausalLM(config)


@pytest.mark.parametrize("family", ["gpt2", "opt"])
def test_dropout_is_off_while_training_so_an_untrained_adapter_reads_t_eff_1(tmp_path, family):
    """Learning rate 0 and LoRA's B = 0: the policy is the reference. GPT-2 and OPT ship dropout 0.1, and the
    policy's train-mode forward used to log T_eff / τ of 1.052 / 0.667 (GPT-2), 0.864 (OPT); TRL disables
    dropout by default (`disable_dropout`), and so does this trainer now."""
    logged = {}
    for disable in (True, False):
        model = _gpt2(resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1) if family == "gpt2" else _opt()
        target = ["c_attn"] if family == "gpt2" else ["q_proj", "v_proj"]
        args = _config(
            tmp_path / str(disable), learning_rate=0.0, max_steps=1, logging_steps=1, disable_dropout=disable,
            target_temperature=1.0,
        )  # fmt: skip
        distinct = as_dataset(all_sequences(6, 2))  # no two alike: τ is 1 exactly when q = p
        peft_config = LoraConfig(r=2, target_modules=target)
        trainer = SeqTempTrainer(model, args, train_dataset=distinct, peft_config=peft_config)
        trainer.train()
        logged[disable] = next(entry for entry in trainer.state.log_history if "temp/t_eff" in entry)
    assert logged[True]["temp/t_eff"] == pytest.approx(1.0, abs=1e-4)
    assert logged[True]["temp/kendall_tau"] == pytest.approx(1.0, abs=1e-6)
    assert abs(logged[False]["temp/t_eff"] - 1.0) > 1e-3 or logged[False]["temp/kendall_tau"] < 0.99


# ---------------------------------------------------------------------------------------------------- quiet runs
def test_progress_bars_and_dataset_warnings_follow_the_users_switches(tmp_path, capsys, caplog):
    """The reference log-prob bar ignored `disable_tqdm` and `TQDM_DISABLE`; dataset warnings ignored
    `transformers.logging.set_verbosity_error()`."""
    from transformers.utils import logging as hf_logging

    long = as_dataset(torch.cat([torch.zeros(1, 1, dtype=torch.long), torch.ones(1, 20, dtype=torch.long)], 1))
    data = Dataset.from_dict({"input_ids": list(_data()["input_ids"]) + list(long["input_ids"])})
    SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path, max_length=8), train_dataset=data)
    assert "Reference log-probs" not in capsys.readouterr().err
    with caplog.at_level(logging.WARNING):
        SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path, max_length=8), train_dataset=data)
    assert "dropped 1 of 17 examples longer than max_length=8" in caplog.text
    caplog.clear()
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with caplog.at_level(logging.WARNING):
            SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path, max_length=8), train_dataset=data)
    finally:
        hf_logging.set_verbosity(previous)
    assert "dropped" not in caplog.text


def test_tqdm_disable_in_the_environment_silences_the_reference_bar(tmp_path, capsys, monkeypatch):
    SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path, disable_tqdm=False), train_dataset=_data())
    assert "Reference log-probs" in capsys.readouterr().err  # the bar this test silences exists
    monkeypatch.setenv("TQDM_DISABLE", "1")
    SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path, disable_tqdm=False), train_dataset=_data())
    assert "Reference log-probs" not in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- the model
def _gemma(version: int):
    from transformers import Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    values = {
        "vocab_size": 11, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "max_position_embeddings": 16,
    }  # fmt: skip
    if version == 2:
        return Gemma2ForCausalLM(Gemma2Config(**values, final_logit_softcapping=30.0))
    model = Gemma3ForCausalLM(Gemma3TextConfig(**values))
    with torch.no_grad():
        model.model.norm.weight.normal_(0, 0.5)  # an offset norm x (1 + w) with w != 0
    return model


def test_token_temperature_start_folds_into_gemma3s_offset_norm_and_is_refused_for_gemma2(tmp_path):
    """`init_from_token_temperature=True` was refused on Gemma 2 and 3. Gemma 3's norm `x (1 + w)` folds exactly
    (`w' = (1 + w) / T - 1`): the adapter model's logits are the base's divided by T. Gemma 2 soft-caps its logits
    after the head, which no scale divides by T: refused, saying so."""
    data = as_dataset(all_sequences(6, 2))
    args = _config(tmp_path, init_from_token_temperature=True, target_temperature=0.5)
    base = _gemma(3)
    expected = base(input_ids=torch.tensor([[2, 3, 4, 5]])).logits / 0.5
    trainer = SeqTempTrainer(base, args, train_dataset=data, peft_config=LoraConfig(**LORA))
    got = trainer.model(input_ids=torch.tensor([[2, 3, 4, 5]])).logits
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"soft-capped after the head \(`final_logit_softcapping=30.0`\)"):
        SeqTempTrainer(_gemma(2), args, train_dataset=data, peft_config=LoraConfig(**LORA))


def test_an_encoder_decoder_given_to_the_scorer_is_refused_by_name():
    """T5 used to crash inside its own forward ("You must specify exactly one of input_ids or inputs_embeds")."""
    from transformers import T5Config, T5ForConditionalGeneration

    model = T5ForConditionalGeneration(T5Config(vocab_size=10, d_model=8, d_kv=4, d_ff=16, num_layers=1, num_heads=2))
    with pytest.raises(TypeError, match="is a T5ForConditionalGeneration, an encoder-decoder model"):
        AutoregressiveScorer()(model, torch.tensor([[1, 2, 3]]))


def test_the_config_round_trips_the_new_names_through_json(tmp_path):
    args = _config(tmp_path, sample_every_steps=2, num_generations_eval=3, model_init_kwargs={"dtype": "float32"})
    values = json.loads(args.to_json_string())
    assert values["sample_every_steps"] == 2 and values["num_generations_eval"] == 3
    assert values["model_init_kwargs"] == {"dtype": "float32"} and values["disable_dropout"] is True
