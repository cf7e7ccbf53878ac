# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`HF_SEQTEMP_TEST_DEVICE`: the default suite is untouched, `cuda` moves the tests' models and draws to the GPU, and
`make test-gpu` (like the variable itself) refuses on a machine without CUDA."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import devices
import pytest
import torch
from tiny_models import tiny_llama

REPO = Path(__file__).resolve().parent.parent
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")


def test_the_suite_runs_where_the_variable_says_and_the_default_suite_is_plain_cpu():
    device = devices.requested_device()
    model = tiny_llama()
    draw = torch.multinomial(torch.ones(3), 1, generator=torch.Generator().manual_seed(0))
    assert devices.TEST_DEVICE.type == device
    assert model.device.type == device and torch.zeros(1).device.type == device and draw.device.type == device
    if device == "cpu":  # the CPU suite: torch's own classes, nothing patched
        assert torch.Generator is torch._C.Generator
        assert torch.get_default_device() == torch.device("cpu")
    else:
        assert isinstance(torch.Generator(), torch._C.Generator) and torch.Generator("cpu").device.type == "cpu"


def test_a_trainer_config_follows_the_test_device(tmp_path):
    from hf_seqtemp import SeqTempConfig

    args = SeqTempConfig(output_dir=str(tmp_path), use_cpu=True, max_steps=1, save_strategy="no")
    assert args.device.type == devices.TEST_DEVICE.type


@pytest.mark.parametrize(
    ("value", "device"), [(None, "cpu"), ("", "cpu"), ("cpu", "cpu"), ("CUDA", "cuda"), (" cuda ", "cuda")]
)
def test_the_variable_names_cpu_or_cuda(value, device):
    environ = {} if value is None else {devices.VARIABLE: value}
    assert devices.requested_device(environ) == device


def test_any_other_value_is_refused_with_the_variable_the_value_and_the_fix():
    with pytest.raises(
        ValueError, match=r"`HF_SEQTEMP_TEST_DEVICE` must be one of cpu, cuda, but is 'gpu'.*make test"
    ):
        devices.requested_device({devices.VARIABLE: "gpu"})


def _environ(**values) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **values}


@NO_CUDA
@pytest.mark.parametrize(("value", "message"), [("cuda", "needs a CUDA GPU"), ("gpu", "must be one of cpu, cuda")])
def test_pytest_refuses_before_any_test_runs(value, message):
    command = [sys.executable, "-m", "pytest", "tests/tasks/test_arithmetic.py", "-p", "no:cacheprovider"]
    environ = _environ(HF_SEQTEMP_TEST_DEVICE=value)
    done = subprocess.run(command, cwd=REPO, env=environ, capture_output=True, text=True, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert message in done.stdout + done.stderr and "passed" not in done.stdout


@NO_CUDA
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_gpu_refuses_clearly_without_cuda():
    done = subprocess.run(
        ["make", "--no-print-directory", "test-gpu", f"GPU_PY={sys.executable}"],
        cwd=REPO,
        env=_environ(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "make test-gpu: no CUDA GPU here" in done.stderr and "torch.cuda.is_available() is False" in done.stderr
    assert "pytest" not in done.stdout  # refused before the suite starts
