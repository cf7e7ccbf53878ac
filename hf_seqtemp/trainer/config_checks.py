# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The checks of [`SeqTempConfig`]'s values (run by its `__post_init__`): names normalised, then each bad value
raises with the parameter, the value and the fix; `nll_weight=None` becomes the objective's own default."""

from __future__ import annotations

import warnings

from ..checks import check_int, check_temperature_range
from ..losses import LOSSES
from .trl_names import check_engine_settings, check_trl_names


def _has_accelerator() -> bool:
    import torch

    accelerator = getattr(torch, "accelerator", None)
    return accelerator.is_available() if accelerator is not None else torch.cuda.is_available()


def normalise_config(config) -> None:
    """The deprecated `precompute_ref_logps` read into TRL's `precompute_ref_log_probs` (with a warning), the loss
    name lower-cased, and no memory pinning without an accelerator (it only helps copies to one; torch warns)."""
    if config.precompute_ref_logps is not None:
        warnings.warn(
            "`precompute_ref_logps` is deprecated and will be removed: use `precompute_ref_log_probs` (TRL's "
            "name) instead.",
            FutureWarning,
            stacklevel=4,
        )
        config.precompute_ref_log_probs, config.precompute_ref_logps = config.precompute_ref_logps, None
    if isinstance(config.loss_type, str):
        config.loss_type = config.loss_type.strip().lower()
    if config.dataloader_pin_memory and (config.use_cpu or not _has_accelerator()):
        config.dataloader_pin_memory = False


def check_config(config) -> None:
    """Validates a [`SeqTempConfig`] in place (after its names are normalised, before `TrainingArguments`' own
    checks)."""
    config.target_temperature = check_temperature_range(config.target_temperature, "target_temperature")
    if config.loss_type not in LOSSES:
        raise ValueError(f"`loss_type` must be one of {sorted(LOSSES)}, got {config.loss_type!r}.")
    if config.nll_weight is None:  # each objective's own default
        config.nll_weight = 0.0 if config.loss_type == "smc_distill" else 0.1
    if config.smc_proposal not in ("token", "adapter"):
        raise ValueError(f"`smc_proposal` must be 'token' or 'adapter', got {config.smc_proposal!r}.")
    threshold = config.smc_ess_threshold
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (0 <= threshold <= 1):
        raise ValueError(f"`smc_ess_threshold` must be a float in [0, 1], got {threshold!r}.")
    if (
        isinstance(config.nll_weight, bool)
        or not isinstance(config.nll_weight, (int, float))
        or not (config.nll_weight >= 0)
    ):
        raise ValueError(f"`nll_weight` must be a float ≥ 0, got {config.nll_weight!r}.")
    for name, low, high, closed_high in (
        ("c_div_alpha", 1.0, float("inf"), False),
        ("trunc_r_quantile", 0.0, 1.0, True),
        ("lambda_pr_lambda", 0.0, float("inf"), False),
    ):
        value = getattr(config, name)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and low < value
        if not ok or not (value <= high if closed_high else value < high):
            interval = f"({low:g}, {high:g}{']' if closed_high else ')'}"
            raise ValueError(f"`{name}` must be in {interval}, got {value!r}.")
    check_int(config.max_length, "max_length", 2, fix="An example needs a first token and one scored token.")
    start = config.init_token_temperature
    if start is not None:
        if isinstance(start, bool) or not isinstance(start, (int, float)) or not (0 < start < float("inf")):
            raise ValueError(f"`init_token_temperature` must be a float > 0 or None, got {start!r}.")
        if not config.init_from_token_temperature:
            raise ValueError(
                f"`init_token_temperature={start!r}` is the token temperature `init_from_token_temperature` "
                "starts the adapter at, and that is off: set `init_from_token_temperature=True` (or drop "
                "`init_token_temperature`)."
            )
    if config.likelihood_method is not None and config.likelihood_method not in ("exact", "mc"):
        raise ValueError(
            f"`likelihood_method` must be 'exact', 'mc' or None (pick by model family),"
            f" got {config.likelihood_method!r}."
        )
    for name in ("num_generations", "max_completion_length", "num_orders", "sampling_batch_tokens"):
        check_int(getattr(config, name), name)
    check_trl_names(config)
    check_engine_settings(config)
    for name in ("sample_every_steps", "ref_num_orders"):
        check_int(getattr(config, name), name, allow_none=True)
    check_int(config.num_generations_eval, "num_generations_eval", 2, allow_none=True, fix="Use ≥ 2 or None.")
    if (config.sample_every_steps is not None or config.loss_type == "smc_distill") and config.dataloader_num_workers:
        raise ValueError(
            f"`dataloader_num_workers={config.dataloader_num_workers}` with `sample_every_steps` or `loss_type="
            f"'smc_distill'` (samples drawn during training): "
            "the samples are drawn while batches are collated, so in worker processes they would never reach the "
            "pool that checkpoints save, and a resumed run would draw others. Set `dataloader_num_workers=0`."
        )
    if config.remove_unused_columns:
        raise ValueError(
            "`remove_unused_columns=True` would drop the reference log-prob columns that the loss needs; "
            "leave it False."
        )
