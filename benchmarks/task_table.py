# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Does tempering pay? Checkable-answer tasks on held-out prompts: samplers and trained adapters side by side.

On the embedded SmolLM2-135M-Instruct, task families whose answers a program checks (`_tasks.py`: single-digit
addition, capital cities, yes/no comparisons), as chat prompts, split BY PROMPT into training and held-out prompts
(training never sees a held-out question; `tests/test_benchmark_tasks.py`). Rows, all on the held-out prompts:

- `greedy`; `ancestral` (exact sampling of p, token temperature 1); `token T=1/α` (every next-token distribution
  sharpened by α); `token tuned once T=1/α` (the token temperature a user tunes once: the t whose within-prompt T_eff
  on samples of p of the family's *training* prompts is T, applied unchanged to the held-out prompts);
- `mcmc α` (MH power sampling of p^α, `strategy="mcmc"`); `smc α N=n` (`strategy="smc"`, token-temperature
  proposal, n particles; when this build has it, else the row says "not available in this build");
- `ours T`: a LoRA adapter trained on the training prompts ONLY (no answers, no reward) with the prompt-only
  `SeqTempTrainer` (L_p + λ·NLL, fresh samples every step) towards sequence temperature T = 1/α, sampled at token
  temperature 1;
- `distill T`: the same LoRA and prompts trained by SMC distillation (`loss_type="smc_distill"`: the weighted NLL of
  SMC particles of p^α, the adapter being trained as their proposal, new particles every step), same steps;
  `smc-adapter α N=n`: SMC power sampling of p^α with that adapter as proposal (`proposal="adapter"`), n particles;
- `rloo T`: TRL's `RLOOTrainer` with reward log p_base(completion | prompt) and β = 1/(α − 1) (its optimum is also
  p^α; `_task_training.py` says why RLOO rather than GRPO), same LoRA, prompts, generations, lengths and rate,
  trained for the same wall-clock time as `ours T`.

Columns: pass@1 with a 95 % interval (percentile bootstrap over held-out prompts of each prompt's fraction correct,
pooled over the sampling seeds), the per-seed pass@1, pass@8 (`pass_at_k` with n = 8 samples per prompt and seed),
within-prompt T_eff and Kendall τ against p (on completions of the held-out prompts sampled from p) where the row has
a density (token temperature and the adapters), sequential model calls of the batched run (every answer takes part
in each call: the latency per answer on an accelerator), token-forwards per answer (the compute), seconds per answer
and training seconds. Training is done once (seed `train_seed`); the seeds are sampling seeds.

`--harness`: the training-free rows (ancestral, token, tuned once, mcmc, smc) go through EleutherAI's
lm-evaluation-harness instead (`_task_harness.py`: each family a harness task, each row a `seqtemp` model route, run
once per sampling seed), scored by the harness and by this table's scorer on the same draws; needs the `eval` extra.
Output: `<output_dir>/harness_table.json` and `harness_table.md`.

`--probe` first measures the base model's sampled pass@1 (token temperature 1) and greedy accuracy per family, to
keep families whose pass@1 lies in 15-70 %. Output: `<output_dir>/task_table.json` and `task_table.md`.

Usage:
    python benchmarks/task_table.py --probe                  # base pass@1 per family (16 prompts x 8 samples)
    python benchmarks/task_table.py --quick                  # smoke run: 1 family, tiny sizes
    python benchmarks/task_table.py --cpu --families addition  # a small table, about 25 min on 2 shared cores
    python benchmarks/task_table.py [--families ...]         # the table (see MODES["default"])
    python benchmarks/task_table.py --cpu --harness --families addition capitals comparison  # through lm-eval
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _task_sampling as samplers
from _common import REPO, cpu_model, pick_device, print_device, write_json
from _task_report import answer_agreement, markdown_table, paired_differences, print_rows
from _tasks import FAMILIES, conversation, get_family, split_family

from hf_seqtemp import load_default_model, pass_at_k, sample_dataset
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.measure import dataset_groups, score_dataset, temperature_report, tune_myopic
from hf_seqtemp.metrics import paired_interval

MODES = {
    "quick": {
        "families": ["addition"], "train_prompts": 8, "held_out_prompts": 6, "samples": 8, "max_new_tokens": 12,
        "seeds": [0, 1], "alphas": [4.0], "mcmc_steps": 2, "block_size": 6, "smc_particles": [4],
        "adapter_particles": [4], "answer_samples": [2],
        "max_steps": 2, "num_generations": 4, "train_batch": 8,
    },
    "cpu": {
        "families": ["addition"], "train_prompts": 32, "held_out_prompts": 16, "samples": 8, "max_new_tokens": 16,
        "seeds": [0, 1], "alphas": [4.0], "mcmc_steps": 4, "block_size": 8, "smc_particles": [8],
        "adapter_particles": [4, 8], "answer_samples": [4],
        "max_steps": 8, "num_generations": 4, "train_batch": 16,
    },
    "default": {
        "families": ["addition", "capitals", "comparison"], "train_prompts": 48, "held_out_prompts": 24,
        "samples": 8, "max_new_tokens": 24, "seeds": [0, 1, 2], "alphas": [4.0, 2.0], "mcmc_steps": 10,
        "block_size": 8, "smc_particles": [8, 64], "adapter_particles": [4, 8], "answer_samples": [4], "max_steps": 40, "num_generations": 8, "train_batch": 32,
    },
}  # fmt: skip
TRAINING = {"learning_rate": 1e-3, "nll_weight": 0.1, "lora_r": 16, "train_seed": 0}
PROBE = {"prompts": 16, "samples": 8, "max_new_tokens": 24, "seed": 0}
BOOTSTRAP = 2000
SAMPLER_KINDS = ("greedy", "ancestral", "token", "tuned", "mcmc", "smc", "answer")
TRAINED_KINDS = ("ours", "distill", "smc-adapter", "rloo")
ROW_KINDS = SAMPLER_KINDS + TRAINED_KINDS


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smoke run: one family, tiny sizes")
    size.add_argument("--cpu", action="store_true", help="a small table for a CPU (about 25 min per family)")
    parser.add_argument("--probe", action="store_true", help="only measure the base pass@1 per family")
    parser.add_argument("--families", nargs="+", choices=sorted(FAMILIES), help="override the mode's families")
    parser.add_argument("--seeds", type=int, nargs="+", help="override the mode's sampling seeds")
    parser.add_argument("--alphas", type=float, nargs="+", help="override the mode's powers α (T = 1/α)")
    for name in ("held_out_prompts", "train_prompts", "max_steps", "max_new_tokens", "mcmc_steps"):
        parser.add_argument(f"--{name}", type=int, help=f"override the mode's {name}")
    parser.add_argument(
        "--harness", action="store_true",
        help="the training-free rows through lm-evaluation-harness (the `seqtemp` model), scored by both scorers",
    )  # fmt: skip
    parser.add_argument(
        "--harness_batch_size", type=int, default=32, help="lm-eval's batch_size (prompts per generate call)"
    )
    parser.add_argument("--no-rl", dest="rl", action="store_false", help="skip the RLOO peer")
    parser.add_argument("--no-train", dest="train", action="store_false", help="skip both trained rows")
    parser.add_argument(
        "--trained_only", action="store_true", help="only the trained rows (another --train_seed of a table run)"
    )
    parser.add_argument(
        "--rows", nargs="+", choices=ROW_KINDS,
        help="only these rows (default: all); smc-adapter needs distill (its proposal), rloo needs ours (its budget)",
    )  # fmt: skip
    parser.add_argument("--smc_particles", type=int, nargs="+", help="override the mode's token-proposal SMC sizes")
    parser.add_argument(
        "--pimh_steps", type=int, nargs="+", help="token-proposal SMC rows per PIMH chain length (0: one run's answer)"
    )
    parser.add_argument(
        "--prompts_per_call", type=int, help="sample this many held-out prompts per batch (default: all in one)"
    )
    parser.add_argument("--adapter_particles", type=int, nargs="+", help="override the mode's adapter-proposal sizes")
    parser.add_argument(
        "--adapter_pimh_steps", type=int, nargs="+", help="adapter-proposal SMC rows per PIMH chain length (default 0)"
    )
    parser.add_argument(
        "--answer_samples", type=int, nargs="+", help="override the mode's N of majority vote / answer sharpening"
    )
    parser.add_argument("--train_seed", type=int, help=f"seed of both trainings (default {TRAINING['train_seed']})")
    parser.add_argument("--output_dir", default=str(REPO / "outputs" / "task_table"))
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    return parser.parse_args(argv)


def resolve_settings(args) -> dict:
    mode = "quick" if args.quick else "cpu" if args.cpu else "default"
    settings = {"mode": mode, **MODES[mode], **TRAINING, "rl": args.rl, "train": args.train}
    settings["trained_only"] = args.trained_only
    if args.trained_only and not args.train:
        raise ValueError("--trained_only with --no-train leaves no row: drop one of them.")
    rows = list(args.rows or ROW_KINDS)
    if args.trained_only:
        rows = [kind for kind in rows if kind in TRAINED_KINDS]
    if not args.train or not args.rl:
        rows = [kind for kind in rows if kind not in (TRAINED_KINDS if not args.train else ("rloo",))]
    if not rows:
        raise ValueError(f"--rows {args.rows} leaves no row with the other flags (--trained_only / --no-train).")
    if "smc-adapter" in rows and "distill" not in rows:
        raise ValueError("--rows smc-adapter needs distill: the distilled adapter is its proposal. Add distill.")
    if "rloo" in rows and "ours" not in rows:
        raise ValueError("--rows rloo needs ours: RLOO trains for ours' wall time. Add ours, or pass --no-rl.")
    if args.harness:
        from _task_harness import HARNESS_KINDS

        rows = [kind for kind in rows if kind in HARNESS_KINDS]
        if not rows:
            raise ValueError(f"--harness runs the rows {list(HARNESS_KINDS)}; --rows {args.rows} has none of them.")
        settings["harness_batch_size"] = args.harness_batch_size
    settings["harness"] = args.harness
    settings["rows"] = rows
    if args.train_seed is not None:
        settings["train_seed"] = args.train_seed
    for name in ("families", "seeds", "alphas", "held_out_prompts", "train_prompts", "max_steps", "max_new_tokens",
                 "smc_particles", "adapter_particles", "answer_samples", "prompts_per_call", "pimh_steps", "adapter_pimh_steps"):  # fmt: skip
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if args.mcmc_steps is not None:
        settings["mcmc_steps"] = args.mcmc_steps
    return settings


def evaluate(sample, model, tokenizer, family, held_out: list, settings: dict, seeds: list[int], n: int) -> dict:
    """pass@1 (interval), pass@8 and costs of one sampler on the held-out prompts, over `seeds` (and, for an SMC
    sampler that records it, the ESS / N of the weights each answer was drawn from)."""
    questions = [q for q, _ in held_out]
    length, per_call = settings["max_new_tokens"], settings.get("prompts_per_call")
    runs = [samplers.run_sampler(sample, model, tokenizer, questions, n, length, seed, per_call) for seed in seeds]
    result = summarise(runs, family, held_out, n)
    if getattr(sample, "ess_fractions", None):
        result.update(ess_summary(sample.ess_fractions))
    if getattr(sample, "acceptance", None):  # PIMH: the chains' acceptance rates (mean over answers)
        result["pimh_acceptance"] = statistics.fmean(sample.acceptance)
    return result


def ess_summary(fractions: list[float]) -> dict:
    """ESS / N of the final weights per answer (an SMC answer is one particle drawn by them): mean and quartiles."""
    ordered = sorted(fractions)
    quartile = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return {
        "ess_fraction_per_answer": statistics.fmean(ordered),
        "ess_fraction_quartiles": [quartile(0.25), quartile(0.5), quartile(0.75)],
    }


def summarise(runs: list[dict], family, held_out: list, n: int) -> dict:
    """pass@1 (interval over prompts), pass@8 and costs of runs (one per seed) of `n` answers per held-out prompt."""
    per_prompt = [[] for _ in held_out]  # fraction correct per prompt, one entry per seed
    per_seed, pass8, read = [], [], []
    for run in runs:
        read.append([[family.extract(c) for c in texts] for texts in run["completions"]])
        correct = [sum(family.check(a, c) for c in texts) for (_, a), texts in zip(held_out, run["completions"])]
        for i, c in enumerate(correct):
            per_prompt[i].append(c / n)
        per_seed.append(statistics.fmean(c / n for c in correct))
        pass8.append(statistics.fmean(pass_at_k(n, c, min(8, n)) for c in correct))
    low, high = paired_interval([statistics.fmean(v) for v in per_prompt], seed=0, replicates=BOOTSTRAP)
    answers = sum(r["answers"] for r in runs)
    return {
        "pass@1": statistics.fmean(per_seed),
        "pass@1_ci95": [low, high],
        "pass@1_per_seed": per_seed,
        "pass@1_per_prompt": [statistics.fmean(v) for v in per_prompt],
        "pass@8": statistics.fmean(pass8),
        "calls": statistics.fmean(r["calls"] for r in runs),
        "token_forwards_per_answer": sum(r["token_forwards"] for r in runs) / answers,
        "seconds_per_answer": sum(r["seconds"] for r in runs) / answers,
        "example": runs[0]["completions"][0][0],
        "answers": read,  # per seed, per prompt: the answer the checker read from each reply (None: none)
    }


class HeldOutScores:
    """Completions of the held-out prompts sampled from p, and their log p: the within-prompt T_eff / τ set."""

    def __init__(self, base, tokenizer, held_out: list, settings: dict):
        self.dataset = sample_dataset(
            base,
            tokenizer,
            [conversation(q) for q, _ in held_out],
            num_samples=settings["samples"],
            max_new_tokens=settings["max_new_tokens"],
            seed=10_000,
            batch_size=64,
        )
        self.groups = dataset_groups(self.dataset, tokenizer)
        self.base_logps, self.lengths = self.logps(base)

    def logps(self, model, token_temperature: float = 1.0):
        scorer = AutoregressiveScorer(token_temperature=token_temperature)
        return score_dataset(model, self.dataset, scorer, batch_size=64, desc="Scoring held-out")

    def report(self, model, token_temperature: float = 1.0) -> dict:
        logps, _ = self.logps(model, token_temperature)
        report = temperature_report(self.base_logps, logps, self.lengths, self.groups)
        return {"t_eff": report["t_eff"], "kendall_tau": report["kendall_tau"]}


def tuned_once(base, tokenizer, train: list, settings: dict, temperature: float) -> dict:
    """The token temperature tuned once on samples of p of the training prompts (`samples` each), with its cost."""
    start = time.perf_counter()
    tuning = sample_dataset(
        base, tokenizer, [conversation(q) for q, _ in train], num_samples=settings["samples"],
        max_new_tokens=settings["max_new_tokens"], seed=20_000, batch_size=64,
    )  # fmt: skip
    groups = dataset_groups(tuning, tokenizer)
    ref, _ = score_dataset(base, tuning, AutoregressiveScorer(), batch_size=64, desc="Scoring tuning samples")
    search: dict = {}
    t, _ = tune_myopic(base, tuning, temperature, ref, groups, search_record=search, batch_size=64)
    return {"token_temperature": t, "tuned_on": "training prompts", "tuning_prompts": len(train),
            "tuning_sequences": len(groups), "tuning_seconds": time.perf_counter() - start}  # fmt: skip


def sampler_rows(base, tokenizer, family, held_out, settings, scores, train=()) -> list[dict]:
    """greedy, ancestral, token temperature, MH and SMC power sampling: no training."""
    seeds, n = settings["seeds"], settings["samples"]

    def row(name, sample, target=None, seeds=seeds, n=n, **extra):
        start = time.perf_counter()
        result = evaluate(sample, base, tokenizer, family, held_out, settings, seeds, n)
        print(f"  {name}: pass@1 {result['pass@1']:.3f} ({time.perf_counter() - start:.0f} s)", flush=True)
        return {"row": name, "target_T": target, **result, **extra}

    kinds, rows = settings["rows"], []
    if "greedy" in kinds:
        rows.append(row("greedy", samplers.greedy, seeds=[0], n=1))
        rows[-1]["pass@8"] = None  # one deterministic answer per prompt
    if "ancestral" in kinds:
        rows.append(row("ancestral", samplers.ancestral(1.0), 1.0, t_eff=1.0, kendall_tau=None))
    for alpha in settings["alphas"]:
        temperature = 1.0 / alpha
        if "token" in kinds:
            rows.append(row(f"token T={temperature:g}", samplers.ancestral(temperature), temperature))
            rows[-1].update(scores.report(base, temperature))
        if "tuned" in kinds:
            once = tuned_once(base, tokenizer, list(train), settings, temperature)
            t = once["token_temperature"]
            rows.append(row(f"token tuned once T={temperature:g}", samplers.ancestral(t), temperature, **once))
            rows[-1].update(scores.report(base, t))
        if "mcmc" in kinds:
            mcmc = samplers.power(alpha, settings["mcmc_steps"], settings["block_size"])
            rows.append(row(f"mcmc α={alpha:g}", mcmc, temperature, mcmc_steps=settings["mcmc_steps"]))
        if "answer" in kinds:
            rows += answer_level_rows(row, tokenizer, family, alpha, settings["answer_samples"])
        if "smc" not in kinds:
            continue
        if samplers.smc_available():
            for particles in settings["smc_particles"]:
                for steps in settings.get("pimh_steps") or [0]:
                    smc = samplers.smc(alpha, particles, pimh_steps=steps)
                    name = f"smc α={alpha:g} N={particles}" + (f" pimh={steps}" if steps else "")
                    rows.append(row(name, smc, temperature, num_particles=particles, pimh_steps=steps))
        else:
            rows.append({"row": f"smc α={alpha:g}", "target_T": temperature, "note": "not available in this build"})
            print(f"  smc α={alpha:g}: not available in this build", flush=True)
    return rows


def answer_level_rows(row, tokenizer, family, alpha: float, sizes: list[int]) -> list[dict]:
    """Majority vote and answer-level sharpening (to p̂(a)^α) over N samples of p and of token temperature 1/α,
    for every N of `sizes` (the answer `family.extract` reads is what they count)."""
    from hf_seqtemp.generation.answer_level import majority_vote, sharpen_answers

    temperature, rows = 1.0 / alpha, []
    sharpen = lambda answers, generator: sharpen_answers(answers, temperature, generator)
    for size in sizes:
        for source, token_temperature in (("p", 1.0), (f"T={temperature:g}", temperature)):
            for method, choose in (("vote", majority_vote), (f"sharpen α={alpha:g}", sharpen)):
                sample = samplers.answer_level(token_temperature, size, family.extract, tokenizer, choose)
                name = f"{method} {source} N={size}"
                rows.append(row(name, sample, temperature, answer_samples=size, source_temperature=token_temperature))
    return rows


def trained_rows(tokenizer, family, train, held_out, settings, device, scores) -> list[dict]:
    """ours T (ratio loss), distill T (SMC distillation) and, at the same training wall time as ours, rloo T, for
    every T = 1/α < 1; then SMC with the distilled adapter as proposal (`smc-adapter α N=...`)."""
    from _task_training import train_distill, train_ours, train_rloo

    prompts = [conversation(q) for q, _ in train]
    rows = []

    def row(name, model, temperature, **extra):
        """pass@1 and costs of the trained `model` sampled at token temperature 1, with its T_eff / τ against p."""
        result = evaluate(samplers.ancestral(1.0), model, tokenizer, family, held_out, settings, settings["seeds"],
                          settings["samples"])  # fmt: skip
        rows.append({"row": name, "target_T": temperature, **result, **scores.report(model), **extra})
        print(f"  {name}: pass@1 {result['pass@1']:.3f}", flush=True)

    with tempfile.TemporaryDirectory() as workdir:
        for alpha in settings["alphas"]:
            temperature = 1.0 / alpha
            if "ours" in settings["rows"]:
                model, seconds, log = train_ours(temperature, prompts, tokenizer, settings, device, workdir)
                print(f"  ours T={temperature:g}: trained {seconds:.0f} s", flush=True)
                row(f"ours T={temperature:g}", model, temperature, train_seconds=seconds,
                    train_steps=settings["max_steps"], train_log=log)  # fmt: skip
                del model
            if "distill" in settings["rows"]:
                model, distill_seconds, log = train_distill(temperature, prompts, tokenizer, settings, device, workdir)
                print(f"  distill T={temperature:g}: trained {distill_seconds:.0f} s", flush=True)
                row(f"distill T={temperature:g}", model, temperature, train_seconds=distill_seconds,
                    train_steps=settings["max_steps"], train_log=log)  # fmt: skip
                adapter_particles = settings["adapter_particles"] if "smc-adapter" in settings["rows"] else []
                chains = settings.get("adapter_pimh_steps") or [0]
                for particles, steps in [(n, k) for n in adapter_particles for k in chains]:  # p^α is the target
                    name = f"smc-adapter α={alpha:g} N={particles}" + (f" pimh={steps}" if steps else "")
                    sampler = samplers.smc(alpha, particles, proposal="adapter", pimh_steps=steps)
                    result = evaluate(sampler, model, tokenizer, family, held_out, settings, settings["seeds"],
                                      settings["samples"])  # fmt: skip
                    rows.append({"row": name, "target_T": temperature, **result, "num_particles": particles,
                                 "pimh_steps": steps, "proposal": f"distill T={temperature:g}"})  # fmt: skip
                    print(f"  {name}: pass@1 {result['pass@1']:.3f}", flush=True)
                del model
            if "rloo" not in settings["rows"]:
                continue
            model, rl_seconds, steps, log = train_rloo(
                temperature, prompts, tokenizer, settings, device, workdir, budget=seconds
            )
            print(f"  rloo T={temperature:g}: trained {rl_seconds:.0f} s, {steps} steps", flush=True)
            row(f"rloo T={temperature:g}", model, temperature, train_seconds=rl_seconds, train_steps=steps,
                beta=1.0 / (alpha - 1.0), train_log=log)  # fmt: skip
            del model
    return rows


def probe(base, tokenizer, families: list[str]) -> list[dict]:
    """Base model's sampled pass@1 at token temperature 1, pass@8 and greedy accuracy on `PROBE` prompts per family
    (the first held-out prompts of seed 0), and whether pass@1 lies in the kept band of 15-70 %."""
    rows = []
    for name in families:
        family = get_family(name)
        _, held_out = split_family(family, 0, PROBE["prompts"], seed=0)
        settings = {"max_new_tokens": PROBE["max_new_tokens"]}
        sampled = evaluate(samplers.ancestral(1.0), base, tokenizer, family, held_out, settings, [0], PROBE["samples"])
        greedy = evaluate(samplers.greedy, base, tokenizer, family, held_out, settings, [0], 1)
        kept = 0.15 <= sampled["pass@1"] <= 0.70
        rows.append({"family": name, "sampled_pass@1": sampled["pass@1"], "ci95": sampled["pass@1_ci95"],
                     "pass@8": sampled["pass@8"], "greedy": greedy["pass@1"], "kept": kept})  # fmt: skip
        print(f"{name}: sampled pass@1 {sampled['pass@1']:.3f} {sampled['pass@1_ci95']}, pass@8 "
              f"{sampled['pass@8']:.3f}, greedy {greedy['pass@1']:.3f} -> {'kept' if kept else 'dropped'}", flush=True)  # fmt: skip
    return rows


def main(argv=None) -> None:
    args = parse_args(argv)
    settings = resolve_settings(args)
    device = pick_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    info = print_device(device)
    info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    info["cpu_model"] = cpu_model()
    out = Path(args.output_dir)
    base, tokenizer = load_default_model(device=device)
    base.eval()
    start = time.perf_counter()
    if args.probe:
        rows = probe(base, tokenizer, args.families or sorted(FAMILIES))
        settings = {"probe": PROBE, "wall_seconds": time.perf_counter() - start}
        write_json(str(out / "probe.json"), "task_probe", info, settings, rows, {})
        return
    print(f"mode {settings['mode']}: {settings}", flush=True)
    if settings["harness"]:
        from _task_harness import main_harness

        return main_harness(base, tokenizer, settings, info, out, start, tuned_once, summarise)
    rows = []
    for name in settings["families"]:
        family = get_family(name)
        train, held_out = split_family(family, settings["train_prompts"], settings["held_out_prompts"], seed=0)
        print(f"{name}: {len(train)} training prompts, {len(held_out)} held-out prompts", flush=True)
        scores = HeldOutScores(base, tokenizer, held_out, settings)
        family_rows = sampler_rows(base, tokenizer, family, held_out, settings, scores, train)
        if set(settings["rows"]) & set(TRAINED_KINDS):
            family_rows += trained_rows(tokenizer, family, train, held_out, settings, device, scores)
        rows += [{"family": name, **r} for r in family_rows]
    settings["wall_seconds"] = time.perf_counter() - start
    settings["smc_available"] = samplers.smc_available()
    print_rows(rows)
    print(f"wall time {settings['wall_seconds']:.0f} s, sampling seeds {settings['seeds']}")
    summary = paired_differences(rows)
    for key, (mean, low, high) in summary.items():
        print(f"pass@1 difference {key}: {mean:+.3f} [{low:+.3f}, {high:+.3f}] (paired over prompts)")
    agreement = answer_agreement(rows)
    for key, distance in agreement.items():
        print(f"answer-level distance {key}: {distance:.3f} (total variation per prompt, across seeds)")
    write_json(str(out / "task_table.json"), "task_table", info, settings, rows,
               {"paired_differences": summary, "answer_distance_to_mcmc": agreement})  # fmt: skip
    (out / "task_table.md").write_text(markdown_table(rows, settings, summary, agreement))
    print(f"wrote {out / 'task_table.md'}")


if __name__ == "__main__":
    main()
