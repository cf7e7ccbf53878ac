# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A griffe extension that turns the package's Hugging Face doc-builder docstrings into the Google style that
mkdocstrings renders, before they are parsed (`mkdocs.yml` loads it; `tests/test_docs_docstrings.py` tests it).

What changes, and why a reader needs it:

- `` name (`float`, *optional*, defaults to `0.5`): `` → `name (float):`: the type cell shows the type, the default
  column comes from the signature; a documented default the signature does not show (`None` resolved later) is kept
  as a sentence of the description, and `of shape `(batch, n)`` becomes the description's first words;
- `` [`Name`] `` and `` [`~module.Name`] `` → a link to the object where the site renders it, else its name as code
  (never the brackets and the tilde);
- `> Parameters that control …` group lines → one titled `Parameters:` section per group;
- `> [!NOTE]` quotes and `<Tip>` blocks → admonitions;
- a list or a table right after a line of text gets the blank line Markdown needs to see it;
- a parameter described in several paragraphs keeps its first one in the table and the rest under "More".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import griffe

Resolver = Callable[[str], "str | None"]

_XREF = re.compile(r"\[`(~?)([\w.]+)`\]")
_ITEM = re.compile(r"^(?P<indent>\s+)(?P<name>\**\w+(?:, \**\w+)*) \((?P<type>.*)\):(?P<rest>.*)$")
_RETURNS = re.compile(r"^(?P<indent>\s+)(?P<type>[`\[][^:]*?):\s+(?P<rest>.*)$")
_GROUP = re.compile(r"^(?P<indent>\s+)> (?P<title>[^\[].*)$")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Attributes|Keyword Args|Other Parameters):\s*$")
_LIST_START = re.compile(r"^\s*(?:[-*+] |\d+\. |\|)")
MORE_AFTER = 400  # characters: a longer description in several paragraphs shows its first one, the rest under "More"


def cross_references(text: str, resolve: Resolver) -> str:
    """`` [`Name`] `` / `` [`~pkg.mod.Name`] `` as an optional autoref: a link where the site renders the object,
    else the name as code. `~` shows the last part of the path only, as the doc-builder does.

    Example:
    ```python
    >>> cross_references("see [`~a.b.C`] and [`D`]", {"D": "pkg.D"}.get)
    'see <autoref identifier="a.b.C" optional><code>C</code></autoref> and <autoref identifier="pkg.D" optional><code>D</code></autoref>'
    ```
    """

    def link(match: re.Match) -> str:
        short, path = match.group(1) == "~", match.group(2)
        shown = path.rsplit(".", 1)[-1] if short else path
        return f'<autoref identifier="{resolve(path) or path}" optional><code>{shown}</code></autoref>'

    return _XREF.sub(link, text)


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside backticks and brackets."""
    parts, depth, ticks, current = [], 0, False, ""
    for char in text:
        if char == "`":
            ticks = not ticks
        elif not ticks and char in "([":
            depth += 1
        elif not ticks and char in ")]":
            depth -= 1
        if char == "," and depth == 0 and not ticks:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()] if current.strip() else parts


def plain_type(text: str) -> str:
    """A doc-builder type as a Python-looking annotation: backticks and cross-reference brackets dropped,
    `A or B` as `A | B`, `list of X` as `list[X]`.

    Example:
    ```python
    >>> plain_type("`list` of `str`"), plain_type("`str` or `None`"), plain_type("[`~datasets.Dataset`]")
    ('list[str]', 'str | None', 'datasets.Dataset')
    >>> plain_type("list of lists of `int`")
    'list[list[int]]'
    ```
    """
    text = _XREF.sub(lambda m: m.group(2), text).replace("`", "").strip()
    text = re.sub(r"\s+or\s+", " | ", text)
    for _ in range(4):  # nested containers, innermost first
        text = re.sub(r"\b(list|set|tuple|sequence|iterable)s? of (\w[\w.]*(?:\[[^\]]*\])?)$", r"\1[\2]", text)
    return text


def parse_item_type(text: str) -> tuple[str, list[str]]:
    """`(annotation, sentences for the description)` of a parameter's parenthesis: the type, then its shape and a
    documented default as sentences.

    Example:
    ```python
    >>> parse_item_type("`torch.LongTensor` of shape `(batch, n)`, *optional*")
    ('torch.LongTensor', ['Shape `(batch, n)`'])
    >>> parse_item_type("`float`, *optional*, defaults to `0.1`, and to `0` for `loss_type='smc_distill'`")
    ('float', ["Defaults to `0.1`, and to `0` for `loss_type='smc_distill'`."])
    ```
    """
    parts, kind, notes = _split_top(text), [], []
    for index, part in enumerate(parts):
        if part in ("*optional*", "optional"):
            continue
        if part.startswith("defaults to"):
            notes.append("Defaults to " + ", ".join(parts[index:])[len("defaults to ") :].rstrip(".") + ".")
            break
        if part.startswith("shape "):
            notes.insert(0, f"Shape {part[len('shape ') :]}")
            continue
        shaped = re.match(r"^(.*?) of (shape|length) (.*)$", part)
        if shaped:
            part = shaped.group(1)
            notes.insert(0, f"{shaped.group(2).capitalize()} {shaped.group(3)}")
        kind.append(part)
    return plain_type(", ".join(kind)), notes


def _same_default(note: str, default: Any) -> bool:
    """Whether a "Defaults to X." sentence says what the signature's default already shows."""
    said = note[len("Defaults to ") : -1].replace("`", "").strip().strip("\"'")
    return default is not None and said == str(default).strip().strip("\"'")


def _blank_before_blocks(lines: list[str]) -> list[str]:
    """A blank line before a list or table that follows a line of text (Markdown needs one to see the block)."""
    out, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        previous = out[-1] if out else ""
        if not fenced and _LIST_START.match(line) and previous.strip() and not _LIST_START.match(previous):
            out.append("")
        out.append(line)
    return out


def _item_body(lines: list[str], index: int, indent: int) -> tuple[list[str], int]:
    """The lines of an item's description after its first line, dedented, and the index after them."""
    body = []
    while index < len(lines) and (not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent):
        body.append(lines[index])
        index += 1
    while body and not body[-1].strip():
        body.pop()
    margin = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
    return [line[margin:] for line in body], index


def _described(name: str, raw_type: str, rest: str, body: list[str], default: Any) -> list[str]:
    """An item's description lines (not indented): shape first, the text, a documented default the signature does
    not show last, lists separated, the paragraphs after a long first one under "More"."""
    annotation, notes = parse_item_type(raw_type)
    shapes = [note for note in notes if not note.startswith("Defaults")]
    said = [note for note in notes if note.startswith("Defaults") and not _same_default(note, default)]
    text = ([rest] if rest else []) + body
    while text and not text[0].strip():
        text.pop(0)
    text = text or [""]
    text[0] = ": ".join(filter(None, [*shapes, text[0]]))
    if said:
        text[-1] = f"{text[-1]} {said[0]}".strip()
    return [f"{name} ({annotation}): {text[0]}", *_more(_blank_before_blocks(text[1:]), text[0])]


def _more(rest: list[str], first: str) -> list[str]:
    """The lines after an item's first one; when the description is long and has several paragraphs, the ones
    after the first paragraph go in a collapsed "More" block."""
    blank = next((i for i, line in enumerate(rest) if not line.strip()), None)
    if blank is None or len(first) + sum(map(len, rest)) <= MORE_AFTER:
        return rest
    return [
        *rest[:blank],
        "",
        '??? note "More"',
        "",
        *(f"    {line}" if line.strip() else "" for line in rest[blank + 1 :]),
    ]


def _parameter_items(lines: list[str], start: int, defaults: dict[str, Any]) -> tuple[list[str], int]:
    """The items of a parameter section from `lines[start]` on, rewritten; returns them and the next line."""
    out, index, item_indent = [], start, None
    while index < len(lines):
        line = lines[index]
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent == 0:
            break
        if item_indent is None and line.strip():
            item_indent = indent
        group, match = _GROUP.match(line), _ITEM.match(line)
        if group and indent == item_indent:
            out += ["", f"Parameters: {group.group('title').replace('`', '').strip()}"]
            index += 1
            while index < len(lines) and not lines[index].strip():
                index += 1  # the title is followed directly by its items
            continue
        if match and indent == item_indent:
            body, index = _item_body(lines, index + 1, indent)
            pad = " " * indent
            # `a (`int`), b (`float`): ...` documents two parameters: one item each, with the same description
            headers = re.split(r"\),\s*(?=\**\w+ \()", f"{match.group('name')} ({match.group('type')})")
            for header in headers:
                names, _, written = header.rstrip(")").partition(" (")
                for name in names.split(", "):  # `a, b (`int`)`: both of that type
                    described = _described(name, written, match.group("rest").strip(), body, defaults.get(name))
                    out += [pad + described[0], *(f"{pad}    {x}" if x.strip() else "" for x in described[1:])]
            continue
        out.append(line)
        index += 1
    return out, index


def _admonitions(lines: list[str]) -> list[str]:
    """`> [!NOTE]` quotes and `<Tip>` blocks as Google-style admonitions (`Note:` and an indented body)."""
    out, index = [], 0
    while index < len(lines):
        line = lines[index]
        quote = re.match(r"^(\s*)> \[!(\w+)\]\s*$", line)
        if quote:
            indent, index = quote.group(1), index + 1
            out += ["", f"{indent}{quote.group(2).capitalize()}:"]
            while index < len(lines) and lines[index].lstrip().startswith(">"):
                out.append(f"{indent}    {lines[index].lstrip()[1:].strip()}")
                index += 1
            continue
        tip = re.match(r"^(\s*)<Tip(?: warning=\{true\})?>\s*$", line)
        if tip:
            indent, index = tip.group(1), index + 1
            out += [f"{indent}Tip:"]
            while index < len(lines) and lines[index].strip() != "</Tip>":
                if lines[index].strip() or (out and not out[-1].endswith("Tip:")):
                    out.append(f"{indent}    {lines[index].strip()}" if lines[index].strip() else "")
                index += 1
            index += 1
            continue
        out.append(line)
        index += 1
    return out


def convert(text: str, resolve: Resolver = lambda name: None, defaults: dict[str, Any] | None = None) -> str:
    """A doc-builder docstring as a Google-style one mkdocstrings renders as intended (see the module docstring).

    Example:
    ```python
    >>> print(convert("Does it.\\n\\nArgs:\\n    x (`int`, *optional*, defaults to `2`):\\n        The count.\\n"))
    Does it.
    <BLANKLINE>
    Args:
        x (int): The count. Defaults to `2`.
    ```
    """
    lines = _admonitions(text.splitlines())
    out, index = [], 0
    while index < len(lines):
        line = lines[index]
        if line.strip() in ("Returns:", "Yields:") and index + 1 < len(lines) and _RETURNS.match(lines[index + 1]):
            typed = _RETURNS.match(lines[index + 1])
            annotation, notes = parse_item_type(typed.group("type"))
            rest = ": ".join(filter(None, [*notes, typed.group("rest")]))
            out += [line, f"{typed.group('indent')}({annotation}): {rest}"]
            index += 2
            continue
        if _SECTION.match(line):
            items, index = _parameter_items(lines, index + 1, defaults or {})
            titled = next((i for i, item in enumerate(items) if item.strip()), None)
            if titled is not None and items[titled].startswith("Parameters: "):
                out += items  # the first group's title replaces the bare one
            else:
                out += [line, *items]
            continue
        out.append(line)
        index += 1
    return cross_references("\n".join(_blank_before_blocks(out)), resolve)


def _objects(obj) -> Iterator:
    """Every object defined (not imported) in `obj`, depth first."""
    for member in obj.members.values():
        if member.is_alias:
            continue
        yield member
        if member.is_module or member.is_class:
            yield from _objects(member)


def _defaults(obj) -> dict[str, Any]:
    try:
        return {p.name: p.default for p in obj.parameters}
    except (AttributeError, ValueError, TypeError):
        return {}


class HFDocstrings(griffe.Extension):
    """Converts every docstring of the package once it is loaded (`on_package`), resolving short cross-references
    (`` [`SeqTempTrainer`] ``) to the one object of that name the package defines."""

    def on_package(self, *, pkg, **kwargs: Any) -> None:
        objects = [pkg, *_objects(pkg)]
        by_name: dict[str, set[str]] = {}
        for obj in objects:
            by_name.setdefault(obj.name, set()).add(obj.path)
        paths = {obj.path for obj in objects}

        def resolve(written: str) -> str | None:
            if written in paths:
                return written
            head, _, rest = written.partition(".")
            found = by_name.get(head, set())
            if len(found) == 1:
                return next(iter(found)) + (f".{rest}" if rest else "")
            last = by_name.get(written.rsplit(".", 1)[-1], set())
            return next(iter(last)) if len(last) == 1 else None

        for obj in objects:
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value, resolve, _defaults(obj))
