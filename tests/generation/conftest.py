# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
from tiny_models import masked_lm  # noqa: F401  (fixture shared by the generation tests)
