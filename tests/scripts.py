# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The tests' import of a script that is not part of the package (a benchmark, an example, a docs hook)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: Path, name: str, on_path: bool = False):
    """The module of the script at `path` (relative to the repository root or absolute), imported as `name`;
    `on_path` puts its folder on `sys.path` first, for scripts that import their siblings (the benchmarks'
    `_common`, `_tasks`, ...)."""
    path = ROOT / path
    if on_path and str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
