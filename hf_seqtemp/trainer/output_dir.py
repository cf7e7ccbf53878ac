# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a user saved is never lost or mixed: staged saves, one run per output folder, no silent overwrite.

- Saves are staged beside the folder and moved in under its lock ([`~hf_seqtemp.staging.staged_save`]).
- **One run per folder, for the trainer's whole life** ([`OutputDirLock`]): `train()` takes `output_dir`'s lock
  (`.<name>.seqtemp-lock` beside it: an exclusive `flock`, which the kernel grants to one process and drops when it
  dies) before it deletes or writes anything, and the trainer holds it through its last `save_model`, until
  `trainer.close()`, the trainer being collected, or the process ending. A second run, or another process's save,
  into the folder stops with the holder's name; a lock whose holder is gone is taken over with a warning.
- **No silent overwrite**: a folder that holds a finished adapter (`seqtemp_config.json` at its top) is not trained
  into afresh unless `overwrite_output_dir=True` ([`check_finished_output`]); a folder that holds a model or adapter
  no hf_seqtemp save wrote (a base model's folder) is not trained into at all ([`check_no_foreign_model`]).
"""

from __future__ import annotations

import os

from ..config import CONFIG_NAME
from ..locking import FolderLock
from ..staging import foreign_model_files, roll_forward


class OutputDirLock(FolderLock):
    """`output_dir`'s lock ([`~hf_seqtemp.locking.FolderLock`]) held by a run: `owner` (the trainer; this object when
    `None`) holds it from [`acquire`] to [`release`]. Taking it finishes a save a kill left half-moved into the
    folder ([`~hf_seqtemp.staging.roll_forward`])."""

    def __init__(self, output_dir: str | os.PathLike, owner=None):
        super().__init__(output_dir, "output_dir")
        self.owner = owner if owner is not None else self

    @property
    def held(self) -> bool:
        return self.held_by(self.owner)

    def acquire(self) -> None:
        """Takes the lock, or raises `RuntimeError` naming the run or save that holds it."""
        super().acquire(self.owner, purpose="run")
        roll_forward(self.folder)

    def release(self) -> None:
        """Lets this owner's hold go (the file is removed while still held)."""
        super().release(self.owner)


def check_finished_output(args, resume: str | None) -> None:
    """Refuses to train afresh into a folder that holds a finished adapter (its top-level `seqtemp_config.json`)
    unless `args.overwrite_output_dir`: the new run's save would replace it."""
    finished = os.path.join(args.output_dir, CONFIG_NAME)
    if resume is not None or args.overwrite_output_dir or not os.path.isfile(finished):
        return
    raise ValueError(
        f"`output_dir` {args.output_dir!r} holds a finished adapter ({CONFIG_NAME}), which this run would "
        "overwrite: give another `output_dir`, or set `overwrite_output_dir` True (`--overwrite_output_dir`) to "
        "replace it."
    )


def check_no_foreign_model(output_dir: str) -> None:
    """Refuses to train into a folder that holds a model's or adapter's files no hf_seqtemp save wrote (a base
    model's folder, a plain PEFT save): the run's save would overwrite them or mix with them."""
    foreign = foreign_model_files(output_dir)
    if foreign:
        raise ValueError(
            f"`output_dir` {output_dir!r} holds a model's files that no hf_seqtemp save wrote ({', '.join(foreign)}):"
            " this run's save would overwrite them or mix an adapter into them. Give another `output_dir` (the base "
            "model can stay where it is and be loaded from there)."
        )
