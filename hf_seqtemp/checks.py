# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Checks of user-given numbers, shared by every module: one message format for each kind of value.

This is the bottom floor of the package: it imports nothing from hf_seqtemp, and everything may import it.
"""

from __future__ import annotations

import math
from typing import Any

TEMPERATURE_HINTS = {
    "seq_temperature": "For greedy decoding use `do_sample=False`; to sample the model as it is, leave "
    "`seq_temperature=None`.",
    "token_temperature": "Use 1.0 to score or sample the model as it is.",
    "alpha": "`alpha` is the inverse sequence temperature 1 / T; for greedy decoding use `do_sample=False`.",
}
_DEFAULT_HINT = "Use T < 1 to sharpen and T > 1 to flatten the sequence distribution; T = 1 leaves it unchanged."


def check_temperature(value: Any, name: str = "temperature") -> float:
    """Returns a temperature (or any exponent that must be a finite number > 0) as a float, or raises naming it.

    Args:
        value: the value a user passed.
        name (`str`, *optional*, defaults to `"temperature"`): the parameter name, used in the error; it also picks
            the hint of the error ([`TEMPERATURE_HINTS`]).

    Raises:
        TypeError: when `value` is not an `int` or `float` (a `bool` is not a number here).
        ValueError: when `value` is NaN, infinite or ≤ 0.

    Example:
    ```python
    >>> check_temperature(1, "seq_temperature")
    1.0
    >>> check_temperature(0.0, "seq_temperature")
    Traceback (most recent call last):
    ...
    ValueError: `seq_temperature` must be a finite float > 0, got 0.0. For greedy decoding use `do_sample=False`; \
to sample the model as it is, leave `seq_temperature=None`.
    ```
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"`{name}` must be a float > 0, got {value!r} ({type(value).__name__}).")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        hint = TEMPERATURE_HINTS.get(name, _DEFAULT_HINT)
        raise ValueError(f"`{name}` must be a finite float > 0, got {value}. {hint}")
    return value


SUPPORTED_TEMPERATURES = (1e-3, 1e3)
"""The sequence temperatures T a tempered model can be trained to or recorded at (inclusive)."""
_RANGE_REASON = (
    "Losses, metrics and samplers scale float32 sequence log-likelihoods (hundreds of nats, rounded to about 1e-5 "
    "nats) by 1/T: below 1e-3 that rounding alone moves log p / T by more than 1e-2 nats and p^(1/T) is the mode "
    "(use greedy decoding); above 1e3 p^(1/T) is within a factor e^(Δ log p / 1000) of uniform over the support, "
    "below what a held-out T_eff can resolve."
)


def check_temperature_range(value: Any, name: str = "target_temperature") -> float:
    """[`check_temperature`], then `value` within [`SUPPORTED_TEMPERATURES`], or raises naming both and why.

    Example:
    ```python
    >>> check_temperature_range(0.5)
    0.5
    >>> check_temperature_range(1e308)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `target_temperature` must be in [0.001, 1000], got 1e+308. Losses, metrics and samplers scale ...
    ```
    """
    value = check_temperature(value, name)
    low, high = SUPPORTED_TEMPERATURES
    if not low <= value <= high:
        raise ValueError(f"`{name}` must be in [{low:g}, {high:g}], got {value:g}. {_RANGE_REASON}")
    return value


def check_int(value: Any, name: str, minimum: int = 1, allow_none: bool = False, fix: str = "") -> int | None:
    """Returns `value` if it is an integer ≥ `minimum` (or `None` with `allow_none`), else raises naming it.

    A float (even `2.0`) or a `bool` is refused: a count is an `int`.

    Args:
        value: the value a user passed.
        name (`str`): the parameter name, used in the error.
        minimum (`int`, *optional*, defaults to 1): the smallest accepted value.
        allow_none (`bool`, *optional*, defaults to `False`): accept `None` (an optional count).
        fix (`str`, *optional*): what to do instead, appended to the error.

    Raises:
        ValueError: otherwise.

    Example:
    ```python
    >>> check_int(3, "num_orders")
    3
    >>> check_int(2.0, "num_orders")
    Traceback (most recent call last):
    ...
    ValueError: `num_orders` must be an integer ≥ 1, got 2.0.
    ```
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        message = f"`{name}` must be an integer ≥ {minimum}{' or None' if allow_none else ''}, got {value!r}."
        raise ValueError(f"{message} {fix}".strip())
    return value


def renamed_arguments(renames: dict[str, str], removal: str):
    """Keeps old keyword names of a public function working for a while: each warns once per call with a
    `FutureWarning` naming the new keyword and the version that removes the old one.

    Example:
    ```python
    >>> import warnings
    >>> @renamed_arguments({"old": "new"}, removal="0.3.0")
    ... def f(new):
    ...     return new
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     f(old=3), caught[0].category.__name__
    (3, 'FutureWarning')
    ```
    """
    import functools
    import warnings

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"pass `{new}` only; `{old}` is its former name.")
                    warnings.warn(
                        f"`{old}` is renamed `{new}` and will be removed in hf_seqtemp {removal}.",
                        FutureWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate


def available_bytes(device) -> int:
    """Bytes that can still be allocated on `device` (a `torch.device` or its name): the accelerator's free memory,
    else the system's available RAM."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _gigabytes(count: int) -> str:
    return f"{count / 1e9:.3g} GB"


def check_bytes(estimated: int, device, what: str, fix: str, fraction: float = 0.5) -> None:
    """Refuses an allocation of about `estimated` bytes that exceeds `fraction` of what `device` has available,
    before anything is allocated: the error names what needs it, the estimate, what is free and the fix.

    Example:
    ```python
    >>> check_bytes(10**18, "cpu", "`num_candidates=None` (all 8 tokens of a site)", "Pass `num_candidates=4`.")
    Traceback (most recent call last):
    ...
    ValueError: `num_candidates=None` (all 8 tokens of a site) needs about 1e+09 GB, ...
    ```
    """
    free = available_bytes(device)
    if estimated > fraction * free:
        raise ValueError(
            f"{what} needs about {_gigabytes(estimated)}, more than {fraction:.0%} of the {_gigabytes(free)} "
            f"available on {device}. {fix}"
        )


def check_generator_device(generator, device, name: str = "generator") -> None:
    """Refuses a `torch.Generator` on another device than the tensors it draws (a sampler draws on the device of
    the model's inputs): torch would fail later, mid-sampling, with "Expected a 'cuda' device type for generator".

    Example:
    ```python
    >>> import torch
    >>> check_generator_device(torch.Generator().manual_seed(0), torch.device("cpu"))  # the same device: fine
    >>> check_generator_device(torch.Generator(), torch.device("meta"))
    Traceback (most recent call last):
    ...
    ValueError: `generator` is on cpu but draws tensors on meta: create it there, `torch.Generator(device="meta").manual_seed(...)`.
    ```
    """
    if generator is None:
        return
    import torch

    have, want = torch.device(generator.device), torch.device(device)
    if have.type == want.type and (have.index is None or want.index is None or have.index == want.index):
        return
    raise ValueError(
        f"`{name}` is on {have} but draws tensors on {want}: create it there, "
        f'`torch.Generator(device="{want}").manual_seed(...)`.'
    )
