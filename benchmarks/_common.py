# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Shared plumbing of the benchmarks: device line, timing (warm-up + median), peak memory, JSON output.

Peak memory means different things per device, and every benchmark says which:

- `cuda`: `torch.cuda.max_memory_allocated()` minus the allocated bytes just before the measured work (peak extra
  tensor memory of that work; the caching allocator's reserve is not counted).
- `cpu`: peak *resident set size* of the process during the measured work minus its resident size just before it,
  read from `/proc/self/status` (`VmHWM` after resetting it through `/proc/self/clear_refs`, Linux ≥ 4.0). This
  counts every page the work touched at once: tensors, allocator slack, Python objects. Each variant is measured
  in a fresh subprocess after a warm-up, so one variant's freed-but-cached memory cannot hide another's peak.
  Where `/proc` is unavailable, the `resource.getrusage(...).ru_maxrss` delta is used (a lower bound).
"""

from __future__ import annotations

import json
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent


def pick_device(requested: str | None = None) -> torch.device:
    """`cuda` when available (or the requested device)."""
    return torch.device(requested or ("cuda" if torch.cuda.is_available() else "cpu"))


def device_info(device: torch.device) -> dict:
    """What the numbers were measured on: device kind and name, torch version, CPU threads."""
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"cpu ({platform.processor() or platform.machine()})"
    )
    return {"device": device.type, "device_name": name, "torch": torch.__version__, "threads": torch.get_num_threads()}


def print_device(device: torch.device) -> dict:
    info = device_info(device)
    print(f"device: {info['device']} [{info['device_name']}], torch {info['torch']}, threads {info['threads']}")
    return info


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_interleaved(fns: dict[str, Callable[[], object]], device, warmup: int, repeats: int) -> dict[str, dict]:
    """Times several variants round-robin (A B C A B C ...) so that machine-load drift hits all of them alike.

    Returns per variant the median, min and all seconds of `repeats` timed calls, after `warmup` untimed rounds.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times[name].append(time.perf_counter() - start)
    return {name: {"median_s": statistics.median(ts), "min_s": min(ts), "all_s": ts} for name, ts in times.items()}


def _proc_kib(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(rf"{field}:\s+(\d+) kB", text)
    return int(match.group(1)) if match else None


def measure_peak(fn: Callable[[], object], device: torch.device) -> dict:
    """Runs `fn` once and returns its peak extra memory in MiB (see the module docstring for what that means)."""
    if device.type == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        sync(device)
        peak = torch.cuda.max_memory_allocated(device) - before
        return {"peak_mib": peak / 2**20, "method": "torch.cuda.max_memory_allocated delta"}
    before = _proc_kib("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        fn()
        peak = _proc_kib("VmHWM") - before
        method = "VmHWM - VmRSS (fresh subprocess, HWM reset)"
    except OSError:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        fn()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        method = "ru_maxrss delta (lower bound)"
    return {"peak_mib": max(peak, 0) / 1024, "method": method}


def run_child(script: str, args: list[str]) -> dict:
    """Runs `python <script> <args>` in a fresh process; the child prints one JSON line last."""
    cmd = [sys.executable, str(REPO / "benchmarks" / script), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def write_json(path: str, name: str, info: dict, settings: dict, rows: list, summary: dict) -> None:
    """Writes `{"benchmark", "meta", "settings", "rows", "summary"}`; `summary` holds the key ratios."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "meta": info, "settings": settings, "rows": rows, "summary": summary}
    out.write_text(json.dumps(payload, indent=2, default=str))
    print(f"wrote {out}")


OUTPUTS = REPO / "outputs" / "bench"
"""Default folder of the JSON results: git-ignored, so a run never dirties the checkout. The committed results in
`benchmarks/results/` are refreshed deliberately, by passing `--results benchmarks/results` to `run_all.py`."""


def default_output(name: str) -> str:
    return str(OUTPUTS / f"{name}.json")
