# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Prompt groups: the completions of one prompt, within which every pair, mean and normaliser is taken.

For a prompted model the target is q(x | c) ∝ p(x | c)^{1/T} separately for every prompt c, so
h(x, c) = log p(x|c) − T·log q(x|c) = T·log Z_T(c) is constant within a prompt and differs between prompts. Metrics
and losses therefore centre, pair and self-normalise within groups. This module holds the bottom-floor tools: turning
any ids into group codes, the stable group id of a prompt, and the within-group reductions (differentiable).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence

import torch


def group_codes(
    groups: Sequence[Hashable] | torch.Tensor | None, n: int, name: str = "groups", device=None
) -> torch.Tensor:
    """Dense codes `0..G-1` of per-sequence group ids (any hashable values), in order of first appearance.

    Args:
        groups (`list` of hashables or `torch.Tensor` of shape `(n,)`, *optional*): one id per sequence; `None` puts
            every sequence in one group (an unconditional model, or one prompt).
        n (`int`): number of sequences.
        name (`str`, *optional*): the parameter name used in errors.
        device (`torch.device`, *optional*): where the codes go; defaults to the device of a tensor `groups`, else
            the CPU (the codes index the per-sequence values, which must live there too).

    Returns:
        `torch.LongTensor` of shape `(n,)`.

    Example:
    ```python
    >>> group_codes(["b", "a", "b"], 3).tolist()
    [0, 1, 0]
    ```
    """
    if device is None:
        device = groups.device if isinstance(groups, torch.Tensor) else "cpu"
    if groups is None:
        return torch.zeros(n, dtype=torch.long, device=device)
    if isinstance(groups, torch.Tensor):
        groups = groups.detach().cpu().flatten().tolist()
    elif isinstance(groups, (str, bytes)):
        raise TypeError(f"`{name}` must hold one id per sequence, got a single {type(groups).__name__}.")
    groups = list(groups)
    if len(groups) != n:
        raise ValueError(
            f"`{name}` must hold one id per sequence: got {len(groups)} ids for {n} sequences. Pass the prompt id "
            "of each scored sequence, in the same order."
        )
    index: dict = {}
    try:
        return torch.tensor([index.setdefault(g, len(index)) for g in groups], dtype=torch.long, device=device)
    except TypeError as error:
        raise TypeError(f"`{name}` must hold hashable ids (str, int, ...): {error}.") from None


def within_group_pairs(codes: torch.Tensor) -> int:
    """Number of unordered pairs of sequences that share a group: `Σ_g n_g (n_g − 1) / 2`.

    Example:
    ```python
    >>> within_group_pairs(torch.tensor([0, 0, 0, 1, 2, 2]))
    4
    ```
    """
    counts = torch.bincount(codes.to(torch.long).cpu())
    return int((counts * (counts - 1)).sum().item() // 2)


def require_pairs(codes: torch.Tensor, name: str = "groups", fix: str | None = None) -> None:
    """Raises when no two sequences share a group (there is then no within-prompt pair to measure or train on)."""
    if within_group_pairs(codes) == 0:
        fix = fix or "score at least two completions per prompt (e.g. `num_generations` ≥ 2 when sampling)"
        raise ValueError(
            f"`{name}` puts each of the {codes.numel()} sequences in a group of its own: there is no pair of "
            f"completions of one prompt, and tempering is measured within prompts. Fix: {fix}."
        )


def group_means(values: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """Mean of `values` over each sequence's group, broadcast back to the sequences (differentiable).

    Args:
        values (`torch.Tensor` of shape `(n,)`): per-sequence values.
        codes (`torch.LongTensor` of shape `(n,)`): dense group codes ([`group_codes`]).

    Returns:
        `torch.Tensor` of shape `(n,)`.

    Example:
    ```python
    >>> group_means(torch.tensor([1.0, 3.0, 10.0]), torch.tensor([0, 0, 1])).tolist()
    [2.0, 2.0, 10.0]
    ```
    """
    codes = codes.to(values.device)
    size = int(codes.max().item()) + 1 if codes.numel() else 0
    sums = values.new_zeros(size).index_add(0, codes, values)
    counts = torch.bincount(codes, minlength=size).to(values.dtype)
    return (sums / counts)[codes]


def group_log_mean_exp(log_values: torch.Tensor, mask: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """`log mean exp` of `log_values` over the rows of each group (and every middle axis), per last-axis step.

    Self-normalised importance weights of a prompted model are normalised within each prompt: mixing prompts would
    mix their partition functions Z_T(c). Entries outside `mask` are ignored; a (group, step) with no entry gives 0.

    Args:
        log_values (`torch.Tensor` of shape `(batch, ..., steps)`): log-weights.
        mask (`torch.BoolTensor` of the same shape): entries that exist.
        codes (`torch.LongTensor` of shape `(batch,)`): group code of each row.

    Returns:
        `torch.Tensor` of shape `(batch, 1, ..., 1, steps)`: each row's group value at each step.

    Example:
    ```python
    >>> log_w = torch.log(torch.tensor([[1.0], [3.0], [5.0]]))
    >>> group_log_mean_exp(log_w, torch.ones(3, 1, dtype=torch.bool), torch.tensor([0, 0, 1])).exp().tolist()
    [[2.0], [2.0], [5.0]]
    ```
    """
    batch, steps = log_values.shape[0], log_values.shape[-1]
    codes = codes.to(log_values.device)
    size = int(codes.max().item()) + 1
    flat = log_values.reshape(batch, -1, steps).masked_fill(~mask.reshape(batch, -1, steps), float("-inf"))
    member = codes[None, :] == torch.arange(size, device=codes.device)[:, None]  # (G, batch)
    stacked = flat[None].masked_fill(~member[:, :, None, None], float("-inf"))  # (G, batch, middle, steps)
    log_total = torch.logsumexp(stacked.flatten(1, 2), dim=1)  # (G, steps)
    count = (mask.reshape(batch, -1, steps)[None] & member[:, :, None, None]).flatten(1, 2).sum(1)
    value = torch.where(count > 0, log_total - count.clamp(min=1).to(log_total.dtype).log(), 0.0)
    return value[codes].reshape(batch, *([1] * (log_values.dim() - 2)), steps)


def prompt_group_id(prompt_ids: Sequence[int]) -> int:
    """Stable 63-bit id of a prompt's token ids: identical prompts share it on every process and every run.

    Example:
    ```python
    >>> prompt_group_id([1, 2, 3]) == prompt_group_id([1, 2, 3]) != prompt_group_id([1, 2])
    True
    ```
    """
    digest = hashlib.blake2b(",".join(map(str, prompt_ids)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def value_group_id(value: Hashable) -> int:
    """Stable 63-bit id of a user-given prompt id (a `prompt_id` column value of any type).

    Example:
    ```python
    >>> value_group_id("q1") == value_group_id("q1") != value_group_id(1)
    True
    ```
    """
    text = f"{type(value).__name__}:{value!r}"
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1
