# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Temperature fidelity (paper Sec. 5.2-5.3, Tables 4-5): how close each method gets to a target sequence temperature.

On the embedded SmolLM2-135M-Instruct, completions are sampled once from the model itself (the quick-start prompts,
system prompt "Answer briefly.") and split by example into train / held-out. For every target T the held-out
sequences are scored under three tempered models and compared with the base model p:

- `myopic`: the base model with every next-token distribution divided by T (`AutoregressiveScorer(token_temperature=T)`);
- `ssts`: a LoRA adapter trained with the LHTS / L_SSTS objective (`loss_type="ssts"`, Eq. 8 / 18);
- `ratio`: a LoRA adapter trained with L_p + λ·NLL (`loss_type="ratio"`, the quick-start's loss).

Both adapters start at the myopic solution (`init_from_token_temperature=True`) and use the quick-start's settings
(lr 2e-4 constant, λ = 0.1, LoRA r 16 all-linear, batch 16). Reported per method × T: T_eff (Eq. 17, least-squares
slope of log p on log q), Kendall τ between log p and log q, and NLL per token of q on the held-out sequences.
A row is flagged when T_eff misses the target by more than 10 % or τ < 0.9.

Modes (sizes are sequences = prompts × samples per prompt):

- `--quick` (about 5 minutes on 2 CPU cores, diffusion half included): T ∈ {0.5, 2}, 16 prompts × 6 samples, 10 new
  tokens, 15 steps.
- default (about 30 minutes on 2 CPU cores: 5-7 minutes per T, then 7 minutes of diffusion): T ∈ {0.25, 0.5,
  0.8, 2}, 32 prompts × 8 samples, 10 new tokens, 40 steps (the quick-start demo's settings).
- `--full` (paper scale, meant for a GPU): T ∈ {0.25, 0.5, 0.8, 2}, 32 prompts × 256 samples = 8192 sequences
  (the paper trains on 30 000 OpenWebText sequences), 32 new tokens, 1000 steps of batch 32.

The diffusion half of Tables 4-5 (block diffusion with L_p by the exact DP and L_k with k = 4, plus schedule
variance) runs after the autoregressive half on a tiny block-diffusion model (`benchmarks/fidelity_diffusion.py`, which
says how that model is built); `--no-diffusion` skips it. Both halves print one table in the layout of Tables 4-5.

A log p vs log q scatter plot per run (`hf_seqtemp.hub.plot_log_likelihoods`) goes to `benchmarks/results/fidelity/`
with `--plots` (on by default except in `--quick`).

Usage:
    python benchmarks/fidelity.py [--quick | --full] [--plots | --no-plots] [--output benchmarks/results/fidelity.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from peft import LoraConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import REPO, default_output, pick_device, print_device, write_json
from _fidelity_table import add_flags, print_table, summarise

from examples.quickstart import PROMPTS
from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, sample_dataset
from hf_seqtemp.hub import plot_log_likelihoods
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.measure import dataset_groups, score_dataset, temperature_report

MODES = {
    "quick": {
        "temperatures": [0.5, 2.0],
        "prompts": 16,
        "samples_per_prompt": 6,
        "max_new_tokens": 10,
        "max_steps": 15,
        "batch_size": 16,
    },
    "default": {
        "temperatures": [0.25, 0.5, 0.8, 2.0],
        "prompts": 32,
        "samples_per_prompt": 8,
        "max_new_tokens": 10,
        "max_steps": 40,
        "batch_size": 16,
    },
    "full": {
        "temperatures": [0.25, 0.5, 0.8, 2.0],
        "prompts": 32,
        "samples_per_prompt": 256,
        "max_new_tokens": 32,
        "max_steps": 1000,
        "batch_size": 32,
    },
}
TRAINING = {"learning_rate": 2e-4, "nll_weight": 0.1, "lora_r": 16, "test_size": 0.25}
METHODS = ("myopic", "ssts", "ratio")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="T in {0.5, 2}, 96 sequences, 15 steps (< 10 min, 2 cores)")
    mode.add_argument(
        "--full",
        action="store_true",
        help="paper scale for a GPU: 8192 sequences of up to 32 new tokens, 1000 steps of batch 32",
    )
    parser.add_argument("--temperatures", type=float, nargs="+", help="override the mode's target temperatures")
    parser.add_argument("--max_steps", type=int, help="override the optimisation steps of the autoregressive half")
    parser.add_argument(
        "--plots",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="save a log p vs log q plot per run (default: on, off with --quick)",
    )
    parser.add_argument(
        "--diffusion",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the block-diffusion half (benchmarks/fidelity_diffusion.py; default: on)",
    )
    parser.add_argument("--plots_dir", default=str(REPO / "benchmarks" / "results" / "fidelity"))
    parser.add_argument("--output", default=default_output("fidelity"))
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (CPU runs only)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def resolve_settings(args: argparse.Namespace) -> dict:
    mode = "quick" if args.quick else "full" if args.full else "default"
    settings = {"mode": mode, **MODES[mode], **TRAINING, "seed": args.seed}
    if args.temperatures:
        settings["temperatures"] = args.temperatures
    if args.max_steps:
        settings["max_steps"] = args.max_steps
    settings["plots"] = args.plots if args.plots is not None else mode != "quick"
    return settings


def sample_split(settings: dict, device: torch.device):
    """Samples the dataset once from the base model and splits it BY PROMPT into train / held-out: the held-out
    prompts are never seen in training."""
    model, tokenizer = load_default_model(device=device)
    torch.manual_seed(settings["seed"])
    data = sample_dataset(
        model,
        tokenizer,
        PROMPTS[: settings["prompts"]],
        num_samples=settings["samples_per_prompt"],
        max_new_tokens=settings["max_new_tokens"],
        seed=settings["seed"],
        system_prompt="Answer briefly.",
    )
    prompts = PROMPTS[: settings["prompts"]]
    order = torch.randperm(len(prompts), generator=torch.Generator().manual_seed(settings["seed"])).tolist()
    held = {prompts[i] for i in order[: max(1, round(settings["test_size"] * len(prompts)))]}
    is_held = [row[-1]["content"] in held for row in data["prompt"]]  # conversational: the user turn is last
    train = data.select([i for i, h in enumerate(is_held) if not h])
    return model, tokenizer, train, data.select([i for i, h in enumerate(is_held) if h])


def num_generations(settings: dict) -> int:
    """The largest run of completions of one prompt that a batch holds whole and every prompt has."""
    batch, per_prompt = settings["batch_size"], settings["samples_per_prompt"]
    return max(n for n in range(2, min(batch, per_prompt) + 1) if batch % n == 0)


def train_adapter(loss_type: str, temperature: float, settings: dict, train, tokenizer, device, workdir: str):
    """A fresh base model with a LoRA adapter trained towards sequence temperature `temperature`."""
    model, _ = load_default_model(device=device)
    torch.manual_seed(settings["seed"])
    config = SeqTempConfig(
        output_dir=f"{workdir}/{loss_type}_{temperature:g}",
        target_temperature=temperature,
        loss_type=loss_type,
        nll_weight=settings["nll_weight"],
        max_steps=settings["max_steps"],
        per_device_train_batch_size=settings["batch_size"],
        num_generations=num_generations(settings),
        learning_rate=settings["learning_rate"],
        lr_scheduler_type="constant",
        logging_steps=max(1, settings["max_steps"] // 4),
        save_strategy="no",
        seed=settings["seed"],
        use_cpu=device.type == "cpu",
        init_from_token_temperature=True,
    )
    r = settings["lora_r"]
    lora = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = SeqTempTrainer(model, config, train_dataset=train, processing_class=tokenizer, peft_config=lora)
    trainer.train()
    return trainer.model


def run(settings: dict, device: torch.device) -> tuple[list[dict], dict]:
    """Trains and measures every method × T; returns the table rows and the per-run log-likelihoods."""
    base, tokenizer, train, held_out = sample_split(settings, device)
    print(f"sampled {len(train) + len(held_out)} completions ({len(train)} train / {len(held_out)} held-out)")

    def score(model, scorer):
        return score_dataset(model, held_out, scorer, batch_size=32, desc="Scoring")

    base_logps, lengths = score(base, AutoregressiveScorer())
    groups = dataset_groups(held_out, tokenizer)  # within prompts: a prompted model is tempered per prompt
    base_report = temperature_report(base_logps, base_logps, lengths, groups)
    rows = [{"method": "base", "target": 1.0, **base_report, "seconds": 0.0}]
    plots = {}
    with tempfile.TemporaryDirectory() as workdir:
        for temperature in settings["temperatures"]:
            logps = {"base": base_logps}
            for method in METHODS:
                start = time.perf_counter()
                if method == "myopic":
                    logps[method], _ = score(base, AutoregressiveScorer(token_temperature=temperature))
                else:
                    model = train_adapter(method, temperature, settings, train, tokenizer, device, workdir)
                    logps[method], _ = score(model, AutoregressiveScorer())
                    del model
                report = temperature_report(base_logps, logps[method], lengths, groups)
                rows.append(
                    {"method": method, "target": temperature, **report, "seconds": time.perf_counter() - start}
                )
                print(
                    f"T = {temperature:g} {method:>6}: T_eff {report['t_eff']:.4f}, τ {report['kendall_tau']:.4f}, "
                    f"NLL/token {report['nll_per_token']:.4f} ({rows[-1]['seconds']:.0f} s)",
                    flush=True,
                )
            plots[temperature] = logps
    return add_flags(rows), {
        "plots": plots,
        "lengths": lengths,
        "num_held_out": len(held_out),
        "num_train": len(train),
    }


def save_plots(rows: list[dict], measured: dict, folder: str, prefix: str = "") -> list[str]:
    """One log p vs log q plot per trained run: the trained model (blue) against the myopic baseline (orange)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    reports = {(r["method"], r["target"]): r for r in rows}
    paths = []
    for temperature, logps in measured["plots"].items():
        for method in logps:
            if method in ("base", "myopic"):
                continue
            run_logps = {"base": logps["base"], "myopic": logps["myopic"], "tempered": logps[method]}
            run_reports = {"myopic": reports[("myopic", temperature)], "tempered": reports[(method, temperature)]}
            path = f"{folder}/{prefix}{method.replace('=', '')}_T{temperature:g}.png"
            paths.append(plot_log_likelihoods(run_logps, run_reports, temperature, path))
    return paths


def main() -> None:
    args = parse_args()
    settings = resolve_settings(args)
    device = pick_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    info = print_device(device)
    print(f"mode {settings['mode']}: {settings}")
    start = time.perf_counter()
    rows, measured = run(settings, device)
    settings.update(num_train=measured["num_train"], num_held_out=measured["num_held_out"])
    print_table(rows, "SmolLM2-135M-Instruct (autoregressive), held-out")
    summary = summarise(rows)
    for row in rows:
        row["model"] = "SmolLM2-135M-Instruct"
    if settings["plots"]:
        paths = save_plots(rows, measured, args.plots_dir)
        print(f"plots: {', '.join(paths)}")
    if args.diffusion:
        from fidelity_diffusion import run_diffusion

        diffusion_rows, diffusion_info = run_diffusion(settings["mode"], args.temperatures, args.seed, device)
        d = diffusion_info["settings"]
        name = f"tiny block-diffusion BERT (vocab {d['vocab']}, {d['completion']} tokens, B = {d['block_size']})"
        print_table(diffusion_rows, f"{name}, held-out (exact DP likelihoods)")
        summary.update(summarise(diffusion_rows, prefix="diffusion_"))
        settings["diffusion"] = diffusion_info["settings"]
        rows += [{**row, "model": name} for row in diffusion_rows]
        if settings["plots"]:
            paths = save_plots(diffusion_rows, diffusion_info, args.plots_dir, prefix="diffusion_")
            print(f"plots: {', '.join(paths)}")
    settings["wall_seconds"] = time.perf_counter() - start
    print(f"wall time: {settings['wall_seconds']:.0f} s")
    write_json(args.output, "fidelity", info, settings, rows, summary)


if __name__ == "__main__":
    main()
