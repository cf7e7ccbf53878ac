# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The task table's training-free rows scored through lm-evaluation-harness (`task_table.py --harness`).

Each family's held-out prompts become a harness task (`hf_seqtemp.harness.tasks.write_tasks`: the same questions,
`samples` answers each, `max_new_tokens` tokens, the chat prompt the table renders), and each row is a `seqtemp` model
route run by `lm_eval.simple_evaluate`, once per sampling seed (the model's `seed=`). The harness scores the draws with
the task's metrics; this module scores the *same draws* (the logged replies) with the table's own scorer
(`task_table.summarise`: pass@1 with its bootstrap interval over prompts, per seed, pass@8) and records both, with
their largest difference (0 when the harness's task and our scorer read every reply alike). Cost per answer is the
harness's own count (`config.seqtemp.cost`).
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from pathlib import Path

HARNESS_KINDS = ("ancestral", "token", "tuned", "mcmc", "smc")
"""The table's rows that run through the harness: the training-free samplers with one answer per draw."""


def routes(settings: dict, tuned: dict) -> list[tuple[str, str, float | None, dict]]:
    """`(row, model_args, target T, extra)` of the rows asked for: `ancestral` (p: the task's exact sampling), `token`,
    `tuned` (its temperature from `tuned`, `{alpha: tuned_once(...)}`), `mcmc`, `smc` (with each `pimh_steps`)."""
    kinds, out = settings["rows"], []
    if "ancestral" in kinds:
        out.append(("ancestral", "strategy=p", 1.0, {}))
    for alpha in settings["alphas"]:
        t = 1.0 / alpha
        if "token" in kinds:
            out.append((f"token T={t:g}", f"token_temperature={t}", t, {}))
        if "tuned" in kinds:
            once = tuned[alpha]
            out.append((f"token tuned once T={t:g}", f"token_temperature={once['token_temperature']}", t, once))
        if "mcmc" in kinds:
            args = f"strategy=mcmc,seq_temperature={t},mcmc_steps={settings['mcmc_steps']}"
            out.append((f"mcmc α={alpha:g}", f"{args},block_size={settings['block_size']}", t, {}))
        if "smc" in kinds:
            for particles in settings["smc_particles"]:
                for steps in settings.get("pimh_steps") or [0]:
                    name = f"smc α={alpha:g} N={particles}" + (f" pimh={steps}" if steps else "")
                    args = f"strategy=smc,seq_temperature={t},num_particles={particles},pimh_steps={steps}"
                    out.append((name, args, t, {"num_particles": particles, "pimh_steps": steps}))
    return out


def replies_by_prompt(samples: list[dict], held_out: list) -> list[list[str]]:
    """The logged replies of one task, in the order of `held_out` (each logged doc carries its question)."""
    by_question = {entry["doc"]["question"]: list(entry["filtered_resps"][0]) for entry in samples}
    missing = [q for q, _ in held_out if q not in by_question]
    if missing:
        raise RuntimeError(f"the harness logged no replies for {len(missing)} held-out questions, e.g. {missing[0]!r}")
    return [by_question[q] for q, _ in held_out]


def harness_rows(family, held_out: list, settings: dict, folder: Path, tuned: dict, summarise) -> list[dict]:
    """The rows of one family through the harness (see the module's docstring); `summarise` is the table's scorer."""
    from hf_seqtemp.harness.tasks import evaluate_tasks, task_name

    n, task, rows = settings["samples"], task_name(family.name), []
    k = min(8, n)
    for name, model_args, target, extra in routes(settings, tuned):
        runs, harness_pass1, harness_passk, harness_em, costs = [], [], [], [], []
        start = time.perf_counter()
        for seed in settings["seeds"]:
            batch = settings["harness_batch_size"]
            device = settings.get("harness_device", "cpu")
            args = f"default_model=True,device={device},batch_size={batch},seed={seed},{model_args}"
            began = time.perf_counter()
            out = evaluate_tasks(
                "seqtemp", args, folder, families=[family.name], log_samples=True, verbosity="WARNING"
            )
            seconds = time.perf_counter() - began
            metrics = out["results"][task]
            harness_pass1.append(metrics["pass@1,all"])
            harness_passk.append(metrics[f"pass@{k},all"])
            harness_em.append(metrics["exact_match,all"])
            cost = out["config"]["seqtemp"]["cost"]["generate_until"]
            costs.append(cost)
            completions = replies_by_prompt(out["samples"][task], held_out)
            batches = math.ceil(cost["answers"] / batch)  # the sequential calls of one batch: the table's `calls`
            runs.append({"completions": completions, "calls": cost["model_calls"] / batches,
                         "token_forwards": cost["token_forwards"], "seconds": seconds, "answers": cost["answers"]})  # fmt: skip
        ours = summarise(runs, family, held_out, n)
        difference = max(abs(a - b) for a, b in zip(harness_pass1, ours["pass@1_per_seed"]))
        row = {
            "row": name,
            "target_T": target,
            "model_args": model_args,
            **ours,
            "harness_pass@1": statistics.fmean(harness_pass1),
            "harness_pass@1_per_seed": harness_pass1,
            f"harness_pass@{k}": statistics.fmean(harness_passk),
            "harness_exact_match": statistics.fmean(harness_em),
            "harness_vs_ours_max_difference": difference,
            "model_calls_per_answer": statistics.fmean(c["model_calls_per_answer"] for c in costs),
            **extra,
        }
        rows.append(row)
        print(
            f"  {name}: harness pass@1 {row['harness_pass@1']:.3f}, ours {ours['pass@1']:.3f} "
            f"[{ours['pass@1_ci95'][0]:.3f}, {ours['pass@1_ci95'][1]:.3f}] (max difference {difference:.1e}; "
            f"{time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    return rows


def harness_markdown(rows: list[dict], settings: dict) -> str:
    """The harness table: the harness's pass@1 beside the table scorer's on the same draws, with its interval."""
    k = min(8, settings["samples"])
    head = (
        f"Task table through lm-evaluation-harness ({settings['mode']} mode): held-out prompts, sampling seeds "
        f"{settings['seeds']}, {settings['samples']} answers per prompt and seed, ≤ {settings['max_new_tokens']} new "
        f"tokens, harness batch size {settings['harness_batch_size']}, wall time {settings['wall_seconds']:.0f} s."
    )
    columns = (
        f"| family | row | harness pass@1 | ours pass@1 [95% CI] (same draws) | per seed | max difference | "
        f"harness pass@{k} | calls | token-fwd/answer | s/answer |"
    )
    lines = [head, "", columns, "|" + " --- |" * 10]
    for r in rows:
        low, high = r["pass@1_ci95"]
        lines.append(
            f"| {r['family']} | {r['row']} | {r['harness_pass@1']:.3f} | {r['pass@1']:.3f} [{low:.3f}, {high:.3f}] | "
            + " ".join(f"{v:.2f}" for v in r["pass@1_per_seed"])
            + f" | {r['harness_vs_ours_max_difference']:.0e} | {r[f'harness_pass@{k}']:.3f} | {r['calls']:.0f} | "
            f"{r['token_forwards_per_answer']:.0f} | {r['seconds_per_answer']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main_harness(base, tokenizer, settings: dict, info: dict, out: Path, start: float, tuned_once, summarise) -> None:
    """`task_table.py --harness`: each family's training-free rows through lm-evaluation-harness; `tuned_once` and
    `summarise` are the table's (the tuned token temperature, the scorer)."""
    from _common import write_json
    from _task_report import print_rows

    from hf_seqtemp.harness.tasks import write_tasks
    from hf_seqtemp.tasks.chat import get_family, split_family

    rows = []
    settings["harness_device"] = str(base.device)  # the table's --device: the harness model runs where it does
    for name in settings["families"]:
        family = get_family(name)
        train, held_out = split_family(family, settings["train_prompts"], settings["held_out_prompts"], seed=0)
        print(f"{name}: {len(held_out)} held-out prompts through the harness", flush=True)
        folder = Path(tempfile.mkdtemp(prefix="seqtemp_harness_tasks_"))
        n, length = settings["samples"], settings["max_new_tokens"]
        write_tasks(folder, [name], len(held_out), split_seed=0, repeats=n, k=min(8, n), max_gen_toks=length)
        tuned = {}
        if "tuned" in settings["rows"]:
            tuned = {alpha: tuned_once(base, tokenizer, train, settings, 1.0 / alpha) for alpha in settings["alphas"]}
        rows += [{"family": name, **r} for r in harness_rows(family, held_out, settings, folder, tuned, summarise)]
    settings["wall_seconds"] = time.perf_counter() - start
    print_rows(rows)
    worst = max(r["harness_vs_ours_max_difference"] for r in rows)
    print(f"wall time {settings['wall_seconds']:.0f} s; harness and table scorer differ by at most {worst:.1e}")
    write_json(str(out / "harness_table.json"), "harness_table", info, settings, rows,
               {"harness_vs_ours_max_difference": worst})  # fmt: skip
    (out / "harness_table.md").write_text(harness_markdown(rows, settings))
    print(f"wrote {out / 'harness_table.md'}")
