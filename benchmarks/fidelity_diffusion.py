# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Temperature fidelity of a block-diffusion LM within prompts, on unseen prompts (paper Sec. 5.2-6, Tables 4-5).

Base model p: a small `BertForMaskedLM` (hidden 64, 2 layers) trained FROM SCRATCH as a block-diffusion LM
(`BlockDiffusionWrapper`, B = 4; the block ELBO L_diff of Eq. 4, `diffusion_elbo_loss`) on a prompted task with real
spread of log p: a 4-token prompt (exactly block 0) over 8 real tokens, then 8 completion tokens (2 blocks) drawn
from a Markov chain that starts at the prompt's last token, whose transition logits are a fixed random matrix
(half of the states sharp, half diffuse) plus a bonus `beta` for every token that occurs in the prompt. Because the
entropy of the future depends on the state reached, sequence temperature differs from token temperature: the
myopic baseline misses the targets (see the table), which is what a fidelity benchmark has to be able to show. The
mask token is never sampled nor scored (conditionals are renormalised over the real tokens).

Data: `train_prompts` and `held_out_prompts` distinct random prompts (held out BY PROMPT: the tempered models never
see a held-out prompt), each with `generations` completions sampled exactly from p by `diffusion_generate(policy=
"random", block_length=4)` (blocks in turn, a uniform random order inside each: the distribution whose likelihood
the exact DP computes; `tests/test_benchmark_fidelity_diffusion.py` checks it by enumeration).

Methods per target T, all scored on the held-out completions by the exact block DP (Prop. 4.6):

- `myopic`: p with every conditional divided by T (`BlockDiffusionScorer(token_temperature=T)`);
- `L_p`: `loss_type="ratio"` with `likelihood_method="exact"` (the DP inside the loss) + λ·L_diff;
- `L_k=4`: the same with `likelihood_method="mc"`: k = 4 fresh orders per step for log q̃ (Eq. 23-24), 16 for the
  precomputed reference log p̃ (different k's are allowed by Sec. 5.2.3).

Both trained models are full fine-tunings of p, batches of whole prompt groups (`num_generations` completions of
one prompt). Per row, WITHIN PROMPTS: T_eff (Eq. 17), Kendall τ-a over pairs of completions of one prompt (ties,
i.e. duplicate completions, count 0: `base` shows that ceiling), NLL per token of q, and the schedule variance of q
(mean over held-out sequences of the exact Var_π log q(x; π)); a row is flagged when T_eff misses T by more than
10 % or τ < 0.9.

Modes (one torch thread; measured with the other core busy): `--quick` (a SMOKE RUN, 247 s: T ∈ {0.5, 2}, 64
prompts, a base trained for 1000 steps, 100 tuning steps); default (2410 s: T ∈ {0.25, 0.5, 0.8, 2}, 512 training
prompts × 16 completions, 600 steps; the table and the sweep behind these sizes are in
`benchmarks/results/FIDELITY.md`); `--full` (for a GPU: more prompts, completions and steps; not measured).

Usage:
    python benchmarks/fidelity_diffusion.py [--quick | --full] [--output_dir outputs/fidelity_diffusion]
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from datasets import Dataset
from transformers import BertConfig, BertForMaskedLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import REPO, pick_device, print_device, write_json
from _fidelity_table import add_flags, plot_within_prompts, print_table, summarise

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.generation.diffusion import diffusion_generate
from hf_seqtemp.likelihood.block_diffusion import BlockDiffusionScorer
from hf_seqtemp.likelihood.elbo import diffusion_elbo_loss
from hf_seqtemp.likelihood.schedule_variance import schedule_variance
from hf_seqtemp.measure import temperature_report
from hf_seqtemp.models.diffusion import BlockDiffusionWrapper

TASK = {"vocab": 8, "prompt": 4, "completion": 8, "sharp": 3.0, "diffuse": 0.5, "beta": 1.0, "task_seed": 0}
BASE = {"block_size": 4, "hidden": 64, "layers": 2, "base_steps": 3000, "base_batch": 256, "base_lr": 3e-3}
TRAINING = {"learning_rate": 3e-3, "nll_weight": 0.05, "batch_size": 64, "num_orders": 4, "ref_num_orders": 16}
DIFFUSION_MODES = {
    "quick": {
        "temperatures": [0.5, 2.0],
        "train_prompts": 64,
        "held_out_prompts": 8,
        "generations": 16,
        "max_steps": 100,
        "base_steps": 1000,
    },
    "default": {  # 512 prompts: with 32 (and 1000 steps) L_p fits the training prompts (τ 0.99) but not unseen ones
        "temperatures": [0.25, 0.5, 0.8, 2.0],
        "train_prompts": 512,
        "held_out_prompts": 16,
        "generations": 16,
        "max_steps": 600,
    },
    "full": {
        "temperatures": [0.25, 0.5, 0.8, 2.0],
        "train_prompts": 256,
        "held_out_prompts": 64,
        "generations": 64,
        "max_steps": 2000,
        "batch_size": 128,
    },
}
SCORE_BATCH = 4096  # partial states per forward call when scoring held-out sequences


def mode_settings(mode: str) -> dict:
    """The task, base model, training and mode settings of `mode` (`"quick"`, `"default"` or `"full"`) in one dict."""
    if mode not in DIFFUSION_MODES:
        raise ValueError(f"`mode` must be one of {sorted(DIFFUSION_MODES)}, got {mode!r}.")
    return {"mode": mode, **TASK, **BASE, **TRAINING, **DIFFUSION_MODES[mode]}


def method_names(settings: dict) -> dict[str, str | None]:
    """Row name -> `likelihood_method` of the trained model (`None` for the untrained myopic baseline)."""
    return {"myopic": None, "L_p": "exact", f"L_k={settings['num_orders']}": "mc"}


def transition_logits(settings: dict) -> torch.Tensor:
    """The task's fixed `(vocab, vocab)` transition logits: rows of the first half of the states scaled by `sharp`,
    of the second half by `diffuse`."""
    vocab = settings["vocab"]
    generator = torch.Generator().manual_seed(settings["task_seed"])
    scale = torch.tensor([settings["sharp"]] * (vocab // 2) + [settings["diffuse"]] * (vocab - vocab // 2))
    return torch.randn(vocab, vocab, generator=generator) * scale[:, None]


def sample_task(prompts: torch.Tensor, settings: dict, generator: torch.Generator) -> torch.Tensor:
    """Prompt + completion rows of the task: a Markov chain from the prompt's last token whose transition logits get
    `beta` per occurrence of a token in the prompt."""
    logits_table = transition_logits(settings)
    counts = torch.zeros(len(prompts), settings["vocab"]).scatter_add(1, prompts, torch.ones(prompts.shape))
    state, completion = prompts[:, -1], []
    for _ in range(settings["completion"]):
        probs = (logits_table[state] + settings["beta"] * counts).softmax(-1)
        state = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        completion.append(state)
    return torch.cat([prompts, torch.stack(completion, 1)], 1)


def build_base(settings: dict, device: torch.device) -> BlockDiffusionWrapper:
    """The base model p: a BERT block-diffusion LM trained from scratch for `base_steps` steps of fresh task samples
    (random prompts) with the block ELBO; the mask token (id = vocab) is the extra last token."""
    torch.manual_seed(settings["task_seed"] + 1)
    config = BertConfig(
        vocab_size=settings["vocab"] + 1,
        hidden_size=settings["hidden"],
        num_hidden_layers=settings["layers"],
        num_attention_heads=max(1, settings["hidden"] // 32),
        intermediate_size=4 * settings["hidden"],
        max_position_embeddings=settings["prompt"] + settings["completion"],
        pad_token_id=None,  # no zero-initialised, frozen token embedding
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=settings.get("init_range", 0.02),
    )
    model = BlockDiffusionWrapper(BertForMaskedLM(config), settings["vocab"], settings["block_size"]).to(device)
    steps = settings["base_steps"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["base_lr"], weight_decay=0.0)
    warmup = max(1, steps // 30)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / max(steps, 1)))
    )
    generator = torch.Generator().manual_seed(settings["task_seed"] + 2)
    batch, length = settings["base_batch"], settings["prompt"] + settings["completion"]
    completion = torch.zeros(batch, length, dtype=torch.bool, device=device)
    completion[:, settings["prompt"] :] = True
    for _ in range(steps):
        prompts = torch.randint(0, settings["vocab"], (batch, settings["prompt"]), generator=generator)
        ids = sample_task(prompts, settings, generator).to(device)
        loss = diffusion_elbo_loss(model, ids, torch.ones_like(ids), completion, settings["block_size"], generator)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return model.eval()


def distinct_prompts(num: int, settings: dict, seed: int) -> torch.Tensor:
    """`num` distinct random prompts of `prompt` tokens."""
    generator, seen = torch.Generator().manual_seed(seed), {}
    while len(seen) < num:
        prompt = torch.randint(0, settings["vocab"], (settings["prompt"],), generator=generator)
        seen.setdefault(tuple(prompt.tolist()), prompt)
    return torch.stack(list(seen.values()))


@torch.no_grad()
def sample_completions(model, prompts: torch.Tensor, settings: dict, generator: torch.Generator):
    """Exact samples of p after each prompt row: blocks in turn, a uniform random order inside each, one token per step.

    Returns:
        A tuple `(input_ids, completion_mask)` of shape `(len(prompts), prompt + completion)`.
    """
    ids = diffusion_generate(
        model,
        prompts.to(generator.device),
        max_new_tokens=settings["completion"],
        policy="random",
        block_length=settings["block_size"],
        generator=generator,
    )
    completion = torch.zeros_like(ids, dtype=torch.bool)
    completion[:, prompts.shape[1] :] = True
    return ids, completion


@torch.no_grad()
def exact_scores(
    model, ids, completion, block_size: int, token_temperature: float = 1.0
) -> tuple[torch.Tensor, float]:
    """Exact log q(x) per sequence (block DP) and the mean exact schedule variance Var_π log q(x; π)."""
    model.eval()
    scorer = BlockDiffusionScorer(block_size, token_temperature=token_temperature, max_batch=SCORE_BATCH)
    logps = scorer(model, ids, None, completion).double().cpu()
    variance = schedule_variance(
        model, ids, None, completion, block_size=block_size, token_temperature=token_temperature, max_batch=SCORE_BATCH
    )
    return logps, variance.mean().item()


def train_tempered(base, likelihood_method: str, temperature: float, settings: dict, train, device, workdir: str):
    """A full fine-tuned copy of `base` trained with L_p (`"exact"`) or L_k (`"mc"`) + λ·L_diff towards T."""
    model = copy.deepcopy(base)
    config = SeqTempConfig(
        output_dir=f"{workdir}/{likelihood_method}_{temperature:g}",
        target_temperature=temperature,
        loss_type="ratio",
        likelihood_method=likelihood_method,
        num_orders=settings["num_orders"],
        ref_num_orders=settings["ref_num_orders"],
        nll_weight=settings["nll_weight"],
        num_generations=settings["num_generations"],
        learning_rate=settings["learning_rate"],
        lr_scheduler_type="cosine",
        max_steps=settings["max_steps"],
        per_device_train_batch_size=settings["batch_size"],
        per_device_eval_batch_size=256,
        logging_steps=settings["max_steps"],
        save_strategy="no",
        seed=settings["seed"],
        use_cpu=device.type == "cpu",
        disable_tqdm=True,
    )
    trainer = SeqTempTrainer(model, config, train_dataset=train)
    trainer.train()
    return trainer.model.eval()


def reference_estimates(base, ids, completion, base_logps, groups, settings: dict) -> dict[str, dict]:
    """Within-prompt T_eff and τ against the exact log p of the k-order estimate log p̃ (Eq. 23) that L_k regresses
    on, for k = `num_orders` and k = `ref_num_orders` (the one used); keys `"k=4"`, `"k=16"`."""
    estimates = {}
    for k in sorted({settings["num_orders"], settings["ref_num_orders"]}):
        scorer = BlockDiffusionScorer(
            settings["block_size"], method="mc", num_orders=k, seed=settings["seed"], max_batch=SCORE_BATCH
        )
        with torch.no_grad():
            estimate = scorer(base, ids, None, completion).double().cpu()
        report = temperature_report(base_logps, estimate, completion.sum(1).cpu(), groups)
        estimates[f"k={k}"] = {"t_eff": report["t_eff"], "kendall_tau": report["kendall_tau"]}
    return estimates


def make_data(base, settings: dict, device) -> tuple[Dataset, torch.Tensor, torch.Tensor, list[int]]:
    """Samples `generations` completions of every training and every held-out prompt from p (disjoint prompts).

    Returns:
        `(train, held_ids, held_completion, held_groups)`: the training set (`input_ids`, `completion_mask`; its
        prompt groups are the prompts' tokens) and the held-out completions with their prompt index.
    """
    prompts = distinct_prompts(settings["train_prompts"] + settings["held_out_prompts"], settings, settings["seed"])
    per_prompt = settings["generations"]
    generator = torch.Generator(device=device).manual_seed(settings["seed"])
    ids, completion = sample_completions(base, prompts.repeat_interleave(per_prompt, 0), settings, generator)
    n = settings["train_prompts"] * per_prompt
    train = Dataset.from_dict({"input_ids": ids[:n].tolist(), "completion_mask": completion[:n].int().tolist()})
    groups = torch.arange(settings["held_out_prompts"]).repeat_interleave(per_prompt).tolist()
    return train, ids[n:], completion[n:], groups


def run_diffusion(mode: str, temperatures: list[float] | None = None, seed: int = 0, device=None, overrides=None):
    """Trains the base model, samples the data, then measures every method × T on the held-out prompts.

    Returns:
        A tuple `(rows, info)`: one dict per (method, T) with `method`, `target`, `t_eff`, `kendall_tau`,
        `nll_per_token`, `schedule_variance`, `seconds` and the flags `rel_error`, `within_10pct`, `tau_ok` (the
        first row is `base`, target 1); `info` holds the settings, sizes, the base model's within-prompt spread, the
        quality of the L_k reference estimate, and `plots` = {T: {row method: held-out log-likelihoods}} with
        `lengths` and `groups`.
    """
    settings = {**mode_settings(mode), "seed": seed, **(overrides or {})}
    settings.setdefault("num_generations", min(settings["generations"], settings["batch_size"]))
    if temperatures:
        settings["temperatures"] = list(temperatures)
    device = torch.device(device) if device is not None else pick_device()
    start = time.perf_counter()
    base = build_base(settings, device)
    base_seconds = time.perf_counter() - start
    train, held, held_completion, groups = make_data(base, settings, device)
    lengths = held_completion.sum(1).cpu()
    block = settings["block_size"]
    base_logps, base_variance = exact_scores(base, held, held_completion, block)
    rows = [{"method": "base", "target": 1.0, **temperature_report(base_logps, base_logps, lengths, groups)}]
    rows[0].update(schedule_variance=base_variance, seconds=base_seconds)
    plots = {}
    with tempfile.TemporaryDirectory() as workdir:
        for temperature in settings["temperatures"]:
            logps = {"base": base_logps}
            for method, likelihood_method in method_names(settings).items():
                start = time.perf_counter()
                if likelihood_method is None:
                    logps[method], variance = exact_scores(base, held, held_completion, block, temperature)
                else:
                    model = train_tempered(base, likelihood_method, temperature, settings, train, device, workdir)
                    logps[method], variance = exact_scores(model, held, held_completion, block)
                    del model
                report = temperature_report(base_logps, logps[method], lengths, groups)
                rows.append({"method": method, "target": temperature, **report, "schedule_variance": variance})
                rows[-1]["seconds"] = time.perf_counter() - start
                print(
                    f"T = {temperature:g} {method:>6}: T_eff {report['t_eff']:.4f}, τ {report['kendall_tau']:.4f}, "
                    f"NLL/token {report['nll_per_token']:.4f}, Var_π {variance:.3f} ({rows[-1]['seconds']:.0f} s)",
                    flush=True,
                )
            plots[temperature] = logps
    centred = (
        base_logps
        - torch.zeros(len(set(groups)), dtype=base_logps.dtype).index_add(0, torch.tensor(groups), base_logps)[groups]
        / settings["generations"]
    )
    info = {
        "settings": settings,
        "num_train": len(train),
        "num_held_out": len(held),
        "base_logp_within_prompt_std": centred.std().item(),
        "reference_estimates": reference_estimates(base, held, held_completion, base_logps, groups, settings),
        "plots": plots,
        "lengths": lengths,
        "groups": groups,
    }
    return add_flags(rows), info


def save_plots(rows: list[dict], info: dict, folder: Path) -> list[str]:
    """One plot per trained run: log p vs log q, raw and centred within prompts, points coloured by prompt."""
    folder.mkdir(parents=True, exist_ok=True)
    reports = {(r["method"], r["target"]): r for r in rows}
    paths = []
    for temperature, logps in info["plots"].items():
        for method in logps:
            if method in ("base", "myopic"):
                continue
            run = {"base": logps["base"], "myopic": logps["myopic"], "tempered": logps[method]}
            run_reports = {"myopic": reports[("myopic", temperature)], "tempered": reports[(method, temperature)]}
            path = str(folder / f"diffusion_{method.replace('=', '')}_T{temperature:g}.png")
            title = f"block-diffusion BERT trained from scratch, {method}"
            paths.append(plot_within_prompts(run, info["groups"], run_reports, temperature, path, title))
    return paths


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="SMOKE RUN: T in {0.5, 2}, 16 prompts, 100 steps")
    mode.add_argument("--full", action="store_true", help="for a GPU: 256 prompts × 64 completions, 2000 steps")
    parser.add_argument("--temperatures", type=float, nargs="+", help="override the mode's target temperatures")
    parser.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True, help="save a plot per run")
    parser.add_argument("--output_dir", default=str(REPO / "outputs" / "fidelity_diffusion"))
    parser.add_argument(
        "--output", default=None, help="path of the JSON (default: <output_dir>/fidelity_diffusion.json)"
    )
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (the model is tiny: 1 is fastest)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the prompts, sampling and training")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    mode = "quick" if args.quick else "full" if args.full else "default"
    device = pick_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    info = print_device(device)
    if mode == "quick":
        print("QUICK MODE: a smoke run that checks the pipeline end to end; too short to meet the bar.")
    print(f"mode {mode}: {mode_settings(mode)}")
    start = time.perf_counter()
    rows, measured = run_diffusion(mode, args.temperatures, args.seed, device)
    keep = ("num_train", "num_held_out", "base_logp_within_prompt_std", "reference_estimates")
    settings = {**measured["settings"], **{key: measured[key] for key in keep}}
    print_table(rows, "block-diffusion BERT trained from scratch, held-out prompts, within prompts (exact DP)")
    estimates = ", ".join(
        f"{k}: T_eff {e['t_eff']:.3f}, τ {e['kendall_tau']:.3f}" for k, e in measured["reference_estimates"].items()
    )
    print(
        f"base: within-prompt std of held-out log p {measured['base_logp_within_prompt_std']:.2f} nats; k-order "
        f"log p̃ vs exact log p: {estimates}"
    )
    if args.plots:
        print(f"plots: {', '.join(save_plots(rows, measured, Path(args.output_dir) / 'plots'))}")
    settings["wall_seconds"] = time.perf_counter() - start
    print(f"wall time: {settings['wall_seconds']:.0f} s" + (" (QUICK MODE: smoke run)" if args.quick else ""))
    output = args.output or str(Path(args.output_dir) / "fidelity_diffusion.json")
    write_json(output, "fidelity_diffusion", info, settings, rows, summarise(rows))


if __name__ == "__main__":
    main()
