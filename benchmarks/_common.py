# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Shared plumbing of the benchmarks: device line and JSON output (paired timing and memory: `hf_seqtemp.costs`)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent


def pick_device(requested: str | None = None) -> torch.device:
    """`cuda` when available (or the requested device)."""
    return torch.device(requested or ("cuda" if torch.cuda.is_available() else "cpu"))


def cpu_model() -> str:
    """The CPU's model name (`/proc/cpuinfo` on Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device: torch.device) -> dict:
    """What the numbers were measured on: device kind and name, torch version, CPU threads, the CPU model and the
    vector instruction set torch's CPU kernels use (`torch.backends.cpu.get_cpu_capability()`; e.g. bf16 matmuls
    are fast on AVX512-BF16/AMX and slow on AVX2)."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({platform.machine()})"
    return {
        "device": device.type,
        "device_name": name,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def print_device(device: torch.device) -> dict:
    info = device_info(device)
    print(
        f"device: {info['device']} [{info['device_name']}], torch {info['torch']}, threads {info['threads']}, "
        f"CPU {info['cpu_model']} (torch CPU capability {info['cpu_capability']})"
    )
    return info


def cores_busy(interval: float = 1.0) -> float | None:
    """The cores busy over the next `interval` seconds (this process sleeps meanwhile), from Linux's `/proc/stat`;
    None elsewhere. Unlike the 1-minute load average, it does not count a job that has just ended."""

    def ticks():
        with open("/proc/stat", encoding="ascii") as stat:
            values = [int(v) for v in stat.readline().split()[1:]]
        return sum(values), values[3] + (values[4] if len(values) > 4 else 0)  # total, idle + iowait

    try:
        total, idle = ticks()
        time.sleep(interval)
        total2, idle2 = ticks()
    except (OSError, ValueError, IndexError):
        return None
    return (os.cpu_count() or 1) * (1.0 - (idle2 - idle) / max(1, total2 - total))


def _commit() -> str:
    """The checkout's commit, `-dirty` when tracked files differ from it, or `unknown` outside a git checkout."""
    try:
        run = lambda *args: subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
        sha = run("rev-parse", "HEAD").stdout.strip()
        dirty = run("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


STARTED_AT = _commit()
"""The commit the benchmark started on (its modules were loaded from it): what a result records, even when the
checkout moved on while it ran (a result written hours later at another HEAD would name code it did not run)."""


def provenance(info: dict | None = None) -> dict:
    """What a committed result must say about itself (`tests/test_results_trace.py` checks it): the command that
    wrote it, the commit it started on ([`STARTED_AT`]; `commit_at_write` too when the checkout moved during the
    run), the machine and the date (UTC)."""
    info = info or {}
    cpu = ", ".join(x for x in (info.get("cpu_model"), info.get("cpu_capability")) if x)
    device = f"{info['device_name']}; " if info.get("device") not in (None, "cpu") else ""
    threads = info.get("threads")
    machine = f"{device}{os.cpu_count()}-core {platform.machine()}" + (f" ({cpu})" if cpu else "")
    machine += f", torch {info.get('torch', torch.__version__)}" + (
        f", {threads} torch thread{'s' * (threads != 1)}" if threads else ""
    )
    argv = [str(Path(sys.argv[0]).resolve().relative_to(REPO)) if Path(sys.argv[0]).is_file() else sys.argv[0]]
    record = {
        "command": shlex.join(["python", *argv, *sys.argv[1:]]),
        "commit": STARTED_AT,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "machine": machine,
    }
    now = _commit()
    if now != STARTED_AT:
        record["commit_at_write"] = now
    return record


def write_json(path: str, name: str, info: dict, settings: dict, rows: list, summary: dict) -> None:
    """Writes `{"provenance", "benchmark", "meta", "settings", "rows", "summary"}`; `summary` holds the key ratios,
    `provenance` the command, commit, machine and date ([`provenance`])."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"provenance": provenance(info), "benchmark": name, "meta": info, "settings": settings, "rows": rows}
    payload["summary"] = summary
    out.write_text(json.dumps(payload, indent=2, default=str))
    print(f"wrote {out}")


OUTPUTS = REPO / "outputs" / "bench"
"""Default folder of the JSON results: git-ignored, so a run never dirties the checkout. The committed results in
`benchmarks/results/` are refreshed deliberately, by passing `--results benchmarks/results` to `run_all.py`."""


def default_output(name: str) -> str:
    return str(OUTPUTS / f"{name}.json")


def timing_parser(doc: str, name: str, quick_help: str):
    """The arguments every timing benchmark takes (`--quick`, `--output`, `--device`, `--dtype`, `--threads`); the
    caller adds its own and parses with [`parse_timing_args`]."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--output", default=default_output(name))
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    return parser


def parse_timing_args(parser):
    """`parser.parse_args()`, with `--threads` applied."""
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def lora_config():
    """The timing benchmarks' LoRA: rank 8 on the attention projections."""
    from peft import LoraConfig

    return LoraConfig(
        r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )  # fmt: skip
