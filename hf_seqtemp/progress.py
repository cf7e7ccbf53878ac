# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""hf_seqtemp's progress bars and log messages follow the switches a transformers user already sets.

- A progress bar is off when `disable_tqdm` is set (the trainer's `TrainingArguments`), when `TQDM_DISABLE` is set
  in the environment, or when transformers' progress bars are off (`transformers.utils.logging.disable_progress_bar`)
  ([`progress_disabled`]).
- Messages of hf_seqtemp's loggers ([`get_logger`]) below transformers' verbosity are dropped: after
  `transformers.logging.set_verbosity_error()`, a dataset warning is not printed.
"""

from __future__ import annotations

import logging
import os

_TRUE = {"1", "true", "yes", "on"}


def progress_disabled(disable: bool = False) -> bool:
    """Whether a progress bar is off (`disable`, `TQDM_DISABLE`, or transformers' progress bars off).

    Example:
    ```python
    >>> progress_disabled(disable=True)
    True
    ```
    """
    if disable or os.environ.get("TQDM_DISABLE", "").strip().lower() in _TRUE:
        return True
    import sys

    if "transformers" in sys.modules:  # never imported just to ask
        from transformers.utils import logging as hf_logging

        return not hf_logging.is_progress_bar_enabled()
    return False


class _TransformersVerbosity(logging.Filter):
    """Drops records below transformers' current verbosity (when transformers is loaded)."""

    def filter(self, record: logging.LogRecord) -> bool:
        import sys

        if "transformers" not in sys.modules:
            return True
        from transformers.utils import logging as hf_logging

        return record.levelno >= hf_logging.get_verbosity()


def get_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)` whose records below transformers' verbosity are dropped."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, _TransformersVerbosity) for f in logger.filters):
        logger.addFilter(_TransformersVerbosity())
    return logger
