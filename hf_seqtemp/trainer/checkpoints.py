# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Crash-safe checkpoints of [`SeqTempTrainer`]: which checkpoint a run resumes from, what it must agree with, and
the state of the fresh-sample pool saved beside `Trainer`'s own.

Every checkpoint ends with `seqtemp_manifest.json` ([`~hf_seqtemp.manifest.write_manifest`]: each file's name, size
and SHA-256, `fsync`ed), written after `Trainer`'s last file and before older checkpoints are rotated away. A
checkpoint is resumed from only when its files are what its manifest records: a file cut short, emptied, or with
bytes overwritten (finite or not) is named and the checkpoint skipped or refused. A checkpoint without a manifest
was written by an hf_seqtemp before manifests, or killed just before its manifest: it is checked by its structure
alone (`trainer_state.json` readable, weights readable and finite, optimizer and scheduler state not empty), with a
warning that its content cannot be verified.
"""

from __future__ import annotations

import os
import shutil
import warnings

from ..losses.recall import RollingQuantile
from ..manifest import write_manifest
from .checkpoint_files import (  # noqa: F401 - re-exported: the checkpoint checks are imported from here too
    CHECKPOINT,
    OPTIMIZER_FILES,
    SAMPLING_SETTINGS,
    TRAINER_STATE,
    WEIGHT_FILES,
    _last_complete,
    _warn_if_unverified,
    check_output_dir,
    check_resume_settings,
    check_same_objective,
    check_same_sampling,
    checkpoint_problem,
    checkpoints_in,
    has_manifest,
    is_complete,
    process_state_file,
    raise_write_error,
    read_json,
    resolve_resume,
    unverified_warning,
    write_json_atomically,
)
from .output_dir import OutputDirLock, check_finished_output, check_no_foreign_model


class CheckpointMixin:
    """Crash-safe `train()` and checkpoints of [`SeqTempTrainer`] (the functions above do the checking)."""

    _output_lock: OutputDirLock | None = None

    def train(self, resume_from_checkpoint: str | bool | None = None, trial=None, ignore_keys_for_eval=None):
        """[`~transformers.Trainer.train`], crash-safe: the run first takes `output_dir`'s lock
        ([`~hf_seqtemp.trainer.output_dir.OutputDirLock`]), before it reads, deletes or writes anything there, and
        the trainer holds it through its last `save_model`, until [`close`] (or the trainer is collected, or the
        process ends). `resume_from_checkpoint=True` resumes from the last *complete* checkpoint (skipping, with a
        warning, one a kill left half-written or whose files differ from its manifest), such a checkpoint given by
        path is refused, a checkpoint trained to another `target_temperature` or `loss_type` is refused, the pool of
        fresh samples, its random stream and the loss's memory are restored, starting afresh over an earlier run's
        checkpoints or finished adapter is an error unless `overwrite_output_dir=True`, and a folder holding a model
        no hf_seqtemp save wrote is refused."""
        held_before = self._output_lock is not None and self._output_lock.held
        lock = self._lock_output_dir()
        try:
            resume = resolve_resume(resume_from_checkpoint, self.args.output_dir)
            if resume is not None:
                check_same_objective(resume, self.args)
                check_resume_settings(resume, self.args, self.accelerator.num_processes, self.model)
                self._load_process_state(resume)
            else:
                check_no_foreign_model(self.args.output_dir)
                check_output_dir(self.args, resume, self.is_world_process_zero())
                check_finished_output(self.args, resume)
                self.accelerator.wait_for_everyone()
            return super().train(resume, trial, ignore_keys_for_eval)
        except BaseException:
            if not held_before:
                lock.release()
            raise

    def close(self) -> None:
        """Lets `output_dir`'s lock go: another run, or another process's save, may then write into the folder.
        The trainer takes it again if it trains again. Also done when the trainer is collected or the process
        ends."""
        if self._output_lock is not None:
            self._output_lock.release()
            self._output_lock = None

    def end(self) -> None:
        """[`~transformers.Trainer.end`] (the trackers finished, the process group destroyed), the folder's lock let
        go first ([`close`]): what TRL's scripts call at the very end."""
        self.close()
        super().end()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _lock_output_dir(self) -> OutputDirLock:
        """Process 0 takes `output_dir`'s lock (kept when this trainer holds it already); every process raises the
        same error when another run holds it."""
        if self._output_lock is not None and self._output_lock.held:
            return self._output_lock
        lock, error = OutputDirLock(self.args.output_dir, owner=self), None
        if self.is_world_process_zero():
            try:
                lock.acquire()
            except RuntimeError as refused:
                error = str(refused)
        if self.accelerator.num_processes > 1:
            from accelerate.utils import broadcast_object_list

            error = broadcast_object_list([error], from_process=0)[0]
        if error is not None:
            raise RuntimeError(error)
        self._output_lock = lock
        return lock

    def _save_checkpoint(self, model, trial) -> None:
        """Writes this process's state, then `Trainer`'s checkpoint, then (process 0, once every process has
        written) the checkpoint's manifest, last; older checkpoints are rotated away only after it. A folder of the
        same step left by an earlier, killed attempt is removed first, so the checkpoint holds this save's files
        only."""
        if self._output_lock is not None:  # the folder this run locked, not one put at its path since
            self._output_lock.check_folder(self)
        run_dir = self._get_output_dir(trial=trial)
        folder = os.path.join(run_dir, f"checkpoint-{self.state.global_step}")
        if self.is_world_process_zero() and os.path.isdir(folder):
            problem = checkpoint_problem(folder)
            warnings.warn(
                f"Replacing {folder}, left by an earlier attempt at this step ({problem or 'complete'}): this run "
                "writes its own checkpoint of the step.",
                stacklevel=2,
            )
            shutil.rmtree(folder)
        self.accelerator.wait_for_everyone()
        os.makedirs(folder, exist_ok=True)
        memory = {
            name: [[group, buffer.state_dict()] for group, buffer in buffers.items()]
            for name, buffers in self._loss_state.items()
        }
        state = {"sampling": self._sampling_state(), "loss": memory}
        limit = self.args.save_total_limit
        try:
            write_json_atomically(process_state_file(folder, self.accelerator.process_index), state)
            self.args.save_total_limit = None  # rotation waits for this checkpoint's manifest
            try:
                super()._save_checkpoint(model, trial)
            finally:
                self.args.save_total_limit = limit
            self.accelerator.wait_for_everyone()
            if self.args.should_save:
                write_manifest(folder)
        except (OSError, RuntimeError) as error:
            raise_write_error(error, folder, self.args.output_dir)
        if self.args.should_save:
            from transformers.trainer_utils import rotate_checkpoints

            best = self.state.best_model_checkpoint
            rotate_checkpoints(output_dir=run_dir, save_total_limit=limit, best_model_checkpoint=best, use_mtime=True)

    def _load_process_state(self, folder: str) -> None:
        path = process_state_file(folder, self.accelerator.process_index)
        state = read_json(path) if os.path.isfile(path) else {"sampling": None, "loss": {}}
        if self._pool is not None:
            if state["sampling"] is None:
                raise ValueError(
                    f"checkpoint {folder} holds no pool of fresh samples for process {self.accelerator.process_index} "
                    f"({os.path.basename(path)}): it was saved by a run without `sample_every_steps` or on fewer "
                    "processes; resume it with that run's settings."
                )
            self._load_sampling_state(state["sampling"])
        self._loss_state.clear()
        for name, pairs in state["loss"].items():
            self._loss_state[name] = {group: RollingQuantile.from_state_dict(buffer) for group, buffer in pairs}
