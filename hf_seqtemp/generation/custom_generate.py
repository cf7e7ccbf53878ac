# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Template of a Hub-loadable `custom_generate/generate.py` that delegates to [`seqtemp_generate`]."""

from __future__ import annotations

import functools
import os

GENERATE_PY = '''# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature sampling: `model.generate(..., custom_generate=<this repo>, trust_remote_code=True,
seq_temperature=0.5)`. All logic lives in the `hf_seqtemp` package; this file only delegates to it."""

from transformers.generation import GenerationMixin

from hf_seqtemp.generation.routing import seqtemp_generate


def generate(model, *args, **kwargs):
    """Runs the regular `generate` preparation with `hf_seqtemp`'s decoding loop in place of `_sample`.

    `transformers` calls this with `model=` and every `generate` argument; `seq_temperature`, `strategy`,
    `mcmc_steps`, `block_size`, `glauber_rounds`, `num_candidates`, `generator` and `allow_active_adapters` are
    consumed by `seqtemp_generate`. The training-free strategies temper the base model: a model from
    `hf_seqtemp.load_tempered` has its adapters switched off for them, and a model with an active PEFT adapter that
    hf_seqtemp does not know is refused (it may be this repository's tempered adapter, which would be tempered twice).
    """
    kwargs.pop("custom_generate", None)
    kwargs.pop("trust_remote_code", None)
    # `GenerationMixin.generate` directly: `model.generate` may already be this function
    return GenerationMixin.generate(model, *args, custom_generate=seqtemp_generate, **kwargs)
'''

REQUIREMENTS_TXT = "hf-seqtemp\n"


def write_custom_generate(folder: str | os.PathLike) -> str:
    """Writes `custom_generate/generate.py` and `custom_generate/requirements.txt` into a saved model folder.

    After `push_to_hub`, users sample at sequence temperature with
    `model.generate(**inputs, custom_generate="<repo>", trust_remote_code=True, seq_temperature=0.5)`.

    Args:
        folder (`str` or `os.PathLike`): a folder written by `save_pretrained`.

    Returns:
        `str`: the path of the written `custom_generate` folder.

    Example:
    ```python
    >>> import tempfile, os
    >>> path = write_custom_generate(tempfile.mkdtemp())
    >>> sorted(os.listdir(path))
    ['generate.py', 'requirements.txt']
    ```
    """
    if not os.path.isdir(folder):
        raise ValueError(f"`folder` must be an existing model folder (from `save_pretrained`), got {str(folder)!r}.")
    target = os.path.join(folder, "custom_generate")
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "generate.py"), "w") as handle:
        handle.write(GENERATE_PY)
    with open(os.path.join(target, "requirements.txt"), "w") as handle:
        handle.write(REQUIREMENTS_TXT)
    return target


def _generate_with_seq_temperature(*args, model, **kwargs):
    from transformers.generation import GenerationMixin

    from .routing import seqtemp_generate

    if "seq_temperature" in kwargs and "custom_generate" not in kwargs:
        config = kwargs.get("generation_config")
        stop = kwargs.get("stop_strings") or getattr(config, "stop_strings", None)
        if stop and kwargs["seq_temperature"] is not None:
            raise ValueError(
                f"`stop_strings={stop!r}` with `seq_temperature`: a sequence-tempered answer ends at EOS or after "
                "`max_new_tokens` (the event the temperature is defined over), and transformers does not hand the "
                "tokenizer that stop strings need to a `custom_generate`. Bound answers with `max_new_tokens` and "
                "`eos_token_id`, or cut the decoded text at the string afterwards."
            )
        kwargs["custom_generate"] = seqtemp_generate
    return GenerationMixin.generate(model, *args, **kwargs)


def enable_seq_temperature_generate(model) -> None:
    """Lets `model.generate(**inputs, seq_temperature=T)` work without passing `custom_generate=`.

    This is what transformers itself does when it loads a repository's `custom_generate/generate.py` with
    `trust_remote_code=True`: the instance's `generate` becomes the custom function bound to the model. Calls
    without `seq_temperature` run the standard `generate` unchanged. For a `PeftModel` the inner transformers
    model is the one bound, since `PeftModel.generate` forwards to it.
    """
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner.generate = functools.partial(_generate_with_seq_temperature, model=inner)
