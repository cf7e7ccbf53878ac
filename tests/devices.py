# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The device the suite runs on: `HF_SEQTEMP_TEST_DEVICE` (`cpu` when unset, the default suite; `cuda` for
`make test-gpu`).

With `cuda`, `tests/conftest.py` makes it torch's default device before any test builds a model, so every tiny model,
input tensor and unseeded draw of the exactness oracles, trainer and sampler tests lives on the GPU without a line of
the tests changing. Two things do not follow torch's default device and are switched too:

- `torch.Generator()` is created on the CPU whatever the default device is, and a CPU generator cannot draw a CUDA
  tensor: the tests' `torch.Generator()` becomes a generator on the test device.
- `use_cpu=True` in a trainer config (the CPU suite sets it so that no test depends on the machine) would move the
  model back to the CPU: it is turned off.

Under the switch torch's default device is the GPU, so a tensor the package creates without `device=` lands there
too: the suite checks the numerics and kernels on CUDA, not where such a tensor would go in a user's process. That
class of defect is caught on the CPU instead, from the package's source (`tests/test_device_guard.py`: every tensor
factory names its device). The tiny models are built on the CPU, from the CPU's random stream, and moved
(`tiny_models.py`), as a user's model is: the CUDA suite tests the weights the CPU suite's thresholds were set on.
"""

from __future__ import annotations

import os

import torch

VARIABLE = "HF_SEQTEMP_TEST_DEVICE"
DEVICES = ("cpu", "cuda")


def requested_device(environ=os.environ) -> str:
    """The device named by `HF_SEQTEMP_TEST_DEVICE` (`cpu` when unset or empty); raises on any other value."""
    value = environ.get(VARIABLE, "").strip().lower() or "cpu"
    if value not in DEVICES:
        raise ValueError(
            f"`{VARIABLE}` must be one of {', '.join(DEVICES)}, but is {environ[VARIABLE]!r}: unset it for the CPU "
            f"suite (`make test`), or set `{VARIABLE}=cuda` (`make test-gpu`) on a machine with an NVIDIA GPU."
        )
    return value


def missing_cuda_reason() -> str | None:
    """Why the CUDA suite cannot run here, or `None` when it can."""
    if torch.cuda.is_available():
        return None
    build = f"torch {torch.__version__}" + (f" built for CUDA {torch.version.cuda}" if torch.version.cuda else "")
    return (
        f"{VARIABLE}=cuda (make test-gpu) needs a CUDA GPU, but torch.cuda.is_available() is False here ({build}): "
        f"run it on a machine with an NVIDIA GPU and a CUDA build of torch, or run `make test` (the CPU suite)."
    )


TEST_DEVICE = torch.device("cpu")
"""The suite's device, set by `switch_to` when `tests/conftest.py` configures the run."""


_GENERATOR = torch.Generator


class _OnTestDevice(type(_GENERATOR)):
    """Builds `torch.Generator()` on the test device (an explicit `device=` is kept); `isinstance` and `issubclass`
    answer as for torch's own class, which torch, accelerate and transformers check."""

    def __call__(cls, device=None):
        return _GENERATOR(TEST_DEVICE if device is None else device)

    def __instancecheck__(cls, instance):
        return isinstance(instance, _GENERATOR)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, _GENERATOR)


class _TestDeviceGenerator(_GENERATOR, metaclass=_OnTestDevice):
    pass


def switch_to(device: torch.device) -> None:
    """Makes `device` the suite's device: torch's default device, `torch.Generator()` and trainer configs (nothing
    changes for `cpu`)."""
    global TEST_DEVICE
    TEST_DEVICE = device
    if device.type == "cpu":
        return
    import transformers

    torch.set_default_device(device)
    torch.Generator = _TestDeviceGenerator
    post_init = transformers.TrainingArguments.__post_init__

    def __post_init__(self):
        self.use_cpu = False
        post_init(self)

    transformers.TrainingArguments.__post_init__ = __post_init__
