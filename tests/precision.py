# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Tolerances for float32 results that two code paths (or two CPUs' SIMD kernels) compute in different orders.

A float32 sum or matrix product is exact only up to a few units in the last place (ulps) of the *largest* values it
combines, and which kernel torch picks (`ATEN_CPU_CAPABILITY` = default, avx2, avx512, …) changes the order. So a
tolerance is a number of ulps times the magnitude of the values compared, never a bare absolute `1e-6`: log-probs of
size ~2 already differ by 1.9e-6 between two kernels (8 ulps). A real error (a dropped token, a wrong position, a
missing term) is of the size of the values themselves, millions of ulps away.
"""

from __future__ import annotations

import torch

EPS32 = torch.finfo(torch.float32).eps


def float32_tolerance(*references: torch.Tensor, ulps: int = 64) -> dict[str, float]:
    """`atol` / `rtol` for `torch.testing.assert_close` of float32 results: `ulps` units in the last place of the
    largest magnitude among `references` (absolute) and of each value (relative)."""
    scale = max(float(r.detach().abs().max()) if r.numel() else 0.0 for r in references)
    return {"atol": ulps * EPS32 * scale, "rtol": ulps * EPS32}
