# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Several eval sets: `eval_dataset={"name": dataset}`, as `Trainer` and TRL take them."""

from __future__ import annotations


def each_eval(eval_dataset, fn):
    """`fn(name, dataset)` for the eval set, or for each of a dict of them (TRL's and Trainer's several eval sets,
    `eval_dataset={"name": dataset}`), keeping the dict; `name` is what errors call it."""
    if isinstance(eval_dataset, dict):
        return {key: fn(f"eval_dataset[{key!r}]", dataset) for key, dataset in eval_dataset.items()}
    return fn("eval_dataset", eval_dataset)


def split_of(name: str) -> str:
    """The split name of an eval set for seeds and progress bars: `eval`, or `eval_<key>` for a dict's entry."""
    return "eval" if name == "eval_dataset" else "eval_" + name[len("eval_dataset['") : -2]
