# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Cost of one `SeqTempTrainer` optimisation step (`ratio`, `ssts`) against a plain LoRA NLL step, side by side.

Fairness: all three variants are the same base model (a deep copy each) wrapped with the same `LoraConfig` and the
same seed, the same batch of token ids (`prompts` random prompts of a quarter of the length, each with
`generations` random completions filling the rest, no padding) and the same AdamW created by
`Trainer.create_optimizer()`. One step is the *shared* loop

    trainer.training_step(model, batch)   # Trainer's own forward + compute_loss + backward
    optimizer.step(); optimizer.zero_grad()

so the only difference is `compute_loss`: the plain baseline is a standard `transformers.Trainer` whose loss is the
model's own causal-LM loss (`labels` = input ids, -100 on prompt positions); the SeqTemp variants score per-token
log-probs with `AutoregressiveScorer`, read the precomputed reference columns (`ref_logps`, `ref_token_logps`),
compute the loss and buffer metrics, exactly as in training. Batches are collated once by each trainer's own
data loader (data loading is not timed); the reference precompute at trainer construction is reported separately.
Timing: warm-up steps, then the variants run in turn (plain, ratio, ssts, plain, ...) and each cost is the median
[min, max] of the per-round ratios `seqtemp / plain` (`hf_seqtemp.costs`). Peak tensor memory of one step of each variant
is measured after the timed rounds (`hf_seqtemp.costs.tensor_peak`). Target: <= 1.05 for time and for memory.

Usage:
    python benchmarks/train_step.py [--quick] [--output outputs/bench/train_step.json] [--device cpu]
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import lora_config, parse_timing_args, pick_device, print_device, timing_parser, write_json

from hf_seqtemp.costs import MEMORY_METHOD, format_summary, ratios_by_round, summarise, tensor_peak, time_round_robin

VARIANTS = ("plain_nll", "seqtemp_ratio", "seqtemp_ssts")
SETTINGS = {
    "quick": {"prompts": 2, "generations": 2, "length": 32, "warmup": 1, "rounds": 5},
    "full": {"prompts": 2, "generations": 4, "length": 128, "warmup": 2, "rounds": 10},
}
TARGET = 1.05


def token_rows(vocab_size: int, prompts: int, generations: int, length: int) -> tuple[list, list]:
    """`prompts` random prompts (a quarter of `length`), each followed by `generations` random completions.

    Returns `(input_ids, completion_mask)` as lists of `prompts * generations` rows, grouped by prompt.
    """
    generator = torch.Generator().manual_seed(0)
    prompt_len = max(1, length // 4)
    heads = torch.randint(100, vocab_size, (prompts, prompt_len), generator=generator)
    tails = torch.randint(100, vocab_size, (prompts, generations, length - prompt_len), generator=generator)
    ids = torch.cat([heads[:, None].expand(-1, generations, -1), tails], dim=2).reshape(-1, length).tolist()
    mask = [[0] * prompt_len + [1] * (length - prompt_len) for _ in ids]
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


def build_variant(name: str, base, vocab_size: int, settings: dict, device, out_dir: str):
    """Returns `(step_fn, setup_seconds)` for one variant; the step is the shared loop of the module docstring."""
    from datasets import Dataset
    from peft import get_peft_model
    from transformers import Trainer, TrainingArguments, default_data_collator

    from hf_seqtemp.trainer import SeqTempConfig, SeqTempTrainer

    ids, mask = token_rows(vocab_size, settings["prompts"], settings["generations"], settings["length"])
    batch, length = len(ids), settings["length"]
    torch.manual_seed(0)
    model = copy.deepcopy(base)
    start = time.perf_counter()
    if name == "plain_nll":
        labels = plain_labels(ids, mask)
        data = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * length] * batch, "labels": labels})
        args = _training_args(TrainingArguments, out_dir, batch, device)
        trainer = Trainer(
            get_peft_model(model, lora_config()), args, train_dataset=data, data_collator=default_data_collator
        )
    else:
        data = Dataset.from_dict({"input_ids": ids, "completion_mask": mask})
        args = _training_args(
            SeqTempConfig,
            out_dir,
            batch,
            device,
            loss_type=name.split("_")[1],
            target_temperature=0.5,
            num_generations=settings["generations"],
        )
        trainer = SeqTempTrainer(model, args, train_dataset=data, peft_config=lora_config())
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


def main():
    args = parse_timing_args(timing_parser(__doc__, "train_step", "2 prompts x 2 completions x 32 tokens, 5 rounds"))
    settings = dict(SETTINGS["quick" if args.quick else "full"])
    device, dtype = pick_device(args.device), getattr(torch, args.dtype)
    info = print_device(device)
    print(
        f"model: SmolLM2-135M-Instruct ({args.dtype}), LoRA r=8 on q,k,v,o; {settings['prompts']} prompts x "
        f"{settings['generations']} completions x {settings['length']} tokens; {settings['warmup']} warm-up + "
        f"{settings['rounds']} rounds"
    )
    base, vocab = _load(device, dtype)
    steps, setups = {}, {}
    with tempfile.TemporaryDirectory() as out_dir:
        for name in VARIANTS:
            steps[name], setups[name] = build_variant(name, base, vocab, settings, device, out_dir)
        del base
        seconds = time_round_robin(steps, device, settings["warmup"], settings["rounds"])
        peaks = {name: tensor_peak(step, device)["peak_mib"] for name, step in steps.items()}
    rows, summary = _report(seconds, peaks, setups)
    settings.update(dtype=args.dtype, model="SmolLM2-135M-Instruct", memory_method=MEMORY_METHOD[device.type])
    write_json(args.output, "train_step", info, settings, rows, summary)


def _report(seconds: dict, peaks: dict, setups: dict) -> tuple[list, dict]:
    print(f"{'variant':<14} | {'median s/step':>13} {'min s':>8} | {'peak MiB':>9} | {'setup s':>7}")
    rows, summary = [], {}
    for name in VARIANTS:
        median = sorted(seconds[name])[len(seconds[name]) // 2]
        rows.append({"variant": name, "seconds": seconds[name], "peak_mib": peaks[name], "setup_s": setups[name]})
        print(f"{name:<14} | {median:>13.4f} {min(seconds[name]):>8.4f} | {peaks[name]:>9.1f} | {setups[name]:>7.2f}")
    for name in VARIANTS[1:]:
        summary[f"{name}_over_plain_time"] = summarise(ratios_by_round(seconds, name, "plain_nll"), TARGET)
        summary[f"{name}_over_plain_memory"] = summarise([peaks[name] / peaks["plain_nll"]], TARGET)
        print(format_summary(f"{name} / plain_nll: time per step", summary[f"{name}_over_plain_time"]))
        print(format_summary(f"{name} / plain_nll: peak tensor memory", summary[f"{name}_over_plain_memory"]))
    print("(setup s = trainer construction incl. the one-off reference precompute; not part of a step)")
    return rows, summary


if __name__ == "__main__":
    main()
