# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Paired cost comparisons in one process: A B A B ... after a warm-up, then the median of the pairwise ratios.

What hf_seqtemp's cost benchmarks quote, and what a user comparing two routes on their own machine runs: *ours* (B)
against the baseline they would otherwise run (A). Timing one and then the
other lets a change in machine load between the two blocks decide the verdict; here the two run alternately, each
pair (A_i, B_i) back to back, and the cost is quoted as the median of the pairwise ratios B_i / A_i with their min
and max. A load spike then moves one or two ratios, not the median. Lower is better: a ratio is "ours costs this
many times the baseline", and a target is met when the median is at or below it.

Peak memory (`tensor_peak`) is the largest amount of *tensor* memory allocated during one call above what was
allocated when the call started:

- `cuda`: `torch.cuda.max_memory_allocated()` after `reset_peak_memory_stats()`, minus the bytes allocated before.
- `cpu`: torch has no CPU allocator statistics, so the call runs under `torch.profiler` with `profile_memory=True`
  and the allocation / free events that torch's CPU allocator reports are summed in order; the peak of that running
  sum is the figure. It counts every tensor torch allocates (activations, logits, gradients, optimizer state created
  in the call, KV caches), exactly as the CUDA figure does, and nothing outside torch (Python objects, tokenizers,
  the allocator's own slack, pages malloc keeps after a free). It is measured on a separate run, after the timed
  pairs, because the profiler slows the call down.

[`ForwardCounter`] counts what a route costs in model calls and token-forwards: the units every cost above is
also quoted in where seconds depend on the machine.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable

import torch

MEMORY_METHOD = {
    "cuda": "torch.cuda.max_memory_allocated() - memory_allocated() before the call",
    "cpu": "peak running sum of torch CPU allocator events (torch.profiler, profile_memory=True) during the call",
}


def summarise(ratios: list[float], target: float | None) -> dict:
    """Median, min and max of paired ratios, the target (a ratio, lower is better) and the verdict on the median.

    Example:

    >>> s = summarise([1.2, 0.9, 1.0, 3.0], target=1.10)
    >>> s["median"], s["min"], s["max"], s["n"], s["verdict"]
    (1.1, 0.9, 3.0, 4, 'met')
    >>> summarise([1.0002], target=1.0)["verdict"]  # equal to the printed precision
    'met'
    >>> summarise([1.2], target=None)["verdict"]
    'no target'
    """
    if not ratios:
        raise ValueError("`ratios` must hold at least one paired ratio, got an empty list.")
    median = statistics.median(ratios)
    if target is None:
        verdict = "no target"
    else:
        verdict = "met" if round(median, 3) <= target else "not met"  # as printed: a 0.05 % difference is a tie
    return {
        "median": median,
        "min": min(ratios),
        "max": max(ratios),
        "n": len(ratios),
        "target": target,
        "verdict": verdict,
        "ratios": list(ratios),
    }


def format_summary(name: str, summary: dict, unit: str = "x") -> str:
    """One line: `name  1.034x [0.981, 1.102] (5 pairs)  target <= 1.10x: met`."""
    text = (
        f"{name:<48} {summary['median']:.3f}{unit} [{summary['min']:.3f}, {summary['max']:.3f}] "
        f"({summary['n']} pair{'s' if summary['n'] != 1 else ''})"
    )
    if summary["target"] is None:
        return f"{text}  no target (reported)"
    return f"{text}  target <= {summary['target']:.2f}{unit}: {summary['verdict']}"


def is_paired_summary(value) -> bool:
    return isinstance(value, dict) and {"median", "min", "max", "verdict"} <= value.keys()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], object], device: torch.device) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def time_pairs(
    baseline: Callable[[], object], ours: Callable[[], object], device: torch.device, warmup: int, pairs: int
) -> dict:
    """Runs `warmup` untimed rounds of (baseline, ours), then `pairs` timed rounds, each baseline first.

    Returns the seconds of every call on each side (`baseline_s`, `ours_s`) and the paired ratios `ours / baseline`.
    """
    if pairs < 1:
        raise ValueError(f"`pairs` must be >= 1, got {pairs}.")
    for _ in range(warmup):
        baseline()
        ours()
    baseline_s, ours_s = [], []
    for _ in range(pairs):
        baseline_s.append(_timed(baseline, device))
        ours_s.append(_timed(ours, device))
    return {"baseline_s": baseline_s, "ours_s": ours_s, "ratios": [b / a for a, b in zip(baseline_s, ours_s)]}


def time_round_robin(fns: dict[str, Callable[[], object]], device: torch.device, warmup: int, rounds: int) -> dict:
    """Several variants in turn (A B C A B C ...): the seconds of each call per variant, for pairing by round."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    seconds = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            seconds[name].append(_timed(fn, device))
    return seconds


def ratios_by_round(seconds: dict[str, list[float]], ours: str, baseline: str) -> list[float]:
    """Paired ratios `ours_i / baseline_i` of two variants timed in the same rounds of `time_round_robin`."""
    return [b / a for a, b in zip(seconds[baseline], seconds[ours])]


@contextlib.contextmanager
def _quiet_stderr():
    """Silences the profiler's start/stop lines, which its C++ side writes straight to file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class PeakMeter:
    """Peak extra tensor memory between `start()` and `stop()` (MiB); see the module docstring for the method.

    `start()` and `stop()` must run in the same thread (the profiler records the thread that started it).
    """

    def __init__(self, device: torch.device):
        self.device, self._before, self._prof = device, 0, None

    def start(self) -> None:
        if self.device.type == "cuda":
            sync(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._before = torch.cuda.memory_allocated(self.device)
            return
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        with _quiet_stderr():
            self._prof.start()

    def stop(self) -> float:
        if self.device.type == "cuda":
            sync(self.device)
            return (torch.cuda.max_memory_allocated(self.device) - self._before) / 2**20
        with _quiet_stderr():
            self._prof.stop()
        running = peak = 0
        for event in self._prof.profiler.kineto_results.events():
            if event.name() == "[memory]":
                running += event.nbytes()
                peak = max(peak, running)
        self._prof = None
        return peak / 2**20


def tensor_peak(fn: Callable[[], object], device: torch.device) -> dict:
    """Peak extra tensor memory of one call of `fn`, in MiB (see the module docstring for the method)."""
    meter = PeakMeter(device)
    meter.start()
    try:
        fn()
    finally:
        peak = meter.stop()
    return {"peak_mib": peak, "method": MEMORY_METHOD["cuda" if device.type == "cuda" else "cpu"]}


def memory_pairs(
    baseline: Callable[[], object], ours: Callable[[], object], device: torch.device, pairs: int = 1
) -> dict:
    """Tensor peak of each side, alternately, `pairs` times; the paired ratios `ours / baseline`."""
    baseline_mib, ours_mib = [], []
    for _ in range(pairs):
        baseline_mib.append(tensor_peak(baseline, device)["peak_mib"])
        ours_mib.append(tensor_peak(ours, device)["peak_mib"])
    return {
        "baseline_mib": baseline_mib,
        "ours_mib": ours_mib,
        "ratios": [b / a for a, b in zip(baseline_mib, ours_mib)],
        "method": MEMORY_METHOD["cuda" if device.type == "cuda" else "cpu"],
    }


class ForwardCounter:
    """Counts the forward passes of a causal LM's decoder and the positions they compute, in all and per kind.

    A forward pre-hook on the decoder (the transformer below the LM head, which every route calls, PEFT adapters on or
    off) adds one *model call* per forward and `batch × length` *token-forwards* (the positions of `input_ids` it
    computes, padding included; with a KV cache a decoding step computes one position per row). `calls` and `tokens`
    are the running totals since the counter was made or [`reset`]; what the calls made inside
    `counting(kind, answers)` cost is also added to `kind`'s totals, with the number of answers they produced.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(pad_token_id=0)
    >>> counter = ForwardCounter(model)
    >>> with counter.counting("loglikelihood", answers=2):
    ...     _ = model(torch.tensor([[1, 2, 3], [1, 2, 0]]))
    >>> counter.summary()["loglikelihood"]
    {'answers': 2, 'model_calls': 1, 'token_forwards': 6, 'model_calls_per_answer': 0.5, 'token_forwards_per_answer': 3.0}
    >>> _ = model(torch.tensor([[1, 2]]))  # outside any kind: in the running totals only
    >>> counter.calls, counter.tokens
    (2, 8)
    ```
    """

    def __init__(self, model):
        decoder = model.get_base_model() if hasattr(model, "get_base_model") else model
        decoder = decoder.get_decoder() if callable(getattr(decoder, "get_decoder", None)) else decoder
        self.calls, self.tokens = 0, 0
        self._kind: str | None = None
        self._paused = False
        self._totals: dict[str, dict[str, int]] = defaultdict(
            lambda: {"answers": 0, "model_calls": 0, "token_forwards": 0}
        )
        self._handle = decoder.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module, args, kwargs):
        if self._paused:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            ids = kwargs["inputs_embeds"][..., 0]
        positions = int(ids.shape[0]) * int(ids.shape[1])
        self.calls += 1
        self.tokens += positions
        if self._kind is not None:
            totals = self._totals[self._kind]
            totals["model_calls"] += 1
            totals["token_forwards"] += positions

    def reset(self) -> None:
        """Sets the running totals `calls` and `tokens` back to 0 (the per-kind totals stay)."""
        self.calls, self.tokens = 0, 0

    @contextlib.contextmanager
    def counting(self, kind: str, answers: int):
        """Adds the forwards made inside the block, and `answers`, to `kind`'s totals (blocks do not nest)."""
        self._kind = kind
        try:
            yield
        finally:
            self._kind = None
            self._totals[kind]["answers"] += answers

    @contextlib.contextmanager
    def paused(self):
        """Leaves the forwards made inside the block out of every total (e.g. lm-eval's batch-size probe)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def summary(self) -> dict[str, dict[str, float]]:
        """`{kind: {answers, model_calls, token_forwards, model_calls_per_answer, token_forwards_per_answer}}`."""
        out = {}
        for kind, totals in self._totals.items():
            answers = max(totals["answers"], 1)
            per_answer = {
                "model_calls_per_answer": totals["model_calls"] / answers,
                "token_forwards_per_answer": totals["token_forwards"] / answers,
            }
            out[kind] = {**totals, **per_answer}
        return out

    def remove(self) -> None:
        """Takes the hook off the model."""
        self._handle.remove()
