# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Input features shared by the paired-log-likelihood `evaluate` modules (T_eff, Kendall τ, log-ratio).

`evaluate` takes its input names from the *first* feature set only (`add`, `add_batch` and `evaluate.combine` refuse
any other name), so `groups` is part of the one feature set, and [`GroupedInputs`] fills it with `None` (one group)
when a call leaves it out.
"""

from __future__ import annotations

import datasets


def paired_logp_features() -> datasets.Features:
    """`base_logp` and `tempered_logp` per sequence, with its prompt group id (`groups`, any id, stored as text)."""
    return datasets.Features(
        {
            "base_logp": datasets.Value("float64"),
            "tempered_logp": datasets.Value("float64"),
            "groups": datasets.Value("string"),
        }
    )


_NO_GROUP = ""  # evaluate refuses `None` in a text column: a missing id is stored as "", a given one with a prefix
_PREFIX = "g:"


def _as_text(group) -> str:
    return _NO_GROUP if group is None else _PREFIX + str(group)


class GroupedInputs:
    """Mixin for an `evaluate.Metric` on [`paired_logp_features`]: `groups` is optional in `compute`, `add` and
    `add_batch`. Listed before `evaluate.Metric`; not a `Metric` itself, since `evaluate.load` takes the first
    `Metric` subclass it finds in a module.

    Group ids may be any hashables (numbers, strings, a tensor); they are compared as text. Either every sequence
    has a group id or none has (one group).
    """

    def add_batch(self, *, groups=None, **kwargs):
        """Adds a batch of sequences, with their prompt ids `groups` (optional: `None` is one group)."""
        size = len(next(iter(v for v in kwargs.values() if v is not None), []))
        groups = [_NO_GROUP] * size if groups is None else [_as_text(g) for g in _as_list(groups)]
        return super().add_batch(groups=groups, **kwargs)

    def add(self, *, groups=None, **kwargs):
        """Adds one sequence, with its prompt id `groups` (optional: `None` is one group)."""
        return super().add(groups=_as_text(groups.item() if hasattr(groups, "item") else groups), **kwargs)

    @staticmethod
    def _groups(groups) -> list[str] | None:
        """The stored group ids, or `None` (one group) when no sequence has one."""
        if groups is None or all(g == _NO_GROUP for g in groups):
            return None
        missing = [i for i, g in enumerate(groups) if g == _NO_GROUP]
        if missing:
            raise ValueError(
                f"`groups` is missing for {len(missing)} of {len(groups)} sequences (first: sequence {missing[0]}): "
                "give every sequence its prompt id, or none (one group)."
            )
        return [g[len(_PREFIX) :] for g in groups]


def _as_list(values) -> list:
    return values.tolist() if hasattr(values, "tolist") else list(values)
