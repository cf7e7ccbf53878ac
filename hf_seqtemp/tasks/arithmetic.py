# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A small, checkable arithmetic task ("12+34=" -> "046") and its character-level tokenizer.

Every example has the same length (operands and answers are zero-padded), so a masked diffusion model can be trained
and decoded on it without padding, and every completion can be checked exactly with [`check_answer`]. The same
vocabulary expresses addition and multiplication.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
from transformers import PreTrainedTokenizer

SPECIAL_TOKENS = ("[PAD]", "[MASK]", "[BOS]", "[EOS]")
CHARACTERS = "0123456789+-*="
_PROMPT_PATTERN = re.compile(r"^\s*(\d+)\s*([+*])\s*(\d+)\s*=\s*$")


class ArithmeticTokenizer(PreTrainedTokenizer):
    """Character-level [`PreTrainedTokenizer`] for arithmetic strings: one token per character.

    The vocabulary is `[PAD] [MASK] [BOS] [EOS]` (ids 0-3) followed by the characters `0123456789+-*=`. Encoding
    prepends `[BOS]` (no `[EOS]`: every task example has a fixed length). The tokenizer saves as two JSON files
    (`vocab.json`, `tokenizer_config.json`) and loads back with `ArithmeticTokenizer.from_pretrained(directory)`.

    Args:
        vocab_file (`str`, *optional*):
            Path to a `vocab.json` written by `save_pretrained`. Defaults to the built-in vocabulary.

    Example:
    ```python
    >>> tokenizer = ArithmeticTokenizer()
    >>> tokenizer("12+34=046")["input_ids"]
    [2, 5, 6, 14, 7, 8, 17, 4, 8, 10]
    >>> tokenizer.decode([2, 5, 6, 14, 7, 8, 17], skip_special_tokens=True)
    '12+34='
    ```
    """

    vocab_files_names: ClassVar[dict[str, str]] = {"vocab_file": "vocab.json"}
    model_input_names: ClassVar[list[str]] = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file: str | None = None, **kwargs):
        if vocab_file is None:
            self._vocab = {token: index for index, token in enumerate(SPECIAL_TOKENS + tuple(CHARACTERS))}
        else:
            with open(vocab_file, encoding="utf-8") as handle:
                self._vocab = {str(token): int(index) for token, index in json.load(handle).items()}
        self._tokens = {index: token for token, index in self._vocab.items()}
        for name, token in zip(("pad_token", "mask_token", "bos_token", "eos_token"), SPECIAL_TOKENS):
            kwargs.setdefault(name, token)
        super().__init__(**kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _tokenize(self, text: str, **kwargs) -> list[str]:
        unknown = sorted({char for char in text if char not in self._vocab})
        if unknown:
            raise ValueError(
                f"`text` contains characters outside the arithmetic vocabulary: {unknown} in {text!r}. "
                f"Use only {CHARACTERS!r} (no spaces)."
            )
        return list(text)

    def _convert_token_to_id(self, token: str) -> int:
        return self._vocab[token]

    def _convert_id_to_token(self, index: int) -> str:
        return self._tokens[int(index)]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def build_inputs_with_special_tokens(self, token_ids_0: list[int], token_ids_1: list[int] | None = None):
        return [self.bos_token_id] + token_ids_0 + ([] if token_ids_1 is None else token_ids_1)

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str]:
        name = (filename_prefix + "-" if filename_prefix else "") + "vocab.json"
        path = os.path.join(save_directory, name)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self._vocab, handle, indent=2)
        return (path,)


def _parse_prompt(prompt: str) -> tuple[int, str, int]:
    match = _PROMPT_PATTERN.match(prompt)
    if match is None:
        raise ValueError(
            f"`prompt` must look like 'a+b=' or 'a*b=' with non-negative integers a and b, got {prompt!r}."
        )
    return int(match.group(1)), match.group(2), int(match.group(3))


def check_answer(prompt: str, completion: str) -> bool:
    """Whether `completion` is the right answer to the arithmetic `prompt`.

    Leading zeros and surrounding whitespace in the completion are allowed (`"046"` and `"46"` both answer
    `"12+34="`); any other character (including a leftover mask token) makes the answer wrong.

    Args:
        prompt (`str`): `"a+b="` or `"a*b="`.
        completion (`str`): the model's answer.

    Returns:
        `bool`

    Example:
    ```python
    >>> check_answer("12+34=", "046"), check_answer("12+34=", "47"), check_answer("07*08=", "0056")
    (True, False, True)
    ```
    """
    left, operator, right = _parse_prompt(prompt)
    completion = completion.strip()
    if not completion.isdigit() or not completion.isascii():
        return False
    expected = left + right if operator == "+" else left * right
    return int(completion) == expected


@dataclass(frozen=True)
class ArithmeticTask:
    """Fixed-width arithmetic problems `a <op> b = c` with `num_digits`-digit operands, zero-padded.

    The prompt is `"{a}{op}{b}="` (`2 * num_digits + 2` characters) and the completion the zero-padded result
    (`num_digits + 1` digits for `"+"`, `2 * num_digits` for `"*"`), so every encoded example has the same length.

    Args:
        operator (`str`, *optional*, defaults to `"+"`): `"+"` or `"*"`.
        num_digits (`int`, *optional*, defaults to `2`): digits per operand (1 to 4).

    Example:
    ```python
    >>> task = ArithmeticTask("+", num_digits=2)
    >>> task.prompt(5, 34), task.answer(5, 34), task.completion_length
    ('05+34=', '039', 3)
    ```
    """

    operator: Literal["+", "*"] = "+"
    num_digits: int = 2

    def __post_init__(self):
        if self.operator not in ("+", "*"):
            raise ValueError(f"`operator` must be '+' or '*', got {self.operator!r}.")
        if isinstance(self.num_digits, bool) or not isinstance(self.num_digits, int) or not 1 <= self.num_digits <= 4:
            raise ValueError(f"`num_digits` must be an int in [1, 4], got {self.num_digits!r}.")

    @property
    def completion_length(self) -> int:
        return self.num_digits + 1 if self.operator == "+" else 2 * self.num_digits

    @property
    def prompt_length(self) -> int:
        """Prompt length in tokens, counting the leading `[BOS]`."""
        return 2 * self.num_digits + 3

    @property
    def num_pairs(self) -> int:
        return (10**self.num_digits) ** 2

    def prompt(self, left: int, right: int) -> str:
        limit = 10**self.num_digits
        if not (0 <= left < limit and 0 <= right < limit):
            raise ValueError(f"operands must be in [0, {limit}), got ({left}, {right}). Increase `num_digits`.")
        return f"{left:0{self.num_digits}d}{self.operator}{right:0{self.num_digits}d}="

    def answer(self, left: int, right: int) -> str:
        value = left + right if self.operator == "+" else left * right
        return f"{value:0{self.completion_length}d}"

    def split(self, num_test: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Splits all operand pairs into disjoint `(train, test)` tensors of shape `(n, 2)`, deterministically."""
        if not 0 < num_test < self.num_pairs:
            raise ValueError(f"`num_test` must be in (0, {self.num_pairs}), got {num_test}.")
        limit = 10**self.num_digits
        pairs = torch.cartesian_prod(torch.arange(limit, device="cpu"), torch.arange(limit, device="cpu"))
        order = torch.randperm(self.num_pairs, generator=torch.Generator(device="cpu").manual_seed(seed), device="cpu")
        return pairs[order[num_test:]], pairs[order[:num_test]]

    def encode(self, pairs: torch.Tensor, tokenizer: ArithmeticTokenizer) -> dict[str, torch.Tensor]:
        """Encodes operand pairs `(n, 2)` as full examples `[BOS] prompt completion`.

        Returns:
            `dict` with `input_ids` (`(n, length)` long), `attention_mask` (all ones) and `completion_mask`
            (`(n, length)` bool, true on the answer digits only).
        """
        texts = [self.prompt(int(a), int(b)) + self.answer(int(a), int(b)) for a, b in pairs.tolist()]
        input_ids = torch.tensor([tokenizer(text)["input_ids"] for text in texts], dtype=torch.long, device="cpu")
        completion_mask = torch.zeros_like(input_ids, dtype=torch.bool)
        completion_mask[:, self.prompt_length :] = True
        return {
            "input_ids": input_ids,
            "attention_mask": torch.ones_like(input_ids),
            "completion_mask": completion_mask,
        }
