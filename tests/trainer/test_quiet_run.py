# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A short run prints only what the user needs: no warning the user did not cause."""

import json
import logging
import os
import warnings

import huggingface_hub
import pytest
from peft import LoraConfig
from safetensors import safe_open
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import DEFAULT_MODEL_ID, SeqTempConfig, SeqTempTrainer, hub, load_tempered

BASE_ID = "me/tiny-base"


def _hf_cache_with_config(root, repo_id: str, vocab_size: int) -> None:
    """What `from_pretrained(repo_id)` leaves in the Hugging Face cache: refs/main and a snapshot's config.json."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"vocab_size": vocab_size}))


def _trainer(tmp_path, name: str, target_modules=("q_proj", "v_proj")):
    model = tiny_causal_lm(4, seed=0)
    model.config._name_or_path = model.name_or_path = name  # as `from_pretrained(name)` leaves it
    data = as_dataset(sample_sequences(model, 16, 3))
    args = SeqTempConfig(
        str(tmp_path / "run"), max_steps=2, per_device_train_batch_size=8, save_strategy="no", disable_tqdm=True
    )
    lora = LoraConfig(r=2, target_modules=list(target_modules))
    return SeqTempTrainer(model, args, train_dataset=data, eval_dataset=data, peft_config=lora)


def test_a_short_training_run_emits_no_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    _hf_cache_with_config(tmp_path / "hf", BASE_ID, vocab_size=4)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # PEFT could not ask the Hub about the base model
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = _trainer(tmp_path, BASE_ID)  # wraps the model with PEFT
        trainer.train()  # on CPU: dataloaders
        trainer.evaluate()
        trainer.save_model()  # PEFT checks whether the base vocabulary changed
        load_tempered(tmp_path / "run", base_model=tiny_causal_lm(4, seed=0))
    said = [f"{w.category.__name__}: {w.message}" for w in caught]
    # the one message this run causes: its held-out figures rest on one prompt (issue 61: the API says so)
    assert [m for m in said if "held-out prompt, fewer than 8" not in m] == []
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert trainer.args.dataloader_pin_memory is False  # no accelerator here


@pytest.mark.parametrize("base_vocab,saved", [(4, False), (7, True)])
def test_embeddings_are_saved_exactly_when_the_base_vocabulary_differs(tmp_path, monkeypatch, base_vocab, saved):
    """The embedded model's cache folder answers PEFT's question offline, as the Hub would online."""
    monkeypatch.setenv("HF_SEQTEMP_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "SmolLM2-135M-Instruct"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"vocab_size": base_vocab}))
    trainer = _trainer(tmp_path, DEFAULT_MODEL_ID)
    assert hub.embedding_save_kwargs(trainer.model) == {"save_embedding_layers": saved}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # offline, PEFT would warn that it cannot tell
        warnings.filterwarnings("ignore", message="measure_held_out: These figures rest on")  # one held-out prompt
        trainer.save_model()
    with safe_open(tmp_path / "run" / "adapter_model.safetensors", "pt") as weights:
        assert any("embed_tokens" in key for key in weights.keys()) == saved  # noqa: SIM118 (not a dict)


def test_peft_decides_when_nothing_local_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    assert hub.embedding_save_kwargs(_trainer(tmp_path, "me/never-downloaded").model) == {}
    # adapted embeddings are PEFT's to save, whatever the vocabulary
    assert hub.embedding_save_kwargs(_trainer(tmp_path, BASE_ID, ["embed_tokens", "q_proj"]).model) == {}
