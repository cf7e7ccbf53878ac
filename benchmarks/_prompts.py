# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The fidelity benchmark's prompts: short questions with many plausible short answers, built from a few templates.

Every prompt asks for a short free answer (a word, a name, a few words), so that its completions differ and their
log-likelihoods spread; the templates and topics are mixed so that held-out prompts (split off by prompt, never
trained on) come from the same distribution as the training prompts without repeating any of them.
"""

from __future__ import annotations

import random

CATEGORIES = (
    "colour", "animal", "fruit", "country in Europe", "famous scientist", "musical instrument", "city", "vegetable",
    "sport", "planet", "tool", "drink", "flower", "board game", "programming language", "bird", "job",
    "piece of furniture", "river", "month", "shape", "metal", "fish", "tree", "insect", "mountain", "ocean",
    "painter", "poet", "composer", "dessert", "spice", "cheese", "bread", "car brand", "dance", "fabric", "gemstone",
    "kitchen utensil", "language", "mammal", "reptile", "hobby", "weather event", "emotion", "holiday", "game",
    "dog breed", "cat breed", "herb", "nut", "berry", "sea creature", "desert", "island", "volcano", "constellation",
    "chemical element", "unit of measurement", "musical genre", "film genre", "card game", "martial art", "vehicle",
    "school subject", "body part", "bone", "organ of the body", "breakfast food", "soup", "pasta shape",
    "type of cloud", "season", "virtue", "superpower", "mythical creature", "Greek god", "famous building", "bridge",
)  # fmt: skip
WORDS = (
    "happy", "big", "fast", "cold", "smart", "old", "angry", "quiet", "bright", "small", "strong", "tired", "funny",
    "rich", "brave",
)  # fmt: skip
RHYMES = ("cat", "light", "day", "tree", "blue", "star", "cake", "rain", "bell", "moon", "stone", "sing")
THINGS = (
    "the sky", "the sea", "a forest", "winter", "a city at night", "coffee", "a cat", "the moon", "a storm", "spring",
    "a library", "the desert",
)  # fmt: skip


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeioAEIO" else "a"


def prompt_pool() -> list[str]:
    """All prompts, in a fixed order (about 170)."""
    prompts = [f"Name {_article(category)} {category}." for category in CATEGORIES]
    prompts += [f"Give a synonym for {word}." for word in WORDS]
    prompts += [f"Give the opposite of {word}." for word in WORDS]
    prompts += [f"Write one word that rhymes with {word}." for word in RHYMES]
    prompts += [f"Describe {thing} in three words." for thing in THINGS]
    prompts += [f"Give me a number between 1 and {n}." for n in (10, 20, 50, 100, 1000)]
    prompts += [
        "Say hello in another language.", "Suggest a name for a dog.", "Suggest a name for a cat.",
        "Pick a day of the week.", "Give a one-word mood.", "Name something cold.", "Name something hot.",
        "Name something red.", "Name something round.", "Name something soft.", "Suggest a name for a boat.",
        "Suggest a title for a song.", "Give a word that starts with B.", "Give a word that ends with -ing.",
        "Name a famous person.", "Suggest a colour for a car.", "Name a reason to smile.",
        "Give a tip for sleeping well.", "Name a place to visit.", "Suggest a gift for a friend.",
    ]  # fmt: skip
    return prompts


def split_prompts(num_train: int, num_held_out: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """`(train, held_out)`: disjoint prompts drawn from [`prompt_pool`] by a seeded shuffle.

    Example:
    ```python
    >>> train, held_out = split_prompts(96, 16)
    >>> len(train), len(held_out), bool(set(train) & set(held_out))
    (96, 16, False)
    ```
    """
    pool = prompt_pool()
    if num_train + num_held_out > len(pool):
        raise ValueError(
            f"`num_train` + `num_held_out` = {num_train + num_held_out} prompts, but the pool has {len(pool)}: ask "
            "for fewer prompts (or more completions per prompt)."
        )
    order = random.Random(seed).sample(pool, len(pool))
    return order[num_held_out : num_held_out + num_train], order[:num_held_out]
