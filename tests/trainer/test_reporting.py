# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import pytest
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import SeqTempConfig, SeqTempTrainer


@pytest.mark.parametrize("loss_type,extra", [("ratio", "train/loss/ratio"), ("ssts", "train/ess/fraction")])
def test_report_to_tensorboard_logs_the_temperature_metrics(tmp_path, monkeypatch, loss_type, extra):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(tmp_path / "tb"))
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 32, 3))
    args = SeqTempConfig(
        str(tmp_path),
        loss_type=loss_type,
        max_steps=4,
        logging_steps=2,
        report_to=["tensorboard"],
        per_device_train_batch_size=8,
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = SeqTempTrainer(model, args, train_dataset=data, eval_dataset=data)
    trainer.train()
    trainer.evaluate()
    trainer.callback_handler.on_train_end(args, trainer.state, trainer.control)  # flush the writer
    events = event_accumulator.EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in (
        "train/temp/t_eff",
        "train/temp/kendall_tau",
        "train/temp/h_std",
        "train/loss/nll",
        "train/nll/policy_per_token",
        "eval/temp/t_eff",
        "eval/temp/kendall_tau",
        extra,
    ):
        assert tag in tags, sorted(tags)
    assert len(events.Scalars("train/temp/t_eff")) == 2
