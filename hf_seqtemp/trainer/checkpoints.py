# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Crash-safe checkpoints of [`SeqTempTrainer`]: which checkpoint a run resumes from, what it must agree with, and
the state of the fresh-sample pool saved beside `Trainer`'s own.

`Trainer` writes `trainer_state.json` last, so a checkpoint folder whose `trainer_state.json` is missing or cut short
was being written when the run was killed (or the disk filled): it is *partial*, and never resumed from.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings

from ..config import CONFIG_NAME
from ..losses.recall import RollingQuantile

TRAINER_STATE = "trainer_state.json"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def process_state_file(folder: str, process_index: int) -> str:
    """Where process `process_index` keeps, in a checkpoint folder, what `Trainer` does not: its pool of fresh
    samples with their random stream, and the memory of the loss (TruncR's rolling quantiles)."""
    return os.path.join(folder, f"seqtemp_state_{process_index}.json")


def is_complete(folder: str) -> bool:
    """Whether `folder` is a whole checkpoint: its `trainer_state.json`, written last, reads as JSON."""
    try:
        with open(os.path.join(folder, TRAINER_STATE), encoding="utf-8") as handle:
            json.load(handle)
    except (OSError, ValueError):
        return False
    return True


def checkpoints_in(output_dir: str) -> list[str]:
    """The `checkpoint-<step>` folders of `output_dir`, oldest step first."""
    if not os.path.isdir(output_dir):
        return []
    found = [(int(m.group(1)), name) for name in os.listdir(output_dir) if (m := CHECKPOINT.match(name))]
    return [
        os.path.join(output_dir, name) for _, name in sorted(found) if os.path.isdir(os.path.join(output_dir, name))
    ]


def _last_complete(output_dir: str) -> tuple[str | None, list[str]]:
    """(the latest complete checkpoint of `output_dir` or `None`, the partial ones after it)."""
    partial = []
    for folder in reversed(checkpoints_in(output_dir)):
        if is_complete(folder):
            return folder, partial
        partial.append(folder)
    return None, partial


def resolve_resume(resume, output_dir: str) -> str | None:
    """The checkpoint folder a run resumes from: `None` (start afresh), a path, or `True` (the latest complete one).

    With `True`, partial checkpoints after the latest complete one are skipped with a warning naming them. A partial
    checkpoint given by path is refused.

    Raises:
        ValueError: a path that is not a folder or is partial (the message names the latest complete checkpoint),
            or `True` where `output_dir` holds no complete checkpoint.
    """
    if resume is None or resume is False:
        return None
    if resume is True:
        folder, partial = _last_complete(output_dir)
        if folder is None:
            what = f"only partial ones ({', '.join(partial)})" if partial else "none"
            raise ValueError(
                f"`resume_from_checkpoint` is True but `output_dir` {output_dir!r} holds no complete checkpoint "
                f"({what}). Start afresh without `resume_from_checkpoint`."
            )
        if partial:
            warnings.warn(
                f"Skipping partial checkpoint(s) {', '.join(partial)} (no readable {TRAINER_STATE}: the run was "
                f"killed while writing them); resuming from the last complete one, {folder}.",
                stacklevel=3,
            )
        return folder
    folder = str(resume)
    if not os.path.isdir(folder):
        raise ValueError(f"`resume_from_checkpoint` {folder!r} is not a folder: give a checkpoint folder or True.")
    if not is_complete(folder):
        last, _ = _last_complete(os.path.dirname(os.path.abspath(folder)))
        fix = f"resume from the last complete one, {last}" if last is not None else "start afresh"
        raise ValueError(
            f"`resume_from_checkpoint` {folder!r} is a partial checkpoint (no readable {TRAINER_STATE}: the run was "
            f"killed while writing it): {fix}, or set `resume_from_checkpoint` True to pick it."
        )
    return folder


def check_same_objective(folder: str, args) -> None:
    """Refuses to resume `folder` with another target temperature or loss than it was trained with."""
    path = os.path.join(folder, CONFIG_NAME)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as handle:
        saved = json.load(handle)
    for name, key in (("target_temperature", "target_temperature"), ("loss_type", "loss_type")):
        before, now = saved.get(key), getattr(args, name)
        if before is not None and before != now:
            raise ValueError(
                f"checkpoint {folder} was trained with `{name}` {before!r}, but this run has `{name}` {now!r}: "
                f"resume with `{name}` {before!r}, or start afresh in another `output_dir`."
            )


def check_output_dir(args, resume: str | None, is_main_process: bool) -> None:
    """Refuses to start afresh where the checkpoints of an earlier run would be overwritten, unless
    `args.overwrite_output_dir`, in which case they are deleted first (a later `resume_from_checkpoint=True` must
    not pick an earlier run's checkpoint)."""
    found = checkpoints_in(args.output_dir)
    if resume is not None or not found or args.save_strategy == "no":
        return
    if not args.overwrite_output_dir:
        raise ValueError(
            f"`output_dir` {args.output_dir!r} already holds checkpoints of an earlier run "
            f"({', '.join(os.path.basename(f) for f in found)}), which this run would overwrite. For a new run, "
            "give another `output_dir` (or set `overwrite_output_dir` True to delete them); only if this is that "
            "same run, interrupted, continue it with `resume_from_checkpoint` True (its last complete checkpoint)."
        )
    if is_main_process:
        warnings.warn(f"`overwrite_output_dir=True`: deleting {len(found)} checkpoint(s) in {args.output_dir}.")
        for folder in found:
            shutil.rmtree(folder)


def write_json_atomically(path: str, payload) -> None:
    """Writes `payload` as JSON to `path` through a temporary file, so a kill leaves the old file or the new one."""
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(partial, path)


def read_json(path: str):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class CheckpointMixin:
    """Crash-safe `train()` and checkpoints of [`SeqTempTrainer`] (the functions above do the checking)."""

    def train(self, resume_from_checkpoint: str | bool | None = None, trial=None, ignore_keys_for_eval=None):
        """[`~transformers.Trainer.train`], crash-safe: `resume_from_checkpoint=True` resumes from the last
        *complete* checkpoint (skipping, with a warning, one a kill left half-written), a partial checkpoint given by
        path is refused, a checkpoint trained to another `target_temperature` or `loss_type` is refused, the pool of
        fresh samples, its random stream and the loss's memory are restored, and starting afresh over an earlier
        run's checkpoints is an error unless `overwrite_output_dir=True`."""
        resume = resolve_resume(resume_from_checkpoint, self.args.output_dir)
        if resume is not None:
            check_same_objective(resume, self.args)
            self._load_process_state(resume)
        else:
            check_output_dir(self.args, resume, self.is_world_process_zero())
            self.accelerator.wait_for_everyone()
        return super().train(resume, trial, ignore_keys_for_eval)

    def _save_checkpoint(self, model, trial) -> None:
        """Writes this process's state first: `Trainer` writes `trainer_state.json` last, so a checkpoint that has it
        has everything."""
        folder = os.path.join(self._get_output_dir(trial=trial), f"checkpoint-{self.state.global_step}")
        os.makedirs(folder, exist_ok=True)
        memory = {
            name: [[group, buffer.state_dict()] for group, buffer in buffers.items()]
            for name, buffers in self._loss_state.items()
        }
        state = {"sampling": self._sampling_state(), "loss": memory}
        write_json_atomically(process_state_file(folder, self.accelerator.process_index), state)
        super()._save_checkpoint(model, trial)

    def _load_process_state(self, folder: str) -> None:
        path = process_state_file(folder, self.accelerator.process_index)
        state = read_json(path) if os.path.isfile(path) else {"sampling": None, "loss": {}}
        if self._pool is not None:
            if state["sampling"] is None:
                raise ValueError(
                    f"checkpoint {folder} holds no pool of fresh samples for process {self.accelerator.process_index} "
                    f"({os.path.basename(path)}): it was saved by a run without `steps_per_generation` or on fewer "
                    "processes; resume it with that run's settings."
                )
            self._load_sampling_state(state["sampling"])
        self._loss_state.clear()
        for name, pairs in state["loss"].items():
            self._loss_state[name] = {group: RollingQuantile.from_state_dict(buffer) for group, buffer in pairs}
