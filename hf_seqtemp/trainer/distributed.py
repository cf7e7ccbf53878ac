# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Several processes computing exactly what one process would: rows gathered across ranks (the gradient through
this rank's rows), evaluation rows counted once, per-rank sampling streams, and a launch that really is parallel."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import torch
import torch.nn.functional as F
from accelerate.utils import DistributedType

from ..progress import get_logger

logger = get_logger(__name__)


def _padded(values: torch.Tensor, shape: list[int]) -> torch.Tensor:
    """`values` zero-padded at the end of every dimension up to `shape`."""
    pads = []
    for size, target in zip(reversed(values.shape), reversed(shape)):
        pads += [0, int(target) - size]
    return F.pad(values, pads) if any(pads) else values


def gather_rows(accelerator, values: torch.Tensor | None, keep: int | None = None) -> torch.Tensor | None:
    """Concatenates every rank's rows of `values` (rank order, as one process holding the global batch would see
    them); the gradient flows through this rank's rows only. Ranks may hold different numbers of rows and different
    trailing sizes (other ranks' rows are zero-padded to the largest). `keep`: only the first `keep` gathered rows
    (an evaluation batch without the padding duplicates, [`rows_to_keep`]).
    """
    if values is None:
        return None
    world = accelerator.num_processes
    if world > 1:
        is_bool = values.dtype == torch.bool
        local = values.to(torch.uint8) if is_bool else values
        shapes = accelerator.gather(torch.tensor([list(local.shape)], device=local.device)).view(world, -1)
        largest = shapes.max(0).values.tolist()
        everything = accelerator.gather(_padded(local.detach(), largest)).view(world, *largest)
        rank, trailing = accelerator.process_index, largest[1:]
        parts = [
            _padded(local, [local.shape[0], *trailing]) if r == rank else everything[r, : int(shapes[r, 0])]
            for r in range(world)
        ]
        values = torch.cat(parts)
        values = values.bool() if is_bool else values
    return values if keep is None else values[:keep]


def rows_to_keep(accelerator, local_rows: int, training: bool) -> int | None:
    """How many gathered rows of this batch are real examples: at the end of an evaluation loop accelerate pads the
    last batch with repeated examples, which `gather_for_metrics` drops. `None` (keep all) in training, where the
    group sampler's epoch, not the dataset, sets the length."""
    if training or accelerator.num_processes == 1:
        return None
    return len(accelerator.gather_for_metrics([0] * local_rows, use_gather_object=True))


def token_mean_over_ranks(accelerator, value: torch.Tensor | None, tokens: torch.Tensor) -> torch.Tensor | None:
    """A per-rank mean over `tokens` scored tokens (the anti-drift term) as the mean over every rank's tokens, with
    this rank's share `tokens / total` of its gradient: scaled by the world size
    ([`~hf_seqtemp.losses.spec.scale_gradient`]) and averaged by data parallelism, the gradient is that of the
    token mean over the global batch."""
    if value is None or accelerator.num_processes == 1:
        return value
    tokens = tokens.to(value.dtype)
    return gather_rows(accelerator, (value * tokens).reshape(1)).sum() / accelerator.gather(tokens.reshape(1)).sum()


def sampling_seed(seed: int, *counters: int) -> int:
    """A 63-bit seed mixed from the run's `seed` and `counters` (rank, generation, slot, ...): distinct streams for
    distinct counters, the same stream for the same ones, whichever process draws and whatever ran before."""
    return int(
        np.random.SeedSequence([abs(int(seed)), *(int(c) for c in counters)]).generate_state(1, np.uint64)[0] >> 1
    )


@contextlib.contextmanager
def seeded(seed: int):
    """Draws inside use the generator seeded with `seed` (CPU and the current accelerator); the global random
    state outside is left as it was."""
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def check_launch(accelerator) -> None:
    """Refuses a launch whose processes do not train together: `WORLD_SIZE > 1` in the environment while the
    accelerator sees one process or no distributed mode (accelerate's FSDP launch on a machine without GPUs does
    this, measured with accelerate 1.15: each process reports `DistributedType.NO`), which would train independent
    copies that overwrite each other's output, or split work without gathering it. Warns when FSDP was asked for
    and the accelerator runs plain data parallelism instead (the same launch with `use_cpu=True`): the figures are
    right, the parameters are not sharded."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    kind = accelerator.distributed_type
    if world > 1 and (accelerator.num_processes == 1 or kind == DistributedType.NO):
        raise RuntimeError(
            f"This process was launched as one of WORLD_SIZE={world} processes, but its accelerator sees "
            f"{accelerator.num_processes} process(es) with distributed type {kind}: the processes would not train "
            "together (each alone on the whole dataset, or on a share without gathering it). accelerate's FSDP "
            "launch does this on a machine without GPUs; on CPUs launch with `accelerate launch --multi_gpu "
            "--num_processes N` (data parallel over gloo), or shard with torch's `fully_shard` yourself."
        )
    if os.environ.get("ACCELERATE_USE_FSDP", "").lower() == "true" and kind != DistributedType.FSDP:
        logger.warning(
            f"accelerate was launched with FSDP, but the accelerator runs {kind}: training is data parallel and the "
            "parameters are not sharded (accelerate does not run FSDP on a machine without GPUs)."
        )


def exit_with_launcher() -> bool:
    """Makes this rank receive SIGTERM when the process that launched it dies (Linux `PR_SET_PDEATHSIG`), where a
    launcher started it (`torchrun`/`accelerate launch` set `TORCHELASTIC_RUN_ID` or `LOCAL_RANK`): a launcher killed
    with SIGKILL cannot stop its ranks, which would otherwise go on training (and writing `output_dir`) unseen.
    Returns whether it is set (not on other systems, nor for a process nobody launched)."""
    import sys

    if not sys.platform.startswith("linux") or not (
        os.environ.get("TORCHELASTIC_RUN_ID") or "LOCAL_RANK" in os.environ
    ):
        return False
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    if libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0) != 0:
        logger.warning("Could not ask to be stopped with the launcher (prctl failed); a killed launcher leaves ranks.")
        return False
    return True
