# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Quick start: temper the embedded SmolLM2-135M-Instruct to sequence temperature T = 0.5, on prompts only, and
measure it on prompts it never saw.

1. start from prompts only: the 128 training prompts of the fidelity benchmark (`hf_seqtemp.tasks.prompts`), and as
   held-out prompts the 14 prompts of the same pool that no benchmark or sweep ever measured on (the settings below
   were chosen by the sweep on *its* held-out prompts, so measuring the demo there would be measuring on prompts the
   settings were tuned to);
2. train a LoRA adapter with the likelihood-ratio loss (L_p + λ·NLL): the trainer samples `num_generations`
   completions of every prompt from the model itself (p is the distribution being tempered, per prompt), starts
   the adapter at the myopic solution (every logit divided by T) and learns the sequence-level correction;
3. measure, on 16 completions of each held-out prompt sampled from p, the within-prompt T_eff, Kendall τ and NLL of
   the routes it can afford (`examples/_routes.py`): token temperature T, the token temperature tuned once (the one
   whose T_eff on samples of 32 training prompts is T, applied unchanged; the one searched on these very completions
   is shown as an oracle, not a baseline), the adapter, and the adapter as SMC's proposal
   with 4 particles; draw an answer with each to count its cost per answer; count what each route costs once, in
   seconds on this machine and token-forwards (`examples/_costs.py`); print the SMC route's ESS, one verdict per
   question (does it reach T, which route ranks each prompt's completions most like p, paired between routes, at what
   cost) and one recommendation per goal (`examples/_verdicts.py`); write the folder `push_to_hub` would upload;
4. load that folder back with `load_tempered`.

The settings are the cheapest of the fidelity sweep's runs that met the bar at T = 0.5 on the sweep's held-out
prompts (`benchmarks/results/FIDELITY.md`: T_eff 0.522, τ 0.916): 128 prompts × 8 completions of at most 10
tokens, 32 steps of four prompts' 32 completions (every prompt once), lr 1e-3 cosine, λ_NLL = 0.1, LoRA r = 16 on
all linear layers, started at token temperature T. It prints its wall time at the end (the README quotes a measured
run and its machine); a line is printed at least every 30 s while it runs. Run with `make demo` (or
`python examples/quickstart.py --help`).

Threads: torch's default (one thread per core) is 4-7× slower than one thread on cores that other jobs keep busy.
Unless `OMP_NUM_THREADS` says otherwise, the demo uses the cores that other jobs leave free (the smaller of the
1-minute load average and the cores busy over the last half second: the load average still counts a job that has
just ended, such as `make venv`), shared out between its processes, and at least one; it prints its choice. Under `accelerate launch` only the main process
prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import torch
from datasets import Dataset
from peft import LoraConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _routes
import _verdicts
from _common import cores_busy
from _costs import TokenCounter, one_time_costs

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, load_tempered, sample_dataset, save_for_hub
from hf_seqtemp.measure import score_dataset
from hf_seqtemp.models.default import cached_model_folder
from hf_seqtemp.tasks.prompts import prompt_pool, split_prompts
from hf_seqtemp.trainer.hub_mixin import TUNING_PROMPTS

SYSTEM = "Answer briefly."
SWEEP_PROMPTS = (128, 16)  # (training, held-out) prompts of the fidelity benchmark and its sweep
MAIN_PROCESS = True  # under `accelerate launch`, only the main process prints (set in `main`)
SAMPLING_BATCH = 128  # sequences sampled and scored at once (the completions of 8-16 prompts, which share them)
DEFAULT_LOSS = "ratio"  # the objective the fidelity benchmark measured best at T = 0.5 (docs: Results)


def say(*args, **kwargs) -> None:
    """`print` on the main process only."""
    if MAIN_PROCESS:
        print(*args, **kwargs)


def torch_threads(environ, cpu_count: int, load_average: float, processes: int = 1) -> tuple[int, str]:
    """How many torch threads each process uses, and why: `OMP_NUM_THREADS` when set; otherwise the cores other jobs'
    `load_average` ([`cores_in_use`], the demo not started yet) leaves free, shared between `processes`,
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


def cores_in_use(interval: float = 0.5) -> float:
    """The load other jobs put on this machine now: the smaller of the 1-minute load average (it lags: a job that has
    just ended still counts for a minute or more) and the cores busy over the last `interval` seconds (Linux's
    `/proc/stat`; a job that pauses for a moment is missed by it alone). 0 where neither can be read."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    busy = cores_busy(interval)
    known = [v for v in (load, busy) if v is not None]
    return max(0.0, min(known)) if known else 0.0


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
    parser.add_argument(
        "--results_json", default=None, help="where the printed figures are written (default: <output_dir>/demo.json)"
    )
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


def train_adapter(
    args, model, tokenizer, train: Dataset, held_out: Dataset, beat: Heartbeat, counter
) -> SeqTempTrainer:
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
        per_device_eval_batch_size=SAMPLING_BATCH,  # also the chunks the training completions are sampled in
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
    with counter.measure("training: sampling"):  # a prompt-only dataset is completed from p here
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
    with counter.measure("training: steps"):
        trainer.train()
    return trainer


def compare_routes(args, trainer, tokenizer, held_prompts, reports, logps, once, beat, counter):
    """The route rows, the verdicts and the recommendations (lines to print) from what this run measured, and the
    figures themselves (for `--results_json`)."""
    conversation = lambda p: [{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}]
    beat.to(f"drawing {_routes.POOL} adapter answers per held-out prompt for the SMC route's answer law")
    with counter.measure("SMC route's answer law"):
        smc_logps, smc_bias = _routes.smc_route_logps(
            trainer.model, tokenizer, [conversation(p) for p in held_prompts], logps, args.temperature,
            args.max_completion_length, args.seed + 2,
        )  # fmt: skip
    rows, pairs = _routes.measure_routes(reports, logps, smc_logps, args.temperature)
    tuned_t = reports.get("tuned_myopic", {}).get("token_temperature")
    once_t = reports.get("tuned_once", {}).get("token_temperature")
    beat.to("drawing one answer per held-out prompt with each route (cost per answer)")
    with counter.measure("cost per answer"):
        costs = _routes.route_costs(
            trainer.model, tokenizer, held_prompts, args.temperature, tuned_t, args.max_completion_length, args.seed,
            once_t=once_t,
        )  # fmt: skip
    costs["smc_adapter"]["answer_bias_bound"] = sum(smc_bias) / len(smc_bias) if smc_bias else None
    costs["smc_adapter"]["answer_bias_bound_prompts"] = len(smc_bias)
    names = _routes.route_names(args.temperature, tuned_t, once_t)
    groups = logps["groups"]
    held = (
        f"\nHeld-out: {len(groups)} completions of p for {len(set(groups))} prompts never seen in training nor used "
        f"to choose the settings; T_eff, τ and NLL within prompts. Target T = {args.temperature:g}."
    )
    note = (
        f"(A model tempered exactly at T has T_eff = {args.temperature:g} and τ = 1; the base model has T_eff = 1. "
        f"The token temperature tuned once is searched on samples of p of {TUNING_PROMPTS} training prompts and "
        "applied unchanged here, as a user would; the oracle row is searched on these very completions (chosen on "
        "the figure it is scored on: for reference, not a baseline). The SMC route's log-likelihoods are estimated "
        f"from {_routes.POOL} adapter draws per prompt.)"
    )
    lines = [
        held,
        _verdicts.table(rows, costs, names, once),
        note,
        _verdicts.ess_line(costs, names, _routes.PARTICLES),
        _verdicts.reach_verdict(rows, names, args.temperature),
        _verdicts.error_verdict(rows, pairs, names, args.temperature),
        _verdicts.rank_verdict(rows, pairs, names),
        _verdicts.cost_verdict(costs, names, once),
        *_verdicts.recommendations(rows, pairs, names, costs, once, args.temperature),
        *_verdicts.by_length(Path(__file__).resolve().parents[1] / "benchmarks" / "results"),
    ]
    measured = {"names": names, "rows": rows, "pairs": pairs, "costs": costs, "one_time": once}
    return lines, {**measured, "held_out_sequences": len(groups), "held_out_prompts": len(set(groups))}


def write_results(args, measured: dict, lines: list[str], wall: float, threads: int, loads: tuple) -> None:
    """The figures this run printed, with its provenance (command, commit, machine, date), wall time, torch threads
    and the 1-minute load average at its start and end (other jobs' load inflates the time)."""
    from _common import device_info, provenance

    info = device_info(torch.device("cpu"))
    record = {
        "provenance": provenance(info),
        "benchmark": "demo",
        "meta": info,
        "settings": vars(args),
        "wall_seconds": wall,
        "torch_threads": threads,
        "load_average_1min": {"start": loads[0], "end": loads[1]},
        **measured,
        "printed": lines,
    }
    path = Path(args.results_json or f"{args.output_dir}/demo.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    say(f"figures: {path}")


def load_model(args, beat: Heartbeat):
    """The model and tokenizer: `--model_name_or_path`, else the embedded SmolLM2 (converted once on a first run)."""
    if args.model_name_or_path is not None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        beat.to(f"loading {args.model_name_or_path}")
        return AutoModelForCausalLM.from_pretrained(args.model_name_or_path), AutoTokenizer.from_pretrained(
            args.model_name_or_path
        )
    if not (cached_model_folder() / "config.json").is_file():
        beat.to(f"first run: converting the embedded GGUF model to safetensors in {cached_model_folder()} (once)")
    beat.to("loading SmolLM2-135M-Instruct")
    return load_default_model()


def check_reload(trainer, hub_dir: str) -> None:
    """Loads the Hub folder back and prints how far its log-likelihoods are from the trained model's."""
    reloaded = load_tempered(hub_dir)
    probe = trainer.eval_dataset.select(range(min(8, len(trainer.eval_dataset))))
    again = score_dataset(reloaded, probe, batch_size=8)[0]
    first = score_dataset(trainer.model, probe, batch_size=8)[0]
    say(
        f"\nHub folder: {hub_dir} (model card README.md, plot seqtemp_loglik.png); reloaded with load_tempered: "
        f"max |Δ log q| = {(again - first).abs().max().item():.2e} over {len(probe)} held-out completions"
    )


def run(args, beat: Heartbeat) -> tuple[list[str], dict]:
    """Samples the held-out completions, trains, measures and compares the routes, writes and reloads the Hub
    folder; returns the printed lines and the figures."""
    model, tokenizer = load_model(args, beat)
    counter = TokenCounter(model)
    train_prompts, held_prompts = demo_prompts()
    train_prompts, held_prompts = train_prompts[: args.train_prompts], held_prompts[: args.held_out_prompts]
    conversation = lambda p: [{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}]
    train = Dataset.from_dict({"prompt": [conversation(p) for p in train_prompts]})
    beat.to(f"sampling {args.held_out_generations} completions of each of the {len(held_prompts)} held-out prompts")
    with counter.measure("held-out samples"):
        held_out = sample_dataset(
            model, tokenizer, [conversation(p) for p in held_prompts], num_samples=args.held_out_generations,
            max_new_tokens=args.max_completion_length, seed=args.seed + 1, batch_size=SAMPLING_BATCH,
        )  # fmt: skip
    trainer = train_adapter(args, model, tokenizer, train, held_out, beat, counter)
    beat.to("measuring base model, token temperature and adapter on the held-out prompts")
    with counter.measure("measurement"):
        reports, logps = trainer.measure_held_out(batch_size=SAMPLING_BATCH)  # save_for_hub below reuses it
    once = one_time_costs(args, reports, counter.totals, len(held_prompts), len(train_prompts))
    lines, measured = compare_routes(args, trainer, tokenizer, held_prompts, reports, logps, once, beat, counter)
    say("\n".join(lines))
    beat.to("writing the Hub folder (adapter, seqtemp_config.json, model card, plot) and loading it back")
    hub_dir = f"{args.output_dir}/hub"
    with counter.measure("hub folder"):
        save_for_hub(trainer, hub_dir, batch_size=SAMPLING_BATCH)  # the card's figures are the ones printed above
        check_reload(trainer, hub_dir)
    phases = {name: dict(zip(("seconds", "token_forwards", "cpu_seconds"), v)) for name, v in counter.totals.items()}
    return lines, {**measured, "phases": phases}


def main() -> None:
    global MAIN_PROCESS

    args = parse_args()
    # `accelerate launch` and `torchrun` give every process its rank and the number of processes on this machine
    MAIN_PROCESS = int(os.environ.get("RANK", "0")) == 0
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    start_load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0  # recorded in demo.json
    load = cores_in_use()
    threads, why = torch_threads(os.environ, os.cpu_count() or 1, load, processes)
    torch.set_num_threads(threads)
    say(f"torch threads per process: {threads} ({why}; set OMP_NUM_THREADS to choose)")
    torch.manual_seed(args.seed)
    with Heartbeat() as beat:
        lines, measured = run(args, beat)
        wall = time.time() - beat.start
        say(f"wall time: {wall:.0f} s")
        if MAIN_PROCESS:
            write_results(args, measured, lines, wall, threads, (start_load, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
