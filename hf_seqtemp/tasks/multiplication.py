# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Integer multiplication with several correct answers: a toy where the data distribution P is known exactly.

The prompt is `a*b=`; a valid completion writes the product `n = a*b` either plainly (`"12"`) or as any ordered
factorisation `c*d` with `c, d >= 2` (`"2*6"`, `"6*2"`, `"3*4"`, `"4*3"`). P is uniform over the valid completions
of each prompt, so precision (mass on valid answers) and recall (mass of valid answers covered) are exact.

Sequences are `[bos] a * b = completion [eos] [pad]...` over a 16-token character vocabulary, with the completion
window padded to a fixed width: a model trained on the full window (pads included) is a distribution over
fixed-length windows, which is what the Glauber sampler refines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..checks import check_int

PAD, BOS, EOS = 0, 1, 2
_CHARS = "0123456789*=,"
VOCAB = ["<pad>", "<bos>", "<eos>", *_CHARS]
_TOKEN_OF = {c: i + 3 for i, c in enumerate(_CHARS)}


def encode(text: str) -> list[int]:
    """Character ids of `text` (digits, `*`, `=`, `,`), no special tokens.

    Example:
    ```python
    >>> encode("3*4=")
    [6, 13, 7, 14]
    ```
    """
    unknown = sorted({c for c in text if c not in _TOKEN_OF})
    if unknown:
        raise ValueError(f"`text` {text!r} has characters outside the vocabulary {_CHARS!r}: {unknown}.")
    return [_TOKEN_OF[c] for c in text]


def decode(ids) -> str:
    """Text of the ids up to the first `eos`, special tokens dropped.

    Example:
    ```python
    >>> decode([1, 6, 13, 5, 2, 0])
    '3*2'
    ```
    """
    out = []
    for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
        if i == EOS:
            break
        if i >= 3:
            out.append(VOCAB[i])
    return "".join(out)


@dataclass
class MultiplicationBatch:
    """A padded batch: `input_ids`, `attention_mask`, `completion_mask` (all `(batch, length)`), the prompt
    factor pairs and `data_logps` = `log P(completion | prompt)` (`-inf` for an invalid completion)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    completion_mask: torch.Tensor
    pairs: list[tuple[int, int]]
    data_logps: torch.Tensor


class MultiplicationTask:
    """Prompts `a*b=` for `a, b` in `[min_factor, max_factor]`, each with a known set of valid completions.

    Args:
        min_factor (`int`, *optional*, defaults to `2`): smallest factor in prompts and factorisations (>= 2).
        max_factor (`int`, *optional*, defaults to `9`): largest factor in prompts (<= 9: prompts are one digit).

    Example:
    ```python
    >>> task = MultiplicationTask()
    >>> task.valid_completions(3, 4)
    ['12', '2*6', '3*4', '4*3', '6*2']
    >>> task.completion_width, task.prompt_length
    (5, 5)
    ```
    """

    vocab_size = len(VOCAB)

    def __init__(self, min_factor: int = 2, max_factor: int = 9):
        for name, value in (("min_factor", min_factor), ("max_factor", max_factor)):
            if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 9:
                raise ValueError(f"`{name}` must be an integer in [2, 9] (one-digit prompts), got {value!r}.")
        if min_factor > max_factor:
            raise ValueError(f"`min_factor` ({min_factor}) must be <= `max_factor` ({max_factor}).")
        self.min_factor, self.max_factor = min_factor, max_factor
        self.pairs = [(a, b) for a in range(min_factor, max_factor + 1) for b in range(min_factor, max_factor + 1)]
        self._valid = {pair: self._completions(pair[0] * pair[1]) for pair in self.pairs}
        self.completion_width = 1 + max(len(c) for cs in self._valid.values() for c in cs)  # + eos
        self.prompt_length = 1 + len("a*b=")  # bos + prompt

    def _completions(self, n: int) -> list[str]:
        factorisations = [f"{c}*{n // c}" for c in range(self.min_factor, n // self.min_factor + 1) if n % c == 0]
        return sorted([str(n), *(f for f in factorisations if int(f.split("*")[1]) >= self.min_factor)])

    def _check_pair(self, a: int, b: int) -> tuple[int, int]:
        if (a, b) not in self._valid:
            raise ValueError(
                f"prompt factors ({a}, {b}) are outside this task's range [{self.min_factor}, {self.max_factor}]."
            )
        return a, b

    def valid_completions(self, a: int, b: int) -> list[str]:
        """Every valid completion of `a*b=`, sorted; P is uniform over them."""
        return list(self._valid[self._check_pair(a, b)])

    def is_valid(self, a: int, b: int, completion: str) -> bool:
        return completion in self._valid[self._check_pair(a, b)]

    def data_logp(self, a: int, b: int, completion: str) -> float:
        """`log P(completion | a*b=)`: `-log(number of valid completions)` if valid, else `-inf`."""
        valid = self._valid[self._check_pair(a, b)]
        return -math.log(len(valid)) if completion in valid else -math.inf

    def window(self, a: int, b: int, completion: str) -> list[int]:
        """Token ids of the full sequence: bos, prompt, completion, eos, pads up to the fixed width."""
        ids = encode(completion) + [EOS]
        if len(ids) > self.completion_width:
            raise ValueError(
                f"completion {completion!r} needs {len(ids)} tokens with eos; the window holds"
                f" {self.completion_width}."
            )
        return [BOS, *encode(f"{a}*{b}=")] + ids + [PAD] * (self.completion_width - len(ids))

    def parse_window(self, ids) -> str | None:
        """The completion text of a full sequence, or `None` if the window is malformed (no eos, or a non-pad
        token after it): a malformed window is invalid for every prompt."""
        tail = (ids.tolist() if isinstance(ids, torch.Tensor) else list(ids))[self.prompt_length :]
        if EOS not in tail or any(t != PAD for t in tail[tail.index(EOS) + 1 :]):
            return None
        if any(t in (PAD, BOS) for t in tail[: tail.index(EOS)]):
            return None
        return decode(tail)

    def batch(self, pairs: list[tuple[int, int]], completions: list[str]) -> MultiplicationBatch:
        """Tokenises `(prompt pair, completion)` rows into a [`MultiplicationBatch`]."""
        if len(pairs) != len(completions):
            raise ValueError(f"`pairs` has {len(pairs)} rows but `completions` has {len(completions)}.")
        input_ids = torch.tensor(
            [self.window(a, b, c) for (a, b), c in zip(pairs, completions)], dtype=torch.long, device="cpu"
        )
        completion_mask = torch.zeros_like(input_ids, dtype=torch.bool)
        completion_mask[:, self.prompt_length :] = True
        data_logps = torch.tensor([self.data_logp(a, b, c) for (a, b), c in zip(pairs, completions)], device="cpu")
        return MultiplicationBatch(input_ids, torch.ones_like(input_ids), completion_mask, list(pairs), data_logps)

    def sample(self, num_samples: int, generator: torch.Generator | None = None) -> MultiplicationBatch:
        """Draws `(prompt, completion)` from the data: prompt uniform, then completion uniform among the valid."""
        check_int(num_samples, "num_samples")
        prompt_idx = torch.randint(len(self.pairs), (num_samples,), generator=generator, device="cpu").tolist()
        pairs = [self.pairs[i] for i in prompt_idx]
        picks = torch.rand(num_samples, generator=generator, device="cpu").tolist()
        completions = [self._valid[p][int(u * len(self._valid[p]))] for p, u in zip(pairs, picks)]
        return self.batch(pairs, completions)

    def prompts(self, pairs: list[tuple[int, int]] | None = None) -> torch.Tensor:
        """Prompt ids `(len(pairs), prompt_length)` (all prompts by default), ready for generation."""
        pairs = self.pairs if pairs is None else pairs
        return torch.tensor(
            [[BOS, *encode(f"{a}*{b}=")] for a, b in (self._check_pair(*p) for p in pairs)], device="cpu"
        )

    def precision_recall(self, pairs: list[tuple[int, int]], windows: torch.Tensor) -> dict[str, float]:
        """Sample precision and recall of generated windows, one prompt pair per row.

        Precision is the fraction of rows whose completion is valid. Recall, per prompt, is the data mass of the
        distinct valid completions generated, `P(supp Q_hat | prompt)`, averaged over the prompts present.
        """
        if len(pairs) != windows.shape[0]:
            raise ValueError(f"`pairs` has {len(pairs)} rows but `windows` has {windows.shape[0]}.")
        hits: dict[tuple[int, int], set[str]] = {p: set() for p in pairs}
        valid = 0
        for pair, row in zip(pairs, windows):
            text = self.parse_window(row)
            if text is not None and self.is_valid(*pair, text):
                valid += 1
                hits[pair].add(text)
        recall = sum(len(h) / len(self._valid[p]) for p, h in hits.items()) / len(hits)
        return {"precision": valid / len(pairs), "recall": recall}
