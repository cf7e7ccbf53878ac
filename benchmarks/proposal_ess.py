# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""ESS of SMC's two proposals on the embedded SmolLM2, per held-out prompt: token temperature against an adapter.

A tempered adapter folder (default: the one `make demo` writes, `outputs/quickstart/hub`, trained at T = 0.5 on the
demo's training prompts) is loaded with `load_tempered`. On prompts it never saw (the demo's held-out prompts,
rendered as the demo renders them), `proposal_ess` draws `N` whole answers per prompt from each proposal and
weighs them by `alpha log p - log r` (p the base model, adapter off): the ESS / N of those importance weights and
the variance of the log-weights, within each prompt, tell how far each proposal is from `p^alpha / Z` with no
enumeration and no partition function. Each prompt's figure is the mean over `--repeats` independent draws of `N`.

The JSON gives every prompt's figures for both proposals (and each draw's ESS / N), their ratio,
`ess_ratio_adapter_over_token`: the median over prompts of (adapter ESS / token ESS) at that N (goal: >= 2), and
`ess_ratio_interval`: a 95 % bootstrap interval of that median over unseen prompts (prompts resampled), and with
`--repeats` > 1 `ess_ratio_interval_these_prompts` (each prompt's draws resampled: the median of these prompts).
A prompt's ratio is at most 1 / (token ESS / N), since ESS / N <= 1: where token temperature already has ESS / N
above 1/2 (nearly one answer), no proposal reaches 2. `ess_ratio_where_2_is_reachable` is the median over the other
prompts (`prompts_where_2_is_reachable` of them), a companion that does not depend on how many such prompts a set holds.

Every draw has its own random stream ([`stream_seed`]): the two proposals' particles are independent, and the
companion selects its prompts on a third, independent set of token-temperature draws (`selection_repeats` of them,
the `token_ess_fraction_selection` of each row). Selecting on the draws that are the ratio's denominator would keep
the prompts whose token ESS happened to come out low and so lift their ratios: with an adapter equal to token
temperature (true ratio 1 on every prompt) that companion read above 1. The JSON says which selection it used
(`reachable_selected_on`); JSONs without that key selected on the denominator's own draws.

Usage:
    make demo   # once, if outputs/quickstart/hub does not exist
    python benchmarks/proposal_ess.py [--adapter outputs/quickstart/hub] [--num_samples 16] [--output ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import default_output, print_device, write_json


def render(tokenizer, prompts: list[str], system: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded chat prompts with the generation prompt, as the demo's samples are drawn."""
    texts = [
        tokenizer.apply_chat_template(
            [{"role": "system", "content": system}, {"role": "user", "content": p}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for p in prompts
    ]
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tokenizer.padding_side = side
    return batch["input_ids"], batch["attention_mask"]


STREAMS = ("token", "adapter", "selection")  # one random stream each: the three sets of draws are independent


def stream_seed(seed: int, stream: str, repeat: int, start: int) -> int:
    """The seed of one draw: distinct for every `(seed, stream, repeat, first prompt of the batch)`, so no two draws
    share random numbers (a shared stream would couple the two proposals' particles, or the selection's draws with
    the ratio's).

    Example:
    ```python
    >>> len({stream_seed(0, s, r, b) for s in STREAMS for r in range(4) for b in (0, 8, 16)})
    36
    ```
    """
    if stream not in STREAMS:
        raise ValueError(f"stream={stream!r}: expected one of {STREAMS}")
    return ((seed * len(STREAMS) + STREAMS.index(stream)) * 1_000_003 + repeat) * 1_000_003 + start


def per_prompt_figures(
    model, ids, mask, settings, temperature, proposal, eos, pad, stream: str | None = None
) -> dict[str, list]:
    """Per prompt: ESS / N and log-weight variance, the mean over `repeats` draws, and every draw's ESS / N. The
    draws come from the random stream `stream` (default: the proposal's own); `settings["repeats"]` of them."""
    from hf_seqtemp.generation import proposal_ess

    stream = stream or proposal
    repeats, batch = settings["repeats"], settings["prompts_per_batch"]
    ess, variance = torch.zeros(repeats, len(ids)), torch.zeros(repeats, len(ids))
    for repeat in range(repeats):
        for start in range(0, len(ids), batch):
            rows = slice(start, start + batch)
            out = proposal_ess(
                model,
                ids[rows],
                mask[rows],
                max_new_tokens=settings["max_new_tokens"],
                seq_temperature=temperature,
                num_samples=settings["num_samples"],
                proposal=proposal,
                generator=torch.Generator().manual_seed(stream_seed(settings["seed"], stream, repeat, start)),
                eos_token_id=eos,
                pad_token_id=pad,
            )
            ess[repeat, rows] = out.ess_fraction
            variance[repeat, rows] = out.log_weight_variance
    return {
        "ess_fraction": ess.mean(0).tolist(),
        "log_weight_variance": variance.mean(0).tolist(),
        "ess_fraction_draws": ess.T.tolist(),
    }


def reachable_prompts(selection: list[float], goal: float = 2.0) -> list[int]:
    """Indices of the prompts whose token ESS / N is at most `1 / goal`, the only ones where the ratio adapter / token
    can reach `goal` (ESS / N <= 1). `selection` must come from token draws independent of the ratio's (see
    [`where_reachable`])."""
    return [i for i, t in enumerate(selection) if t * goal <= 1]


def where_reachable(
    selection: list[float], token: list[float], adapter: list[float], goal: float = 2.0
) -> tuple[int, float | None]:
    """`(count, median ratio adapter / token)` over the [`reachable_prompts`] of `selection`; `(0, None)` when there
    are none. `selection` is each prompt's token ESS / N from draws independent of `token` (the ratio's denominator):
    selecting on `token` itself keeps the prompts whose token ESS came out low by chance and biases their ratios up."""
    ratios = [adapter[i] / token[i] for i in reachable_prompts(selection, goal)]
    return len(ratios), (statistics.median(ratios) if ratios else None)


def median_ratio_interval(
    token: torch.Tensor, adapter: torch.Tensor, level: str = "prompts", replicates: int = 4000, seed: int = 0
) -> list[float]:
    """95 % percentile bootstrap interval of the median over prompts of `mean(adapter draws) / mean(token draws)`.

    `token` and `adapter` are `(prompts, draws)` ESS / N. `level="prompts"` resamples the prompts with replacement,
    each with its figures as measured: the uncertainty of the median over unseen prompts like these (each measured
    ratio already carries its draw noise, so resampling the draws too would count that noise twice).
    `level="draws"` keeps the prompts and resamples each prompt's draws of each proposal: how sure the median of THESE
    prompts is (needs several draws per prompt). The median of an even number of prompts is the mean of the two
    middle ones, as `statistics.median`.
    """
    if level not in ("prompts", "draws"):
        raise ValueError(f"level={level!r}: expected 'prompts' or 'draws'")
    token, adapter = token.double(), adapter.double()
    prompts, draws = token.shape
    generator = torch.Generator().manual_seed(seed)
    if level == "prompts":
        picked = torch.randint(prompts, (replicates, prompts), generator=generator)
        ratios = (adapter.mean(1) / token.mean(1))[picked]
    else:
        rows = torch.arange(prompts)[None, :, None]

        def resampled_means(figures: torch.Tensor) -> torch.Tensor:
            return figures[rows, torch.randint(draws, (replicates, prompts, draws), generator=generator)].mean(-1)

        ratios = resampled_means(adapter) / resampled_means(token)
    medians = torch.quantile(ratios, 0.5, dim=1)
    low, high = torch.quantile(medians, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return [low, high]


def compare_proposals(model, tokenizer, prompts: list[str], system: str, temperature: float, **settings):
    """Per prompt, ESS/N and log-weight variance of the token-temperature and adapter proposals of `model` (a
    PeftModel whose active adapter is tempered at `temperature`); returns `(rows, summary)`."""
    from hf_seqtemp.data.sampling import eos_ids_of

    ids, mask = render(tokenizer, prompts, system)
    eos, pad = sorted(eos_ids_of(model, tokenizer)), tokenizer.pad_token_id
    return compare_proposal_draws(model, ids, mask, temperature, eos, pad, prompts, **settings)


def compare_proposal_draws(model, ids, mask, temperature, eos, pad, prompts: list, **settings):
    """[`compare_proposals`] on left-padded prompt ids: `(rows, summary)`. The token and adapter draws and the
    companion's selection draws come from three independent streams ([`stream_seed`]); `selection_repeats` (default
    `repeats`) token-temperature draws per prompt decide which prompts the companion keeps."""
    settings = {"num_samples": 16, "repeats": 4, "max_new_tokens": 10, "prompts_per_batch": 8, "seed": 0, **settings}
    settings.setdefault("selection_repeats", settings["repeats"])
    figures = {
        proposal: per_prompt_figures(model, ids, mask, settings, temperature, proposal, eos, pad)
        for proposal in ("token", "adapter")
    }
    selection = per_prompt_figures(
        model, ids, mask, {**settings, "repeats": settings["selection_repeats"]}, temperature, "token", eos, pad,
        stream="selection",
    )["ess_fraction"]  # fmt: skip
    ratios = [a / t for a, t in zip(figures["adapter"]["ess_fraction"], figures["token"]["ess_fraction"])]
    draws = {proposal: torch.tensor(figures[proposal]["ess_fraction_draws"]) for proposal in figures}
    reachable = reachable_prompts(selection)
    rows = [
        {
            "prompt": prompt,
            "token_ess_fraction": figures["token"]["ess_fraction"][i],
            "adapter_ess_fraction": figures["adapter"]["ess_fraction"][i],
            "token_log_weight_variance": figures["token"]["log_weight_variance"][i],
            "adapter_log_weight_variance": figures["adapter"]["log_weight_variance"][i],
            "ess_ratio_adapter_over_token": ratios[i],
            "token_ess_fraction_draws": figures["token"]["ess_fraction_draws"][i],
            "adapter_ess_fraction_draws": figures["adapter"]["ess_fraction_draws"][i],
            "token_ess_fraction_selection": selection[i],
        }
        for i, prompt in enumerate(prompts)
    ]
    summary = {
        "ess_ratio_adapter_over_token": statistics.median(ratios),
        **{
            key: median_ratio_interval(draws["token"], draws["adapter"], level=level, seed=settings["seed"])
            for key, level in (("ess_ratio_interval", "prompts"), ("ess_ratio_interval_these_prompts", "draws"))
            if level == "prompts" or settings["repeats"] > 1
        },
        "ess_ratio_min": min(ratios),
        "ess_ratio_max": max(ratios),
        "prompts_with_ratio_at_least_2": sum(r >= 2 for r in ratios),
        "reachable_selected_on": f"{settings['selection_repeats']} independent token-temperature draw(s) per prompt",
        **dict(
            zip(
                ("prompts_where_2_is_reachable", "ess_ratio_where_2_is_reachable"),
                where_reachable(selection, figures["token"]["ess_fraction"], figures["adapter"]["ess_fraction"]),
            )
        ),
        # 95 % bootstrap over those prompts, as `ess_ratio_interval` over all
        **(
            {
                "ess_ratio_where_2_is_reachable_interval": median_ratio_interval(
                    draws["token"][reachable], draws["adapter"][reachable], level="prompts", seed=settings["seed"]
                )
            }
            if len(reachable) > 1
            else {}
        ),
        "prompts": len(prompts),
        "num_samples": settings["num_samples"],
        "median_token_ess_fraction": statistics.median(figures["token"]["ess_fraction"]),
        "median_adapter_ess_fraction": statistics.median(figures["adapter"]["ess_fraction"]),
        "median_token_log_weight_variance": statistics.median(figures["token"]["log_weight_variance"]),
        "median_adapter_log_weight_variance": statistics.median(figures["adapter"]["log_weight_variance"]),
    }
    return rows, summary


def reachable_text(summary: dict, prefix: str = "") -> str:
    """The companion figure in words: the median ratio where token ESS / N <= 1/2, or that no prompt is such."""
    count, median = (
        summary[f"{prefix}prompts_where_2_is_reachable"],
        summary[f"{prefix}ess_ratio_where_2_is_reachable"],
    )
    if not count:
        return "no prompt where 2 is reachable (token ESS/N > 1/2 on all)"
    interval = summary.get(f"{prefix}ess_ratio_where_2_is_reachable_interval")
    shown = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
    return f"median {median:.2f}{shown} over the {count} prompts where 2 is reachable (token ESS/N <= 1/2)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adapter", default="outputs/quickstart/hub", help="a tempered adapter folder (make demo)")
    parser.add_argument("--num_samples", type=int, default=16, help="answers per prompt and proposal (N)")
    parser.add_argument("--repeats", type=int, default=4, help="independent draws of N per prompt, averaged")
    parser.add_argument("--max_new_tokens", type=int, default=10, help="the demo's max_completion_length")
    parser.add_argument("--prompts", type=int, default=None, help="only the first held-out prompts")
    parser.add_argument("--prompts_per_batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=default_output("proposal_ess"))
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not (Path(args.adapter) / "seqtemp_config.json").is_file():
        parser.error(f"--adapter {args.adapter!r} is not a tempered adapter folder; run `make demo` first.")
    from quickstart import SYSTEM, demo_prompts

    from hf_seqtemp import load_default_model, load_tempered
    from hf_seqtemp.config import SequenceTemperatureConfig

    info = print_device(torch.device("cpu"))
    started = time.perf_counter()
    base, tokenizer = load_default_model()
    temperature = SequenceTemperatureConfig.from_pretrained(args.adapter).target_temperature
    model = load_tempered(args.adapter, base_model=base).eval()
    prompts = demo_prompts()[1][: args.prompts]
    settings = {k: getattr(args, k) for k in ("num_samples", "repeats", "max_new_tokens", "prompts_per_batch", "seed")}
    rows, summary = compare_proposals(model, tokenizer, prompts, SYSTEM, temperature, **settings)
    print(f"T = {temperature}, N = {args.num_samples}, {args.repeats} draws per prompt, {len(prompts)} unseen prompts")
    print(f"{'prompt':44s} | token ESS/N | adapter ESS/N | ratio | token var | adapter var")
    for row in rows:
        print(
            f"{row['prompt'][:44]:44s} | {row['token_ess_fraction']:11.3f} | {row['adapter_ess_fraction']:13.3f} | "
            f"{row['ess_ratio_adapter_over_token']:5.2f} | {row['token_log_weight_variance']:9.2f} | "
            f"{row['adapter_log_weight_variance']:11.2f}"
        )
    print(
        f"median ESS ratio adapter/token {summary['ess_ratio_adapter_over_token']:.2f} "
        f"(95 % bootstrap over prompts [{summary['ess_ratio_interval'][0]:.2f}, "
        f"{summary['ess_ratio_interval'][1]:.2f}]; "
        f"range [{summary['ess_ratio_min']:.2f}, {summary['ess_ratio_max']:.2f}]) over {len(prompts)} prompts; "
        f"{summary['prompts_with_ratio_at_least_2']} prompts at >= 2; "
        f"{reachable_text(summary)}"
    )
    settings = {**vars(args), "temperature": temperature, "wall_seconds": round(time.perf_counter() - started, 1)}
    write_json(args.output, "proposal_ess", info, settings, rows, summary)


if __name__ == "__main__":
    main()
