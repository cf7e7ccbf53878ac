# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`python -m hf_seqtemp.harness ...`: lm-eval's command line (`lm_eval ...`, same arguments) with the `seqtemp`
model registered. lm-eval 0.4.13 finds models by the names registered in modules it has imported, and discovers no
plugin entry points, so its own `lm_eval` command does not know `seqtemp`."""

from __future__ import annotations

from lm_eval.__main__ import cli_evaluate

from . import SeqTempLM  # noqa: F401 - registers the model `seqtemp`

if __name__ == "__main__":
    cli_evaluate()
