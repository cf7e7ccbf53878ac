# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Staged saves: a saved folder is the old save or the new one, never new weights under an old config.

A save writes every file into a staging folder inside the target first (the card's held-out measurement runs there
too, the longest part), then removes the old `seqtemp_config.json`, moves every new file into place and writes the
new `seqtemp_config.json` last. A kill before the moves leaves the old save whole; a kill during them leaves no
`seqtemp_config.json`, which `load_tempered` refuses by name (an interrupted save), never new weights loaded under
the old temperature.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from .config import CONFIG_NAME

STAGING_PREFIX = ".partial-save-"


@contextlib.contextmanager
def staged_save(folder: str | os.PathLike) -> Iterator[str]:
    """Yields a staging folder inside `folder`; on a clean exit its files replace `folder`'s, `seqtemp_config.json`
    last (the old one is removed before any file moves). On an error nothing in `folder` changes."""
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    for stale in os.listdir(folder):  # what a killed save left behind
        if stale.startswith(STAGING_PREFIX):
            shutil.rmtree(os.path.join(folder, stale), ignore_errors=True)
    staging = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder)
    try:
        yield staging
        publish(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish(staging: str, folder: str) -> None:
    """Moves the staged files into `folder`: first the old `seqtemp_config.json` goes (the folder stops being a
    tempered adapter), then every other file replaces its namesake, and the new `seqtemp_config.json` comes last."""
    old_config = os.path.join(folder, CONFIG_NAME)
    if os.path.exists(old_config):
        os.remove(old_config)
    for name in sorted(os.listdir(staging), key=lambda entry: entry == CONFIG_NAME):
        source, target = os.path.join(staging, name), os.path.join(folder, name)
        if os.path.isdir(source) and os.path.isdir(target):
            shutil.rmtree(target)
        os.replace(source, target)
