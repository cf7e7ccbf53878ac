# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import pytest
import torch
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import AutoregressiveScorer, SeqTempConfig, SeqTempTrainer
from hf_seqtemp.losses.recall import RollingQuantile, c_div_loss, lambda_pr_loss, trunc_r_loss


def _trainer(tmp_path, loss_type, **kw):
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 16, 3, seed=4))
    args = SeqTempConfig(
        str(tmp_path),
        loss_type=loss_type,
        nll_weight=0.0,
        max_steps=3,
        learning_rate=1e-2,
        per_device_train_batch_size=8,
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        **kw,
    )
    return SeqTempTrainer(model, args, train_dataset=data)


@pytest.mark.parametrize("loss_type", ["c_div", "trunc_r", "lambda_pr"])
def test_registered_recall_objective_equals_its_pure_loss(tmp_path, loss_type):
    """The trainer's loss on a batch is the pure function with P = the reference (self-sampled data)."""
    trainer = _trainer(tmp_path, loss_type)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(8)])
    got = trainer.compute_loss(trainer.model, batch)
    logq, mask = AutoregressiveScorer().token_logps(
        trainer.model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
    )
    ref = AutoregressiveScorer().token_logps(tiny_causal_lm(4, seed=0), batch["input_ids"])[0].detach()
    if loss_type == "c_div":
        expected, _ = c_div_loss(logq, mask, alpha=1.4, data_token_logps=ref)
    elif loss_type == "trunc_r":
        expected, _ = trunc_r_loss(logq, mask, threshold=RollingQuantile(quantile=0.8))
    else:
        expected, _ = lambda_pr_loss(logq, mask, data_logps=(ref * mask).sum(1), lam=0.5)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    trainer.train()
    assert any(f"loss/{loss_type}" in entry for entry in trainer.state.log_history)


def test_trunc_r_keeps_its_rolling_buffer_across_steps(tmp_path):
    trainer = _trainer(tmp_path, "trunc_r", trunc_r_quantile=0.5)
    trainer.train()
    buffers = trainer._loss_state["trunc_r_thresholds"]  # one per prompt group; this toy corpus is one group
    assert list(buffers) == [trainer.train_dataset[0]["group_id"]] and len(buffers[next(iter(buffers))]) == 3 * 8


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("c_div_alpha", 1.0, r"`c_div_alpha` must be in \(1, inf\), got 1.0"),
        ("trunc_r_quantile", 1.5, r"`trunc_r_quantile` must be in \(0, 1\], got 1.5"),
        ("lambda_pr_lambda", 0, r"`lambda_pr_lambda` must be in \(0, inf\), got 0"),
    ],
)
def test_recall_hyperparameters_are_validated(tmp_path, field, value, message):
    with pytest.raises(ValueError, match=message):
        SeqTempConfig(str(tmp_path), **{field: value})
