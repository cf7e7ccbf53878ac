# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""TRL's own `trl/scripts/grpo.py` runs as a SeqTempTrainer script with the two classes renamed and `reward_funcs`
removed, nothing else: TRL's parser, `ModelConfig` (`--use_peft`, `--model_revision`, `--attn_implementation`,
`--dtype`), `DatasetMixtureConfig`, `trust_remote_code`, `quantization_config`, a tokenizer loaded from the model's
id, and `trainer.end()`. It used to die with `AttributeError: 'SeqTempConfig' object has no attribute
'trust_remote_code'`, then need three more edits."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_models import tiny_causal_lm
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from hf_seqtemp import SequenceTemperatureConfig

# the whole port: the edits `docs/training.md` shows as a diff
PORT = [
    (
        "from trl import GRPOTrainer, get_dataset, get_peft_config, get_quantization_config",
        (
            "from trl import get_dataset, get_peft_config, get_quantization_config\n    from hf_seqtemp import SeqTempTrainer"
        ),
    ),
    (
        "from trl import DatasetMixtureConfig, GRPOConfig, ModelConfig, TrlParser",
        "from trl import DatasetMixtureConfig, ModelConfig, TrlParser\n    from hf_seqtemp import SeqTempConfig",
    ),
    ("trainer = GRPOTrainer(", "trainer = SeqTempTrainer("),
    ("(GRPOScriptArguments, GRPOConfig, ModelConfig", "(GRPOScriptArguments, SeqTempConfig, ModelConfig"),
    ("        reward_funcs=reward_funcs,\n", ""),
]


def ported_grpo_script() -> str:
    """TRL's installed `trl/scripts/grpo.py` with the edits of [`PORT`] (each must apply exactly once)."""
    from trl.scripts import grpo

    source = Path(grpo.__file__).read_text(encoding="utf-8")
    for old, new in PORT:
        assert source.count(old) == 1, f"TRL's grpo.py changed: {old!r} is not there once"
        source = source.replace(old, new)
    return source


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("port")
    model = tiny_causal_lm(6, seed=3)
    model.config.eos_token_id = 5
    model.save_pretrained(root / "model")
    backend = Tokenizer(models.WordLevel({"<s>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "</s>": 5}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<s>")
    tokenizer.save_pretrained(root / "model")
    (root / "data").mkdir()
    rows = [{"prompt": p} for p in ("a b", "b c", "c d", "d a")]
    (root / "data" / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    (root / "grpo.py").write_text(ported_grpo_script(), encoding="utf-8")
    return root


def test_trls_grpo_script_ported_by_the_renames_alone_trains_and_saves(workspace, tmp_path):
    out = tmp_path / "out"
    flags = [
        "--model_name_or_path", str(workspace / "model"), "--dataset_name", str(workspace / "data"),
        "--output_dir", str(out), "--use_peft", "--lora_r", "4", "--lora_alpha", "8", "--model_revision", "main",
        "--attn_implementation", "eager", "--dtype", "float32", "--trust_remote_code", "false",
        "--target_temperature", "0.5", "--num_generations", "2", "--max_completion_length", "4",
        "--per_device_train_batch_size", "4", "--max_steps", "2", "--use_cpu", "--report_to", "none",
        "--save_strategy", "no", "--disable_tqdm", "true",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(workspace / "grpo.py"), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Training completed" in done.stdout and "Model saved to" in done.stdout
    config = SequenceTemperatureConfig.from_pretrained(out)
    assert config.target_temperature == 0.5 and config.training_hyperparameters["lora_r"] == 4
    assert (out / "adapter_model.safetensors").is_file() and (out / "tokenizer_config.json").is_file()


def test_trls_grpo_quickstart_ported_by_the_rename_alone_trains(workspace, tmp_path, monkeypatch):
    """TRL's quick start, `GRPOTrainer(model="<id>", reward_funcs=..., train_dataset=dataset).train()`, with the class
    renamed and `reward_funcs` removed: the model and its tokenizer are loaded from the id, the arguments default to
    `SeqTempConfig("<name>-SeqTemp")`, as TRL's do."""
    from datasets import load_dataset

    from hf_seqtemp import SeqTempTrainer

    monkeypatch.chdir(tmp_path)
    dataset = load_dataset(str(workspace / "data"), split="train")
    trainer = SeqTempTrainer(model=str(workspace / "model"), train_dataset=dataset)
    trainer.train()
    assert trainer.args.output_dir == "model-SeqTemp" and trainer.state.global_step > 0
    assert trainer.processing_class is not None and trainer.processing_class.eos_token == "</s>"
