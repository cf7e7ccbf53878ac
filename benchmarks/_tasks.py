# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The checkable chat task families of the benchmarks: they live in the package (`hf_seqtemp.tasks.chat`), where the
lm-evaluation-harness tasks (`hf_seqtemp.harness.tasks`) read the same checkers."""

from hf_seqtemp.tasks.chat import (  # noqa: F401
    CAPITALS,
    FAMILIES,
    SYSTEM_PROMPT,
    Family,
    check_capital,
    check_integer,
    check_yes_no,
    conversation,
    get_family,
    parse_integer,
    parse_yes_no,
    split_family,
)
