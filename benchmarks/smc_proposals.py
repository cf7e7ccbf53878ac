# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""SMC's two proposals on an enumerable model: token temperature (Power-SMC) against a tempered adapter.

The model and prompts are those of `samplers.py` (one-layer Llama, |V| = 4 with EOS = 3, three prompts, two of them
left-padded, answers of at most 4 tokens: 121 per prompt), the target `p(answer | prompt)^alpha / Z` per prompt, at
alpha = 2 (T = 0.5) and 4 (T = 0.25). The adapter is a LoRA (r = 4, every linear layer, plus a trainable copy of
the output layer) fitted to that target by minimising the exact forward KL over the enumerated answers of the
three prompts, stopped once the mean KL is at most `fit_kl` (0.05): a good, imperfect tempered adapter, like a
trained one. A randomly initialised LoRA is the poor adapter.

For N in {4, 16, 64} particles, `runs` independent SMC runs per prompt give, per prompt:

- `kl`: KL(law of the returned answer || target), the law estimated from the weighted particles of all runs
  (Rao-Blackwellised), then averaged over the prompts: how far SMC with N particles is from exact; `kl_interval` its
  95 % basic bootstrap interval over runs (the runs' own spread adds to `kl`: an interval reaching 0 says these runs
  cannot tell that SMC from exact);
- `ess_fraction`: ESS / N of the final weights (before drawing the answer), mean over runs and prompts;
- `sequential_calls` and `token_forwards` per answer, counted by a forward pre-hook: the adapter proposal runs two
  passes per token (adapter on and off), so twice the calls and forwards of the token proposal at the same N.

Each proposal is run with resampling at ESS < N/2 (`token`, `adapter`) and without (`token_is`, `adapter_is`:
importance sampling of whole answers, whose final ESS / N is `proposal_ess`'s figure). ESS / N and KL can
disagree: a forward-KL fit leaves some answers of small target mass with a far smaller adapter mass (weights of
60-140 times the mean), drawn rarely and then overweighted; ESS at N = 16 does not see them, the KL of the answer law
does, and it falls slowly with N. The figures below say which wins on this toy. The question it answers: does the
adapter proposal reach the token proposal's KL at N = 64 with at most 16 particles? `summary.alpha<a>.
kl_minus_token64` gives, per proposal and N <= 16, the difference of the two KLs with a 95 % bootstrap interval over
the (independent) runs of both rows.

Usage:
    python benchmarks/smc_proposals.py [--quick] [--output outputs/bench/smc_proposals.json]
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

from _common import default_output, print_device, write_json
from samplers import EOS, PAD, PROMPT_MASK, PROMPTS, enumerable_model, exact_targets

from hf_seqtemp.costs import ForwardCounter

SETTINGS = {
    "quick": {"runs": 256, "new_tokens": 4, "particles": (4, 16, 64), "fit_steps": 300, "fit_kl": 0.05},
    "full": {"runs": 1024, "new_tokens": 4, "particles": (4, 16, 64), "fit_steps": 300, "fit_kl": 0.05},
}
ALPHAS = (2.0, 4.0)


def with_adapter(seed: int = 0, head: bool = False):
    """A random LoRA (r = 4, every linear layer); with `head`, also a trainable copy of the output layer: on this
    one-layer model a LoRA of the trunk alone cannot fit the tempered target (its exact fit stalls at KL 0.4-0.7)."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    modules = ["lm_head"] if head else None
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False, modules_to_save=modules
    )
    return get_peft_model(enumerable_model(), config)


def answer_logps(model, answers, new_tokens: int) -> list[torch.Tensor]:
    """`log model(answer | prompt)` of every enumerated answer of every prompt (grad flows)."""
    from hf_seqtemp.generation.answers import answer_mask
    from hf_seqtemp.likelihood import AutoregressiveScorer

    out = []
    for cells, mask in zip(answers, PROMPT_MASK):
        completion = torch.zeros_like(cells, dtype=torch.bool)
        completion[:, PROMPTS.shape[1] :] = True
        in_answer = answer_mask(cells, completion, torch.tensor([EOS]))
        attention = torch.cat([mask.expand(len(cells), -1), torch.ones(len(cells), new_tokens).long()], dim=1)
        out.append(AutoregressiveScorer()(model, cells, attention, in_answer))
    return out


def fit_adapter(model, answers, targets, new_tokens: int, steps: int, goal: float) -> list[float]:
    """Minimises the mean over prompts of the exact KL(target || q) until it is at most `goal` (or `steps` Adam
    steps); returns the final KL per prompt."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(params, lr=2e-2)
    entropy = sum(-(t * t.log()).sum().item() for t in targets) / len(targets)
    model.train()
    for _ in range(steps):
        logq = answer_logps(model, answers, new_tokens)
        loss = sum(-(t.float() * lq).sum() for t, lq in zip(targets, logq)) / len(targets)
        if loss.item() - entropy <= goal:
            break
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    with torch.no_grad():
        logq = answer_logps(model, answers, new_tokens)
    return [float((t * (t.log() - lq.double())).sum()) for t, lq in zip(targets, logq)]


@torch.no_grad()
def run_smc(model, settings, alpha, n, proposal, threshold, counter, seed=0) -> dict:
    from hf_seqtemp.generation import smc_sample

    runs = settings["runs"]
    counter.reset()
    start = time.perf_counter()
    out = smc_sample(
        model,
        PROMPTS.repeat_interleave(runs, 0),
        PROMPT_MASK.repeat_interleave(runs, 0),
        max_new_tokens=settings["new_tokens"],
        seq_temperature=1 / alpha,
        num_particles=n,
        ess_threshold=threshold,
        generator=torch.Generator().manual_seed(seed),
        eos_token_id=EOS,
        pad_token_id=PAD,
        return_dict_in_generate=True,
        return_particles=True,
        proposal=proposal,
    )
    seconds = time.perf_counter() - start
    final_ess = out.ess[:, -1] / n
    return {
        "out": out,
        "ess_fraction": float(final_ess.mean()),
        "ess_fraction_per_prompt": [float(final_ess[b * runs : (b + 1) * runs].mean()) for b in range(len(PROMPTS))],
        "sequential_calls_per_answer": counter.calls,
        "token_forwards_per_answer": counter.tokens / (runs * len(PROMPTS)),
        "seconds_per_answer": seconds / (runs * len(PROMPTS)),
    }


def run_laws(out, answers, runs: int) -> list[torch.Tensor]:
    """Per prompt, a (runs, answers) matrix: row r is run r's law of the returned answer, the normalised weights of its
    particles summed per answer (Rao-Blackwellised). Their mean over runs is the law that `kl` scores."""
    laws = []
    for b, cells in enumerate(answers):
        rows = slice(b * runs, (b + 1) * runs)
        particles = out.particles[rows]  # (runs, N, length)
        weights = out.particle_log_weights[rows].double().exp()  # (runs, N), each row sums to 1
        index = (particles[:, :, None, :] == cells[None, None]).all(-1).long().argmax(dim=-1)
        laws.append(torch.zeros(runs, len(cells), dtype=torch.float64).scatter_add_(1, index, weights))
    return laws


def law_kl(laws: list[torch.Tensor], targets) -> list[float]:
    """Per prompt, KL(law of the returned answer || target), the law being the mean of the runs' laws."""
    kls = []
    for runs_law, target in zip(laws, targets):
        law = runs_law.mean(0)
        seen = law > 0
        kls.append(float((law[seen] * (law[seen] / target[seen]).log()).sum()))
    return kls


def bootstrap_kl(laws: list[torch.Tensor], targets, draws: int = 1000, seed: int = 0) -> torch.Tensor:
    """`draws` bootstrap replicates of the mean over prompts of `law_kl`, the runs of each prompt resampled with
    replacement (runs are independent, so this is the run-to-run uncertainty of `kl`)."""
    generator = torch.Generator().manual_seed(seed)
    total = torch.zeros(draws, dtype=torch.float64)
    for law, target in zip(laws, targets):
        runs = len(law)
        picks = torch.randint(runs, (draws, runs), generator=generator)
        counts = torch.zeros(draws, runs, dtype=torch.float64).scatter_add_(
            1, picks, torch.ones(draws, runs, dtype=torch.float64)
        )
        boot = counts @ law / runs  # (draws, answers)
        ratio = torch.where(boot > 0, boot / target, torch.ones_like(boot))
        total += (boot * ratio.log()).sum(1)
    return total / len(laws)


def interval(replicates: torch.Tensor, point: float) -> list[float]:
    """`[point, low, high]` with the 95 % BASIC bootstrap interval `[2·point − q97.5, 2·point − q2.5]`. A KL of a
    mean of runs is biased upwards by the runs' own spread, and a bootstrap replicate (a mean of resampled runs) adds
    that spread once more: the percentile interval sits above the point, the basic one reflects the shift back."""
    low, high = torch.quantile(replicates, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return [point, 2 * point - high, 2 * point - low]


def measure(settings: dict, alpha: float) -> tuple[list[dict], dict]:
    base = enumerable_model()
    answers, targets = exact_targets(base, settings["new_tokens"], alpha)
    fitted = with_adapter(0, head=True)
    fit_kl = fit_adapter(fitted, answers, targets, settings["new_tokens"], settings["fit_steps"], settings["fit_kl"])
    poor = with_adapter(1).eval()
    with torch.no_grad():
        poor_kl = [
            float((t * (t.log() - lq.double())).sum())
            for t, lq in zip(targets, answer_logps(poor, answers, settings["new_tokens"]))
        ]
    proposals = {
        "token": (base, "token", 0.5),
        "token_is": (base, "token", 0.0),
        "adapter": (fitted, "adapter", 0.5),
        "adapter_is": (fitted, "adapter", 0.0),
        "random_adapter": (poor, "adapter", 0.5),
    }
    rows, replicates = [], {}
    for name, (model, proposal, threshold) in proposals.items():
        counter = ForwardCounter(model)
        for n in settings["particles"]:
            result = run_smc(model, settings, alpha, n, proposal, threshold, counter)
            laws = run_laws(result.pop("out"), answers, settings["runs"])
            kls = law_kl(laws, targets)
            boot = bootstrap_kl(laws, targets, seed=len(rows))
            replicates[(name, n)] = boot
            rows.append({"alpha": alpha, "proposal": name, "num_particles": n, "kl": sum(kls) / len(kls),
                         "kl_interval": interval(boot, sum(kls) / len(kls)),
                         "kl_per_prompt": kls, **result})  # fmt: skip
    gaps = {}  # KL(proposal, N <= 16) - KL(token, N = 64): the two rows' runs are independent, so are their replicates
    for name in ("adapter", "adapter_is"):
        for n in (m for m in settings["particles"] if m <= 16):
            point = next(r["kl"] for r in rows if r["proposal"] == name and r["num_particles"] == n)
            token_64 = next(r["kl"] for r in rows if r["proposal"] == "token" and r["num_particles"] == 64)
            gaps[f"{name}_N{n}_minus_token_N64"] = interval(
                replicates[(name, n)] - replicates[("token", 64)], point - token_64
            )
    fits = {"adapter_fit_kl_per_prompt": fit_kl, "random_adapter_kl_per_prompt": poor_kl, "kl_minus_token64": gaps}
    return rows, fits


def summary_of(rows: list[dict], settings: dict) -> dict:
    summary = {}
    for alpha in ALPHAS:
        by = {(r["proposal"], r["num_particles"]): r for r in rows if r["alpha"] == alpha}
        token_64 = by[("token", 64)]["kl"]
        tag = f"_alpha{alpha:g}"
        for name in ("adapter", "adapter_is"):
            fewest = [n for n in settings["particles"] if n <= 16 and by[(name, n)]["kl"] <= token_64]
            summary[f"{name}_reaches_token64_kl_with{tag}"] = min(fewest) if fewest else None
        summary[f"ess_fraction_n16{tag}"] = {
            name: by[(name, 16)]["ess_fraction"]
            for name in ("token", "token_is", "adapter", "adapter_is", "random_adapter")
        }
        summary[f"ess_ratio_adapter_over_token_is_n16{tag}"] = (
            by[("adapter_is", 16)]["ess_fraction"] / by[("token_is", 16)]["ess_fraction"]
        )
        summary[f"kl{tag}"] = {f"{p}_N{n}": by[(p, n)]["kl"] for (p, n) in by}
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="256 runs per prompt, a shorter adapter fit")
    parser.add_argument("--output", default=default_output("smc_proposals"))
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    settings = dict(SETTINGS["quick" if args.quick else "full"], alphas=ALPHAS, prompts=len(PROMPTS))
    info = print_device(torch.device("cpu"))
    rows, fits = [], {}
    for alpha in ALPHAS:
        alpha_rows, fits[f"alpha{alpha:g}"] = measure(settings, alpha)
        rows += alpha_rows
        fit = ", ".join(f"{k:.4f}" for k in fits[f"alpha{alpha:g}"]["adapter_fit_kl_per_prompt"])
        poor = ", ".join(f"{k:.3f}" for k in fits[f"alpha{alpha:g}"]["random_adapter_kl_per_prompt"])
        print(f"\nalpha {alpha:g} (T = {1 / alpha:g}); {settings['runs']} runs per prompt, 3 prompts")
        print(f"adapter fit: KL(target || q) per prompt {fit}; random adapter: {poor}")
        print(f"{'proposal':<15} | {'N':>3} | {'KL to p^alpha [95 % over runs]':>32} | {'final ESS/N':>11} | "
              f"{'calls/answer':>12} | {'token-fwd/answer':>16}")  # fmt: skip
        for r in alpha_rows:
            kl, low, high = r["kl_interval"]
            print(f"{r['proposal']:<15} | {r['num_particles']:>3} | {kl:>8.5f} [{low:+.5f}, {high:+.5f}] | "
                  f"{r['ess_fraction']:>11.3f} | {r['sequential_calls_per_answer']:>12} | "
                  f"{r['token_forwards_per_answer']:>16.1f}")  # fmt: skip
        for key, (gap, low, high) in fits[f"alpha{alpha:g}"]["kl_minus_token64"].items():
            print(f"KL {key}: {gap:+.5f} [{low:+.5f}, {high:+.5f}]")
    summary = summary_of(rows, settings)
    summary.update(fits)
    print()
    for key, value in summary.items():
        if "reaches" in key:
            print(f"{key:<48} {'N = ' + str(value) if value else 'no (not with N <= 16)'}")
    write_json(args.output, "smc_proposals", info, settings, rows, summary)


if __name__ == "__main__":
    main()
