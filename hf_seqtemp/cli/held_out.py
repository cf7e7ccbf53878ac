# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What `hf-seqtemp train` says about its held-out split before it trains, and when the held-out figures rest on
too few prompts to mean much."""

from __future__ import annotations

import sys

MIN_HELD_OUT_PROMPTS = 8
"""Held-out prompts below which `train` warns that its T_eff and τ are indicative only: a rule of thumb, not a
derived bound. T_eff and τ are taken within each prompt and pooled, and prompts differ, so the figures are a mean
over prompts; below 8 prompts a 95 % bootstrap interval over them (as `make demo` gives, on 14) rests on too few
distinct prompts to be read, and one prompt more or less can move the figure by as much as the differences it is
meant to show."""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def distinct_prompts(dataset, text_field: str = "text") -> int | None:
    """The number of distinct prompts of a dataset in one of TRL's formats; `None` for a plain-text corpus (no
    prompts).

    Example:
    ```python
    >>> from datasets import Dataset
    >>> distinct_prompts(Dataset.from_dict({"prompt": ["a", "a", "b"], "completion": ["x", "y", "z"]}))
    2
    ```
    """
    from ..data import detect_format, prompt_key

    fmt = detect_format(dataset.column_names, text_field, "dataset")
    if fmt == "text":
        return None
    if "prompt_id" in dataset.column_names:
        return len(set(map(str, dataset["prompt_id"])))
    return len({prompt_key(row, fmt) for row in dataset})


def announce_split(train, held_out, prompts_only: bool, num_generations: int, text_field: str = "text") -> None:
    """Prints how many prompts are held out and trained on, before training; warns on stderr when fewer than
    [`MIN_HELD_OUT_PROMPTS`] are held out."""
    if held_out is None:
        return
    held, trained = distinct_prompts(held_out, text_field), distinct_prompts(train, text_field)
    if held is None:  # a plain-text corpus: rows, not prompts
        print(
            f"hf-seqtemp train: holding out {_count(len(held_out), 'row')} of a corpus without prompts (unseen rows, "
            f"not unseen prompts), training on {_count(len(train), 'row')}; the adapter is measured on the held-out "
            "rows after training."
        )
        return
    rows = (
        f"{num_generations} completions of each sampled from the base model"
        if prompts_only
        else f"{_count(len(held_out), 'row')}"
    )
    print(
        f"hf-seqtemp train: holding out {_count(held, 'prompt')} ({rows}), never trained on; training on "
        f"{_count(trained, 'prompt')}. The adapter is measured on the held-out prompts after training."
    )
    if held < MIN_HELD_OUT_PROMPTS:
        print(few_prompts_warning(held), file=sys.stderr)


def few_prompts_warning(held: int) -> str:
    """The warning for a held-out figure on `held` prompts (fewer than [`MIN_HELD_OUT_PROMPTS`])."""
    return (
        f"hf-seqtemp train: the held-out T_eff and τ will rest on {_count(held, 'prompt')}, fewer than "
        f"{MIN_HELD_OUT_PROMPTS}: one prompt more or less can move them by as much as the differences they are "
        "meant to show, so read them as indicative only. Hold out more prompts (a larger `--eval_fraction`, or more prompts in the data), or "
        "measure the adapter afterwards with `hf-seqtemp eval` on more unseen prompts."
    )
