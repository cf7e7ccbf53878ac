# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""lm-eval's own settings meaning, for the `seqtemp` model, what they mean in lm-eval: a `--device` that is on this
machine (the results record it), a `--batch_size auto` only where its probe measures the route, a run whose requests
the route can answer (refused before anything is sampled), and results named by the model (`default_model=True`).
`--seed` and `--use_cache` are kept by [`~hf_seqtemp.harness.SeqTempLM`] itself."""

from __future__ import annotations

import inspect
import sys

import torch

from ..models.default import DEFAULT_MODEL_ID


def check_device(device) -> None:
    """A device this machine does not have is refused: HFLM would fall back to another while lm-eval's results
    record the one asked for (`config.device`)."""
    if device is None or str(device) in ("", "auto"):
        return
    try:
        kind = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"`device` must be a torch device such as 'cpu' or 'cuda:0', got {device!r}: {error}"
        ) from None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if kind.type == "cuda" and (kind.index or 0) >= count:
        have = f"its CUDA devices are cuda:0 to cuda:{count - 1}" if count else "it has no CUDA device"
    elif kind.type == "mps" and not torch.backends.mps.is_available():
        have = "MPS is not available"
    else:
        return
    raise ValueError(
        f"`device={str(device)!r}` is not on this machine ({have}): pass `device=cpu` (`--device cpu`) or a device "
        "it has. (lm-eval's `hf` model would run elsewhere and record this device in the results.)"
    )


def name_embedded_model() -> None:
    """Makes lm-eval's results name `default_model=True` by the embedded model's id.

    lm-eval names a run's results (their folder, `model_name`) by the first of its model arguments `peft`, `delta`,
    `pretrained`, `model`, ...; `default_model=True` has none, so the name was a random id (or `True`, read from the
    text after `default_model=`). A run that names none of them and sets `default_model` is named
    `HuggingFaceTB/SmolLM2-135M-Instruct` ([`~hf_seqtemp.models.default.DEFAULT_MODEL_ID`]); every other run as
    lm-eval names it. Called when `hf_seqtemp.harness` is imported (as registering `seqtemp` is)."""
    from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lm_eval.utils import simple_parse_args_string

    lm_evals = GeneralConfigTracker._get_model_name
    if getattr(lm_evals, "names_embedded_model", False):
        return

    def _get_model_name(model_args):
        args = simple_parse_args_string(model_args) if isinstance(model_args, str) else model_args
        named = isinstance(args, dict) and any(
            key in args for key in ("peft", "delta", "pretrained", "model", "path", "engine")
        )
        if isinstance(args, dict) and not named and str(args.get("default_model")).lower() in ("true", "1"):
            return DEFAULT_MODEL_ID
        return lm_evals(model_args)

    _get_model_name.names_embedded_model = True
    GeneralConfigTracker._get_model_name = staticmethod(_get_model_name)


def check_batch_size(batch_size, has_density: bool, route: str) -> None:
    """`batch_size=auto` (or `auto:N`) measures the largest batch of one forward pass of the prompts; a whole-answer
    route (`has_density=False`, described as `route`) forwards many rows per prompt (particles, runs, proposals),
    which that probe does not see."""
    if has_density or not str(batch_size).startswith("auto"):
        return
    raise ValueError(
        f"`batch_size={batch_size!r}` sizes a batch by a probe of one forward pass per prompt, but the `seqtemp` "
        f"route {route} forwards many rows per prompt (particles, runs or proposals), which the "
        "probe does not measure: pass an integer `batch_size` (`--batch_size 8`), the number of prompts drawn at once."
    )


def refuse_likelihoods_ahead(route: str) -> None:
    """Refuses, before anything is sampled, an lm-eval run that also holds likelihood requests, which a route without
    a density cannot score. lm-eval builds every task's requests before it sends the first kind to the model, and
    passes the model nothing but the requests of one kind: they are read on lm-eval's `evaluate` frame (none outside
    lm-eval's `evaluate`, when the caller sends its requests itself)."""
    from lm_eval import evaluator

    code = inspect.unwrap(evaluator.evaluate).__code__
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    pending = {} if frame is None else frame.f_locals.get("requests") or {}
    kinds = [kind for kind in ("loglikelihood", "loglikelihood_rolling") if pending.get(kind)]
    if kinds:
        tasks = sorted({request.task_name for kind in kinds for request in pending[kind]})
        raise ValueError(
            f"the `seqtemp` route {route} draws whole answers and has no density: it cannot score the "
            f"{' and '.join(kinds)} requests of {tasks}, so nothing was sampled. Run those tasks in another run, "
            "scored with `strategy=adapter` (the adapter q), `token_temperature=...` or no `seq_temperature` (p), and "
            "the generation tasks with this route."
        )
