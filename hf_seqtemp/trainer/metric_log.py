# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What [`SeqTempTrainer`] logs: per-sequence values buffered between two `log` calls, summarised within prompts."""

from __future__ import annotations

import math
from collections import defaultdict

import torch

from ..groups import group_codes, within_group_pairs
from ..metrics.core import effective_temperature, kendall_tau, temperature_log_ratio

_SEQUENCE_KEYS = ("policy", "ref", "tokens", "groups")
# how a metric's values since the last log are summarised, by the last part of its name (the mean otherwise)
_REDUCTIONS = {"min_length": torch.min, "max_length": torch.max, "num_tokens": lambda values: values[-1]}


def completion_metrics(input_ids, attention_mask, completion_mask, eos_ids) -> dict[str, torch.Tensor]:
    """GRPO's `completions/*` per sequence of a batch: the completion's length, whether it ended at an EOS id
    (`completions/clipped_ratio` counts those that did not: cut at the length limit, or fixed-length), and the
    length of those that ended; `tokens` is prompt + completion (what `num_tokens` adds up)."""
    mask = completion_mask.bool()
    lengths = mask.sum(1)
    last = (mask.long() * torch.arange(mask.shape[1], device=mask.device)).argmax(1)
    final = input_ids.gather(1, last[:, None])[:, 0]
    eos = torch.as_tensor(sorted(eos_ids), dtype=input_ids.dtype, device=input_ids.device)
    ended = torch.isin(final, eos) & (lengths > 0)
    floats = lengths.float()
    return {
        "completions/mean_length": floats,
        "completions/min_length": floats,
        "completions/max_length": floats,
        "completions/clipped_ratio": (~ended).float(),
        "completions/mean_terminated_length": floats.masked_fill(~ended, float("nan")),
        "tokens": attention_mask.sum(1),
    }


class MetricLog:
    """Buffers of one training run, one per mode (`"train"`, `"eval"`), filled by every loss computation and emptied
    by every log.

    The sequence values (log q, log p, scored tokens, prompt group) are kept whole, so the temperature metrics are
    taken over everything seen since the last log, within prompt groups: `temp/t_eff` (Eq. 17), `temp/kendall_tau`
    (Eq. 13) and `temp/h_std` (the within-prompt standard deviation of h, Eq. 16). Every other value (the loss terms
    of the objective) is averaged, NaNs ignored.

    Example:
    ```python
    >>> log = MetricLog()
    >>> log.record("eval", torch.tensor([-2.0, -4.0]), torch.tensor([-1.0, -2.0]), torch.tensor([2, 2]),
    ...            torch.tensor([7, 7]), {"loss/ratio": 0.0})
    >>> metrics = log.summary("eval", target_temperature=0.5)
    >>> metrics["temp/t_eff"], metrics["temp/h_std"], metrics["loss/ratio"]
    (0.5, 0.0, 0.0)
    ```
    """

    def __init__(self):
        self._buffers = {mode: defaultdict(list) for mode in ("train", "eval")}

    def record(self, mode: str, policy_logps, ref_logps, tokens, group_ids, metrics: dict) -> None:
        """Adds one batch: sequence log q and log p, scored tokens and group id per sequence, and metrics (a number,
        or a tensor of one value per sequence, which is then summarised over every sequence: mean, or min / max for
        names ending in `min_length` / `max_length`, or the last value for `num_tokens`)."""
        buffer = self._buffers[mode]
        for key, values in zip(_SEQUENCE_KEYS, (policy_logps, ref_logps, tokens, group_ids)):
            buffer[key].append(values.detach().cpu())
        for key, value in metrics.items():
            if isinstance(value, torch.Tensor):
                buffer[key].append(value.detach().reshape(-1).float().cpu())
            else:
                buffer[key].append(torch.tensor([float(value)], device="cpu"))

    def summary(self, mode: str, target_temperature: float) -> dict[str, float]:
        """The metrics of everything recorded in `mode` since the last [`clear`]; `{}` when nothing was."""
        buffer = self._buffers[mode]
        if not buffer["policy"]:
            return {}
        policy, ref = torch.cat(buffer["policy"]).double(), torch.cat(buffer["ref"]).double()
        tokens = torch.cat(buffer["tokens"]).double()
        groups = group_codes(torch.cat(buffer["groups"]), policy.numel(), device="cpu")
        metrics = {
            "logps/policy": policy.mean().item(),
            "logps/ref": ref.mean().item(),
            "nll/policy_per_token": (-policy.sum() / tokens.sum()).item(),
            "temp/h_std": math.nan,
        }
        if within_group_pairs(groups) > 0:  # within prompts: h is constant within a prompt, not across prompts
            ratio = temperature_log_ratio(ref, policy, target_temperature, groups=groups)
            metrics["temp/h_std"] = math.sqrt(ratio["variance"])
            metrics["temp/t_eff"] = effective_temperature(ref, policy, groups=groups)
            metrics["temp/kendall_tau"] = kendall_tau(ref, policy, groups=groups)
        metrics["temp/prompts"] = float(torch.unique(groups).numel())
        for key, values in buffer.items():
            if key not in _SEQUENCE_KEYS:
                stacked = torch.cat(values)
                stacked = stacked[~stacked.isnan()]
                reduce = _REDUCTIONS.get(key.rsplit("/", 1)[-1], torch.mean)
                metrics[key] = reduce(stacked.double()).item() if stacked.numel() else math.nan
        return metrics

    def clear(self, mode: str) -> None:
        self._buffers[mode].clear()
