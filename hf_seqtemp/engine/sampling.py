# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact samples of the reference p from an engine server, with the engine's log p of every sampled token.

The counterpart of [`~hf_seqtemp.data.sample_completions`] (the transformers loop): token temperature 1, every
sampling field neutral, a completion ends at its first EOS id (kept) or after `max_new_tokens` tokens. At
temperature 1 with neutral processors the engine's log-probability of a sampled token is `log p` in both
`--logprobs-mode`s that return log-probabilities, so it is the precomputed reference the trainer stores.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .client import EngineClient

SEED_SPACE = 2**31
"""Request seeds are taken below this: the engine keeps the low bits of a larger seed (2^40 samples as 0 does)."""


class SeedStream:
    """Request seeds that never repeat within one stream: consecutive integers from a start drawn from `seed`. A
    request of `n` completions uses the seeds `s, s + 1, ..., s + n - 1` (the engine gives completion `i` the seed
    `s + i`), so each request takes a run of `n` seeds: no two completions of a stream share a noise stream.

    Example:
    ```python
    >>> stream = SeedStream(0)
    >>> first = stream.take([3, 1])
    >>> first[1] - first[0], SeedStream(0).take([3, 1]) == first
    (3, True)
    ```
    """

    def __init__(self, seed: int):
        self.next = random.Random(seed).randrange(SEED_SPACE)

    def take(self, sizes: Sequence[int]) -> list[int]:
        """One seed per request, for requests of `sizes[i]` completions."""
        seeds = []
        for size in sizes:
            if self.next + size > SEED_SPACE:
                self.next = 0
            seeds.append(self.next)
            self.next += size
        return seeds


def check_room(client: EngineClient, prompts: Sequence[Sequence[int]], max_new_tokens: int, extra: int = 0) -> None:
    """Refuses prompts that do not fit the server's context with `max_new_tokens` more tokens (and `extra`: the one
    token a scoring request draws)."""
    limit = client.max_model_len()
    longest = max((len(p) for p in prompts), default=0)
    if limit is not None and longest + max_new_tokens + extra > limit:
        raise ValueError(
            f"a prompt of {longest} tokens with `max_new_tokens={max_new_tokens}` (+{extra}) exceeds the engine "
            f"server's `max_model_len={limit}`: restart it with a larger `--max_model_len`, or shorten the prompts "
            "or the completions."
        )


def engine_sample_completions(
    client: EngineClient,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos_ids,
    seed: int,
    desc: str | None = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """One completion per prompt (repeat a prompt for several), drawn exactly from the server's base model.

    Identical prompts are one request with `n` completions (their prefix is computed once); each request has its
    own run of seeds from `seed` ([`SeedStream`]), so a draw is reproducible whatever else the engine runs.

    Args:
        client ([`EngineClient`]): the server of the reference p.
        prompts (list of lists of `int`): prompt token ids.
        max_new_tokens (`int`): longest completion.
        eos_ids (iterable of `int`): the ids that end a completion; empty: fixed length.
        seed (`int`): seeds the requests.
        desc (`str`, *optional*): label of a progress bar over the requests (one per distinct prompt).

    Returns:
        `(completions, logps)`: the token ids of each completion (EOS kept) and the engine's `log p` of each token,
        in the order of `prompts`.
    """
    check_room(client, prompts, max_new_tokens)
    groups: dict[tuple[int, ...], list[int]] = {}
    for row, prompt in enumerate(prompts):
        groups.setdefault(tuple(int(t) for t in prompt), []).append(row)
    keys = list(groups)
    drawn = client.sample(
        [list(key) for key in keys],
        max_new_tokens,
        eos_ids,
        SeedStream(seed).take([len(groups[key]) for key in keys]),
        n=[len(groups[key]) for key in keys],
        desc=desc,
    )
    completions: list[list[int]] = [[] for _ in prompts]
    logps: list[list[float]] = [[] for _ in prompts]
    for key, samples in zip(keys, drawn):
        for row, sample in zip(groups[key], samples):
            completions[row], logps[row] = sample.tokens, sample.logps
    return completions, logps
