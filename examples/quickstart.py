# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Quick start: temper the embedded SmolLM2-135M-Instruct to sequence temperature T = 0.5, on prompts only, and
measure it on prompts it never saw.

1. start from prompts only: the 128 training prompts of the fidelity benchmark (`benchmarks/_prompts.py`), and as
   held-out prompts the 14 prompts of the same pool that no benchmark or sweep ever measured on (the settings below
   were chosen by the sweep on *its* held-out prompts, so measuring the demo there would be measuring on prompts the
   settings were tuned to);
2. train a LoRA adapter with the likelihood-ratio loss (L_p + λ·NLL): the trainer samples `num_generations`
   completions of every prompt from the model itself (p is the distribution being tempered, per prompt), starts
   the adapter at the myopic solution (every logit divided by T) and learns the sequence-level correction;
3. measure, on 16 completions of each held-out prompt sampled from p, the within-prompt T_eff, Kendall τ and NLL of
   the base model, token temperature T (the myopic baseline), the best token temperature (the one whose T_eff on
   these completions is T) and the adapter, and print a verdict against the bar (T_eff within ±10 % of T and
   τ ≥ 0.9) and against both token temperatures; write the folder `push_to_hub` would upload;
4. load that folder back with `load_tempered`.

The settings are the cheapest of the fidelity sweep's runs that met the bar at T = 0.5 on the sweep's held-out
prompts (`benchmarks/results/FIDELITY.md`: T_eff 0.522, τ 0.916): 128 prompts × 8 completions of at most 10
tokens, 32 steps of four prompts' 32 completions (every prompt once), lr 1e-3 cosine, λ_NLL = 0.1, LoRA r = 16 on
all linear layers, started at token temperature T. About 200 s on 2 idle CPU cores; a line is printed at least
every 30 s while it runs. Run with `make demo` (or `python examples/quickstart.py --help`).

Threads: torch's default (one thread per core) is 4-7× slower than one thread on cores that other jobs keep busy.
Unless `OMP_NUM_THREADS` says otherwise, the demo uses the cores the 1-minute load average leaves free, shared out
between its processes, and at least one; it prints its choice. Under `accelerate launch` only the main process
prints.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import torch
from datasets import Dataset
from peft import LoraConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _prompts import prompt_pool, split_prompts

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, load_tempered, sample_dataset, save_for_hub
from hf_seqtemp.hub import ROW_NAMES
from hf_seqtemp.measure import format_table, score_dataset
from hf_seqtemp.models.default import cached_model_folder

SYSTEM = "Answer briefly."
BAR = (0.10, 0.9)  # |T_eff / T - 1| ≤ 10 % and Kendall τ ≥ 0.9, within prompts, on unseen prompts
SWEEP_PROMPTS = (128, 16)  # (training, held-out) prompts of the fidelity benchmark and its sweep
TUNED = "best token temperature"  # the token temperature whose T_eff on the held-out completions is T: one name
DEMO_ROWS = {**ROW_NAMES, "tuned_myopic": f"{TUNED} (its T_eff is T)"}
MAIN_PROCESS = True  # under `accelerate launch`, only the main process prints (set in `main`)
DEFAULT_LOSS = "ratio"  # the objective the fidelity benchmark measured best at T = 0.5 (README, Results)


def say(*args, **kwargs) -> None:
    """`print` on the main process only."""
    if MAIN_PROCESS:
        print(*args, **kwargs)


def torch_threads(environ, cpu_count: int, load_average: float, processes: int = 1) -> tuple[int, str]:
    """How many torch threads each process uses, and why: `OMP_NUM_THREADS` when set; otherwise the cores the
    1-minute load average leaves free (other jobs' load, the demo not started yet), shared between `processes`,
    at least one. One thread per core on busy cores is several times slower than one thread.

    Example:
    ```python
    >>> torch_threads({}, 2, 0.1)
    (2, '2 of 2 cores free (load 0.1)')
    >>> torch_threads({}, 2, 3.5)[0], torch_threads({}, 8, 2.0, processes=2)[0], torch_threads({"OMP_NUM_THREADS": "3"}, 8, 0)[0]
    (1, 3, 3)
    ```
    """
    if environ.get("OMP_NUM_THREADS", "").strip().isdigit() and int(environ["OMP_NUM_THREADS"]) > 0:
        return int(environ["OMP_NUM_THREADS"]), "OMP_NUM_THREADS"
    free = max(1, cpu_count - round(load_average))
    share = f", shared by {processes} processes" if processes > 1 else ""
    return max(1, free // processes), f"{free} of {cpu_count} cores free (load {load_average:.1f}){share}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--temperature", type=float, default=0.5, help="target sequence temperature T")
    parser.add_argument("--num_generations", type=int, default=8, help="completions sampled per training prompt")
    parser.add_argument(
        "--held_out_generations", type=int, default=16, help="completions sampled per held-out prompt (measured on)"
    )
    parser.add_argument("--max_completion_length", type=int, default=10, help="longest sampled completion")
    parser.add_argument("--max_steps", type=int, default=32, help="optimisation steps")
    parser.add_argument("--batch_size", type=int, default=32, help="sequences per step (whole prompt groups)")
    parser.add_argument("--learning_rate", type=float, default=1e-3, help="LoRA learning rate (cosine schedule)")
    parser.add_argument(
        "--loss_type",
        default=DEFAULT_LOSS,
        choices=["ratio", "smc_distill"],
        help="objective: the ratio loss on p's samples, or SMC distillation (the weighted NLL of SMC particles of "
        "p^(1/T), the adapter being trained as their proposal)",
    )
    parser.add_argument(
        "--nll_weight",
        type=float,
        default=None,
        help="λ for the NLL term against drift (default 0.1; 0 for smc_distill)",
    )
    parser.add_argument("--lora_r", type=int, default=16, help="LoRA rank")
    parser.add_argument("--output_dir", default="outputs/quickstart", help="where the adapter is saved")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--model_name_or_path", default=None, help="a local causal LM folder (with a chat template) instead of SmolLM2"
    )
    parser.add_argument(
        "--train_prompts", type=int, default=None, help="use only the first N training prompts (smoke runs)"
    )
    parser.add_argument(
        "--held_out_prompts", type=int, default=None, help="use only the first N held-out prompts (smoke runs)"
    )
    return parser.parse_args()


class Heartbeat:
    """Prints the phase and the elapsed time every `every` seconds from a background thread, so that a long step
    (sampling, scoring, a training step on a loaded machine) is never silent for longer than that."""

    def __init__(self, every: float = 25.0):
        self.start, self.every, self.phase = time.time(), every, "starting"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            say(f"[{time.time() - self.start:4.0f} s] still {self.phase} …", flush=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def to(self, phase: str) -> None:
        self.phase = phase
        say(f"[{time.time() - self.start:4.0f} s] {phase} …", flush=True)


def demo_prompts() -> tuple[list[str], list[str]]:
    """(training, held-out): the benchmark's training prompts, and the prompts of the pool it never measured on."""
    train, sweep_held_out = split_prompts(*SWEEP_PROMPTS, seed=0)
    used = set(train) | set(sweep_held_out)
    return train, [prompt for prompt in prompt_pool() if prompt not in used]


def meets_bar(report: dict, temperature: float) -> bool:
    return abs(report["t_eff"] / temperature - 1) <= BAR[0] and report["kendall_tau"] >= BAR[1]


def against_token_temperature(adapter: dict, myopic: dict, temperature: float) -> str:
    """The adapter against token temperature T, the myopic baseline a user gets by asking for T per token."""
    error, myopic_error = abs(adapter["t_eff"] / temperature - 1), abs(myopic["t_eff"] / temperature - 1)
    met, myopic_met = meets_bar(adapter, temperature), meets_bar(myopic, temperature)
    if met and not myopic_met:
        return f"The adapter meets the bar where token temperature {temperature:g} does not: it beats it here."
    if met:
        closer = "closer to T" if error < myopic_error else "no closer to T"
        return f"Both meet the bar; the adapter's T_eff is {closer} than token temperature's."
    slope = "closer to T than" if error < myopic_error else "no closer to T than"
    ranks = "above" if adapter["kendall_tau"] > myopic["kendall_tau"] else "not above"
    missed = "τ" if error <= BAR[0] else "T_eff" if adapter["kendall_tau"] >= BAR[1] else "T_eff and τ"
    return (
        f"The adapter does not meet the bar on these unseen prompts ({missed} missed): its T_eff is {slope} token "
        f"temperature {temperature:g}'s, and its τ is {ranks} token temperature's."
    )


def against_best_token_temperature(adapter: dict, tuned: dict, temperature: float) -> str:
    """The adapter against the best token temperature: the one whose T_eff on these very completions is T (found by
    a search a user could only run with samples of every new prompt), so the comparison is on τ (and the bar). Each
    reason given is read off the figures it quotes."""
    met, tuned_met = meets_bar(adapter, temperature), meets_bar(tuned, temperature)
    tau, tuned_tau = adapter["kendall_tau"], tuned["kendall_tau"]
    beats = met and (not tuned_met or tau > tuned_tau)
    head = (
        f"The {TUNED} is {tuned['token_temperature']:.3g} (T_eff {tuned['t_eff']:.3f}, bar "
        f"{'met' if tuned_met else 'not met'}): its τ is {tuned_tau:.3f}, the adapter's {tau:.3f}. "
    )
    if beats:
        return head + f"The adapter beats the {TUNED} here."
    if abs(adapter["t_eff"] / temperature - 1) > BAR[0]:
        reason = "its T_eff misses the bar"
    elif tau > tuned_tau:
        reason = f"it ranks each prompt's completions better (τ {tau:.3f} > {tuned_tau:.3f}) but its τ misses the bar"
    else:
        reason = f"it reaches the temperature but does not rank better (τ {tau:.3f} ≤ {tuned_tau:.3f})"
    return head + f"The adapter does NOT beat the {TUNED} in this run: {reason} (README, Quick start)."


def verdict(reports: dict, temperature: float) -> list[str]:
    """Plain-language reading of the within-prompt table, computed from it."""
    adapter, myopic = reports["tempered"], reports["myopic"]
    error, myopic_error = abs(adapter["t_eff"] / temperature - 1), abs(myopic["t_eff"] / temperature - 1)
    met, myopic_met = meets_bar(adapter, temperature), meets_bar(myopic, temperature)
    lines = [
        (
            f"How to read it: a model tempered exactly at T has T_eff = {temperature:g} and Kendall τ = 1 (it keeps the "
            "base model's ranking of each prompt's completions); the base model has T_eff = 1."
        ),
        f"Bar (T_eff within ±10 % of {temperature:g} and τ ≥ 0.9 on unseen prompts): adapter "
        + ("MET" if met else "NOT MET")
        + f" (T_eff off by {100 * error:.1f} %, τ {adapter['kendall_tau']:.3f}); token temperature {temperature:g} "
        + ("met" if myopic_met else "not met")
        + f" (T_eff off by {100 * myopic_error:.1f} %, τ {myopic['kendall_tau']:.3f}).",
        against_token_temperature(adapter, myopic, temperature),
    ]
    tuned = reports.get("tuned_myopic")
    if tuned is not None:
        lines.append(against_best_token_temperature(adapter, tuned, temperature))
    else:
        lines.append(f"No token temperature reaches T_eff = T on these completions: there is no {TUNED} to compare.")
    nll = f"NLL/token: adapter {adapter['nll_per_token']:.3f}, token temperature {myopic['nll_per_token']:.3f}"
    lines.append(nll + (f", {TUNED} {tuned['nll_per_token']:.3f}." if tuned is not None else "."))
    return lines


def train_adapter(args, model, tokenizer, train: Dataset, held_out: Dataset, beat: Heartbeat) -> SeqTempTrainer:
    distill = args.loss_type == "smc_distill"
    config = SeqTempConfig(
        output_dir=args.output_dir,
        target_temperature=args.temperature,
        loss_type=args.loss_type,
        nll_weight=args.nll_weight,  # None: the objective's default
        # SMC distillation: the adapter proposes its own particles, new ones at every step
        smc_proposal="adapter" if distill else "token",
        sample_every_steps=1 if distill else None,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=32,
        learning_rate=args.learning_rate,
        lr_scheduler_type="cosine",
        logging_steps=8,
        save_strategy="no",
        seed=args.seed,
        use_cpu=not torch.cuda.is_available(),
        init_from_token_temperature=True,
        disable_tqdm=True,  # the heartbeat and the logs every 8 steps show progress, one line at a time
    )
    lora = LoraConfig(
        r=args.lora_r, lora_alpha=2 * args.lora_r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    if distill:
        beat.to(f"sampling {args.held_out_generations} completions of each held-out prompt")
    else:
        beat.to(f"sampling {args.num_generations} completions of each of the {len(train)} training prompts")
    trainer = SeqTempTrainer(
        model, config, train_dataset=train, eval_dataset=held_out, processing_class=tokenizer, peft_config=lora
    )
    if distill:
        say(
            f"{len(trainer.eval_dataset)} held-out completions sampled; the {args.num_generations} SMC particles of "
            "each training prompt are drawn during training, by the adapter, weighted towards p^(1/T)"
        )
    else:
        sample = trainer.train_dataset[0]
        completion = tokenizer.decode(sample["input_ids"][sample["completion_mask"].index(1) :])
        say(
            f"sampled {len(trainer.train_dataset)} train / {len(trainer.eval_dataset)} held-out completions, "
            f"e.g. {completion!r}"
        )
    beat.to(
        f"training {args.max_steps} steps (logged every 8: temp/t_eff and temp/kendall_tau are within-prompt "
        "figures on the training batch)"
    )
    trainer.train()
    return trainer


def main() -> None:
    global MAIN_PROCESS

    args = parse_args()
    # `accelerate launch` and `torchrun` give every process its rank and the number of processes on this machine
    MAIN_PROCESS = int(os.environ.get("RANK", "0")) == 0
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    threads, why = torch_threads(os.environ, os.cpu_count() or 1, load, processes)
    torch.set_num_threads(threads)
    say(f"torch threads per process: {threads} ({why}; set OMP_NUM_THREADS to choose)")
    torch.manual_seed(args.seed)
    with Heartbeat() as beat:
        if args.model_name_or_path is not None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            beat.to(f"loading {args.model_name_or_path}")
            model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
            tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
        else:
            if not (cached_model_folder() / "config.json").is_file():
                beat.to(
                    f"first run: converting the embedded GGUF model to safetensors in {cached_model_folder()} (once)"
                )
            beat.to("loading SmolLM2-135M-Instruct")
            model, tokenizer = load_default_model()
        train_prompts, held_prompts = demo_prompts()
        train_prompts, held_prompts = train_prompts[: args.train_prompts], held_prompts[: args.held_out_prompts]
        conversation = lambda p: [{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}]
        train = Dataset.from_dict({"prompt": [conversation(p) for p in train_prompts]})
        beat.to(
            f"sampling {args.held_out_generations} completions of each of the {len(held_prompts)} held-out prompts"
        )
        held_out = sample_dataset(
            model,
            tokenizer,
            [conversation(p) for p in held_prompts],
            num_samples=args.held_out_generations,
            max_new_tokens=args.max_completion_length,
            seed=args.seed + 1,
            batch_size=32,
        )
        trainer = train_adapter(args, model, tokenizer, train, held_out, beat)

        beat.to("measuring base model, token temperature and adapter on the held-out prompts")
        reports, logps = trainer.measure_held_out()  # what save_for_hub writes below: measured once
        say(
            f"\nHeld-out: {len(logps['groups'])} completions of {len(set(logps['groups']))} prompts never seen in "
            f"training nor used to choose the settings; T_eff and τ within prompts. Target T = {args.temperature:g}."
        )
        say(format_table({DEMO_ROWS[name]: report for name, report in reports.items()}))
        say("\n".join(verdict(reports, args.temperature)))

        beat.to("writing the Hub folder (adapter, seqtemp_config.json, model card, plot) and loading it back")
        hub_dir = f"{args.output_dir}/hub"
        save_for_hub(trainer, hub_dir)  # the card's figures are the ones printed above
        reloaded = load_tempered(hub_dir)
        probe = trainer.eval_dataset.select(range(min(8, len(trainer.eval_dataset))))
        again = score_dataset(reloaded, probe, batch_size=8)[0]
        first = score_dataset(trainer.model, probe, batch_size=8)[0]
        say(
            f"\nHub folder: {hub_dir} (model card README.md, plot seqtemp_loglik.png); reloaded with load_tempered: "
            f"max |Δ log q| = {(again - first).abs().max().item():.2e} over {len(probe)} held-out completions"
        )
        say(f"wall time: {time.time() - beat.start:.0f} s")


if __name__ == "__main__":
    main()
