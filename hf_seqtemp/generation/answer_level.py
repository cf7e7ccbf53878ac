# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Answer-level routes: what a user with checkable answers tries first, beside whole-sequence tempering.

Given `N` completions of one prompt drawn from a sampler (p itself, or p at a token temperature) and the answer a
checker reads from each (a number, a word; `None` when it reads none), these pick the completion to return:

- **majority vote** (self-consistency): the most frequent answer, ties broken uniformly at random; the returned
  completion is one of those with that answer, drawn uniformly. As `N` grows it returns the mode of the sampler's
  answer law.
- **answer-level sharpening** (the target of "Self-Consistency via Marginal Sharpening", arXiv 2605.28142): the
  answer marginal p(a | c) is estimated by the counts, `p̂(a) = n(a) / N`, an answer is drawn with probability
  `p̂(a)^alpha / sum_b p̂(b)^alpha`, and a completion with that answer is returned, drawn uniformly. As `N` grows
  `p̂ -> p` and the answer's law tends to `p(a)^alpha` normalised (not `sum_{x: a(x) = a} p(x)^alpha`, the answer law
  of whole-sequence tempering): it sharpens the *marginal* of the answer, whatever the completions' wording.

Completions from which the checker reads no answer (`None`, or NaN: what `float()` parsing and pandas give for a
missing value) take no part, as in self-consistency: the vote and the
estimate are over the completions that have an answer, i.e. of the answer law given that one is read; when none has
one, a completion is returned uniformly. Every draw uses the given generator; everything is on the CPU (the answers
are Python values).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet

import torch

from ..checks import check_temperature


def _uniform(count: int, generator: torch.Generator | None) -> int:
    return int(torch.randint(count, (1,), generator=generator, device="cpu"))


def _completion_with(answers: Sequence[Hashable | None], answer, generator) -> int:
    """The index of a completion whose answer is `answer`, drawn uniformly among them."""
    matching = [i for i, a in enumerate(answers) if a == answer]
    return matching[_uniform(len(matching), generator)]


def _missing(answer) -> bool:
    """Whether `answer` says that no answer was read: `None`, or a NaN (Python's, numpy's, torch's, pandas' `NA`)."""
    if answer is None:
        return True
    try:
        return bool(answer != answer)  # noqa: PLR0124 - only NaN differs from itself
    except (TypeError, ValueError, RuntimeError):  # pandas.NA (its truth is undefined), arrays
        return type(answer).__name__ in ("NAType", "NaTType")


def _hashable(answer, index: int):
    """`answer` as a value answers can be counted by: a tensor or numpy value is its Python value (a 0-d tensor
    hashes by identity: two tensors of 1 would be two answers), a list is a tuple, a set a frozenset; others are
    refused."""
    if isinstance(answer, torch.Tensor) or (type(answer).__module__ == "numpy" and hasattr(answer, "tolist")):
        answer = answer.tolist()
    if isinstance(answer, list):
        return tuple(_hashable(part, index) for part in answer)
    if isinstance(answer, (set, frozenset)):
        return frozenset(answer)
    try:
        hash(answer)
    except TypeError:
        raise TypeError(
            f"answer {index} is a {type(answer).__name__} ({answer!r:.60}), which cannot be compared as an answer: give"
            " each completion's answer as a string, a number or a tuple (or `None` when none was read)."
        ) from None
    return answer


def _normalised(answers) -> list:
    """The answers of one prompt's completions as a list (`None` for each missing one), or a named error."""
    if isinstance(answers, (str, bytes)):
        raise TypeError(
            f"`answers` is a single {type(answers).__name__} ({answers!r:.40}): give one answer per completion, "
            f"e.g. `[{answers!r:.20}, ...]` (a bare string would be read one character per completion)."
        )
    if isinstance(answers, (Iterator, Mapping, AbstractSet)) or not hasattr(answers, "__len__"):
        kind = "a generator" if isinstance(answers, Iterator) else f"a {type(answers).__name__}"
        raise TypeError(
            f"`answers` is {kind}: give a list with one answer per completion, in the completions' order (e.g. "
            "`list(answers)`): the index returned points into it."
        )
    if isinstance(answers, torch.Tensor) or (type(answers).__module__ == "numpy" and hasattr(answers, "tolist")):
        answers = answers.tolist() if answers.ndim else [answers.tolist()]  # values, one per completion
    values = list(itertools.islice(answers, len(answers)))
    if not values:
        raise ValueError("`answers` is empty: give the answers read from N >= 1 completions of one prompt.")
    return [None if _missing(a) else _hashable(a, i) for i, a in enumerate(values)]


def _read(answers: list) -> Counter:
    """The counts of the answers read (`None` left out); empty when none was."""
    return Counter(answer for answer in answers if answer is not None)


def majority_vote(answers: Sequence[Hashable | None], generator: torch.Generator | None = None) -> int:
    """The index of the completion majority vote returns among the `N` completions of one prompt whose `answers`
    are given: one with the most frequent answer read (ties broken uniformly, then a completion drawn uniformly).

    Example:
    ```python
    >>> majority_vote(["12", "11", "12", None], torch.Generator().manual_seed(0)) in (0, 2)
    True
    ```
    """
    answers = _normalised(answers)
    counts = _read(answers)
    if not counts:  # no completion has an answer: any of them
        return _uniform(len(answers), generator)
    top = max(counts.values())
    modes = [answer for answer, count in counts.items() if count == top]
    return _completion_with(answers, modes[_uniform(len(modes), generator)], generator)


def sharpen_answers(
    answers: Sequence[Hashable | None], seq_temperature: float, generator: torch.Generator | None = None
) -> int:
    """The index of the completion answer-level sharpening returns: an answer drawn with probability
    `p̂(a)^alpha / sum_b p̂(b)^alpha` (`p̂` the frequencies of the answers read, `alpha = 1 / seq_temperature`), then a
    completion with that answer, drawn uniformly.

    Example:
    ```python
    >>> sharpen_answers(["12", "12", "11"], 0.25, torch.Generator().manual_seed(0)) in (0, 1, 2)
    True
    ```
    """
    alpha = 1.0 / check_temperature(seq_temperature, "seq_temperature")
    answers = _normalised(answers)
    counts = _read(answers)
    if not counts:  # no completion has an answer: any of them
        return _uniform(len(answers), generator)
    kinds = list(counts)
    log_weights = alpha * torch.tensor([float(counts[a]) for a in kinds], dtype=torch.float64, device="cpu").log()
    chosen = int(torch.multinomial((log_weights - log_weights.logsumexp(0)).exp(), 1, generator=generator))
    return _completion_with(answers, kinds[chosen], generator)
