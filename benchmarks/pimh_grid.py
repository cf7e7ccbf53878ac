# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Where PIMH's answers are exact, and whether its diagnostics say so: a grid on an enumerable toy.

The toy: a one-layer random Llama with |V| = 9 (EOS 8, pad 0), three prompts of 3, 1 and 2 tokens left-padded in one
batch, answers of at most 3 tokens (585 per prompt, every one enumerated and scored, so `p^α` is exact). For each
cell (α, N = `num_particles`, K = `pimh_steps`, proposal: token temperature 1/α, or a random LoRA adapter, alone or
with `defensive_mixture` ε of the token proposal mixed in: `--mixtures 0 0.5`), 2000
answers per prompt are drawn with `smc_sample(..., pimh_steps=K)` (in calls of at most `--rows` particle rows), and:

- `chi2_p` (per prompt; the cell's minimum is what fails, p < 1e-3) and `tv` (total variation of the answers' law to
  p^α, with its sampling floor `tv_floor`: the mean TV of as many exact draws);
- the diagnostics a user sees: the warnings `smc_sample` printed, and per prompt the acceptance rate, the variance
  of log Ẑ, the largest run's share and the Hill estimate k̂ of Ẑ's tail ([`tail_diagnostics`]);
- `token_forwards_per_answer`: positions the decoder computed per answer (a forward pre-hook).

`warned` is whether `smc_sample` warned in the cell's calls. The confusion table (`χ² fails` against `warned`) is
in `confusion`; `docs/sampling.md` quotes it.

Usage:
    python benchmarks/pimh_grid.py [--alphas 2 4] [--particles 2 4 16] [--steps 8 32 128] [--answers 2000]
    python benchmarks/pimh_grid.py --proposals adapter --mixtures 0.5 --particles 1 2 4 --steps 8 32 64
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import device_info, pick_device, print_device, provenance

from hf_seqtemp.costs import ForwardCounter
from hf_seqtemp.generation.answers import answer_mask, pad_after_answer
from hf_seqtemp.generation.smc import smc_sample
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.models import tiny_causal_lm

V, EOS, PAD, NEW = 9, 8, 0, 3
PROMPTS = torch.tensor([[1, 2, 3], [0, 0, 4], [0, 5, 6]])
MASK = torch.tensor([[1, 1, 1], [0, 0, 1], [0, 1, 1]])
DIAGNOSTICS = ("pimh_acceptance", "log_normalizer_variance", "largest_run_share", "run_ess", "pareto_k")


def toy(seed: int):
    """The base model and a random LoRA on a copy of it (the adapter proposal)."""
    base = tiny_causal_lm(V, seed=seed, hidden_size=32, initializer_range=0.5, eos_token_id=EOS, pad_token_id=PAD)
    torch.manual_seed(seed + 1)
    config = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
    copy = tiny_causal_lm(V, seed=seed, hidden_size=32, initializer_range=0.5, eos_token_id=EOS, pad_token_id=PAD)
    return base, get_peft_model(copy, config).eval()


def oracle(model, alpha: float):
    """Per prompt: every padded answer and p^α / Z over them (`model` as called: its adapters off for p)."""
    tails = torch.tensor(list(itertools.product(range(V), repeat=NEW)))
    answers, targets = [], []
    for prompt, mask in zip(PROMPTS, MASK):
        strings = torch.cat([prompt.expand(len(tails), -1), tails], dim=1)
        completion = torch.zeros_like(strings, dtype=torch.bool)
        completion[:, PROMPTS.shape[1] :] = True
        unique = torch.unique(pad_after_answer(strings, completion, torch.tensor([EOS]), PAD), dim=0)
        in_answer = answer_mask(unique, completion[: len(unique)], torch.tensor([EOS]))
        attention = torch.cat([mask.expand(len(unique), -1), torch.ones(len(unique), NEW, dtype=torch.long)], 1)
        with torch.no_grad():
            logp = AutoregressiveScorer()(model, unique, attention, in_answer).double()
        answers.append(unique)
        targets.append((alpha * logp).softmax(0))
    return answers, targets


def chi_square(counts: torch.Tensor, probs: torch.Tensor, min_expected: float = 5.0) -> float:
    """Pearson's chi-square p-value, cells of expected count < `min_expected` pooled."""
    n = counts.sum()
    expected = n * probs
    small = expected < min_expected
    obs = torch.cat([counts[~small], counts[small].sum().view(1)])
    exp = torch.cat([expected[~small], expected[small].sum().view(1)])
    keep = exp > 0
    if (obs[~keep] > 0).any():
        return 0.0
    obs, exp = obs[keep], exp[keep]
    statistic = ((obs - exp) ** 2 / exp).sum()
    return float(torch.special.gammaincc(torch.tensor((obs.numel() - 1) / 2.0, dtype=torch.float64), statistic / 2))


def counts_of(sequences: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    index = {tuple(a.tolist()): i for i, a in enumerate(answers)}
    counts = torch.zeros(len(answers), dtype=torch.float64)
    for row in sequences:
        counts[index[tuple(row.tolist())]] += 1
    return counts


def run_cell(model, proposal, alpha, particles, steps, answers, rows, seed, counter, mixture=0.0):
    """2000 (`answers`) chain answers per prompt, in calls of at most `rows` particle rows."""
    per_call = max(1, rows // (len(PROMPTS) * (steps + 1) * particles))
    outs, messages, drawn = [], [], 0
    generator = torch.Generator().manual_seed(seed)
    kind = f"{proposal}-{alpha}-{particles}-{steps}-{mixture}"
    while drawn < answers:
        size = min(per_call, answers - drawn)
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")
            with counter.counting(kind, answers=size * len(PROMPTS)):
                out = smc_sample(
                    model, PROMPTS.repeat_interleave(size, 0), MASK.repeat_interleave(size, 0), max_new_tokens=NEW,
                    seq_temperature=1 / alpha, num_particles=particles, generator=generator, eos_token_id=EOS,
                    pad_token_id=PAD, return_dict_in_generate=True, pimh_steps=steps, proposal=proposal,
                    defensive_mixture=mixture,
                )  # fmt: skip
        messages += [str(w.message) for w in caught if "smc_sample" in str(w.message)]
        outs.append((size, out))
        drawn += size
    return outs, messages, counter.summary()[kind]["token_forwards_per_answer"]


def summarise(outs, oracle_answers, targets, answers: int):
    """Per prompt: chi-square p, TV, and the mean of each diagnostic over its rows."""
    per_prompt = []
    for b in range(len(PROMPTS)):
        sequences = torch.cat([out.sequences[b * size : (b + 1) * size, PROMPTS.shape[1] :] for size, out in outs])
        full = torch.cat([PROMPTS[b].expand(len(sequences), -1), sequences], dim=1)
        counts = counts_of(full, oracle_answers[b])
        figures = {
            "chi2_p": chi_square(counts, targets[b]),
            "tv": float(0.5 * (counts / answers - targets[b]).abs().sum()),
        }
        for name in DIAGNOSTICS:
            values = torch.cat([getattr(out, name)[b * size : (b + 1) * size].double() for size, out in outs])
            figures[name] = float(values.nanmean())
        per_prompt.append(figures)
    return per_prompt


def tv_floor(targets, answers: int, seed: int) -> float:
    generator = torch.Generator().manual_seed(seed)
    floors = []
    for target in targets:
        draws = torch.multinomial(target, answers, replacement=True, generator=generator)
        counts = torch.bincount(draws, minlength=len(target)).double()
        floors.append(float(0.5 * (counts / answers - target).abs().sum()))
    return statistics.fmean(floors)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alphas", nargs="+", type=float, default=[2.0, 4.0])
    parser.add_argument("--particles", nargs="+", type=int, default=[2, 4, 16])
    parser.add_argument("--steps", nargs="+", type=int, default=[8, 32, 128])
    parser.add_argument("--proposals", nargs="+", default=["token", "adapter"])
    parser.add_argument(
        "--mixtures",
        nargs="+",
        type=float,
        default=[0.0],
        help="`defensive_mixture` values of the adapter proposal (the token proposal takes 0 only)",
    )
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=400_000, help="particle rows per call at most")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", default="outputs/bench/pimh_grid.json")
    parser.add_argument("--markdown", action="store_true", help="print the tables of an existing --output")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.output).read_text())))
        return
    torch.set_num_threads(args.threads)
    device = pick_device("cpu")
    info = print_device(device)
    base, adapted = toy(args.seed)
    counters = {"token": ForwardCounter(base), "adapter": ForwardCounter(adapted)}
    cells = []
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    for alpha in args.alphas:
        with adapted.disable_adapter():
            oracles = {"token": oracle(base, alpha), "adapter": oracle(adapted, alpha)}
        grid = itertools.product(args.proposals, args.mixtures, args.particles, args.steps)
        for proposal, mixture, particles, steps in grid:
            if proposal == "token" and mixture:
                continue
            model = adapted if proposal == "adapter" else base
            started = time.time()
            outs, messages, forwards = run_cell(model, proposal, alpha, particles, steps, args.answers, args.rows,
                                                args.seed + len(cells), counters[proposal], mixture)  # fmt: skip
            answers, targets = oracles[proposal]
            per_prompt = summarise(outs, answers, targets, args.answers)
            cell = {
                "alpha": alpha, "num_particles": particles, "pimh_steps": steps, "proposal": proposal,
                "defensive_mixture": mixture,
                "chi2_p": min(p["chi2_p"] for p in per_prompt), "tv": max(p["tv"] for p in per_prompt),
                "tv_floor": tv_floor(targets, args.answers, len(cells)),
                "fails": min(p["chi2_p"] for p in per_prompt) < 1e-3, "warned": bool(messages),
                "warnings": sorted({m.split(":")[1].split("(")[0].strip()[:60] for m in messages}),
                "token_forwards_per_answer": forwards, "per_prompt": per_prompt, "seconds": time.time() - started,
            }  # fmt: skip
            cells.append(cell)
            print(f"α={alpha:g} N={particles:2d} K={steps:3d} {proposal:7s} ε={mixture:g} χ² p {cell['chi2_p']:.2g} TV {cell['tv']:.3f} "
                  f"warned {cell['warned']} σ²(log Ẑ) {max(p['log_normalizer_variance'] for p in per_prompt):.2f} "
                  f"share {max(p['largest_run_share'] for p in per_prompt):.2f} "
                  f"run ESS {min(p['run_ess'] for p in per_prompt):.1f} "
                  f"k̂ {max(p['pareto_k'] for p in per_prompt):.2f} "
                  f"fwd/answer {forwards:.0f} ({cell['seconds']:.0f} s)", flush=True)  # fmt: skip
            payload = {"provenance": provenance(info | device_info(device)), "benchmark": "pimh_grid"}
            payload.update(settings=vars(args), cells=cells, confusion=confusion(cells))
            out.write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(confusion(cells), indent=1))


def markdown(payload: dict) -> str:
    """The grid's cells and its confusion table as docs/sampling.md shows them."""
    lines = ["| α | proposal | N | K | χ² p (worst prompt) | TV (floor) | run ESS (mean over rows, least prompt) | warned | token-forwards / answer |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for c in payload["cells"]:
        ess = min(p["run_ess"] for p in c["per_prompt"])
        proposal = c["proposal"] + (f" + {c['defensive_mixture']:g} token" if c.get("defensive_mixture") else "")
        lines.append(f"| {c['alpha']:g} | {proposal} | {c['num_particles']} | {c['pimh_steps']} | "
                     f"{c['chi2_p']:.2g}{' (fails)' if c['fails'] else ''} | {c['tv']:.3f} ({c['tv_floor']:.3f}) | "
                     f"{ess:.1f} | {'yes' if c['warned'] else 'no'} | {c['token_forwards_per_answer']:.0f} |")  # fmt: skip
    table = payload["confusion"]
    lines += ["", "| | warned | quiet |", "|---|---|---|",
              f"| χ² fails | {table['fails_warned']} | {table['fails_quiet']} |",
              f"| χ² passes | {table['passes_warned']} | {table['passes_quiet']} |"]  # fmt: skip
    return "\n".join(lines)


def confusion(cells) -> dict:
    """Counts of (χ² fails, warned) over the cells."""
    table = {"fails_warned": 0, "fails_quiet": 0, "passes_warned": 0, "passes_quiet": 0}
    for cell in cells:
        table[f"{'fails' if cell['fails'] else 'passes'}_{'warned' if cell['warned'] else 'quiet'}"] += 1
    return table


if __name__ == "__main__":
    main()
