# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The `train` flags without torch: [`SeqTempConfig`]'s fields and the ones it inherits from
[`~transformers.TrainingArguments`], read from their source files, so that `hf-seqtemp train --help` and a flag error
(an unknown flag, a value of the wrong type or outside a field's choices) answer in a second, before the trainer (and
torch) is imported. Anything the source does not say plainly is parsed leniently here and left to the full parser.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
from pathlib import Path

from .arguments import TrainScriptArguments

_TYPES = {
    "bool": bool, "bool | None": bool | None, "int": int, "int | None": int | None, "float": float,
    "float | None": float | None, "str": str, "str | None": str | None,
    "list[str]": list[str], "list[str] | None": list[str] | None,
}  # fmt: skip
"""The annotations taken as they are; any other is parsed leniently (a string, or its enum's values)."""

_NOT_LITERAL = object()
_ENUM_SOURCES = ("transformers.trainer_utils", "transformers.training_args")


def _class_node(path: str, name: str) -> ast.ClassDef:
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise LookupError(name)


def _enum_values(name: str) -> list[str] | None:
    """The string values of a transformers enum (`SaveStrategy`, ...), read from its source; `None` if not found."""
    for module in _ENUM_SOURCES:
        try:
            node = _class_node(importlib.util.find_spec(module).origin, name)
        except LookupError:
            continue
        values = [
            item.value.value
            for item in node.body
            if isinstance(item, ast.Assign)
            and isinstance(item.value, ast.Constant)
            and isinstance(item.value.value, str)
        ]
        return values or None
    return None


def _literal(node, fallback=None):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return fallback


def _loss_names() -> list[str]:
    """The names of `hf_seqtemp.losses.LOSSES`, read from the `*_LOSSES` registries of its modules' source."""
    names = set()
    for path in (Path(__file__).parents[1] / "losses").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = (
                node.target
                if isinstance(node, ast.AnnAssign)
                else (node.targets[0] if isinstance(node, ast.Assign) else None)
            )
            if isinstance(target, ast.Name) and target.id.endswith("_LOSSES") and isinstance(node.value, ast.Dict):
                names |= {key.value for key in node.value.keys if isinstance(key, ast.Constant)}
    return sorted(names)


def _metadata(node) -> dict:
    """A field's metadata, entry by entry: the literal ones, and `sorted(LOSSES)` as the loss names."""
    if not isinstance(node, ast.Dict):
        return {}
    metadata = {}
    for key, value in zip(node.keys, node.values):
        if ast.unparse(value) == "sorted(LOSSES)":
            metadata[_literal(key)] = _loss_names()
            continue
        literal = _literal(value, _NOT_LITERAL)
        if literal is not _NOT_LITERAL:
            metadata[_literal(key)] = literal
    return metadata


def _field_spec(statement: ast.AnnAssign) -> tuple | None:
    """(name, type, dataclasses.field) of one annotated class attribute, or `None` for a field `__init__` skips."""
    name, annotation = statement.target.id, ast.unparse(statement.annotation)
    call = statement.value
    keywords = {}
    if isinstance(call, ast.Call) and ast.unparse(call.func).split(".")[-1] == "field":
        keywords = {keyword.arg: keyword.value for keyword in call.keywords}
        if _literal(keywords.get("init"), True) is False:
            return None
        metadata = _metadata(keywords.get("metadata"))
        default = _literal(keywords["default"]) if "default" in keywords else None
        if "default_factory" in keywords:
            factory = keywords["default_factory"]
            made = _literal(factory.body) if isinstance(factory, ast.Lambda) else None
            default = {"list": [], "dict": {}}.get(ast.unparse(factory), made)
    else:
        metadata, default = {}, None if call is None else _literal(call)
    kind = _TYPES.get(annotation)
    if annotation == "str | bool":  # a flag alone means True, as HfArgumentParser parses such a union
        metadata.setdefault("nargs", "?")
        metadata.setdefault("const", True)
    if kind is None:
        parts = [part.strip() for part in annotation.split("|")]
        enum = parts[0] if len(parts) == 2 and parts[1] == "str" else None
        values = _enum_values(enum) if enum else None
        if values is not None and "choices" not in metadata:
            metadata["choices"] = values
        kind = str | None
    if isinstance(default, (list, dict)):
        made = default
        value = dataclasses.field(default_factory=lambda: type(made)(made), metadata=metadata)
    else:
        value = dataclasses.field(default=default, metadata=metadata)
    return name, kind, value


def _fields(path: str, class_name: str) -> dict:
    node = _class_node(path, class_name)
    specs = [
        _field_spec(item)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]
    return {spec[0]: spec for spec in specs if spec is not None}


def light_train_types() -> tuple | None:
    """`train`'s flag dataclasses without torch: `TrainScriptArguments`, then stand-ins of [`SeqTempConfig`]'s own
    fields and of its inherited ones (in the groups and order of the full parser); `None` when a source cannot be
    read (the full parser then decides)."""
    from .parser import CONFIG_SOURCES, INHERITED_GROUP

    try:
        inherited = _fields(importlib.util.find_spec("transformers.training_args").origin, "TrainingArguments")
        own = {}
        for path, name in CONFIG_SOURCES:
            own |= {key: spec for key, spec in _fields(path, name).items() if key not in own}
        for name in list(inherited):
            if name in own:
                inherited[name] = own.pop(name)
        own_type = dataclasses.make_dataclass("SeqTempConfigFlags", list(own.values()))
        own_type._argument_group_name = "sequence temperature: SeqTempConfig's own fields"
        inherited_type = dataclasses.make_dataclass("TrainingArgumentsFlags", list(inherited.values()))
        inherited_type._argument_group_name = INHERITED_GROUP
    except (LookupError, OSError, SyntaxError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return (TrainScriptArguments, own_type, inherited_type)
