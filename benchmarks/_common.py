# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Shared plumbing of the benchmarks: device line and JSON output (paired timing and memory: `_paired.py`)."""

from __future__ import annotations

import json
import platform
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
