# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Public names imported on first use: the `__getattr__` / `__dir__` pair of a package's `__init__.py` (PEP 562)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str], submodules: bool = False) -> tuple[Callable, Callable]:
    """`(__getattr__, __dir__)` for `package`, importing `exports[name]` (a submodule, relative to `package`) the
    first time `name` is read and caching it; with `submodules`, any other public name that is a submodule (such as
    `hf_seqtemp.hub`) is imported too.

    Example:
    ```python
    >>> getattr_, dir_ = lazy_exports("hf_seqtemp", {"SequenceTemperatureConfig": "config"})
    >>> getattr_("SequenceTemperatureConfig").__name__, "SequenceTemperatureConfig" in dir_()
    ('SequenceTemperatureConfig', True)
    ```
    """

    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(f".{exports[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        if submodules and not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f".{name}", package)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
