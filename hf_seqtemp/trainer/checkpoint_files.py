# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A run's checkpoints as files: which are complete (their manifest), which one a resume takes, and the settings a
resume must share with the run that wrote it (processes, LoRA shape, objective, the sampling of p). The trainer's
side of saving and resuming is [`~hf_seqtemp.trainer.checkpoints.CheckpointMixin`]."""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings

from ..config import CONFIG_NAME
from ..manifest import MANIFEST_NAME, manifest_problem
from ..staging import describe_failure, is_write_failure

TRAINER_STATE = "trainer_state.json"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def process_state_file(folder: str, process_index: int) -> str:
    """Where process `process_index` keeps, in a checkpoint folder, what `Trainer` does not: its pool of fresh
    samples with their random stream, and the memory of the loss (TruncR's rolling quantiles)."""
    return os.path.join(folder, f"seqtemp_state_{process_index}.json")


WEIGHT_FILES = ("adapter_model.safetensors", "model.safetensors")
OPTIMIZER_FILES = ("optimizer.pt", "scheduler.pt")


def checkpoint_problem(folder: str) -> str | None:
    """What makes `folder` unusable to resume from, or `None`: `trainer_state.json` unreadable, a file that differs
    from what the checkpoint's manifest records (missing, another size, other bytes), the weights missing,
    unreadable or not finite, or the optimizer's or scheduler's state missing or empty (resuming without them is
    another run)."""
    try:
        with open(os.path.join(folder, TRAINER_STATE), encoding="utf-8") as handle:
            json.load(handle)
    except (OSError, ValueError):
        return f"a partial checkpoint: no readable {TRAINER_STATE} (the run was killed while writing it)"
    if has_manifest(folder):
        problem = manifest_problem(folder)
        if problem is not None:
            return problem
    weights = [os.path.join(folder, name) for name in WEIGHT_FILES if os.path.isfile(os.path.join(folder, name))]
    if not weights:
        return f"no weights ({' or '.join(WEIGHT_FILES)})"
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(weights[0])
    except (SafetensorError, OSError, ValueError) as error:  # a file cut short or overwritten
        return f"{os.path.basename(weights[0])} cannot be read ({type(error).__name__}: {error})"
    bad = [name for name, tensor in tensors.items() if tensor.is_floating_point() and not tensor.isfinite().all()]
    if bad:
        return f"{os.path.basename(weights[0])} holds non-finite values ({bad[0]}{', ...' if len(bad) > 1 else ''})"
    missing = [name for name in OPTIMIZER_FILES if not os.path.isfile(os.path.join(folder, name))]
    if missing:
        return f"{' and '.join(missing)} missing (resuming without them would be another run)"
    empty = [name for name in OPTIMIZER_FILES if os.path.getsize(os.path.join(folder, name)) == 0]
    if empty:
        return f"{' and '.join(empty)} empty (0 bytes: cut short)"
    return None


def has_manifest(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, MANIFEST_NAME))


def unverified_warning(folder: str) -> str | None:
    """The warning for resuming from `folder` when it has no manifest, else `None`."""
    if has_manifest(folder):
        return None
    return (
        f"checkpoint {folder} has no {MANIFEST_NAME} (written by an hf_seqtemp before manifests, or killed just "
        "before writing it): its files were checked for structure only, not for their content."
    )


def is_complete(folder: str) -> bool:
    """Whether `folder` is a whole, usable checkpoint ([`checkpoint_problem`] finds nothing)."""
    return checkpoint_problem(folder) is None


def checkpoints_in(output_dir: str) -> list[str]:
    """The `checkpoint-<step>` folders of `output_dir`, oldest step first."""
    if not os.path.isdir(output_dir):
        return []
    found = [(int(m.group(1)), name) for name in os.listdir(output_dir) if (m := CHECKPOINT.match(name))]
    return [
        os.path.join(output_dir, name) for _, name in sorted(found) if os.path.isdir(os.path.join(output_dir, name))
    ]


def _last_complete(output_dir: str) -> tuple[str | None, list[str]]:
    """(the latest usable checkpoint of `output_dir` or `None`, the skipped ones after it, each with its problem)."""
    skipped = []
    for folder in reversed(checkpoints_in(output_dir)):
        problem = checkpoint_problem(folder)
        if problem is None:
            return folder, skipped
        skipped.append(f"{folder} ({problem})")
    return None, skipped


def resolve_resume(resume, output_dir: str) -> str | None:
    """The checkpoint folder a run resumes from: `None` (start afresh), a path, or `True` (the latest usable one).

    With `True`, unusable checkpoints after the latest usable one ([`checkpoint_problem`]: partial, files that differ
    from their manifest, damaged weights, missing optimizer state) are skipped with a warning naming each and its
    problem. Such a checkpoint given by path is refused with the same words. A checkpoint without a manifest is
    resumed from with a warning that its content could not be verified ([`unverified_warning`]).

    Raises:
        ValueError: a path that is not a folder or is unusable (the message names the latest usable checkpoint),
            or `True` where `output_dir` holds no usable checkpoint.
    """
    if resume is None or resume is False:
        return None
    if resume is True:
        folder, skipped = _last_complete(output_dir)
        if folder is None:
            if skipped:
                raise ValueError(
                    f"`resume_from_checkpoint` is True but `output_dir` {output_dir!r} holds only unusable "
                    f"checkpoints ({'; '.join(skipped)}): there is nothing to resume. {_START_AFRESH}"
                )
            raise ValueError(
                f"`resume_from_checkpoint` is True but `output_dir` {output_dir!r} holds no checkpoint: there is "
                "nothing to resume. Start afresh without `resume_from_checkpoint`."
            )
        if skipped:
            warnings.warn(
                f"Skipping checkpoint(s) {'; '.join(skipped)}; resuming from the last complete one, {folder}.",
                stacklevel=3,
            )
        _warn_if_unverified(folder)
        return folder
    folder = str(resume)
    if not os.path.isdir(folder):
        raise ValueError(f"`resume_from_checkpoint` {folder!r} is not a folder: give a checkpoint folder or True.")
    problem = checkpoint_problem(folder)
    if problem is not None:
        last, _ = _last_complete(os.path.dirname(os.path.abspath(folder)))
        if last is None:
            raise ValueError(
                f"`resume_from_checkpoint` {folder!r} cannot be resumed: {problem}, and no other checkpoint beside it "
                f"is usable: there is nothing to resume. {_START_AFRESH}"
            )
        raise ValueError(
            f"`resume_from_checkpoint` {folder!r} cannot be resumed: {problem}. Resume from the last complete one, "
            f"{last}, or set `resume_from_checkpoint` True to pick it."
        )
    _warn_if_unverified(folder)
    return folder


_START_AFRESH = (
    "To start afresh in this `output_dir`, run without `resume_from_checkpoint` and with `overwrite_output_dir` "
    "True (which deletes them), or give another `output_dir`."
)


def _warn_if_unverified(folder: str) -> None:
    message = unverified_warning(folder)
    if message is not None:
        warnings.warn(message, stacklevel=4)


def check_resume_settings(folder: str, args, num_processes: int, model) -> None:
    """Refuses to resume `folder` under settings it was not written with: another number of processes (each wrote
    its `seqtemp_state_<rank>.json`), or another LoRA shape (`adapter_config.json`'s rank and targets)."""
    written_by = len([name for name in os.listdir(folder) if re.match(r"^seqtemp_state_\d+\.json$", name)])
    if written_by and written_by != num_processes:
        raise ValueError(
            f"checkpoint {folder} was written by {written_by} process(es) and this run has {num_processes}: the "
            "data order, the fresh samples and the optimizer steps would differ from that run's. Resume on "
            f"{written_by} process(es), or start afresh in another `output_dir`."
        )
    check_same_sampling(folder, args)
    path = os.path.join(folder, "adapter_config.json")
    config = getattr(model, "peft_config", {}).get(getattr(model, "active_adapter", "default"))
    if config is None or not os.path.isfile(path):
        return
    saved = read_json(path)
    for key, flag in (("r", "lora_r"), ("lora_alpha", "lora_alpha")):
        if key in saved and saved[key] != getattr(config, key, saved[key]):
            raise ValueError(
                f"checkpoint {folder} holds a LoRA adapter with {key}={saved[key]} and this run's has "
                f"{key}={getattr(config, key)}: resume with `{flag}` {saved[key]} (the `peft_config` of that run), "
                "or start afresh in another `output_dir`."
            )


SAMPLING_SETTINGS = ("sampling_batch_tokens", "num_generations", "max_completion_length")
"""What the pool of samples of p drawn for prompt-only data depends on, beside the seed: a resume under other values
would train on other completions than the run it continues."""


def check_same_sampling(folder: str, args) -> None:
    """Refuses to resume `folder` with another [`SAMPLING_SETTINGS`] value than its `training_args.json` records: the
    completions drawn for prompt-only data (in sampling calls of `sampling_batch_tokens` tokens, one seed per call)
    would be another pool."""
    path = os.path.join(folder, "training_args.json")
    if not os.path.isfile(path):
        return
    saved = read_json(path)
    for name in SAMPLING_SETTINGS:
        if name in saved and saved[name] != getattr(args, name, saved[name]):
            raise ValueError(
                f"checkpoint {folder} was trained with `{name}={saved[name]}` and this run has "
                f"`{name}={getattr(args, name)}`: its samples of p would be drawn differently (another pool of "
                f"completions than the run it continues). Resume with `{name}={saved[name]}`, or start afresh in "
                "another `output_dir`."
            )


def check_same_objective(folder: str, args) -> None:
    """Refuses to resume `folder` with another target temperature or loss than it was trained with, or when the
    checkpoint no longer says what it was trained with (both `seqtemp_config.json` and `training_args.json` gone)."""
    path = os.path.join(folder, CONFIG_NAME)
    if not os.path.isfile(path):  # no config (deleted, or a save cut short): the training arguments say the same
        path = os.path.join(folder, "training_args.json")
        if not os.path.isfile(path):
            raise ValueError(
                f"checkpoint {folder} says nothing of what it was trained with (neither {CONFIG_NAME} nor "
                "training_args.json is there), so this run cannot check that its `target_temperature` and "
                "`loss_type` are that run's. Restore one of those files, resume from another checkpoint, or start "
                "afresh in another `output_dir`."
            )
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
    not pick an earlier run's checkpoint). Call it only while holding `output_dir`'s lock."""
    found = checkpoints_in(args.output_dir)
    if resume is not None or not found or args.save_strategy == "no":
        return
    if not args.overwrite_output_dir:
        usable, skipped = _last_complete(args.output_dir)
        names = ", ".join(os.path.basename(f) for f in found)
        if usable is None:
            raise ValueError(
                f"`output_dir` {args.output_dir!r} holds checkpoints of an earlier run ({names}), none of them usable "
                f"({'; '.join(skipped)}), which this run would overwrite. Set `overwrite_output_dir` True to delete "
                "them and start afresh here, or give another `output_dir`; there is nothing to resume."
            )
        raise ValueError(
            f"`output_dir` {args.output_dir!r} already holds checkpoints of an earlier run ({names}), which this run "
            "would overwrite. For a new run, give another `output_dir` (or set `overwrite_output_dir` True to "
            "delete them); only if this is that same run, interrupted, continue it with `resume_from_checkpoint` "
            f"True (its last complete checkpoint, {os.path.basename(usable)})."
        )
    if is_main_process:
        warnings.warn(f"`overwrite_output_dir=True`: deleting {len(found)} checkpoint(s) in {args.output_dir}.")
        for folder in found:
            shutil.rmtree(folder)


def raise_write_error(error: BaseException, folder: str, output_dir: str) -> None:
    """Re-raises a failure to write checkpoint `folder` as an `OSError` that names the folder, the free space of its
    disk and the fix (torch's own words for a full disk are `basic_ios::clear` or `unexpected pos`); any other
    error is re-raised as it is."""
    if not is_write_failure(error):
        raise error
    last, _ = _last_complete(output_dir)
    if last is None:
        then = (
            "then start the run again with `overwrite_output_dir` True: no checkpoint is complete yet, so there is "
            f"nothing to resume (the partial folder {folder} is still there; that run deletes it)"
        )
    else:
        then = (
            "then resume with `resume_from_checkpoint` True (the last complete checkpoint, "
            f"{os.path.basename(last)}; the partial folder is skipped)"
        )
    raise OSError(
        f"writing checkpoint {folder} failed: {describe_failure(error, folder)}. Fix the cause (free space, raise the "
        f"limit, or keep fewer checkpoints with `save_total_limit`), {then}."
    ) from error


def write_json_atomically(path: str, payload) -> None:
    """Writes `payload` as JSON to `path` through a temporary file, so a kill leaves the old file or the new one."""
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(partial, path)


def read_json(path: str):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
