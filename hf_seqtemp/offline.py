# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A model id that cannot be loaded while the Hub is switched off (`HF_HUB_OFFLINE=1`), named with the fix."""

from __future__ import annotations

import contextlib
import os


def hub_offline() -> bool:
    """Whether the Hub is switched off (`HF_HUB_OFFLINE`, or transformers' older `TRANSFORMERS_OFFLINE`)."""
    from huggingface_hub import constants

    legacy = os.environ.get("TRANSFORMERS_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}
    return bool(constants.HF_HUB_OFFLINE) or legacy


def offline_message(model_id: str, what: str = "model") -> str:
    """The fix for an id that is neither a local folder nor in the Hugging Face cache while offline.

    Example:
    ```python
    >>> offline_message("HuggingFaceTB/SmolLM2-135M-Instructt").split(":")[0]
    "the model 'HuggingFaceTB/SmolLM2-135M-Instructt' is neither a local folder nor in the Hugging Face cache"
    ```
    """
    return (
        f"the {what} {model_id!r} is neither a local folder nor in the Hugging Face cache: HF_HUB_OFFLINE is set, so "
        "the Hub was not asked. Check the spelling of the id, pass a local folder (a `save_pretrained` folder of "
        "the model), or unset HF_HUB_OFFLINE (`HF_HUB_OFFLINE=0`) to download it."
    )


@contextlib.contextmanager
def named_when_offline(model_id, what: str = "model"):
    """Turns transformers' "couldn't connect" error (a long traceback naming neither the id nor the offline setting)
    for a `from_pretrained(model_id)` into a `FileNotFoundError` of [`offline_message`], when the Hub is off and
    `model_id` is no local folder."""
    try:
        yield
    except OSError as error:
        if not isinstance(model_id, (str, os.PathLike)) or os.path.isdir(model_id) or not hub_offline():
            raise
        raise FileNotFoundError(offline_message(str(model_id), what)) from error
