# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Template of a Hub-loadable `custom_generate/generate.py` that delegates to [`seqtemp_generate`]."""

from __future__ import annotations

import contextlib
import copy
import functools
import os

from .call_kwargs import seqtemp_call_kwargs

GENERATE_PY = '''# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature sampling: `model.generate(..., custom_generate=<this repo>, trust_remote_code=True,
seq_temperature=0.5)`. All logic lives in the `hf_seqtemp` package; this file only delegates to it.

hf_seqtemp is not on PyPI (a package of that name there is not this one), so this folder ships no
`requirements.txt` that would tell you to `pip install` a bare name: install it from {source}."""

from transformers.generation import GenerationMixin

try:  # transformers lists a file's imports outside try blocks as requirements to pip install
    from hf_seqtemp.generation.call_kwargs import seqtemp_call_kwargs
    from hf_seqtemp.generation.custom_generate import stop_strings_as_criteria
    from hf_seqtemp.generation.routing import seqtemp_generate
except ImportError as error:
    _MISSING = error
else:
    _MISSING = None

INSTALL = "{source}"


def generate(model, *args, **kwargs):
    """Runs the regular `generate` preparation with `hf_seqtemp`'s decoding loop in place of `_sample`.

    `transformers` calls this with `model=` and every `generate` argument; `seq_temperature`, `strategy`,
    `mcmc_steps`, `block_size`, `glauber_rounds`, `num_candidates`, `generator` and `allow_active_adapters` are
    consumed by `seqtemp_generate`; `stop_strings` (with `tokenizer=`) become a stopping criterion, which
    `strategy="adapter"` honours and the whole-answer strategies refuse by name. The training-free strategies
    temper the base model: a model from `hf_seqtemp.load_tempered` has its adapters switched off for them, and a
    model with an active PEFT adapter that hf_seqtemp does not know is refused (it may be this repository's
    tempered adapter, which would be tempered twice).
    """
    if _MISSING is not None:
        raise ImportError(
            "This repository's custom_generate needs the hf_seqtemp package, which is not installed here "
            f"({{_MISSING}}). It is not on PyPI (a package named hf-seqtemp there is not this one): install it from "
            f"{{INSTALL}}, then call generate again."
        ) from _MISSING
    kwargs.pop("custom_generate", None)
    kwargs.pop("trust_remote_code", None)
    seqtemp_call_kwargs(kwargs)  # options on a GenerationConfig, sampling on, the streamer handed over
    # `GenerationMixin.generate` directly: `model.generate` may already be this function
    with stop_strings_as_criteria(model, kwargs):
        return GenerationMixin.generate(model, *args, custom_generate=seqtemp_generate, **kwargs)
'''

SOURCE_URL_LABELS = ("repository", "source", "source code", "homepage")


def package_source() -> str:
    """Where hf_seqtemp is installed from, in words: its source repository as the installed package's metadata
    names it (`[project.urls]` of `pyproject.toml`: `Repository`, `Source` or `Homepage`), as a pip command; else a
    checkout of its source. Never a bare package name, which anyone could register on PyPI.

    Example:
    ```python
    >>> "pip install" in package_source()
    True
    ```
    """
    import importlib.metadata

    try:
        urls = importlib.metadata.metadata("hf-seqtemp").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        urls = []
    named = {}
    for entry in urls:
        label, _, url = entry.partition(",")
        named[label.strip().lower()] = url.strip()
    for label in SOURCE_URL_LABELS:
        if named.get(label, "").startswith("https://"):
            return f"its source repository {named[label]} (`pip install git+{named[label]}`)"
    return "a checkout of its source (`pip install -e .` in the checkout)"


def write_custom_generate(folder: str | os.PathLike) -> str:
    """Writes `custom_generate/generate.py` into a saved model folder (no `requirements.txt`: see
    [`package_source`]; one left by an earlier save is removed).

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
    ['generate.py']
    ```
    """
    if not os.path.isdir(folder):
        raise ValueError(f"`folder` must be an existing model folder (from `save_pretrained`), got {str(folder)!r}.")
    target = os.path.join(folder, "custom_generate")
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "generate.py"), "w") as handle:
        handle.write(GENERATE_PY.format(source=package_source()))
    stale = os.path.join(target, "requirements.txt")
    if os.path.isfile(stale):  # an earlier hf_seqtemp's: a bare name a stranger could register
        os.remove(stale)
    return target


@contextlib.contextmanager
def stop_strings_as_criteria(model, kwargs: dict):
    """Turns a call's `stop_strings` into a `StopStringCriteria` among its `stopping_criteria`, in place.

    transformers drops `tokenizer=` before it calls a callable `custom_generate`, then stops on stop strings with
    "could not locate a tokenizer". The entry points that see the call first (a model from `load_tempered`, the Hub
    folder's `custom_generate/generate.py`) build the criterion here with the call's tokenizer, so that
    `strategy="adapter"` (token by token) stops at the string exactly as cutting its answer there afterwards would,
    and the whole-answer strategies (`"mcmc"`, `"smc"`, `"glauber"`) refuse `StopStringCriteria` by name. The stop
    strings of the call's `generation_config` or of the model's own are moved too; the model's is restored on exit.
    """
    config = kwargs.get("generation_config")
    own = getattr(model, "generation_config", None)
    stop = (
        kwargs.pop("stop_strings", None) or getattr(config, "stop_strings", None) or getattr(own, "stop_strings", None)
    )
    if not stop:
        yield kwargs
        return
    tokenizer = kwargs.pop("tokenizer", None)
    if tokenizer is None:
        raise ValueError(
            f"`stop_strings={stop!r}` needs the model's tokenizer to find the strings in the tokens: pass "
            "`tokenizer=` to `generate`."
        )
    from transformers import StoppingCriteriaList, StopStringCriteria

    criteria = StoppingCriteriaList(kwargs.get("stopping_criteria") or [])
    criteria.append(StopStringCriteria(tokenizer=tokenizer, stop_strings=stop))
    kwargs["stopping_criteria"] = criteria
    if getattr(config, "stop_strings", None):
        kwargs["generation_config"] = copy.deepcopy(config)
        kwargs["generation_config"].stop_strings = None
    saved = getattr(own, "stop_strings", None)
    if saved:
        own.stop_strings = None  # transformers 5 would fill the call's `None` from it again
    try:
        yield kwargs
    finally:
        if saved:
            own.stop_strings = saved


def _generate_with_seq_temperature(*args, model, **kwargs):
    from transformers.generation import GenerationMixin

    from .routing import seqtemp_generate

    if "custom_generate" in kwargs:
        return GenerationMixin.generate(model, *args, **kwargs)
    seqtemp_call_kwargs(kwargs)
    if kwargs.get("seq_temperature") is None:
        return GenerationMixin.generate(model, *args, **kwargs)
    kwargs["custom_generate"] = seqtemp_generate
    with stop_strings_as_criteria(model, kwargs):
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
