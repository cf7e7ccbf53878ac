# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sampling on an inference engine (a vLLM server) against the transformers loop, side by side, in one run.

On the embedded SmolLM2-135M-Instruct (its cached safetensors folder, served by vLLM in float32 from `.venv-vllm`,
or a server given by `--engine_url`), with the same chat-templated prompts of the fidelity pool:

- `samples_of_p_per_second_ratio`: exact samples of p per second, the engine (`engine_sample_completions`, each
  prompt one request with `n` completions) over `generate` (`sample_completions`, the whole batch at once), the same
  prompts, counts and lengths; pairs alternate generate, engine, ... after a warm-up; median [min, max] of the
  per-pair ratios. Target >= 0.8 (the server's HTTP and scheduling must not cost more than that).
- `max_abs_logp_difference`: the largest |engine − scorer| log p over every token the engine sampled (float32).
  Target <= 1e-4. Also `max_abs_logr_difference`: the engine's processed log-probabilities at token temperature
  T against the scorer's `log p_T`, the `log r` that SMC and MH take from the engine.
- `smc_latency_ratio`: seconds per answer of SMC with 8 particles on the engine (`smc_sample` given the client, token
  proposal, T = 0.5, resampling every `block_size` tokens) over plain engine sampling of one answer per prompt;
  pairs alternate. Target <= 3 (Power-SMC reports 1.4-3.3x on a GPU, where 8 particles cost about one sequence; on
  a CPU 8 particles cost about 8 sequences). Also `smc_over_plain_same_tokens`: SMC-8 over plain sampling of 8
  answers per prompt (the same number of sequences): what the blocks, the scoring requests and the resampling add.
- `fidelity`: one run of the demo's settings (`examples/quickstart.py`: ratio loss, T = 0.5, 8 completions of at
  most 10 tokens per training prompt, batch 32, lr 1e-3 cosine, LoRA r 16, started at token temperature T) with
  *fresh* samples of p from the engine every step (`use_vllm=True, sample_every_steps=1`); its within-prompt T_eff,
  Kendall τ and NLL on held-out prompts (16 samples of p each), beside the tuned token temperature's (the token
  temperature whose T_eff there is T). `--quick` trains 16 prompts for 8 steps: a smoke run of the pipeline, not a
  fidelity figure.

Threads: the engine and `generate` get the same number of CPU threads (`--threads`, default 1 on a shared machine;
give the idle machine's cores for the committed run). On a GPU machine pass `--device cuda` and a CUDA vLLM venv
(`requirements/vllm-cuda.txt`, `HF_SEQTEMP_VLLM_PYTHON`).

Usage:
    python benchmarks/engine.py [--quick] [--threads 2] [--output benchmarks/results/engine.json]
                                [--engine_url http://127.0.0.1:8000] [--device cuda] [--no-fidelity]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import default_output, pick_device, print_device, write_json

from hf_seqtemp.costs import format_summary, summarise, time_pairs
from hf_seqtemp.tasks.prompts import prompt_pool, split_prompts

SYSTEM = "Answer briefly."
MODES = {
    "quick": {"prompts": 4, "samples": 8, "new_tokens": 16, "pairs": 3, "smc_particles": 8, "smc_block": 8,
              "fidelity_train_prompts": 16, "fidelity_held_out_prompts": 4, "fidelity_steps": 8},
    "default": {"prompts": 8, "samples": 16, "new_tokens": 16, "pairs": 5, "smc_particles": 8, "smc_block": 8,
                "fidelity_train_prompts": 128, "fidelity_held_out_prompts": 14, "fidelity_steps": 32},
}  # fmt: skip
DEMO = {"temperature": 0.5, "num_generations": 8, "held_out_generations": 16, "max_completion_length": 10,
        "batch_size": 32, "learning_rate": 1e-3, "lora_r": 16, "nll_weight": 0.1}  # fmt: skip
TARGETS = {"samples_of_p_per_second_ratio": 0.8, "smc_latency_ratio": 3.0, "max_abs_logp_difference": 1e-4}


def conversation(prompt: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]


def start_engine(args, threads: int):
    """The engine server: `--engine_url`, or one started here on the embedded model's folder."""
    from hf_seqtemp.engine import EngineClient, EngineServer, EngineSettings
    from hf_seqtemp.models.default import cached_model_folder, default_model_path

    if args.engine_url:
        return EngineClient(args.engine_url), None
    folder = default_model_path() if not cached_model_folder().is_dir() else cached_model_folder()
    server = EngineServer(EngineSettings(model=str(folder), max_model_len=1024, threads=threads))
    start = time.perf_counter()
    server.start(timeout=600)
    print(f"engine up in {time.perf_counter() - start:.0f} s at {server.url} (log {server.log_file})", flush=True)
    return server.client(timeout=1200), server


def throughput_part(client, model, tokenizer, settings: dict) -> tuple[dict, dict]:
    """Samples of p per second (engine / generate) and the engine's log p against the scorer."""
    from hf_seqtemp.data import eos_ids_of, sample_completions, tokenize_prompt
    from hf_seqtemp.engine import check_against_scorer, engine_sample_completions

    prompts = split_prompts(settings["prompts"], 0, seed=0)[0]
    rows = [tokenize_prompt(tokenizer, conversation(p)) for p in prompts for _ in range(settings["samples"])]
    eos, new = eos_ids_of(model, tokenizer), settings["new_tokens"]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos)
    drawn, seeds = {}, iter(range(10**6))

    def generate():
        torch.manual_seed(next(seeds))
        drawn["generate"] = sample_completions(model, rows, new, eos, pad, batch_size=len(rows), desc=None)

    def engine():
        drawn["engine"] = engine_sample_completions(client, rows, new, eos, seed=next(seeds))

    timed = time_pairs(generate, engine, torch.device("cpu"), warmup=1, pairs=settings["pairs"])
    throughput = [a / b for a, b in zip(timed["baseline_s"], timed["ours_s"])]  # engine samples/s over generate's
    completions, logps = drawn["engine"]
    worst = check_against_scorer("engine samples", model, [r + c for r, c in zip(rows, completions)],
                                 [len(r) for r in rows], logps, tolerance=1.0)  # fmt: skip
    summary = summarise(throughput, None)
    summary.update(target=f">= {TARGETS['samples_of_p_per_second_ratio']}")
    summary["verdict"] = (
        "met" if round(summary["median"], 3) >= TARGETS["samples_of_p_per_second_ratio"] else "not met"
    )
    lengths = {k: sum(len(c) for c in (v[0] if k == "engine" else v)) / len(rows) for k, v in drawn.items()}
    row = {"part": "samples_of_p", "sequences": len(rows), "max_new_tokens": new, "mean_length": lengths, **timed}
    return {"samples_of_p_per_second_ratio": summary, "max_abs_logp_difference": worst}, row


def logr_part(client, model, tokenizer, settings: dict) -> float:
    """The engine's processed log-probabilities at token temperature T against the scorer's log p_T."""
    from hf_seqtemp.data import eos_ids_of, tokenize_prompt
    from hf_seqtemp.engine import SeedStream, check_against_scorer

    prompts = [tokenize_prompt(tokenizer, conversation(p)) for p in split_prompts(settings["prompts"], 0)[0]]
    drawn = client.sample(prompts, settings["new_tokens"], eos_ids_of(model, tokenizer),
                          SeedStream(1).take([4] * len(prompts)), 4, DEMO["temperature"])  # fmt: skip
    sequences = [p + c.tokens for p, group in zip(prompts, drawn) for c in group]
    starts = [len(p) for p, group in zip(prompts, drawn) for _ in group]
    logr = [c.logps for group in drawn for c in group]
    return check_against_scorer("log r", model, sequences, starts, logr, tolerance=1.0, token_temperature=0.5)


def smc_part(client, model, tokenizer, settings: dict) -> tuple[dict, dict]:
    """SMC-8 per answer over plain engine sampling per answer (and over 8 plain answers per prompt)."""
    from hf_seqtemp.data import eos_ids_of, tokenize_prompt
    from hf_seqtemp.engine import engine_sample_completions
    from hf_seqtemp.generation.smc import smc_sample

    prompts = [tokenize_prompt(tokenizer, conversation(p)) for p in split_prompts(settings["prompts"], 0)[0]]
    width, eos, new, n = max(map(len, prompts)), sorted(eos_ids_of(model, tokenizer)), settings["new_tokens"], 8
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts], device="cpu")
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device="cpu")
    seeds, calls = iter(range(10**6)), []

    def plain(copies: int):
        return lambda: engine_sample_completions(client, [p for p in prompts for _ in range(copies)], new, eos,
                                                 seed=next(seeds))  # fmt: skip

    def smc():
        out = smc_sample(client, ids, mask, max_new_tokens=new, seq_temperature=DEMO["temperature"],
                         num_particles=n, block_size=settings["smc_block"], eos_token_id=eos,
                         generator=torch.Generator().manual_seed(next(seeds)), return_dict_in_generate=True)  # fmt: skip
        calls.append(out.model_calls)

    per_answer = time_pairs(plain(1), smc, torch.device("cpu"), warmup=1, pairs=settings["pairs"])
    same_tokens = time_pairs(plain(n), smc, torch.device("cpu"), warmup=0, pairs=settings["pairs"])
    summary = {
        "smc_latency_ratio": summarise(per_answer["ratios"], TARGETS["smc_latency_ratio"]),
        "smc_over_plain_same_tokens": summarise(same_tokens["ratios"], None),
    }
    row = {"part": "smc", "prompts": len(prompts), "particles": n, "block_size": settings["smc_block"],
           "engine_requests_per_run": calls[-1], "per_answer": per_answer, "same_tokens": same_tokens}  # fmt: skip
    return summary, row


def fidelity_part(client, model, tokenizer, settings: dict) -> dict:
    """The demo's settings with fresh samples of p from the engine every step; τ beside the tuned token temperature."""
    from datasets import Dataset
    from peft import LoraConfig

    from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, sample_dataset
    from hf_seqtemp.likelihood import AutoregressiveScorer
    from hf_seqtemp.measure import dataset_groups, score_dataset, temperature_report, tune_myopic

    train_prompts, sweep_held_out = split_prompts(128, 16, seed=0)
    held_prompts = [p for p in prompt_pool() if p not in set(train_prompts) | set(sweep_held_out)]
    train_prompts = train_prompts[: settings["fidelity_train_prompts"]]
    held_prompts = held_prompts[: settings["fidelity_held_out_prompts"]]
    held_out = sample_dataset(model, tokenizer, [conversation(p) for p in held_prompts], DEMO["held_out_generations"],
                              DEMO["max_completion_length"], seed=1, batch_size=32)  # fmt: skip
    groups = dataset_groups(held_out, tokenizer)
    score = lambda m, t=1.0: score_dataset(m, held_out, AutoregressiveScorer(token_temperature=t), batch_size=32)
    base_logps, lengths = score(model)
    temperature = DEMO["temperature"]
    token_t, tuned_logps = tune_myopic(model, held_out, temperature, base_logps, groups, batch_size=32)
    config = SeqTempConfig(
        output_dir=str(Path(default_output("engine")).parent / "engine_fidelity"), target_temperature=temperature,
        loss_type="ratio", nll_weight=DEMO["nll_weight"], num_generations=DEMO["num_generations"],
        max_completion_length=DEMO["max_completion_length"], max_steps=settings["fidelity_steps"],
        per_device_train_batch_size=DEMO["batch_size"], per_device_eval_batch_size=32,
        learning_rate=DEMO["learning_rate"], lr_scheduler_type="cosine", logging_steps=8, save_strategy="no", seed=0,
        use_cpu=not torch.cuda.is_available(), init_from_token_temperature=True, disable_tqdm=True,
        use_vllm=True, vllm_server_base_url=client.base_url, sample_every_steps=1, vllm_server_timeout=1200.0,
    )  # fmt: skip
    r = DEMO["lora_r"]
    lora = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    fresh, _ = load_default_model()
    train = Dataset.from_dict({"prompt": [conversation(p) for p in train_prompts]})
    trainer = SeqTempTrainer(fresh, config, train_dataset=train, processing_class=tokenizer, peft_config=lora)
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    adapter_logps, _ = score(trainer.model)
    reports = {
        "adapter": temperature_report(base_logps, adapter_logps, lengths, groups),
        "tuned_token_temperature": temperature_report(base_logps, tuned_logps, lengths, groups),
    }
    reports["tuned_token_temperature"]["token_temperature"] = token_t
    for name, report in reports.items():
        print(f"fidelity {name:<24} T_eff {report['t_eff']:.4f}  τ {report['kendall_tau']:.4f}  "
              f"NLL/token {report['nll_per_token']:.4f}", flush=True)  # fmt: skip
    keep = ("t_eff", "kendall_tau", "nll_per_token", "token_temperature")
    return {
        "train_prompts": len(train_prompts), "held_out_prompts": len(held_prompts),
        "held_out_completions": len(held_out), "steps": settings["fidelity_steps"], "train_seconds": train_seconds,
        "engine_draws": trainer._pool.generation + 1 if trainer._pool is not None else None,
        **{name: {k: v for k, v in report.items() if k in keep} for name, report in reports.items()},
    }  # fmt: skip


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes; the fidelity part is a smoke run")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of generate and of the engine each")
    parser.add_argument("--engine_url", default=None, help="a running server of the embedded model (else started)")
    parser.add_argument("--device", default=None, help="device of generate and of the scorer (cuda on a GPU)")
    parser.add_argument(
        "--fidelity", action=argparse.BooleanOptionalAction, default=True, help="run the fidelity part"
    )
    parser.add_argument("--output", default=default_output("engine"))
    args = parser.parse_args(argv)
    settings = dict(MODES["quick" if args.quick else "default"], threads=args.threads, fidelity=args.fidelity)
    load_start = os.getloadavg()[0]
    device = pick_device(args.device)
    torch.set_num_threads(args.threads)
    info = print_device(device)
    from hf_seqtemp import load_default_model

    model, tokenizer = load_default_model(device=device)
    model.eval()
    client, server = start_engine(args, args.threads)
    try:
        summary, rows = throughput_part(client, model, tokenizer, settings)
        ratio = summary["samples_of_p_per_second_ratio"]
        print(f"samples of p per second, engine / generate: {ratio['median']:.3f} [{ratio['min']:.3f}, "
              f"{ratio['max']:.3f}] ({ratio['n']} pairs)  target {ratio['target']}: {ratio['verdict']}", flush=True)  # fmt: skip
        summary["max_abs_logr_difference"] = logr_part(client, model, tokenizer, settings)
        print(f"max |engine - scorer| log p {summary['max_abs_logp_difference']:.2e}, log r at T = 0.5 "
              f"{summary['max_abs_logr_difference']:.2e} (target log p <= 1e-4)", flush=True)  # fmt: skip
        smc, smc_row = smc_part(client, model, tokenizer, settings)
        summary.update(smc)
        for name in smc:
            print(format_summary(name.replace("_", " "), smc[name]), flush=True)
        rows = [rows, smc_row]
        if args.fidelity:
            summary["fidelity"] = fidelity_part(client, model, tokenizer, settings)
    finally:
        if server is not None:
            server.stop()
    summary["max_abs_logp_difference_verdict"] = (
        "met" if summary["max_abs_logp_difference"] <= TARGETS["max_abs_logp_difference"] else "not met"
    )
    settings.update(engine="vLLM server " + ("at " + args.engine_url if args.engine_url else "started here"))
    settings["load_average_1min"] = {"start": load_start, "end": os.getloadavg()[0]}  # other jobs' load
    write_json(args.output, "engine", info, settings, rows, summary)


if __name__ == "__main__":
    main()
