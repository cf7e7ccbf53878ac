# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tiny models run fastest on one thread, and two test processes on a 2-core machine must not oversubscribe it.
torch.set_num_threads(1)
