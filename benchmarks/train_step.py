# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Cost of one `SeqTempTrainer` optimisation step (`ratio`, `ssts`) against a plain LoRA NLL step, side by side.

Fairness: all three variants are the same base model (a deep copy each) wrapped with the same `LoraConfig` and the
same seed, the same batch of token ids (prompt = first quarter, completion = the rest, no padding) and the same
AdamW created by `Trainer.create_optimizer()`. One step is the *shared* loop

    trainer.training_step(model, batch)   # Trainer's own forward + compute_loss + backward
    optimizer.step(); optimizer.zero_grad()

so the only difference is `compute_loss`: the plain baseline is a standard `transformers.Trainer` whose loss is the
model's own causal-LM loss (`labels` = input ids, -100 on prompt positions); the SeqTemp variants score per-token
log-probs with `AutoregressiveScorer`, read the precomputed reference columns (`ref_logps`, `ref_token_logps`),
compute the loss and buffer metrics, exactly as in training. Batches are collated once by each trainer's own
data loader (data loading is not timed); the reference precompute at trainer construction is reported separately.
Timing: warm-up steps, then the variants are timed round-robin and the median per variant is reported. Peak memory
of a step: each variant in a fresh subprocess (see `benchmarks/_common.py` for what the number means).

Usage:
    python benchmarks/train_step.py [--quick] [--output benchmarks/results/train_step.json] [--device cpu]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import (
    default_output,
    measure_peak,
    pick_device,
    print_device,
    run_child,
    time_interleaved,
    write_json,
)

VARIANTS = ("plain_nll", "seqtemp_ratio", "seqtemp_ssts")
SETTINGS = {
    "quick": {"batch": 4, "length": 32, "warmup": 1, "repeats": 3},
    "full": {"batch": 8, "length": 128, "warmup": 2, "repeats": 10},
}


def _lora_config():
    from peft import LoraConfig

    return LoraConfig(
        r=8,
        lora_alpha=16,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )


def _token_rows(vocab_size: int, batch: int, length: int) -> tuple[list[list[int]], list[list[int]]]:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(100, vocab_size, (batch, length), generator=generator).tolist()
    prompt = max(1, length // 4)
    mask = [[0] * prompt + [1] * (length - prompt) for _ in range(batch)]
    return ids, mask


def plain_labels(ids: list[list[int]], mask: list[list[int]]) -> list[list[int]]:
    """Causal-LM labels of the plain baseline: the input ids, -100 (ignored) on prompt positions."""
    return [[t if m else -100 for t, m in zip(row, row_mask)] for row, row_mask in zip(ids, mask)]


def _training_args(cls, out_dir: str, batch: int, device: torch.device, **extra):
    return cls(
        output_dir=out_dir,
        per_device_train_batch_size=batch,
        per_device_eval_batch_size=batch,
        use_cpu=device.type == "cpu",
        report_to="none",
        save_strategy="no",
        logging_steps=10**6,
        seed=0,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **extra,
    )


def build_variant(name: str, base, vocab_size: int, batch: int, length: int, device, out_dir: str):
    """Returns `(step_fn, setup_seconds)` for one variant; the step is the shared loop of the module docstring."""
    from datasets import Dataset
    from peft import get_peft_model
    from transformers import Trainer, TrainingArguments, default_data_collator

    from hf_seqtemp.trainer import SeqTempConfig, SeqTempTrainer

    ids, mask = _token_rows(vocab_size, batch, length)
    torch.manual_seed(0)
    model = copy.deepcopy(base)
    start = time.perf_counter()
    if name == "plain_nll":
        labels = plain_labels(ids, mask)
        data = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * length] * batch, "labels": labels})
        args = _training_args(TrainingArguments, out_dir, batch, device)
        trainer = Trainer(
            get_peft_model(model, _lora_config()), args, train_dataset=data, data_collator=default_data_collator
        )
    else:
        data = Dataset.from_dict({"input_ids": ids, "completion_mask": mask})
        args = _training_args(
            SeqTempConfig, out_dir, batch, device, loss_type=name.split("_")[1], target_temperature=0.5
        )
        trainer = SeqTempTrainer(model, args, train_dataset=data, peft_config=_lora_config())
    setup = time.perf_counter() - start
    inputs = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
    optimizer = trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = 1  # set by train(); training_step divides by it

    def step():
        trainer.training_step(trainer.model, inputs)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step, setup


def _load(device, dtype):
    from hf_seqtemp.models import load_default_model

    model, tokenizer = load_default_model(dtype=dtype, device=device)
    return model, len(tokenizer)


def child(variant: str, settings: dict, device, dtype) -> None:
    """Fresh process: warm one variant up, then print the peak memory of one step as a JSON line."""
    base, vocab = _load(device, dtype)
    with tempfile.TemporaryDirectory() as out_dir:
        step, _ = build_variant(variant, base, vocab, settings["batch"], settings["length"], device, out_dir)
        del base
        step()
        print(json.dumps(measure_peak(step, device)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 4 x 32 tokens, 3 timed steps")
    parser.add_argument("--output", default=default_output("train_step"))
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--no-memory", action="store_true", help="skip the per-variant memory subprocesses")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = dict(SETTINGS["quick" if args.quick else "full"])
    device, dtype = pick_device(args.device), getattr(torch, args.dtype)
    if args.child:
        return child(args.child, settings, device, dtype)
    info = print_device(device)
    print(
        f"model: SmolLM2-135M-Instruct ({args.dtype}), LoRA r=8 on q,k,v,o; batch {settings['batch']} x "
        f"{settings['length']} tokens; {settings['warmup']} warm-up + {settings['repeats']} timed steps each"
    )
    base, vocab = _load(device, dtype)
    steps, setups = {}, {}
    with tempfile.TemporaryDirectory() as out_dir:
        for name in VARIANTS:
            steps[name], setups[name] = build_variant(
                name, base, vocab, settings["batch"], settings["length"], device, out_dir
            )
        timings = time_interleaved(steps, device, settings["warmup"], settings["repeats"])
    del steps, base
    memory = {}
    if not args.no_memory:
        child_args = ["--device", device.type, "--dtype", args.dtype] + (["--quick"] if args.quick else [])
        memory = {name: run_child("train_step.py", [*child_args, "--child", name]) for name in VARIANTS}
    rows, summary = _report(timings, memory, setups)
    write_json(
        args.output,
        "train_step",
        info,
        {**settings, "dtype": args.dtype, "model": "SmolLM2-135M-Instruct"},
        rows,
        summary,
    )


def _report(timings: dict, memory: dict, setups: dict) -> tuple[list, dict]:
    base_t = timings["plain_nll"]["median_s"]
    base_m = memory.get("plain_nll", {}).get("peak_mib")
    print(
        f"{'variant':<14} | {'median s/step':>13} {'min s':>8} {'x plain':>8} | {'peak MiB':>9} {'x plain':>8} "
        f"| {'setup s':>7}"
    )
    rows, summary = [], {}
    for name in VARIANTS:
        t, m = timings[name], memory.get(name, {}).get("peak_mib")
        ratio_t = t["median_s"] / base_t
        ratio_m = m / base_m if m is not None and base_m else None
        rows.append(
            {
                "variant": name,
                **t,
                "time_ratio": ratio_t,
                "peak_mib": m,
                "memory_ratio": ratio_m,
                "memory_method": memory.get(name, {}).get("method"),
                "setup_s": setups[name],
            }
        )
        m_text = f"{m:>9.1f} {ratio_m:>7.3f}x" if m is not None else f"{'-':>9} {'-':>8}"
        print(
            f"{name:<14} | {t['median_s']:>13.4f} {t['min_s']:>8.4f} {ratio_t:>7.3f}x | {m_text} | "
            f"{setups[name]:>7.2f}"
        )
        if name != "plain_nll":
            summary[f"{name}_time_ratio"] = ratio_t
            summary[f"{name}_memory_ratio"] = ratio_m
    target = all(v <= 1.05 for k, v in summary.items() if k.endswith("time_ratio"))
    summary["time_target_1.05_met"] = target
    print(
        f"target <= 1.05x step time: {'met' if target else 'MISSED'} "
        "(setup s = trainer construction incl. the one-off reference precompute; not part of a step)"
    )
    return rows, summary


if __name__ == "__main__":
    main()
