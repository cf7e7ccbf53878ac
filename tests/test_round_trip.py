# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Every folder hf_seqtemp writes loads back with `load_tempered`, whichever object wrote it: the trainer, a model
from `load_tempered` (through `save_for_hub`), and the CLI, with identical log-probabilities."""

import json
import os
import random

import pytest
import torch
from configs import quiet_config
from datasets import Dataset
from peft import LoraConfig
from tiny_models import save_word_base, word_tokenizer
from transformers import AutoModelForCausalLM, AutoTokenizer

from hf_seqtemp import SeqTempTrainer, hub, load_tempered
from hf_seqtemp.cli import main

WORDS = ["a", "b", "c", "d"]
PROBE = torch.tensor([[0, 1, 2, 3, 4], [0, 4, 4, 1, 2], [0, 2, 1, 1, 3]])


def _tokenizer():
    return word_tokenizer()


def _logps(model) -> torch.Tensor:
    with torch.no_grad():
        logits = model.eval()(input_ids=PROBE).logits[:, :-1].log_softmax(-1)
    return logits.gather(-1, PROBE[:, 1:, None]).squeeze(-1)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A tiny base model + tokenizer folder and a text corpus."""
    root = tmp_path_factory.mktemp("round_trip")
    save_word_base(root / "base")
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(32)]
    (root / "train.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return root


def _check_reloads(folder, expected: torch.Tensor) -> None:
    assert os.path.isfile(os.path.join(folder, "adapter_config.json"))
    assert [e for e in os.listdir(folder) if os.path.isdir(os.path.join(folder, e, "")) and e.startswith("t0")] == []
    assert AutoTokenizer.from_pretrained(folder)("a b")["input_ids"] == [0, 1, 2]
    torch.testing.assert_close(_logps(load_tempered(folder)), expected, rtol=0, atol=0)


def _hub_round_trip(folder, tmp_path, expected: torch.Tensor) -> None:
    """`save_for_hub(load_tempered(folder), again)` writes a folder that reloads to the same log-probs, with the
    tokenizer and (when the source had one) the plot."""
    again = tmp_path / f"{os.path.basename(folder)}_again"
    hub.save_for_hub(load_tempered(folder), again)
    _check_reloads(again, expected)
    if os.path.isfile(os.path.join(folder, hub.PLOT_NAME)):
        assert (again / hub.PLOT_NAME).is_file()
        assert f"]({hub.PLOT_NAME})" in (again / "README.md").read_text(encoding="utf-8")


def test_the_trainers_folder_and_its_hub_copy_reload(root, tmp_path):
    texts = [json.loads(line)["text"] for line in (root / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    args = quiet_config(
        output_dir=str(tmp_path / "run"),
        max_steps=4,
        learning_rate=5e-2,
        per_device_train_batch_size=16,
        target_temperature=0.5,
        report_to="none",
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    trainer = SeqTempTrainer(
        AutoModelForCausalLM.from_pretrained(root / "base"),
        args,
        train_dataset=Dataset.from_dict({"text": texts[:24]}),
        eval_dataset=Dataset.from_dict({"text": texts[24:]}),
        processing_class=AutoTokenizer.from_pretrained(root / "base"),
        peft_config=lora,
    )
    trainer.train()
    expected = _logps(trainer.model)
    assert (expected - _logps(AutoModelForCausalLM.from_pretrained(root / "base"))).abs().max() > 1e-3
    trainer.save_model(str(tmp_path / "saved"))
    _check_reloads(tmp_path / "saved", expected)
    _hub_round_trip(str(tmp_path / "saved"), tmp_path, expected)


def test_the_cli_folder_and_its_hub_copy_reload(root, tmp_path):
    out = tmp_path / "cli"
    flags = ["--model_name_or_path", str(root / "base"), "--output_dir", str(out), "--max_steps", "3"]
    flags += ["--dataset_path", str(root / "train.jsonl"), "--learning_rate", "0.05", "--lora_r", "4"]
    flags += ["--lora_target_modules", "q_proj", "v_proj", "--per_device_train_batch_size", "16", "--use_cpu"]
    flags += ["--save_strategy", "no", "--target_temperature", "0.5", "--report_to", "none"]
    assert main(["train", *flags]) == 0
    expected = _logps(load_tempered(out))
    assert (expected - _logps(AutoModelForCausalLM.from_pretrained(root / "base"))).abs().max() > 1e-3
    _check_reloads(out, expected)
    _hub_round_trip(str(out), tmp_path, expected)


def test_a_folder_without_the_adapter_fails_at_once_naming_the_subfolder(tmp_path):
    (tmp_path / "t0_5").mkdir()
    (tmp_path / "t0_5" / "adapter_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="without `adapter_config.json`; the adapter is in its subfolder 't0_5'"):
        load_tempered(tmp_path)
