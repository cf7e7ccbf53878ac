# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`python -m hf_seqtemp.harness ...`: lm-eval's command line (`lm_eval ...`, same arguments) with the `seqtemp`
model registered. lm-eval 0.4.13 finds models by the names registered in modules it has imported, and discovers no
plugin entry points, so its own `lm_eval` command does not know `seqtemp`.

One default differs: without `--device` (nor `--config`), the run is on `cuda:0` where this machine has CUDA, else on
the CPU, and the results record that device; lm-eval's default `cuda:0` is recorded even where the model falls back
to the CPU."""

from __future__ import annotations

import sys

import torch
from lm_eval.__main__ import cli_evaluate

from . import SeqTempLM  # noqa: F401 - registers the model `seqtemp`

OTHER_COMMANDS = ("ls", "validate")  # lm-eval's subcommands that run nothing


def with_device(argv: list[str]) -> list[str]:
    """`argv` (lm-eval's command line) with `--device` set to the device the run will use, when it sets none."""
    if len(argv) <= 2 or argv[1] in OTHER_COMMANDS:
        return argv
    chosen = any(arg in ("--device", "--config", "-C") or arg.startswith(("--device=", "--config=")) for arg in argv)
    return argv if chosen else [*argv, "--device", "cuda:0" if torch.cuda.is_available() else "cpu"]


if __name__ == "__main__":
    sys.argv = with_device(sys.argv)
    cli_evaluate()
