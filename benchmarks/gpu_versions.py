# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Before anything runs on a lent GPU machine: do the packages that *import* there have the versions we test?

The machine's image has its own Python packages (on 2026-11-26: torch 2.11.0+cu130, transformers 5.17.0, below our
floor); `gpu_run.sh` puts the carried wheels (`benchmarks/gpu_wheels.txt`, the lock's versions) first on the path.
This script imports each package as the runs will and compares the version it reports (`__version__`, not the
metadata, which can name another copy than the one imported):

- the carried packages (every `name==version` line of `gpu_wheels.txt`) must be exactly that version;
- the packages taken from the image (`IMAGE_PACKAGES`) must satisfy the floors below.

It prints one line per package and exits with status 2, naming each package that differs, when any does.

Usage:
    python benchmarks/gpu_versions.py [--wheels benchmarks/gpu_wheels.txt]
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# distribution name -> import name, where they differ
IMPORT_NAMES = {"pyyaml": "yaml", "pillow": "PIL", "python-dateutil": "dateutil", "fonttools": "fontTools"}
# taken from the image, not carried: the lowest versions the package works with (pyproject.toml; huggingface_hub:
# what transformers 5.23 asks for; torch: the lent image's 2.11 ran the suite)
IMAGE_PACKAGES = {"torch": "2.11", "huggingface_hub": "1.31"}
# what the runs import: checked even when a wheel list leaves it out
REQUIRED = ("transformers", "peft", "accelerate", "tokenizers", "safetensors", "trl", "datasets")


def _release(version: str) -> tuple[int, ...]:
    """`(5, 23, 0)` from `'5.23.0'`, `'2.11.0+cu130'` or `'1.0.0rc1'` (the numeric release part only)."""
    parts = re.match(r"^(\d+(?:\.\d+)*)", version)
    return tuple(int(p) for p in parts.group(1).split(".")) if parts else ()


def carried_pins(wheels: Path) -> dict[str, str]:
    """`{name: version}` of the `name==version` lines of a wheel list."""
    pins = {}
    for line in wheels.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


def imported_version(name: str) -> str | None:
    """The version the package reports once imported (`None` when it does not import); for a module without
    `__version__`, the metadata of the distribution its file belongs to."""
    try:
        module = importlib.import_module(IMPORT_NAMES.get(name, name.replace("-", "_")))
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def problems(found: dict[str, str | None], pins: dict[str, str], floors: dict[str, str]) -> list[str]:
    """What differs: a carried package not at its pinned version, an image package below its floor, or either
    missing. `found` maps each name to the version that imports (`None`: does not import).

    Example:
    ```python
    >>> problems({"transformers": "5.17.0", "torch": "2.11.0+cu130"}, {"transformers": "5.23.0"}, {"torch": "2.11"})
    ['transformers 5.17.0 imports, the lock has 5.23.0: carry its wheel (benchmarks/gpu_wheels.txt)']
    ```
    """
    wrong = []
    for name, want in sorted(pins.items()):
        have = found.get(name)
        if have is None:
            wrong.append(f"{name} does not import, the lock has {want}: carry its wheel (benchmarks/gpu_wheels.txt)")
        elif _release(have) != _release(want):
            wrong.append(f"{name} {have} imports, the lock has {want}: carry its wheel (benchmarks/gpu_wheels.txt)")
    for name, floor in sorted(floors.items()):
        have = found.get(name)
        if have is None:
            wrong.append(f"{name} does not import, the image must have it (>= {floor})")
        elif _release(have) < _release(floor):
            wrong.append(f"{name} {have} imports, below the floor {floor}: carry a wheel of it")
    return wrong


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheels", default=str(REPO / "benchmarks" / "gpu_wheels.txt"))
    args = parser.parse_args(argv)
    pins = carried_pins(Path(args.wheels))
    names = sorted({*pins, *REQUIRED, *IMAGE_PACKAGES})
    found = {name: imported_version(name) for name in names}
    for name in names:
        want = pins.get(name) or (f">= {IMAGE_PACKAGES[name]}" if name in IMAGE_PACKAGES else "(imports)")
        print(f"{name:20s} {found[name] or 'does not import':24s} wanted {want}")
    missing_pins = [name for name in REQUIRED if name not in pins]
    wrong = problems(found, pins, IMAGE_PACKAGES)
    wrong += [f"{name} is not in the wheel list: add the lock's version to it" for name in missing_pins]
    if wrong:
        print("gpu_versions: these versions are not the ones we test; nothing was run:", file=sys.stderr)
        for line in wrong:
            print(f"  - {line}", file=sys.stderr)
        return 2
    print("gpu_versions: every package imports at the lock's version")
    return 0


if __name__ == "__main__":
    sys.exit(main())
