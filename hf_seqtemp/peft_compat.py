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


# (transformers version from which, peft version it needs for its own adapter loading): known breaks only.
_TRANSFORMERS_NEEDS_PEFT = (("5.24.0", "0.22.0"),)


def transformers_peft_mismatch() -> str | None:
    """Why transformers' own PEFT integration (`model.load_adapter`, `from_pretrained` of an adapter folder) cannot
    load adapters with the installed versions, or `None` when it can (or PEFT is not installed).

    `PeftModel.from_pretrained` and [`load_tempered`] do not go through that integration and work either way.
    """
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        installed_peft = Version(version("peft"))
    except PackageNotFoundError:
        return None
    installed_transformers = Version(version("transformers"))
    for since, needs in _TRANSFORMERS_NEEDS_PEFT:
        if installed_transformers >= Version(since) and installed_peft < Version(needs):
            return (
                f"transformers {installed_transformers} loads PEFT adapters only with peft>={needs}, and peft "
                f"{installed_peft} is installed. Fix: `pip install 'peft>={needs}'` if it is released, else "
                f"`pip install 'transformers<{since}'` (hf_seqtemp's tested versions: requirements/lock.txt); "
                "`hf_seqtemp.load_tempered(folder)` and `peft.PeftModel.from_pretrained` work either way."
            )
    return None


def check_transformers_loads_adapter(path) -> None:
    """Raises a clear `ImportError` when `path` is a PEFT adapter folder that transformers' own integration would be
    asked to load with versions that cannot (see [`transformers_peft_mismatch`])."""
    import os

    if isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, "adapter_config.json")):
        reason = transformers_peft_mismatch()
        if reason:
            raise ImportError(f"cannot load the adapter folder {str(path)!r} through transformers: {reason}")


def adapter_changes_the_model(peft_model) -> bool:
    """Whether the active adapter of `peft_model` moves its outputs away from the base model's: a LoRA whose `B` is
    not all zero, or a `modules_to_save` copy whose weights differ from the module it copies (not a LoRA layer, so
    checked apart). A fresh LoRA (`B = 0`) does not."""
    import torch

    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name and parameter.abs().max() > 0:
                return True
        for module in peft_model.modules():
            copies, original = getattr(module, "modules_to_save", None), getattr(module, "original_module", None)
            if copies is None or original is None:
                continue
            reference = dict(original.named_parameters())
            for copy in copies.values():
                if any(not torch.equal(p, reference[n]) for n, p in copy.named_parameters() if n in reference):
                    return True
    return False
