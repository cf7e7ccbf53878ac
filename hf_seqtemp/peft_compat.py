# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""PEFT helpers: recognising a `PeftModel` (also inside a `DiffusionLM` wrapper), and keeping the user's output
clean where PEFT and transformers disagree on a name."""

from __future__ import annotations

import contextlib
import warnings

from .models.base import wrapped_model


def is_peft_model(model) -> bool:
    """Whether `model` is a `PeftModel` (`False` when PEFT is not installed).

    Example:
    ```python
    >>> import torch
    >>> is_peft_model(torch.nn.Linear(2, 2))
    False
    ```
    """
    try:
        from peft import PeftModel
    except ImportError:
        return False
    return isinstance(model, PeftModel)


def peft_model_of(model):
    """The `PeftModel` of `model`: itself, or the model inside its [`DiffusionLM`] wrapper; `None` when neither is
    one."""
    inner = wrapped_model(model)
    return inner if is_peft_model(inner) else None


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
