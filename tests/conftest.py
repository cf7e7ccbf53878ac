# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import os

import pytest
import torch
from devices import VARIABLE, missing_cuda_reason, requested_device, switch_to

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tiny models run fastest on one thread, and two test processes on a 2-core machine must not oversubscribe it.
torch.set_num_threads(1)


def pytest_configure(config):
    """`HF_SEQTEMP_TEST_DEVICE=cuda` (`make test-gpu`) runs the tests on the GPU; it refuses where there is none."""
    try:
        device = requested_device()
    except ValueError as error:
        pytest.exit(str(error), returncode=pytest.ExitCode.USAGE_ERROR)
    if device == "cuda" and (reason := missing_cuda_reason()) is not None:
        pytest.exit(reason, returncode=pytest.ExitCode.USAGE_ERROR)
    switch_to(torch.device(device))


def pytest_report_header(config):
    device = requested_device()
    name = torch.cuda.get_device_name() if device == "cuda" else "the default CPU suite"
    return f"{VARIABLE}={device} ({name}), torch {torch.__version__}"
