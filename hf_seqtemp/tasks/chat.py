# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Task families with answers a program can check, as chat prompts, split BY PROMPT into train and held-out.

Each family is a fixed, ordered pool of `(question, answer)` items and a checker `check(answer, completion) -> bool`
that reads a free-form reply of the chat model:

- `addition`: "What is 7 + 5?" over single digits; the reply's answer is the first integer after the first "=" when
  there is one ("7 + 5 = 12"), else the last integer in the reply ("The answer is 12.").
- `capitals`: "What is the capital of France?"; the reply's answer is the first known capital named in it (so
  "Paris, not Lyon" is right and "Lyon or Paris" wrong); countries named like their capital are left out.
- `comparison`: "Is 7 greater than 5? Answer yes or no."; the reply's answer is its first "yes" or "no".
- `capital_after_sentence` (a long-answer family): "Write one sentence about a river. Then name the capital of
  Peru."; the reply's answer is the *last* known capital it names, read after the sentence it was asked to write
  (about 40 tokens of reply on the embedded SmolLM2-135M-Instruct; pass@1 of p 0.22 on 16 held-out prompts × 8
  samples, an interrupted task-table run whose figures are not committed yet). Sample it with `max_new_tokens` of 96
  or more: a cut reply has no answer.

The split ([`split_family`]) is a seeded shuffle of one family's pool: held-out prompts first, training prompts
after them, so no training question is ever a held-out one and the split does not depend on how many are asked for.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

SYSTEM_PROMPT = "Answer briefly."
_INTEGER = re.compile(r"-?\d+")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)

CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Portugal": "Lisbon",
    "Austria": "Vienna", "Belgium": "Brussels", "the Netherlands": "Amsterdam", "Switzerland": "Bern",
    "Poland": "Warsaw", "Sweden": "Stockholm", "Norway": "Oslo", "Finland": "Helsinki", "Denmark": "Copenhagen",
    "Ireland": "Dublin", "Greece": "Athens", "Hungary": "Budapest", "the Czech Republic": "Prague",
    "Romania": "Bucharest", "Bulgaria": "Sofia", "Serbia": "Belgrade", "Croatia": "Zagreb", "Ukraine": "Kyiv",
    "Russia": "Moscow", "Turkey": "Ankara", "Egypt": "Cairo", "Kenya": "Nairobi", "Nigeria": "Abuja",
    "Ethiopia": "Addis Ababa", "Morocco": "Rabat", "South Korea": "Seoul", "Japan": "Tokyo", "China": "Beijing",
    "India": "New Delhi", "Pakistan": "Islamabad", "Thailand": "Bangkok", "Vietnam": "Hanoi",
    "Indonesia": "Jakarta", "the Philippines": "Manila", "Australia": "Canberra", "New Zealand": "Wellington",
    "Canada": "Ottawa", "the United States": "Washington", "Argentina": "Buenos Aires", "Brazil": "Brasilia",
    "Chile": "Santiago", "Peru": "Lima", "Colombia": "Bogota", "Venezuela": "Caracas", "Cuba": "Havana",
    "Iran": "Tehran", "Iraq": "Baghdad", "Saudi Arabia": "Riyadh", "Israel": "Jerusalem", "Lebanon": "Beirut",
    "Afghanistan": "Kabul", "Nepal": "Kathmandu", "Bangladesh": "Dhaka", "Malaysia": "Kuala Lumpur",
    "Iceland": "Reykjavik", "Estonia": "Tallinn", "Latvia": "Riga", "Lithuania": "Vilnius", "Slovakia": "Bratislava",
    "Slovenia": "Ljubljana", "Ghana": "Accra", "Senegal": "Dakar", "Tanzania": "Dodoma", "Uganda": "Kampala",
    "Zimbabwe": "Harare", "Ecuador": "Quito", "Uruguay": "Montevideo", "Bolivia": "La Paz", "Syria": "Damascus",
    "Jordan": "Amman", "Qatar": "Doha", "Mongolia": "Ulaanbaatar", "Myanmar": "Naypyidaw", "Cambodia": "Phnom Penh",
}  # fmt: skip
# other spellings a reply may use for the same city
_ALIASES = {"Kyiv": ("Kiev",), "Brasilia": ("Brasília",), "Bogota": ("Bogotá",), "Washington": ("Washington, D.C.",)}


def _strip_accents(text: str) -> str:
    return text.replace("í", "i").replace("á", "a").replace("ó", "o").replace("é", "e")


def _first_capital(completion: str) -> str | None:
    """The first known capital (canonical name) the completion names, or `None`."""
    text = _strip_accents(completion).lower()
    best, where = None, len(text) + 1
    for city in CAPITALS.values():
        for name in (city, *_ALIASES.get(city, ())):
            match = re.search(rf"\b{re.escape(_strip_accents(name).lower())}\b", text)
            if match is not None and (match.start() < where or (match.start() == where and len(city) > len(best))):
                best, where = city, match.start()
    return best


def last_capital(completion: str) -> str | None:
    """The last known capital (canonical name) the completion names, or `None`: the answer of a reply that names
    the capital after other content.

    Example:
    ```python
    >>> last_capital("Paris is lovely in spring. The capital of Peru is Lima."), last_capital("No idea.")
    ('Lima', None)
    ```
    """
    text = _strip_accents(completion).lower()
    best, where = None, -1
    for city in CAPITALS.values():
        for name in (city, *_ALIASES.get(city, ())):
            for match in re.finditer(rf"\b{re.escape(_strip_accents(name).lower())}\b", text):
                if match.start() > where or (match.start() == where and len(city) > len(best)):
                    best, where = city, match.start()
    return best


def check_last_capital(answer: str, completion: str) -> bool:
    return last_capital(completion) == answer


def parse_integer(completion: str) -> int | None:
    """The reply's integer answer: the first integer after the first "=", else the last integer, else `None`.

    Example:
    ```python
    >>> parse_integer("7 + 5 = 12."), parse_integer("The answer is 12"), parse_integer("3 + 4 = 7, so 7 + 1 = 8")
    (12, 12, 7)
    ```
    """
    text = completion
    if "=" in text:
        after = _INTEGER.search(text.split("=", 1)[1])
        if after is not None:
            return int(after.group())
    numbers = _INTEGER.findall(text)
    return int(numbers[-1]) if numbers else None


def check_integer(answer: str, completion: str) -> bool:
    return parse_integer(completion) == int(answer)


def check_capital(answer: str, completion: str) -> bool:
    return _first_capital(completion) == answer


def check_yes_no(answer: str, completion: str) -> bool:
    return parse_yes_no(completion) == answer


def parse_yes_no(completion: str) -> str | None:
    """The reply's first "yes" or "no" (lower case), or `None`."""
    match = _YES_NO.search(completion)
    return None if match is None else match.group(1).lower()


def _integer_answer(completion: str) -> str | None:
    value = parse_integer(completion)
    return None if value is None else str(value)


@dataclass(frozen=True)
class Family:
    """One task family: its name, its ordered `(question, answer)` pool, its checker, and `extract(completion)`, the
    answer the checker reads from a reply (`None` when it reads none): what answer-level agreement compares."""

    name: str
    items: tuple[tuple[str, str], ...]
    check: Callable[[str, str], bool]
    extract: Callable[[str], str | None]


def _addition() -> Family:
    items = tuple((f"What is {a} + {b}?", str(a + b)) for a in range(10) for b in range(10))
    return Family("addition", items, check_integer, _integer_answer)


def _capitals() -> Family:
    items = tuple((f"What is the capital of {country}?", city) for country, city in CAPITALS.items())
    return Family("capitals", items, check_capital, _first_capital)


def _comparison() -> Family:
    items = []
    for a in range(1, 21):
        for b in range(1, 21):
            if a != b:
                items.append((f"Is {a} greater than {b}? Answer yes or no.", "yes" if a > b else "no"))
                items.append((f"Is {a} less than {b}? Answer yes or no.", "yes" if a < b else "no"))
    return Family("comparison", tuple(items), check_yes_no, parse_yes_no)


SENTENCE_TOPICS = (
    "the sky", "the sea", "a forest", "winter", "a city at night", "coffee", "a cat", "the moon", "a storm", "spring",
    "a library", "the desert", "a garden", "the mountains", "a rainy day", "summer", "autumn", "a beach", "music",
    "a train journey", "a market", "chocolate", "a campfire", "a river",
)  # fmt: skip


def _capital_after_sentence() -> Family:
    """Every country with four topics (the country's place in the list picks them): 4 × 77 questions."""
    items = []
    for index, (country, city) in enumerate(CAPITALS.items()):
        for shift in range(4):
            topic = SENTENCE_TOPICS[(index + 6 * shift) % len(SENTENCE_TOPICS)]
            items.append((f"Write one sentence about {topic}. Then name the capital of {country}.", city))
    return Family("capital_after_sentence", tuple(items), check_last_capital, last_capital)


FAMILIES: dict[str, Callable[[], Family]] = {
    "addition": _addition,
    "capitals": _capitals,
    "comparison": _comparison,
    "capital_after_sentence": _capital_after_sentence,
}
LONG_ANSWER_FAMILIES = ("capital_after_sentence",)
"""The families whose replies are long (a sentence before the answer): sample them with 96 tokens or more."""


def get_family(name: str) -> Family:
    if name not in FAMILIES:
        raise ValueError(f"`family` must be one of {sorted(FAMILIES)}, got {name!r}.")
    return FAMILIES[name]()


def split_family(family: Family, num_train: int, num_held_out: int, seed: int = 0):
    """`(train, held_out)` lists of `(question, answer)`: a seeded shuffle of the pool, held-out first.

    The shuffle depends on `seed` and the family only, so a larger `num_train` adds training prompts without moving
    any held-out one, and the two lists never share a question.

    Example:
    ```python
    >>> train, held_out = split_family(get_family("addition"), 40, 16)
    >>> len(train), len(held_out), bool({q for q, _ in train} & {q for q, _ in held_out})
    (40, 16, False)
    ```
    """
    if num_train + num_held_out > len(family.items):
        raise ValueError(
            f"`num_train` + `num_held_out` = {num_train + num_held_out}, but family {family.name!r} has "
            f"{len(family.items)} prompts: ask for fewer."
        )
    order = random.Random(f"{family.name}:{seed}").sample(family.items, len(family.items))
    return order[num_held_out : num_held_out + num_train], order[:num_held_out]


def conversation(question: str) -> list[dict]:
    """The chat prompt of one question (a short system prompt replaces the template's long default)."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
