# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Where PEFT and transformers disagree on a name, hf_seqtemp keeps the user's output clean."""

from __future__ import annotations

import contextlib
import warnings


@contextlib.contextmanager
def peft_deprecations_silenced():
    """Silences the deprecation that building a `PeftModel` triggers inside transformers, and nothing else.

    `PeftModel.__init__` (peft 0.21) reads `model.is_gradient_checkpointing`, which transformers 5 deprecates in
    favour of `is_activation_checkpointing` with a `FutureWarning`: a warning about PEFT's code that the user can do
    nothing about. Every other warning still shows.

    Example:
    ```python
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with peft_deprecations_silenced():
    ...         warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning)
    ...         warnings.warn("something else", FutureWarning)
    >>> [str(w.message) for w in caught]
    ['something else']
    ```
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        yield
