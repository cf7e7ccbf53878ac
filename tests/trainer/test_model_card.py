# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`save_model()` writes hf_seqtemp's card (not PEFT's placeholder): measured once with an eval set, else saying so."""

import os
import re

import huggingface_hub
import pytest
import torch
from huggingface_hub.errors import LocalTokenNotFoundError, OfflineModeIsEnabled
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import all_sequences, as_dataset, exact_logps

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, SequenceTemperatureConfig, hub, measure
from hf_seqtemp.metrics.core import effective_temperature, kendall_tau

VOCAB, SEED, T = 4, 5, 0.5
PLACEHOLDER = ("Model Card for Model ID", "More Information Needed")


def _split():
    sequences = all_sequences(VOCAB, 3)[torch.randperm(VOCAB**3, generator=torch.Generator().manual_seed(1))]
    return sequences[:32], sequences[32:52]


def _trainer(tmp_path, with_eval=True, lora=True, **config):
    train, held_out = _split()
    values = {"output_dir": str(tmp_path / "run"), "use_cpu": True, "max_steps": 4, "save_strategy": "no"}
    values.update(learning_rate=5e-2, per_device_train_batch_size=16, target_temperature=T, disable_tqdm=True)
    args = SeqTempConfig(**{**values, **config})
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]) if lora else None
    return SeqTempTrainer(
        tiny_causal_lm(VOCAB, seed=SEED),
        args,
        train_dataset=as_dataset(train),
        eval_dataset=as_dataset(held_out) if with_eval else None,
        peft_config=lora,
    )


def _rows(card: str) -> dict[str, list[float]]:
    rows = {}
    for line in card.splitlines():
        match = re.fullmatch(r"\| (.+?) \| ([-\d.]+) \| ([-\d.]+) \| ([-\d.]+) \|", line)
        if match:
            rows[match.group(1)] = [float(v) for v in match.groups()[1:]]
    return rows


def _oracle(trainer) -> dict[str, list[float]]:
    """float64 log p, log q and myopic log-likelihoods computed here, independently of hf_seqtemp's scorers."""
    held_out = _split()[1]
    base = tiny_causal_lm(VOCAB, seed=SEED)
    with torch.no_grad():
        log_p, log_q = exact_logps(base, held_out), exact_logps(trainer.model.eval(), held_out)
        logits = base(input_ids=held_out).logits[:, :-1].double() / T
        log_myopic = logits.log_softmax(-1).gather(-1, held_out[:, 1:, None]).squeeze(-1).sum(1)
    tokens = held_out[:, 1:].numel()
    return {
        label: [effective_temperature(log_p, v), kendall_tau(log_p, v), -v.sum().item() / tokens]
        for label, v in zip(hub.ROW_NAMES.values(), (log_p, log_myopic, log_q))
    }


def _save_of(folder: str) -> str:
    """The folder a staging folder (`.<name>.seqtemp-staging-…`, beside it) is the save of."""
    parent, name = os.path.split(folder)
    staged = re.match(r"^\.(.+)\.seqtemp-staging-", name)
    return os.path.join(parent, staged.group(1)) if staged else folder


def test_save_model_writes_the_measured_card_scoring_once(tmp_path, monkeypatch):
    measured, configs = [], []
    original_measure, original_save = measure.measure_held_out, SequenceTemperatureConfig.save_pretrained
    monkeypatch.setattr(measure, "measure_held_out", lambda *a, **k: measured.append(1) or original_measure(*a, **k))
    monkeypatch.setattr(
        SequenceTemperatureConfig, "save_pretrained", lambda self, d: configs.append(str(d)) or original_save(self, d)
    )
    trainer = _trainer(tmp_path)
    trainer.train()
    out = tmp_path / "run"
    trainer.save_model()
    # the same sequences at the same step, passed raw as the quick-start does: not scored again
    hub.save_for_hub(trainer, tmp_path / "hub", held_out_dataset=as_dataset(_split()[1]), repo_id="me/tiny")
    # written once per folder (into its staging folder, then moved in: `hf_seqtemp.staging`)
    staged = [_save_of(c) for c in configs]  # a staging folder -> its save's
    folders = [folder for folder, config in zip(staged, configs) if config != folder]
    assert len(measured) == 1 and sorted(folders) == sorted([str(out), str(tmp_path / "hub")])
    card = (out / "README.md").read_text(encoding="utf-8")
    assert not any(text in card for text in PLACEHOLDER)
    rows, oracle = _rows(card), _oracle(trainer)
    assert rows.pop(hub.ROW_NAMES["tuned_myopic"])[0] == pytest.approx(T, rel=0.005 + 1e-4)  # T_eff = T by search
    assert set(rows) == set(oracle)
    for label, values in rows.items():
        assert values == pytest.approx(oracle[label], abs=6e-5), label
    assert abs(rows[hub.ROW_NAMES["tempered"]][0] - 1) > 0.05  # trained away from the base model
    assert "Measured on 20 held-out sequences" in card and (out / hub.PLOT_NAME).is_file()
    config = SequenceTemperatureConfig.from_pretrained(out)
    assert config.eval_t_eff == pytest.approx(oracle[hub.ROW_NAMES["tempered"]][0], rel=1e-5)
    assert 'load_tempered("me/tiny")' in (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")


def test_save_model_without_eval_set_says_nothing_was_measured(tmp_path):
    trainer = _trainer(tmp_path, with_eval=False)
    trainer.train()
    trainer.save_model()
    out = tmp_path / "run"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "**Nothing was measured** for this card" in card and not any(text in card for text in PLACEHOLDER)
    assert _rows(card) == {} and not (out / hub.PLOT_NAME).exists()
    assert SequenceTemperatureConfig.from_pretrained(out).eval_t_eff is None


def test_a_checkpoint_card_shows_the_last_evaluate_without_scoring(tmp_path, monkeypatch):
    measured = []
    original = measure.measure_held_out
    monkeypatch.setattr(measure, "measure_held_out", lambda *a, **k: measured.append(1) or original(*a, **k))
    trainer = _trainer(tmp_path, save_strategy="steps", save_steps=4, eval_strategy="steps", eval_steps=4)
    trainer.train()
    folder = tmp_path / "run" / "checkpoint-4"
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert measured == [] and not any(text in card for text in PLACEHOLDER)
    assert "Figures of this adapter from the last `evaluate()` during training" in card
    tempered = _rows(card)[hub.ROW_NAMES["tempered"]]
    assert list(_rows(card)) == [hub.ROW_NAMES["tempered"]]
    assert tempered == pytest.approx(_oracle(trainer)[hub.ROW_NAMES["tempered"]], abs=6e-5)
    assert os.path.isfile(folder / "seqtemp_config.json") and not (folder / hub.PLOT_NAME).exists()


def test_push_to_hub_without_network_or_token_fails_before_scoring(tmp_path, monkeypatch):
    measured = []
    monkeypatch.setattr(measure, "measure_held_out", lambda *a, **k: measured.append(1))
    trainer = _trainer(tmp_path)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OfflineModeIsEnabled, match=r"offline mode is on \(HF_HUB_OFFLINE=1\)"):
        trainer.push_to_hub()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(LocalTokenNotFoundError, match="no token"):
        trainer.push_to_hub()
    assert measured == [] and not (tmp_path / "run" / "hub").exists()


def test_full_fine_tuning_without_the_base_model_shows_evaluate_figures_or_says_why_not(tmp_path):
    trainer = _trainer(tmp_path, lora=False, learning_rate=1e-2)  # reference precomputed: no base model object
    trainer.train()
    trainer.save_model(str(tmp_path / "before"))
    card = (tmp_path / "before" / "README.md").read_text(encoding="utf-8")
    assert "**Nothing was measured** for this card: the base model and the myopic baseline cannot be scored" in card
    trainer.evaluate()
    trainer.save_model(str(tmp_path / "after"))
    rows = _rows((tmp_path / "after" / "README.md").read_text(encoding="utf-8"))
    tempered = hub.ROW_NAMES["tempered"]
    assert list(rows) == [tempered] and rows[tempered] == pytest.approx(_oracle(trainer)[tempered], abs=6e-5)


def test_trainer_measure_held_out_is_what_save_for_hub_writes(tmp_path, monkeypatch):
    """`trainer.measure_held_out()` (the demo prints it) and the card that `save_for_hub` writes at the same step
    are one measurement: scored once, the same figures, and those of an independent float64 oracle."""
    measured = []
    original_measure = measure.measure_held_out
    monkeypatch.setattr(measure, "measure_held_out", lambda *a, **k: measured.append(1) or original_measure(*a, **k))
    trainer = _trainer(tmp_path)
    trainer.train()
    reports, logps = trainer.measure_held_out()
    hub.save_for_hub(trainer, tmp_path / "hub")
    assert len(measured) == 1
    rows, oracle = _rows((tmp_path / "hub" / "README.md").read_text(encoding="utf-8")), _oracle(trainer)
    assert "tuned_once" not in reports  # its held-out sequences share the training set's prompt: nothing to tune on
    for name, label in ((name, label) for name, label in hub.ROW_NAMES.items() if name in reports):
        figures = [reports[name][key] for key in ("t_eff", "kendall_tau", "nll_per_token")]
        assert rows[label] == pytest.approx(figures, abs=6e-5), label
        if label in oracle:
            assert figures == pytest.approx(oracle[label], abs=6e-5), label
    assert len(logps["tempered"]) == len(_split()[1])
