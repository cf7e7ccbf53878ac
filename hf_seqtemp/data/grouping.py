# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Group-aware batching: every batch holds `num_generations` completions of each of its prompts, as TRL's GRPO does."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

from ..checks import check_int
from ..progress import get_logger

logger = get_logger(__name__)


def check_group_batching(num_generations: int, per_device_batch_size: int, world_size: int, pair_loss: bool) -> None:
    """Raises unless a global batch (`per_device_batch_size × world_size` sequences) holds whole prompt groups of
    `num_generations` completions, and a pair loss has at least two completions per prompt. The ranks may split a
    group between them: the trainer gathers every rank's values, so each per-group quantity sees the whole group."""
    check_int(num_generations, "num_generations")
    if pair_loss and num_generations < 2:
        raise ValueError(
            f"`num_generations`={num_generations}: the temperature losses compare completions of the same prompt, so "
            "they need at least 2 completions per prompt in a batch. Set `num_generations` ≥ 2."
        )
    global_batch = per_device_batch_size * world_size
    if global_batch % num_generations:
        valid = [n for n in range(2, global_batch + 1) if global_batch % n == 0]
        raise ValueError(
            f"The global batch ({per_device_batch_size} per device × {world_size} processes = {global_batch} "
            f"sequences) cannot hold whole prompt groups of `num_generations`={num_generations} completions. Make "
            f"`per_device_train_batch_size` × processes a multiple of `num_generations`, or use one of {valid} as "
            "`num_generations`."
        )


class GroupSampler(Sampler[int]):
    """Yields the prepared examples in runs of `num_generations` completions of one prompt.

    Each epoch, the completions of every prompt group are shuffled and cut into runs of `num_generations`, and the
    runs of all groups are shuffled; consecutive batches (also the per-rank slices of one global batch) then hold
    whole runs. Completions left over after the last whole run of a group wait for a later epoch (a different
    shuffle leaves others over); groups with fewer than `num_generations` completions are never drawn, which is
    warned about once with their number.

    Args:
        group_ids (`Sequence[int]`): the `group_id` of each example.
        num_generations (`int`): completions of one prompt per run.
        shuffle (`bool`, *optional*, defaults to `True`): shuffle members and runs each epoch.
        seed (`int`, *optional*, defaults to 0): seeds the shuffles (epoch `e` uses `seed + e`).

    Example:
    ```python
    >>> list(GroupSampler([7, 7, 9, 9, 9], num_generations=2, shuffle=False))
    [0, 1, 2, 3]
    ```
    """

    def __init__(self, group_ids: Sequence[int], num_generations: int, shuffle: bool = True, seed: int = 0):
        members: dict[int, list[int]] = defaultdict(list)
        for index, group in enumerate(group_ids):
            members[int(group)].append(index)
        self.groups = [m for m in members.values() if len(m) >= num_generations]
        self.num_generations, self.shuffle, self.seed, self.epoch = num_generations, shuffle, seed, 0
        small = [m for m in members.values() if len(m) < num_generations]
        if not self.groups:
            raise ValueError(
                f"No prompt group has `num_generations`={num_generations} completions (the largest has "
                f"{max(len(m) for m in members.values())}): lower `num_generations`, or give more completions per "
                "prompt (a prompt-only dataset has them sampled)."
            )
        if small:
            logger.warning(
                f"{len(small)} of {len(members)} prompt groups have fewer than num_generations={num_generations} "
                f"completions; their {sum(map(len, small))} completions are not trained on. Lower `num_generations` "
                "to use them."
            )

    def __len__(self) -> int:
        return sum(len(m) // self.num_generations for m in self.groups) * self.num_generations

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator(device="cpu").manual_seed(self.seed + self.epoch)
        self.epoch += 1
        runs = []
        for group in self.groups:
            order = (
                torch.randperm(len(group), generator=generator, device="cpu").tolist()
                if self.shuffle
                else range(len(group))
            )
            shuffled = [group[i] for i in order]
            whole = len(group) // self.num_generations * self.num_generations
            runs += [shuffled[i : i + self.num_generations] for i in range(0, whole, self.num_generations)]
        if self.shuffle:
            runs = [runs[i] for i in torch.randperm(len(runs), generator=generator, device="cpu").tolist()]
        for run in runs:
            yield from run
