# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Cell types of a dataset row, checked before tokenising: one error naming the row, the column and the expected type.

Without this check a bad cell surfaces as a raw `TypeError` from string concatenation or a Jinja `UndefinedError`
from the chat template, naming neither the row nor the column.
"""

from __future__ import annotations

from typing import Any

TRUNCATED = "truncated"
"""Optional boolean column: `True` marks a completion cut before its end (no EOS is then appended)."""

_MESSAGES = "a list of chat messages ({'role': str, 'content': str})"


def _kind(value: Any) -> str:
    return type(value).__name__


def _bad(name: str, index: int, column: str, expected: str, value: Any, where: str = "") -> TypeError:
    return TypeError(
        f"`{name}` row {index}, column `{column}`{where}: expected {expected}, got {_kind(value)} {value!r:.80}."
    )


def _check_messages(messages: Any, name: str, index: int, column: str) -> None:
    if not isinstance(messages, list) or not messages:
        raise _bad(name, index, column, f"a non-empty {_MESSAGES}", messages)
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _bad(name, index, column, "a dict {'role': str, 'content': str}", message, f", message {position}")
        if not isinstance(message.get("role"), str):
            raise _bad(name, index, column, "str", message.get("role"), f", message {position} `role`")
        content = message.get("content")
        parts = isinstance(content, list) and all(isinstance(part, dict) for part in content)
        if not (isinstance(content, str) or parts):
            raise _bad(
                name, index, column, "str (or a list of content parts)", content, f", message {position} `content`"
            )


def _check_text_or_messages(value: Any, name: str, index: int, column: str) -> None:
    if isinstance(value, str):
        return
    if isinstance(value, list):
        _check_messages(value, name, index, column)
        return
    raise _bad(name, index, column, f"str or {_MESSAGES}", value)


def _check_ids(value: Any, name: str, index: int, column: str) -> None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise _bad(name, index, column, "a list of int token ids", value)


def check_cells(row: dict[str, Any], fmt: str, text_field: str, name: str, index: int) -> None:
    """Raises `TypeError` naming `name`, the row `index`, the column and the expected type when a cell of `row`
    (in format `fmt`, see [`detect_format`]) has the wrong type.

    Example:
    ```python
    >>> check_cells({"prompt": "Hi", "completion": None}, "prompt_completion", "text", "train_dataset", 3)
    Traceback (most recent call last):
    ...
    TypeError: `train_dataset` row 3, column `completion`: expected str (the prompt is text), got NoneType None.
    ```
    """
    if row.get(TRUNCATED) is not None and not isinstance(row[TRUNCATED], bool):
        raise _bad(name, index, TRUNCATED, "bool (or None)", row[TRUNCATED])
    if fmt == "input_ids":
        _check_ids(row["input_ids"], name, index, "input_ids")
        if row.get("completion_mask") is not None:
            _check_ids(row["completion_mask"], name, index, "completion_mask")
    elif fmt in ("prompt_completion", "prompt_only"):
        _check_text_or_messages(row["prompt"], name, index, "prompt")
        if fmt == "prompt_completion":
            if isinstance(row["prompt"], str) and not isinstance(row["completion"], str):
                raise _bad(name, index, "completion", "str (the prompt is text)", row["completion"])
            if isinstance(row["prompt"], list) and not isinstance(row["completion"], list):
                raise _bad(name, index, "completion", f"{_MESSAGES} (the prompt is conversational)", row["completion"])
            if isinstance(row["completion"], list):
                _check_messages(row["completion"], name, index, "completion")
    elif fmt == "messages":
        _check_messages(row["messages"], name, index, "messages")
    elif not isinstance(row[text_field], str):
        raise _bad(name, index, text_field, "str", row[text_field])
