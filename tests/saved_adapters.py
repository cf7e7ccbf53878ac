# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The tiny trainings whose saves the save tests write, move, copy and kill, and what a plain save is."""

import os

import torch
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, staging

LORA = {"r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"], "init_lora_weights": False}


def _trainer(output_dir, temperature, seed=0, eval_dataset=None, **overrides):
    torch.manual_seed(seed)
    model = tiny_causal_lm(6, seed=3)
    data = as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 16, 4, seed=2))
    values = {"output_dir": str(output_dir), "target_temperature": temperature, "max_steps": 2, "seed": seed}
    values.update(per_device_train_batch_size=8, learning_rate=1e-2, save_strategy="no", use_cpu=True)
    values.update(disable_tqdm=True, report_to=[], **overrides)
    args = SeqTempConfig(**values)
    return SeqTempTrainer(model, args, train_dataset=data, eval_dataset=eval_dataset, peft_config=LoraConfig(**LORA))


def assert_plain_save(folder):
    """`folder` holds one save's regular files and nothing else (no link, no hidden file, no other save's file), and
    nothing of a save is left beside it (no staging folder, no lock)."""
    files = staging.owned_files(str(folder))
    found = []
    for parent, folders, names in os.walk(folder):
        for name in folders + names:
            path = os.path.join(parent, name)
            assert not os.path.islink(path), path
            assert not name.startswith("."), path
            if os.path.isfile(path):
                found.append(os.path.relpath(path, folder))
    assert sorted(found) == sorted(files)
    assert [e for e in os.listdir(folder.parent) if e.startswith(f".{folder.name}.")] == []
