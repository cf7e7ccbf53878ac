# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp audit`: a decoding setting (or a grid of them) measured against the model's exact p."""

from __future__ import annotations

import os
import shlex
import sys
import threading
import time
from collections.abc import Callable

from ..audit.decoding import DECODING_FLAGS as SINGLE_FLAGS
from ..checks import check_int
from .arguments import AuditArguments


def audit_prompts(args: AuditArguments, read_dataset: Callable) -> list:
    """The prompts of --prompt, --prompts_file and --dataset_path (its `prompt` column), in that order."""
    prompts = list(args.prompt)
    if args.prompts_file is not None:
        if not os.path.isfile(args.prompts_file):
            raise ValueError(f"`prompts_file` {args.prompts_file!r} is not a file.")
        with open(args.prompts_file, encoding="utf-8") as handle:
            prompts += [line.strip() for line in handle if line.strip()]
    if args.dataset_path is not None:
        data = read_dataset(args.dataset_path, args.dataset_train_split)
        if "prompt" not in data.column_names:
            raise ValueError(f"`dataset_path` {args.dataset_path!r} has no `prompt` column ({data.column_names}).")
        prompts += list(data["prompt"])
    if args.num_prompts is not None:
        prompts = prompts[: check_int(args.num_prompts, "num_prompts")]
    if not prompts:
        raise ValueError("no prompt: pass `prompt`, `prompts_file` or `dataset_path` (with a `prompt` column).")
    return prompts


def audit_settings(args: AuditArguments) -> list[dict]:
    """The settings of --grid, or the one setting of the single-setting flags (no flag: p itself)."""
    from ..audit import parse_grid

    single = {name: getattr(args, name) for name in SINGLE_FLAGS if getattr(args, name) is not None}
    if args.grid and single:
        raise ValueError(f"pass either `grid` or single-setting flags ({sorted(single)}), not both.")
    return parse_grid(args.grid) if args.grid else [single]


class Progress:
    """Prints each phase as it starts and, from a background thread, a line every `every` seconds while one runs,
    so that a long audit is never silent for longer than that (to stderr: stdout keeps the table).

    `wait` is how the thread waits between lines (an `Event.wait`-like callable returning `True` to stop).
    """

    def __init__(self, every: float = 25.0, stream=None, wait: Callable[[float], bool] | None = None):
        self.start, self.every, self.phase = time.perf_counter(), every, "loading the model"
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._wait = wait if wait is not None else self._stop.wait
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _line(self, text: str) -> None:
        print(f"[{time.perf_counter() - self.start:5.0f} s] {text}", file=self.stream, flush=True)

    def _run(self) -> None:
        while not self._wait(self.every):
            self._line(f"still {self.phase} …")

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def __call__(self, phase: str) -> None:
        self.phase = phase
        self._line(f"{phase} …")


def run_audit(args: AuditArguments, load_base: Callable, read_dataset: Callable) -> int:
    """Audits the settings, prints the Markdown table and writes audit.json / audit.md / audit.png."""
    from ..audit import audit_grid, markdown_table, write_audit

    check_int(args.num_generations, "num_generations")
    check_int(args.max_completion_length, "max_completion_length")
    settings = audit_settings(args)
    started = time.perf_counter()
    with Progress() as progress:
        model, tokenizer = load_base(args)
        prompts = audit_prompts(args, read_dataset)
        result = audit_grid(
            model.eval(),
            tokenizer,
            prompts,
            settings,
            target_temperatures=args.target_temperature,
            num_samples=args.num_generations,
            reference_samples=check_int(args.reference_samples, "reference_samples"),
            max_new_tokens=args.max_completion_length,
            seed=args.seed,
            chat_template=args.chat_template,
            system_prompt=args.system_prompt,
            progress=progress,
        )
    result["command"] = "hf-seqtemp audit " + shlex.join(sys.argv[2:] if sys.argv[1:2] == ["audit"] else [])
    result["wall_time_s"] = time.perf_counter() - started
    paths = write_audit(result, args.output_dir, plot=args.plot)
    print(
        f"{len(prompts)} prompts x {args.num_generations} samples, up to {args.max_completion_length} new tokens; T_eff and "
        "Kendall tau within prompts over distinct answers (p itself: T_eff 1, tau 1); 'rare under p': log p below "
        "the 5 % quantile of log p over "
        f"{args.reference_samples} samples of p for the prompt"
    )
    print(markdown_table(result))
    print(f"wall time {result['wall_time_s']:.1f} s; wrote {', '.join(paths.values())}")
    return 0
