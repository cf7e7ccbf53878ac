# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The package's dependencies run one way, read from its own source: no import circle, no import from a lower floor
to a higher one (lazy imports inside functions included). A new top-level module must be given a floor here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hf_seqtemp

PACKAGE = Path(hf_seqtemp.__file__).parent
ROOT = PACKAGE.name

# bottom → middle → top; a module may import its own floor (without a circle) or a lower one, never a higher one
FLOORS = {
    # bottom: checks of user input, shared data and its checks, prompt groups, model wrappers, scorers
    "checks": 0,
    "offline": 0,
    "manifest": 0,
    "locking": 0,
    "lock_file": 0,
    "progress": 0,
    "costs": 0,
    "_lazy": 0,
    "config": 1,
    "groups": 1,
    "data": 1,
    "models": 1,
    "peft_compat": 1,
    "tasks": 1,
    "likelihood": 1,
    "engine": 1,  # the inference-engine server and its HTTP client (no vllm import)
    # middle: pure losses, metrics, samplers, measuring a model
    "losses": 2,
    "metrics": 2,
    "generation": 2,
    "measure": 2,
    "dataset_scores": 2,
    "token_tuning": 2,
    "fingerprint": 2,
    "evaluation": 2,
    "audit": 2,
    # top: what is shipped (card, Hub folder, loading), then the trainer that ships it, then the entry points
    "card_plot": 3,
    "card_metadata": 3,
    "card": 3,
    "hub": 3,
    "upload": 3,  # what `hub.push_to_hub` uploads: the folder named for the repository
    "staging": 1,
    "saved": 1,
    "trl_vocabulary": 0,
    "loading": 3,
    "trainer": 4,
    "harness": 4,  # lm-evaluation-harness's `seqtemp` model (the `eval` extra): loads with `load_tempered`
    "cli": 5,
    ROOT: 5,  # `hf_seqtemp/__init__.py`: the public API, imported lazily by name
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def _targets(node: ast.AST, module: str, is_package: bool, modules: set[str]) -> list[str]:
    """The package modules an import statement (or an `_EXPORTS` table of lazy names) refers to."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == ROOT]
    if isinstance(node, ast.ImportFrom):
        base = module.split(".") if is_package else module.split(".")[:-1]
        if node.level:
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] != ROOT:
            return []
        return [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
    if (
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets)
        and isinstance(node.value, ast.Dict)
    ):
        package = module if is_package else module.rsplit(".", 1)[0]
        return [f"{package}.{value.value}" for value in node.value.values if isinstance(value, ast.Constant)]
    return []


def import_graph() -> dict[str, set[str]]:
    """`module -> modules it imports` over every `.py` file of the package, at module level or inside functions.

    Importing `a.b.c` also runs the `__init__` of `a.b`, so it counts as importing `a.b` too (unless the importer
    lives inside `a.b` already).
    """
    files = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node, module, is_package, set(files)):
                own = set(_ancestors(module)) | ({module} if is_package else set())
                edges.update(t for t in [target, *_ancestors(target)] if t in files and t not in own)
        edges.discard(module)
        graph[module] = edges
    return graph


def _floor(module: str) -> int:
    component = module.split(".")[1] if "." in module else ROOT
    if component not in FLOORS:
        raise AssertionError(f"`{module}` has no floor: add `{component!r}` to FLOORS in {Path(__file__).name}.")
    return FLOORS[component]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules (first == last), or `None`."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_graph_sees_relative_lazy_and_exported_imports():
    graph = import_graph()
    assert "hf_seqtemp.hub" in graph["hf_seqtemp.trainer.hub_mixin"]  # `from .. import hub, measure`
    assert "hf_seqtemp.trainer.trainer" in graph["hf_seqtemp.trainer"]  # the lazy `_EXPORTS` table
    assert "hf_seqtemp.generation.routing" in graph["hf_seqtemp.generation.custom_generate"]  # inside a function
    assert "hf_seqtemp.models" in graph["hf_seqtemp.peft_compat"]  # `models/__init__.py` runs first


def test_no_import_circle():
    cycle = _cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_dependencies_run_one_way():
    upward = [
        f"{module} (floor {_floor(module)}) imports {target} (floor {_floor(target)})"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if _floor(target) > _floor(module)
    ]
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def test_nothing_below_the_trainer_imports_it():
    graph = import_graph()
    importers = sorted(
        module
        for module, targets in graph.items()
        if not module.startswith(f"{ROOT}.trainer") and _floor(module) < FLOORS["trainer"]
        if any(t == f"{ROOT}.trainer" or t.startswith(f"{ROOT}.trainer.") for t in targets)
    )
    assert importers == []


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ],
)
def test_the_circle_finder_finds_circles(graph, expected):
    assert _cycle(graph) == expected
