# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Per-step logits shaping used by the hf_seqtemp samplers, following `transformers` logits-processor conventions."""

from __future__ import annotations

import torch
from transformers.generation.logits_process import LOGITS_PROCESSOR_INPUTS_DOCSTRING, LogitsProcessor
from transformers.utils import add_start_docstrings

from ..checks import check_temperature


class PowerLogitsWarper(LogitsProcessor):
    r"""
    [`LogitsProcessor`] that raises the next-token distribution to the power `alpha`: `softmax(alpha * logits)`,
    i.e. `p(v)^alpha` renormalised. This is the independence proposal `r_i(v | s) = softmax(alpha * l_i(s))_v` of
    the IMH global-tempering sampler (Eq. 9 of Fang et al.), with `alpha = 1 / seq_temperature`.

    Numerically it matches [`TemperatureLogitsWarper`] at `temperature = 1 / alpha`; it exists so that the exponent
    of the *sequence* target `p(x)^alpha` is written once and never confused with a token temperature. Often used
    together with [`SuppressTokensLogitsProcessor`] to keep the mask token out of the proposal.

    <Tip>

    On its own this warper is *myopic* (token-level) tempering: sampling every token from it does not sample the
    sequence distribution `p(x)^alpha`. The IMH sampler corrects it with a lookahead term (Eq. 8, 10).

    </Tip>

    Args:
        alpha (`float`):
            Exponent `alpha = 1 / T > 0`. Values above 1 sharpen the distribution, values below 1 flatten it.

    Examples:

    ```python
    >>> import torch
    >>> from hf_seqtemp.generation import PowerLogitsWarper
    >>> scores = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    >>> PowerLogitsWarper(2.0)(None, scores).softmax(-1).tolist()  # (0.25, 0.0625, 0.0625) renormalised
    [[0.6666666865348816, 0.1666666716337204, 0.1666666716337204]]
    ```
    """

    def __init__(self, alpha: float):
        self.alpha = check_temperature(alpha, "alpha")

    @add_start_docstrings(LOGITS_PROCESSOR_INPUTS_DOCSTRING)
    def __call__(self, input_ids: torch.LongTensor | None, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores_processed = scores * self.alpha
        return scores_processed
