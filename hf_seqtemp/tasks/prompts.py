# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Prompt pools with many plausible answers per prompt, split by prompt: what `make demo` and the fidelity
benchmarks train and measure on (short free answers: [`prompt_pool`]; a sentence or two: [`long_prompt_pool`]).

Every prompt asks for a short free answer (a word, a name, a few words), so that its completions differ and their
log-likelihoods spread; the templates and topics are mixed so that held-out prompts (split off by prompt, never
trained on) come from the same distribution as the training prompts without repeating any of them.

[`training_extension`] holds more prompts of the same templates with other fillers: they only ever train (the held-out
prompts always come from [`prompt_pool`]), so asking for more training prompts than the pool holds keeps every split
of the pool, and every result measured on it, as it was.
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


EXTRA_CATEGORIES = (
    "bird of prey", "farm animal", "pet", "wild cat", "kind of tea", "coffee drink", "soft drink", "juice", "grain",
    "bean", "salad", "sandwich", "pizza topping", "sauce", "sweet", "cake", "biscuit", "pie", "ice cream flavour",
    "kitchen appliance", "garden tool", "chess piece", "card suit", "currency", "capital city", "country in Asia",
    "country in Africa", "country in South America", "lake", "waterfall", "forest animal", "arctic animal",
    "jungle animal", "kind of shark", "kind of whale", "butterfly", "snake", "lizard", "frog", "dinosaur",
    "famous inventor", "famous explorer", "famous writer", "novel", "fairy tale", "playwright", "philosopher",
    "mathematician", "astronaut", "famous athlete", "Olympic sport", "water sport", "winter sport", "team sport",
    "ball game", "yoga pose", "exercise", "house plant", "mushroom", "item of clothing", "kind of shoe", "hat",
    "piece of jewellery", "shade of blue", "shade of green", "primary colour", "room in a house", "building material",
    "kind of house", "stationery item", "toy", "video game", "puzzle", "circus act", "musical", "opera", "rock band",
    "string instrument", "brass instrument", "percussion instrument", "woodwind instrument", "computer part",
    "web browser", "operating system", "data structure", "sorting algorithm", "mathematical constant",
    "geometric solid", "prime number", "Roman emperor", "Egyptian god", "Norse god", "zodiac sign", "star",
    "moon of Jupiter", "galaxy", "gas", "mineral", "kind of rock", "energy source", "vitamin", "muscle", "sense",
    "flavour", "smell", "sound", "texture", "kind of boat", "aircraft", "farm crop",
    "yellow fruit", "red fruit", "green vegetable", "root vegetable", "citrus fruit", "tropical fruit", "dried fruit",
    "seafood dish", "street food", "festival", "party game", "outdoor activity", "indoor activity", "camping item",
    "beach item", "travel destination", "national park", "ancient civilisation", "invention", "famous painting",
    "sculptor", "nursery rhyme", "cartoon character", "superhero", "villain", "wizard", "knot", "hairstyle",
    "kind of bag", "kind of pen", "kind of chair", "kind of bed", "kind of lamp", "kind of road", "kind of cake",
)  # fmt: skip
EXTRA_WORDS = (
    "sad", "slow", "hot", "dark", "loud", "young", "soft", "hard", "clean", "kind", "weak", "calm", "easy", "early",
    "new", "tall", "wide", "sharp", "sweet", "wet", "empty", "cheap", "lazy", "polite", "simple", "safe", "proud",
    "shy", "wild", "thin",
)  # fmt: skip
EXTRA_RHYMES = (
    "hat", "dog", "house", "fish", "bear", "game", "ring", "boat", "snow", "king", "cold", "sun", "hill", "time",
    "book", "door", "green", "red", "box", "night",
)  # fmt: skip
EXTRA_THINGS = (
    "a garden", "the mountains", "a rainy day", "summer", "autumn", "a beach", "a birthday party", "music",
    "a train journey", "a thunderstorm", "a market", "chocolate", "a snowy morning", "a campfire", "a river",
    "a school", "a kitchen", "an old house", "a sunset", "a museum", "a football match", "a dog", "the stars",
    "a bakery", "the wind",
)  # fmt: skip
EXTRA_OTHERS = (
    "Suggest a name for a horse.", "Suggest a name for a goldfish.", "Suggest a name for a robot.",
    "Suggest a name for a cafe.", "Suggest a name for a band.", "Suggest a title for a book.",
    "Suggest a title for a film.", "Pick a colour for a flag.", "Give a word that starts with S.",
    "Give a word that starts with T.", "Give a word that ends with -ly.", "Name something green.",
    "Name something blue.", "Name something sweet.", "Name something loud.", "Name something heavy.",
    "Name something small.", "Name something fast.", "Name a reason to travel.", "Give a tip for studying.",
    "Name a place to relax.", "Suggest a snack.", "Suggest a weekend activity.", "Name a busy place.",
    "Suggest a colour for a wall.",
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


def training_extension() -> list[str]:
    """More prompts of the pool's templates with other fillers, none of them in [`prompt_pool`] nor a rewording
    of one of its prompts (no "Name a kind of bird." beside "Name a bird."), in a fixed order:
    [`split_prompts`] adds them to the training prompts only, after every training prompt the pool can give."""
    prompts = [f"Name {_article(category)} {category}." for category in EXTRA_CATEGORIES]
    prompts += [f"Give a synonym for {word}." for word in EXTRA_WORDS]
    prompts += [f"Give the opposite of {word}." for word in EXTRA_WORDS]
    prompts += [f"Write one word that rhymes with {word}." for word in EXTRA_RHYMES]
    prompts += [f"Describe {thing} in three words." for thing in EXTRA_THINGS]
    prompts += [f"Give me a number between 1 and {n}." for n in (5, 30, 200, 500)]
    return prompts + list(EXTRA_OTHERS)


def split_prompts(num_train: int, num_held_out: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """`(train, held_out)`: disjoint prompts drawn from [`prompt_pool`] by a seeded shuffle. The held-out prompts are
    the first `num_held_out` of the shuffled pool and the training prompts the next `num_train`; past the pool's end the
    training prompts go on with [`training_extension`] (shuffled with the same seed), so a larger `num_train` keeps
    the held-out prompts and the smaller split's training prompts.

    Example:
    ```python
    >>> train, held_out = split_prompts(96, 16)
    >>> len(train), len(held_out), bool(set(train) & set(held_out))
    (96, 16, False)
    ```
    """
    pool, extension = prompt_pool(), training_extension()
    if num_held_out > len(pool) or num_train + num_held_out > len(pool) + len(extension):
        raise ValueError(
            f"`num_train` = {num_train} and `num_held_out` = {num_held_out}, but the pool has {len(pool)} prompts "
            f"(all of them can be held out) and {len(extension)} more that only train: ask for fewer prompts (or "
            "more completions per prompt)."
        )
    order = random.Random(seed).sample(pool, len(pool))
    order += random.Random(seed).sample(extension, len(extension))
    return order[num_held_out : num_held_out + num_train], order[:num_held_out]


LONG_TOPICS = (
    "the sky", "the sea", "a forest", "winter", "a city at night", "coffee", "a cat", "the moon", "a storm", "spring",
    "a library", "the desert", "a garden", "the mountains", "a rainy day", "summer", "autumn", "a beach", "music",
    "a train journey", "a market", "chocolate", "a campfire", "a river", "a school", "a kitchen", "an old house",
    "a sunset", "a museum", "a football match", "a dog", "the stars", "a bakery", "the wind", "a birthday party",
    "a snowy morning", "a volcano", "an island", "a bicycle", "a computer", "a bridge", "a farm", "a hospital",
    "a zoo", "a lighthouse", "a castle", "a waterfall", "the ocean floor",
)  # fmt: skip
LONG_SUBJECTS = (
    "gravity", "photosynthesis", "rain", "a rainbow", "the seasons", "a volcano", "an earthquake", "electricity",
    "a battery", "a magnet", "the internet", "a vaccine", "friction", "sound", "an eclipse", "the tides", "a cloud",
    "evaporation", "a fossil", "a glacier", "recycling", "a calendar", "money", "a map", "a compass", "a clock",
    "a thermometer", "a telescope", "a library card", "a recipe", "a vote", "a museum",
)  # fmt: skip
LONG_TASKS = (
    "studying for an exam", "sleeping well", "saving money", "learning a language", "staying healthy",
    "making friends", "cooking pasta", "writing a letter", "keeping a plant alive", "preparing for a trip",
    "running a first race", "reading more books", "cleaning a room", "giving a speech", "training a puppy",
    "starting a garden",
)  # fmt: skip


def long_prompt_pool() -> list[str]:
    """Prompts that ask for a sentence, a short list or a short explanation (answers of about 15-60 tokens under the
    benchmarks' "Answer briefly." system prompt, most ending before 64), in a fixed order: where a token temperature
    and a sequence temperature part, since the per-step normalisers add up over the answer's length."""
    prompts = [f"Describe {topic} in one sentence." for topic in LONG_TOPICS]
    prompts += [f"Explain {subject} in one sentence." for subject in LONG_SUBJECTS]
    prompts += [f"Give two short tips for {task}." for task in LONG_TASKS]
    prompts += [f"Write a short sentence about {topic}." for topic in LONG_TOPICS[:24]]
    return prompts


def split_long_prompts(num_train: int, num_held_out: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """`(train, held_out)`: disjoint prompts of [`long_prompt_pool`] by a seeded shuffle, held-out first (so a larger
    `num_train` keeps the held-out prompts).

    Example:
    ```python
    >>> train, held_out = split_long_prompts(64, 24)
    >>> len(train), len(held_out), bool(set(train) & set(held_out))
    (64, 24, False)
    ```
    """
    pool = long_prompt_pool()
    if num_train + num_held_out > len(pool):
        raise ValueError(
            f"`num_train` + `num_held_out` = {num_train + num_held_out}, but the long pool has {len(pool)}."
        )
    order = random.Random(f"long:{seed}").sample(pool, len(pool))
    return order[num_held_out : num_held_out + num_train], order[:num_held_out]
