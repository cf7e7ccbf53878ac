# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Runs every benchmark, each in its own subprocess, then prints a summary: every cost as median [min, max] of paired
ratios with its target and verdict, and the fidelity figures.

Each benchmark prints its own table and writes `<results>/<name>.json`; this script streams their output in
sequence and reads the `summary` of each JSON file. `--results` defaults to `outputs/bench/` (git-ignored), so a run
never dirties the checkout; the committed results are refreshed deliberately with `--results benchmarks/results`.
The same command runs on a GPU unchanged (each benchmark picks `cuda` when available).

Usage:
    python benchmarks/run_all.py [--quick] [--only train_step scoring ...] [--results outputs/bench]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import OUTPUTS, provenance

from hf_seqtemp.costs import format_summary, is_paired_summary

COSTS = ("online_step", "scoring", "train_step", "decode", "samplers", "smc_proposals", "block_dp")
BENCHMARKS = (*COSTS, "fidelity", "fidelity_diffusion")


def run_one(name: str, quick: bool, results: Path) -> dict:
    output = results / f"{name}.json"
    cmd = [sys.executable, str(HERE / f"{name}.py"), "--output", str(output)] + (["--quick"] if quick else [])
    if name.startswith("fidelity"):  # plots inside the results folder, not in the checkout
        cmd += ["--output_dir", str(results.resolve() / name)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    print(f"\n{'=' * 30} {name} {'=' * 30}\n$ {' '.join(cmd)}", flush=True)
    start = time.perf_counter()
    code = subprocess.call(cmd, cwd=HERE.parent, env=env)
    seconds = time.perf_counter() - start
    print(f"[{name}: exit {code}, {seconds:.0f} s]", flush=True)
    summary = json.loads(output.read_text())["summary"] if code == 0 and output.is_file() else None
    return {"exit_code": code, "seconds": seconds, "summary": summary}


def _format(value) -> str:
    if is_paired_summary(value):
        return format_summary("", value).strip()
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_format(v)}" for k, v in value.items())
    return str(value)


def main():
    # `hf-seqtemp bench` runs this script and names itself in HF_SEQTEMP_PROG, so that the usage line is the one typed
    parser = argparse.ArgumentParser(
        prog=os.environ.get("HF_SEQTEMP_PROG", "python benchmarks/run_all.py"),
        description=" ".join(__doc__.split("\n\n")[0].split()),
    )
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    parser.add_argument(
        "--results",
        default=str(OUTPUTS),
        help="folder for the JSON files (default: outputs/bench, git-ignored; benchmarks/results holds the committed "
        "ones, refreshed by passing it here)",
    )
    args = parser.parse_args()
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    outcomes = {name: run_one(name, args.quick, results) for name in (args.only or BENCHMARKS)}
    total = time.perf_counter() - start
    print(f"\n{'=' * 30} summary ({'quick' if args.quick else 'full'}, {total:.0f} s in all) {'=' * 30}")
    for name, outcome in outcomes.items():
        if outcome["summary"] is None:
            print(f"{name}: FAILED (exit {outcome['exit_code']})")
            continue
        print(f"{name} ({outcome['seconds']:.0f} s):")
        for key, value in outcome["summary"].items():
            if is_paired_summary(value):
                print(f"  {format_summary(key, value)}")
            else:
                print(f"  {key:<44} {_format(value)}")
    payload = {"provenance": provenance(), "quick": args.quick, "seconds": total, **outcomes}
    (results / "run_all.json").write_text(json.dumps(payload, indent=2))
    sys.exit(max(o["exit_code"] for o in outcomes.values()))


if __name__ == "__main__":
    main()
