# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A mistyped model or adapter id while the Hub is switched off (`HF_HUB_OFFLINE=1`, as the suite runs): every entry
point says that the Hub was not asked, names the id and gives the fixes, instead of transformers' "couldn't connect"
or a bare "not found"."""

from __future__ import annotations

import huggingface_hub
import pytest

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_tempered

TYPO = "HuggingFaceTB/SmolLM2-135M-Instrct"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def _says_offline(message: str, model_id: str) -> None:
    assert repr(model_id) in message
    assert "HF_HUB_OFFLINE is set, so the Hub was not asked" in message
    assert "Check the spelling of the id" in message and "HF_HUB_OFFLINE=0" in message


def test_load_tempered_with_a_mistyped_adapter_id_names_offline_mode():
    with pytest.raises(FileNotFoundError) as error:
        load_tempered("someone/tempered-adaptr")
    _says_offline(str(error.value), "someone/tempered-adaptr")


def test_the_trainer_given_a_mistyped_model_id_names_offline_mode(tmp_path):
    config = SeqTempConfig(str(tmp_path / "out"), report_to=[], use_cpu=True)
    with pytest.raises(FileNotFoundError) as error:
        SeqTempTrainer(TYPO, config, train_dataset=[{"prompt": "Name a colour."}])
    _says_offline(str(error.value), TYPO)


def test_online_the_message_does_not_blame_offline_mode(monkeypatch):
    """The hint is only given when it is true: with the Hub on, a missing repository says what the Hub answered."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")

    class RepositoryNotFoundError(Exception):
        pass

    def refuse(*args, **kwargs):
        raise RepositoryNotFoundError("404 Client Error: Repository Not Found")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)
    with pytest.raises(FileNotFoundError) as error:
        load_tempered("someone/tempered-adaptr")
    assert "HF_HUB_OFFLINE" not in str(error.value)
    assert "RepositoryNotFoundError: 404 Client Error" in str(error.value)
