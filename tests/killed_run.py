# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A tiny LoRA run of `SeqTempTrainer` (Python API or `hf-seqtemp train`) that can SIGKILL itself, for the kill tests
of `trainer/test_crash_safe.py`.

    python killed_run.py WORKSPACE OUTPUT_DIR {api,cli} {fixed,fresh} KILL LOSS_TYPE

KILL is `after:N` (killed when step N ends, between checkpoint writes) or `saving:N` (killed inside the checkpoint
of step N, after the adapter and optimizer are written, before `trainer_state.json`). `fresh` trains on prompts only
with fresh samples every two steps (`sample_every_steps=2`); `fixed` on a stored dataset. The test imports
[`run_api`] and [`run_cli`] for the uninterrupted and the resumed runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys

import torch
from datasets import Dataset
from peft import LoraConfig
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast, TrainerCallback

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.cli import main

MAX_STEPS, SAVE_STEPS = 6, 3
WORDS = ["a", "b", "c", "d"]


def make_workspace(root) -> None:
    """A tiny base model with its word tokenizer, 32 four-word texts and 4 prompts (16 pool slots: 2 batches)."""
    from tiny_models import tiny_causal_lm

    model = tiny_causal_lm(6, seed=3)
    model.config.pad_token_id = 5
    backend = Tokenizer(models.WordLevel({"<s>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "<pad>": 5}, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", pad_token="<pad>")
    model.save_pretrained(os.path.join(root, "base"))
    tokenizer.save_pretrained(os.path.join(root, "base"))
    rng = random.Random(0)
    with open(os.path.join(root, "train.jsonl"), "w", encoding="utf-8") as handle:
        handle.writelines(
            json.dumps({"text": " ".join(rng.choice(WORDS) for _ in range(4))}) + "\n" for _ in range(32)
        )
    with open(os.path.join(root, "prompts.txt"), "w", encoding="utf-8") as handle:
        handle.write("a b\nc\nd a\nb\n")


def settings(output_dir: str, samples: str) -> dict:
    """The run's settings, as SeqTempConfig keywords (the CLI gets them as flags)."""
    values = {
        "output_dir": output_dir,
        "max_steps": MAX_STEPS,
        "save_steps": SAVE_STEPS,
        "learning_rate": 0.05,
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 3,
        "target_temperature": 0.5,
        "logging_steps": 1,
        "use_cpu": True,
        "seed": 7,
        "disable_tqdm": True,
    }
    if samples == "fresh":
        values["sample_every_steps"] = 2
    return values


class KillAfterStep(TrainerCallback):
    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


def _with_callback(init, callback):
    def with_callback(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.add_callback(callback)

    return with_callback


def kill_while_saving(step: int) -> None:
    """SIGKILL inside the checkpoint of `step`: after the adapter and optimizer are written, before the trainer
    state (the last file `Trainer` writes)."""
    original = SeqTempTrainer._save_rng_state

    def save_rng_state(self, output_dir):
        original(self, output_dir)
        if self.state.global_step == step:
            os.kill(os.getpid(), signal.SIGKILL)

    SeqTempTrainer._save_rng_state = save_rng_state


def _loss_overrides(overrides: dict) -> dict:
    """`loss_type="smc_distill+adapter"`: SMC distillation with the trained adapter as the particles' proposal."""
    loss, _, proposal = str(overrides.get("loss_type", "ratio")).partition("+")
    return {**overrides, "loss_type": loss, **({"smc_proposal": proposal} if proposal else {})}


def run_api(workspace: str, output_dir: str, samples: str, resume: str | bool | None = None, **overrides) -> str:
    """Trains with the Python API; returns the path of the final adapter's weights."""
    overrides = _loss_overrides(overrides)
    model = AutoModelForCausalLM.from_pretrained(os.path.join(workspace, "base"))
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(workspace, "base"))
    if samples == "fresh":
        with open(os.path.join(workspace, "prompts.txt"), encoding="utf-8") as handle:
            data = Dataset.from_dict({"prompt": [line.strip() for line in handle if line.strip()]})
    else:
        data = Dataset.from_json(os.path.join(workspace, "train.jsonl"))
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    args = SeqTempConfig(**{**settings(output_dir, samples), **overrides})
    trainer = SeqTempTrainer(model, args, train_dataset=data, processing_class=tokenizer, peft_config=lora)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(os.path.join(output_dir, "final"))
    return os.path.join(output_dir, "final", "adapter_model.safetensors")


def run_cli(workspace: str, output_dir: str, samples: str, resume: str | bool | None = None, **overrides) -> str:
    """Trains with `hf-seqtemp train`; returns the path of the final adapter's weights."""
    overrides = _loss_overrides(overrides)
    argv = ["train", "--model_name_or_path", os.path.join(workspace, "base"), "--lora_r", "4", "--lora_alpha", "8"]
    argv += ["--lora_target_modules", "q_proj", "v_proj"]
    if samples == "fresh":
        argv += ["--sample_prompts_file", os.path.join(workspace, "prompts.txt")]
    else:
        argv += ["--dataset_path", os.path.join(workspace, "train.jsonl")]
    for name, value in {**settings(output_dir, samples), **overrides}.items():
        argv += [f"--{name}", str(value)]
    if resume is not None:
        argv += ["--resume_from_checkpoint", str(resume)]
    assert main(argv) == 0
    return os.path.join(output_dir, "adapter_model.safetensors")


if __name__ == "__main__":
    workspace, output_dir, mode, samples, kill, loss_type = sys.argv[1:7]
    torch.set_num_threads(1)
    what, step = kill.split(":")
    if what == "saving":
        kill_while_saving(int(step))
    else:
        SeqTempTrainer.__init__ = _with_callback(SeqTempTrainer.__init__, KillAfterStep(int(step)))
    (run_api if mode == "api" else run_cli)(workspace, output_dir, samples, loss_type=loss_type)
    sys.exit(3)  # not killed
