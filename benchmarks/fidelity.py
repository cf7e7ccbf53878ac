# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Temperature fidelity within prompts on unseen prompts (paper Sec. 5.2-5.3, Tables 4-5, autoregressive half).

On the embedded SmolLM2-135M-Instruct, starting from prompts only: the prompts of `hf_seqtemp.tasks.prompts` (short questions
with many plausible short answers, as conversations after the system prompt "Answer briefly.") are split BY PROMPT
into training prompts and held-out prompts that training never sees. The trainer samples `num_generations`
completions of every training prompt from the model itself (exact ancestral sampling); the held-out prompts get
`held_out_generations` completions each, sampled the same way. For every target T the held-out completions are
scored under:

- `myopic`: the base model with every next-token distribution divided by T (`AutoregressiveScorer(token_temperature=T)`);
- `tuned`: the *tuned myopic* baseline, the base model at the token temperature t whose T_eff on these held-out
  prompts is T (`hf_seqtemp.measure.tune_myopic`, a 1-D search; t is in the row as `token_temperature`): the best
  free baseline, so a trained adapter has to beat it on τ and NLL;
- `ssts`: a LoRA adapter trained with the LHTS / L_SSTS objective (`loss_type="ssts"`, Eq. 8 / 18);
- `ratio`: a LoRA adapter trained with L_p + λ·NLL (`loss_type="ratio"`, Eq. 19-20);
- `smc_distill`: a LoRA adapter trained on SMC particles of p^(1/T) (`loss_type="smc_distill"`, `num_generations`
  particles per training prompt, token-temperature proposal), the weighted NLL within each prompt, no λ term;
- `smc_distill_adapter`: the same with the adapter being trained as the particles' proposal (`smc_proposal="adapter"`).

Both adapters start at the myopic solution (`init_from_token_temperature=True`). Reported per method × T, WITHIN
PROMPTS (a prompted model is tempered per prompt: log q(x|c) = log p(x|c)/T − log Z_T(c)): T_eff (Eq. 17, the
least-squares slope of log p on log q after centring both within each prompt), Kendall τ over pairs of completions
of one prompt, and the NLL per token of q. A row is flagged when T_eff misses T by more than 10 % or τ < 0.9; `base`
gives the ceiling of τ (completions sampled twice tie, and ties count 0 in τ-a). The log of the trainer's last
logging window (T_eff / τ on training batches) is kept in the JSON beside the held-out figures, to tell overfitting
from underfitting.

All runs of one benchmark share the base model, the training prompts and the seed, so the trainer's samples and
their reference log-probabilities are the same in every run: they are computed in the first run and reused by the
others (`SharedPreparation`), which is what makes many prompts affordable on a CPU.

Modes:

- `--quick`: a SMOKE RUN (about 5-8 minutes on 2 CPU cores): T ∈ {0.5, 2}, 16 training prompts, 8 held-out, 20 steps;
  far too small to meet the bar and not meant to.
- default (under 60 minutes on 2 CPU cores): T ∈ {0.25, 0.5, 0.8, 2}, see `MODES["default"]`.
- `--full` (meant for a GPU): every prompt of the pool, more completions and steps.

`--train_prompts` past the pool (158 prompts less the held-out ones) goes on with the prompts of
`hf_seqtemp.tasks.prompts.training_extension()`, which only ever train: the held-out prompts stay the pool's. `--split_seed` fixes
the split while `--seed` changes the training (order, particles) and the draws, to tell the spread between training
seeds from the split's. SMC distillation draws each prompt's particles once and re-uses them every epoch, unless
`--sample_every_steps k` draws them afresh (with the adapter proposal, from the adapter as it is then).

A plot per trained run (log p vs log q, raw and centred within prompts, points coloured by prompt) and the JSON go
to `--output_dir` (default `outputs/fidelity`, git-ignored); `--save_adapters DIR` also keeps every trained adapter,
for `load_tempered` and `benchmarks/proposal_ess.py --adapter`.

Usage:
    python benchmarks/fidelity.py [--quick | --full] [--output_dir outputs/fidelity] [--no-plots]
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

from _common import REPO, pick_device, print_device, write_json
from _fidelity_table import (
    add_flags,
    paired_tau_intervals,
    plot_within_prompts,
    print_table,
    summarise,
)
from datasets import Dataset

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, sample_dataset
from hf_seqtemp.config import CONFIG_NAME
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.measure import dataset_groups, score_dataset, temperature_report, tune_myopic
from hf_seqtemp.metrics import per_prompt_kendall_tau
from hf_seqtemp.tasks.prompts import split_prompts

SYSTEM_PROMPT = "Answer briefly."
MODES = {
    "quick": {
        "temperatures": [0.5, 2.0],
        "train_prompts": 16,
        "held_out_prompts": 8,
        "num_generations": 8,
        "held_out_generations": 8,
        "max_completion_length": 10,
        "max_steps": 20,
        "batch_size": 16,
        "ess_samples": 16,
    },
    "default": {
        "temperatures": [0.25, 0.5, 0.8, 2.0],
        "train_prompts": 128,
        "held_out_prompts": 16,
        "num_generations": 16,
        "held_out_generations": 16,
        "max_completion_length": 10,
        "max_steps": 64,
        "batch_size": 16,
        "ess_samples": 16,
    },
    "full": {
        "temperatures": [0.25, 0.5, 0.8, 2.0],
        "train_prompts": 134,
        "held_out_prompts": 24,
        "num_generations": 64,
        "held_out_generations": 32,
        "max_completion_length": 16,
        "max_steps": 1000,
        "batch_size": 64,
        "ess_samples": 16,
    },
}
TRAINING = {"learning_rate": 1e-3, "nll_weight": 0.1, "lora_r": 16, "lr_scheduler_type": "cosine"}
METHODS = ("myopic", "ssts", "ratio", "smc_distill", "smc_distill_adapter")
LOSSES = {"smc_distill_adapter": ("smc_distill", "adapter")}  # method → (loss_type, smc_proposal)


def method_spec(text: str) -> str:
    """`--methods` entry: a trained method, `none`, or `METHOD@STEPS` (that method trained for STEPS optimiser steps
    instead of the mode's `max_steps`, e.g. `ratio@128` beside `smc_distill` to compare at equal wall time)."""
    name, at, steps = text.partition("@")
    bad_steps = bool(at) and (name == "none" or not steps.isdigit() or int(steps) < 1)
    if name not in (*METHODS[1:], "none") or bad_steps:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected one of {', '.join((*METHODS[1:], 'none'))}, optionally followed by @STEPS with "
            "STEPS a positive integer (e.g. ratio@128)"
        )
    return text


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer (e.g. 4)")
    return int(text)


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 (off) or a positive integer (e.g. 16)")
    return int(text)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="SMOKE RUN: T in {0.5, 2}, 16 prompts, 20 steps")
    mode.add_argument("--full", action="store_true", help="for a GPU: every prompt, 64 completions each, 1000 steps")
    parser.add_argument("--temperatures", type=float, nargs="+", help="override the mode's target temperatures")
    parser.add_argument(
        "--methods",
        nargs="+",
        type=method_spec,
        help=f"trained methods to run, among {', '.join(METHODS[1:])} (default: all; `none`: the baselines only, no "
        "training); METHOD@STEPS trains that method for STEPS steps instead of max_steps (row `METHOD@STEPS`)",
    )
    for name, kind in (("max_steps", int), ("learning_rate", float), ("nll_weight", float), ("lora_r", int)):
        parser.add_argument(f"--{name}", type=kind, help=f"override the mode's {name}")
    for name in ("train_prompts", "held_out_prompts", "num_generations", "batch_size"):
        parser.add_argument(f"--{name}", type=positive_int, help=f"override the mode's {name}")
    parser.add_argument(
        "--ess_repeats",
        type=positive_int,
        default=1,
        help="independent draws of ess_samples answers per prompt and proposal whose ESS / N is averaged (default 1)",
    )
    parser.add_argument(
        "--ess_train_prompts",
        type=non_negative_int,
        default=0,
        help="also measure the ESS figures on up to this many prompts each adapter was trained on (rows' `train_` "
        "keys; methods that draw samples during training, e.g. smc_distill): tells generalisation from fit",
    )
    parser.add_argument(
        "--sample_every_steps",
        type=positive_int,
        default=None,
        help="SMC distillation rows only: draw each prompt's particles afresh (from the adapter as it is then, for "
        "smc_distill_adapter) whenever a batch reads them after this many steps, instead of once for every epoch "
        "(default: once); the other rows keep their fixed samples of p",
    )
    parser.add_argument(
        "--steps_per_generation",
        dest="sample_every_steps",
        type=positive_int,
        help="the old name of --sample_every_steps (the recorded commands of two committed results use it)",
    )
    parser.add_argument(
        "--save_adapters",
        default=None,
        help="also save every trained adapter (weights, seqtemp_config.json, card) to DIR/<method>_T<T>, for "
        "`load_tempered` and `benchmarks/proposal_ess.py --adapter`; refused before training if one of those folders "
        "already holds an adapter (default: not saved)",
    )
    parser.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True, help="save a plot per run")
    parser.add_argument("--output_dir", default=str(REPO / "outputs" / "fidelity"), help="plots and fidelity.json")
    parser.add_argument("--output", default=None, help="path of the JSON (default: <output_dir>/fidelity.json)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (CPU runs only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--split_seed",
        type=int,
        default=None,
        help="seed of the split into training and held-out prompts (default: --seed); another --seed with the same "
        "--split_seed changes only the training (order, particles) and the draws: it tells training-seed spread from "
        "the split's",
    )
    return parser.parse_args(argv)


def resolve_settings(args: argparse.Namespace) -> dict:
    mode = "quick" if args.quick else "full" if args.full else "default"
    settings = {"mode": mode, **MODES[mode], **TRAINING, "methods": list(METHODS[1:]), "seed": args.seed}
    for name in ("temperatures", "methods", "max_steps", "learning_rate", "nll_weight", "lora_r"):
        if getattr(args, name, None) is not None:
            settings[name] = getattr(args, name)
    for name in ("train_prompts", "held_out_prompts", "num_generations", "batch_size"):
        if getattr(args, name, None) is not None:
            settings[name] = getattr(args, name)
    settings["ess_repeats"] = getattr(args, "ess_repeats", 1)
    settings["ess_train_prompts"] = getattr(args, "ess_train_prompts", 0)
    settings["sample_every_steps"] = getattr(args, "sample_every_steps", None)
    settings["save_adapters"] = getattr(args, "save_adapters", None)
    if settings["save_adapters"]:  # refused before any training, not after an hour of it
        taken = [
            folder
            for method in settings["methods"]
            for temperature in settings["temperatures"]
            if method != "none"
            and (
                Path(folder := adapter_folder(settings["save_adapters"], method, temperature)) / CONFIG_NAME
            ).is_file()
        ]
        if taken:
            raise ValueError(
                f"--save_adapters {settings['save_adapters']!r}: {', '.join(taken)} already hold(s) a saved adapter; "
                "pass another folder or remove those (a run never overwrites a saved adapter)"
            )
    split_seed = getattr(args, "split_seed", None)
    settings["split_seed"] = args.seed if split_seed is None else split_seed
    settings["methods"] = [m for m in settings["methods"] if m != "none"]
    return settings


class SharedPreparation:
    """The trainer's samples and reference scores, computed by the first run and reused by the others.

    Every run of the benchmark trains from the same prompts with the same reference p (the adapter disabled), the
    same `num_generations`, `max_completion_length` and seed, so it would draw the same completions and compute the
    same reference log-probabilities; `trainer_class()` is a `SeqTempTrainer` that takes them from here instead.
    """

    def __init__(self):
        self.completed, self.reference = None, None

    def trainer_class(self) -> type:
        shared = self

        class SharedTrainer(SeqTempTrainer):
            def _complete_prompt_only_datasets(self):
                if self.objective.draws_particles:  # SMC particles are drawn during training, per run
                    return super()._complete_prompt_only_datasets()
                if shared.completed is None:
                    super()._complete_prompt_only_datasets()
                    shared.completed = self.train_dataset
                    if "train" in self._scored_by_sampler:  # its reference columns came with the samples
                        shared.reference = self.train_dataset
                self.train_dataset = shared.completed

            def _add_reference_columns(self, dataset, split):
                needed = {"ref_logps"} | (
                    {self.family.reference_column} if self.objective.needs_ref_token_logps else set()
                )
                if shared.reference is None or not needed <= set(shared.reference.column_names):
                    shared.reference = super()._add_reference_columns(dataset, split)
                return shared.reference

        return SharedTrainer


def conversations(prompts: list[str]) -> list[list[dict]]:
    return [[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": p}] for p in prompts]


def train_adapter(method: str, temperature: float, settings: dict, train, tokenizer, device, shared, workdir: str):
    """A fresh base model with a LoRA adapter trained towards sequence temperature `temperature`; returns the model,
    the trainer's logged training figures (loss, T_eff and τ on training batches), its steps and times:
    `prepare_seconds` builds the trainer (the first run that needs p's samples draws and scores them there, the others
    reuse them), `train_seconds` is the trainer's own runtime (SMC particles are drawn there)."""
    model, _ = load_default_model(device=device)
    torch.manual_seed(settings["seed"])
    name, _, steps = method.partition("@")
    max_steps = int(steps) if steps else settings["max_steps"]
    loss_type, proposal = LOSSES.get(name, (name, "token"))
    config = SeqTempConfig(
        output_dir=f"{workdir}/{method.replace('@', '_steps')}_{temperature:g}",
        target_temperature=temperature,
        loss_type=loss_type,
        smc_proposal=proposal,
        # SMC distillation is a likelihood of the target itself: no λ term (its default)
        nll_weight=0.0 if loss_type == "smc_distill" else settings["nll_weight"],
        # fresh particles during training (SMC rows only: the other rows train on the shared samples of p)
        sample_every_steps=settings.get("sample_every_steps") if loss_type == "smc_distill" else None,
        num_generations=settings["num_generations"],
        max_completion_length=settings["max_completion_length"],
        max_steps=max_steps,
        per_device_train_batch_size=settings["batch_size"],
        per_device_eval_batch_size=32,
        learning_rate=settings["learning_rate"],
        lr_scheduler_type=settings["lr_scheduler_type"],
        logging_steps=max(1, max_steps // 4),
        save_strategy="no",
        seed=settings["seed"],
        use_cpu=device.type == "cpu",
        init_from_token_temperature=bool(settings.get("init", True)),
        disable_tqdm=True,
    )
    r = settings["lora_r"]
    lora = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    start = time.perf_counter()
    trainer = shared.trainer_class()(model, config, train_dataset=train, processing_class=tokenizer, peft_config=lora)
    prepare_seconds = time.perf_counter() - start
    train_seconds = trainer.train().metrics["train_runtime"]
    if settings.get("save_adapters"):
        trainer.save_model(adapter_folder(settings["save_adapters"], method, temperature))
    keys = ("step", "loss", "temp/t_eff", "temp/kendall_tau", "ess/proposal_fraction")  # the last: SMC rows only
    logged = [
        {k: entry[k] for k in keys if k in entry} for entry in trainer.state.log_history if "temp/t_eff" in entry
    ]
    timing = {"max_steps": max_steps, "prepare_seconds": prepare_seconds, "train_seconds": train_seconds}
    timing["trained_prompt_indices"] = trained_prompt_indices(trainer, train, tokenizer)
    return trainer.model, logged, timing


def adapter_folder(root: str, method: str, temperature: float) -> str:
    """Where `--save_adapters root` puts the adapter of `method` at `temperature` (`@` of METHOD@STEPS → `_steps`, as
    in the plots' names)."""
    return str(Path(root) / f"{method.replace('@', '_steps')}_T{temperature:g}")


def trained_prompt_indices(trainer, train, tokenizer) -> list[int] | None:
    """Indices (into `train`) of the prompts of the batches the trainer trained on (its sampler's order, over all
    prompts once the run passed an epoch); None when it drew no samples during training (its samples were drawn
    before, for every prompt). Not the prompts whose particles were drawn: the dataloader collates one batch ahead."""
    pool = getattr(trainer, "_pool", None)
    if pool is None:
        return None
    n, args = pool.num_generations, trainer.args
    rows = trainer.state.global_step * args.per_device_train_batch_size * args.gradient_accumulation_steps
    order = list(trainer._get_train_sampler())
    indices = sorted({i // n for i in order[:rows]})
    for index in indices:  # the pool keeps the dataset's prompt order, `num_generations` slots each
        rendered = tokenizer.decode(pool.prompt_ids[index * n])
        prompt = train[index]["prompt"]
        if (
            pool.rows[index * n] is None
            or (prompt if isinstance(prompt, str) else prompt[-1]["content"]) not in rendered
        ):
            raise RuntimeError(f"pool slot {index * n} holds {rendered!r}, not training prompt {index}'s particles")
    return indices


def proposal_figures(model, tokenizer, prompts: list[str], temperature: float, settings: dict) -> dict:
    """SMC's two proposals on the held-out prompts (`proposal_ess.py`): per prompt, ESS / N of `N = ess_samples`
    whole answers drawn from token temperature T and from this adapter (mean over `ess_repeats` draws), weighed
    against the base's `p^(1/T)`; the row keeps the medians and `ess_ratio_adapter_over_token` (the median over
    prompts of adapter / token). The companion over the prompts where 2 is reachable selects them on independent
    token draws (`reachable_selected_on`)."""
    if not settings.get("ess_samples"):
        return {}
    from proposal_ess import compare_proposals

    per_prompt, summary = compare_proposals(
        model, tokenizer, prompts, SYSTEM_PROMPT, temperature, num_samples=settings["ess_samples"],
        repeats=settings.get("ess_repeats", 1),
        max_new_tokens=settings["max_completion_length"], seed=settings["seed"],
    )  # fmt: skip
    keep = (  # the intervals: 95 % bootstrap of the median, over prompts / over each prompt's draws (absent with one
        # draw per prompt), over the prompts where 2 is reachable (absent with fewer than two)
        "ess_ratio_adapter_over_token",
        "ess_ratio_interval",
        "ess_ratio_interval_these_prompts",
        "prompts_with_ratio_at_least_2",
        "reachable_selected_on",
        "prompts_where_2_is_reachable",
        "ess_ratio_where_2_is_reachable",
        "ess_ratio_where_2_is_reachable_interval",
        "median_token_ess_fraction",
        "median_adapter_ess_fraction",
    )
    return {**{key: summary[key] for key in keep if key in summary}, "ess_per_prompt": per_prompt}


def sample_held_out(model, tokenizer, prompts: list[str], settings: dict) -> Dataset:
    """`held_out_generations` completions of every held-out prompt, sampled exactly from the base model."""
    return sample_dataset(
        model,
        tokenizer,
        conversations(prompts),
        num_samples=settings["held_out_generations"],
        max_new_tokens=settings["max_completion_length"],
        seed=settings["seed"] + 1,
        batch_size=32,
    )


def run(settings: dict, device: torch.device, plots_dir: str | None) -> tuple[list[dict], dict]:
    """Trains and measures every method × T on the held-out prompts; returns the rows and the run's extra info."""
    base, tokenizer = load_default_model(device=device)
    train_prompts, held_prompts = split_prompts(
        settings["train_prompts"], settings["held_out_prompts"], settings["split_seed"]
    )
    train = Dataset.from_dict({"prompt": conversations(train_prompts)})
    held_out = sample_held_out(base, tokenizer, held_prompts, settings)
    groups = dataset_groups(held_out, tokenizer)

    kw = {"batch_size": 32}

    def score(model, token_temperature: float = 1.0):
        scorer = AutoregressiveScorer(token_temperature=token_temperature)
        return score_dataset(model, held_out, scorer, batch_size=32, desc="Scoring held-out")

    base_logps, lengths = score(base)
    rows = [{"method": "base", "target": 1.0, **temperature_report(base_logps, base_logps, lengths, groups)}]
    rows[0]["seconds"] = 0.0
    shared, plots, training_logs, unreachable = SharedPreparation(), [], {}, {}
    with tempfile.TemporaryDirectory() as workdir:
        for temperature in settings["temperatures"]:
            logps, this_t = {"base": base_logps}, {}
            for method in ("myopic", "tuned", *settings["methods"]):
                start = time.perf_counter()
                extra = {}
                if method == "myopic":
                    logps[method], _ = score(base, temperature)
                elif method == "tuned":  # the token temperature whose T_eff on these prompts is T
                    known = {temperature: logps["myopic"]}
                    try:
                        token_t, logps[method] = tune_myopic(
                            base, held_out, temperature, base_logps, groups, known, **kw
                        )
                    except ValueError as error:  # no token temperature reaches T: the row says so, the run goes on
                        unreachable[f"{temperature:g}"] = str(error)
                        print(f"T = {temperature:g}  tuned: none ({error})", flush=True)
                        continue
                    extra = {"token_temperature": token_t}
                else:
                    model, training_logs[f"{method}_T{temperature:g}"], extra = train_adapter(
                        method, temperature, settings, train, tokenizer, device, shared, workdir
                    )
                    logps[method], _ = score(model)
                    extra.update(proposal_figures(model, tokenizer, held_prompts, temperature, settings))
                    trained = extra.pop("trained_prompt_indices")
                    if settings.get("ess_train_prompts") and trained is None:
                        print(f"{method}: drew no samples during training, so no ESS on its training prompts")
                    elif settings.get("ess_train_prompts"):  # the same figures on prompts it trained on
                        seen = [train_prompts[i] for i in trained[: settings["ess_train_prompts"]]]
                        figures = proposal_figures(model, tokenizer, seen, temperature, settings)
                        extra.update({f"train_{key}": value for key, value in figures.items()})
                    del model
                report = temperature_report(base_logps, logps[method], lengths, groups)
                report["tau_per_prompt"] = list(per_prompt_kendall_tau(base_logps, logps[method], groups).values())
                rows.append({"method": method, "target": temperature, **report, **extra})
                this_t[method] = report
                rows[-1]["seconds"] = time.perf_counter() - start
                print(
                    f"T = {temperature:g} {method:>6}: T_eff {report['t_eff']:.4f}, τ {report['kendall_tau']:.4f}, "
                    f"NLL/token {report['nll_per_token']:.4f} ({rows[-1]['seconds']:.0f} s)",
                    flush=True,
                )
                if plots_dir and method not in ("myopic", "tuned"):
                    reports = {"myopic": this_t["myopic"], "tempered": report}
                    run_logps = {"base": base_logps, "myopic": logps["myopic"], "tempered": logps[method]}
                    path = f"{plots_dir}/{method.replace('@', '_steps')}_T{temperature:g}.png"
                    title = f"SmolLM2-135M-Instruct, {method}"
                    plots.append(plot_within_prompts(run_logps, groups, reports, temperature, path, title))
    info = {
        "num_train_prompts": len(train_prompts),
        "num_train_completions": len(shared.completed) if shared.completed is not None else 0,
        "num_held_out_prompts": len(set(groups)),
        "num_held_out_completions": len(held_out),
        "held_out_prompts": held_prompts,
        "training_logs": training_logs,
        "plots": plots,
        "tuned_unreachable": unreachable,  # targets no token temperature reaches (no tuned row there)
    }
    return add_flags(rows), info


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        settings = resolve_settings(args)
    except ValueError as error:  # a setting that cannot run: said before any model loads
        sys.exit(f"fidelity.py: error: {error}")
    device = pick_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    info = print_device(device)
    if settings["mode"] == "quick":
        print(
            "QUICK MODE: a smoke run that checks the pipeline end to end; its sizes are far too small to meet the bar."
        )
    print(f"mode {settings['mode']}: {settings}")
    output_dir = Path(args.output_dir)
    plots_dir = output_dir / "plots" if args.plots else None
    if plots_dir:
        plots_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows, measured = run(settings, device, str(plots_dir) if plots_dir else None)
    settings.update(measured)
    print_table(rows, "SmolLM2-135M-Instruct, held-out prompts never trained on, within prompts")
    print(
        f"{measured['num_train_prompts']} training prompts ({measured['num_train_completions']} completions), "
        f"{measured['num_held_out_prompts']} held-out prompts ({measured['num_held_out_completions']} completions)"
    )
    from proposal_ess import reachable_text

    intervals = paired_tau_intervals(rows)
    for key, (mean, low, high) in intervals.items():
        print(f"{key}: {mean:+.4f} [{low:+.4f}, {high:+.4f}] (95 % bootstrap over held-out prompts)")
    for r in rows:
        for prefix, where in (("", "held-out prompts"), ("train_", "prompts it trained on")):
            if f"{prefix}ess_ratio_interval" in r:
                low, high = r[f"{prefix}ess_ratio_interval"]
                print(
                    f"{r['method']}_T{r['target']:g} ESS ratio adapter/token on {where}: median "
                    f"{r[f'{prefix}ess_ratio_adapter_over_token']:.2f} [{low:.2f}, {high:.2f}] (95 % bootstrap "
                    f"over prompts), {r[f'{prefix}prompts_with_ratio_at_least_2']}/{len(r[f'{prefix}ess_per_prompt'])}"
                    f" prompts at >= 2; {reachable_text(r, prefix)}"
                )
    settings["wall_seconds"] = time.perf_counter() - start
    print(f"wall time: {settings['wall_seconds']:.0f} s" + (" (QUICK MODE: smoke run)" if args.quick else ""))
    summary = {**summarise(rows), **intervals}
    write_json(args.output or str(output_dir / "fidelity.json"), "fidelity", info, settings, rows, summary)


if __name__ == "__main__":
    main()
