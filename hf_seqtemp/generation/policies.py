# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Position policies of diffusion decoding: *where* to unmask next (Table 1 and App. C of Fang et al.).

A policy maps the model's per-position distributions to a score; the decoder commits the highest-scoring
still-masked positions of the current block. Policies never decide *what* token goes there: that is the token
sampler's job (local temperature or IMH global tempering), so both axes stay orthogonal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch

PositionPolicy = Literal["random", "confidence", "entropy", "margin", "left_to_right"]


def _random_scores(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return torch.rand(probs.shape[:-1], generator=generator, device=probs.device)


def _confidence_scores(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return probs.max(dim=-1).values


def _entropy_scores(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    # negative entropy: the least uncertain position scores highest
    return (probs * probs.clamp_min(1e-30).log()).sum(dim=-1)


def _margin_scores(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    top2 = probs.topk(2, dim=-1).values
    return top2[..., 0] - top2[..., 1]


def _left_to_right_scores(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    length = probs.shape[-2]
    return -torch.arange(length, device=probs.device, dtype=probs.dtype).expand(probs.shape[:-1])


POSITION_POLICIES: dict[str, Callable[[torch.Tensor, torch.Generator | None], torch.Tensor]] = {
    "random": _random_scores,
    "confidence": _confidence_scores,
    "entropy": _entropy_scores,
    "margin": _margin_scores,
    "left_to_right": _left_to_right_scores,
}


def validate_policy(policy: str) -> str:
    """Checks a policy name against [`POSITION_POLICIES`]."""
    if policy not in POSITION_POLICIES:
        raise ValueError(f"`policy` must be one of {sorted(POSITION_POLICIES)}, got {policy!r}.")
    return policy


def select_positions(
    policy: str,
    probs: torch.Tensor,
    candidates: torch.Tensor,
    num_positions: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Chooses `num_positions` candidate positions per row with the highest policy score.

    Args:
        policy (`str`): one of `"random"`, `"confidence"` (max probability), `"entropy"` (lowest entropy first),
            `"margin"` (largest top-1 minus top-2 gap first), `"left_to_right"`.
        probs (`torch.FloatTensor` of shape `(batch, length, vocab)`): the model's per-position distributions.
        candidates (`torch.BoolTensor` of shape `(batch, length)`): positions that may be chosen (still masked and
            inside the current block). A row with `c < num_positions` candidates gets them in its first `c` slots;
            its other slots hold non-candidates, which the caller ignores.
        num_positions (`int`): positions committed per row in this step.
        generator (`torch.Generator`, *optional*): randomness of the `"random"` policy.

    Returns:
        `torch.LongTensor` of shape `(batch, num_positions)`: chosen positions, best first.

    Example:
    ```python
    >>> probs = torch.tensor([[[0.5, 0.5], [0.9, 0.1], [0.8, 0.2]]])
    >>> select_positions("confidence", probs, torch.tensor([[True, False, True]]), 1).tolist()
    [[2]]
    ```
    """
    scores = POSITION_POLICIES[validate_policy(policy)](probs.float(), generator)
    scores = scores.masked_fill(~candidates, float("-inf"))
    return scores.topk(num_positions, dim=-1).indices
