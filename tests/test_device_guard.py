# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""On the CPU, the class of defect only a GPU shows, read from the package's own source.

A user's default device is the CPU and their model, inputs and generator are on the GPU. A tensor the package builds
without `device=` lands on the CPU beside GPU tensors; a draw with a CUDA generator on a tensor built on the CPU
fails ("Expected a 'cpu' device type for generator but found 'cuda'", as MH power sampling did on the first CUDA
run); `.item()`, `.cpu()`, `.tolist()` or `.numpy()` in a sampler's or scorer's loop waits for the GPU at every
step. On this machine every tensor is on the CPU, so none of these fails at run time: the rules are checked on the
source.

1. Every tensor factory call of the package (`torch.zeros`, `torch.arange`, `torch.tensor`, `torch.rand`,
   `torch.randint`, `torch.Generator`, ...) names its device: the device of the tensors it meets (`device=x.device`),
   the generator's, or `device="cpu"` where the CPU is meant (collators, host buffers, seeded orders).
2. In the samplers and scorers (`generation/`, `likelihood/`), a host copy or sync inside a loop body carries a
   `# host sync: <why>` comment on its line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hf_seqtemp

PACKAGE = Path(hf_seqtemp.__file__).parent
FACTORIES = {
    "zeros", "ones", "full", "empty", "arange", "range", "linspace", "logspace", "eye", "tensor", "as_tensor",
    "rand", "randn", "randint", "randperm", "normal", "bernoulli", "Generator",
}  # fmt: skip
HOST_CALLS = {"item", "cpu", "tolist", "numpy"}
LOOP_PACKAGES = ("generation", "likelihood")


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def factory_calls_without_device(source: str) -> list[tuple[int, str]]:
    """`(line, name)` of the `torch.<factory>(...)` calls of `source` that do not name `device=`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        func = getattr(node, "func", None)
        if (
            isinstance(node, ast.Call)
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "torch"
            and func.attr in FACTORIES
            and not any(keyword.arg == "device" for keyword in node.keywords)
        ):
            found.append((node.lineno, f"torch.{func.attr}"))
    return found


def host_syncs_in_loops(source: str) -> list[tuple[int, str]]:
    """`(line, call)` of the `.item()`/`.cpu()`/`.tolist()`/`.numpy()` calls inside a `for`/`while` body of
    `source` whose line has no `# host sync:` comment (a loop's own iterable runs once and is not counted)."""
    tree, lines = ast.parse(source), source.splitlines()
    parents, found = _parents(tree), []
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        if not (isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and func.attr in HOST_CALLS):
            continue
        child, parent = node, parents.get(node)
        while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(parent, (ast.For, ast.While)) and child in parent.body:
                if "# host sync:" not in lines[node.lineno - 1]:
                    found.append((node.lineno, f".{func.attr}()"))
                break
            child, parent = parent, parents.get(parent)
    return found


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_tensor_factory_names_its_device(path):
    bad = factory_calls_without_device(path.read_text(encoding="utf-8"))
    assert not bad, f"{path.relative_to(PACKAGE.parent)}: " + ", ".join(f"line {n}: {name}" for n, name in bad)


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if p.relative_to(PACKAGE).parts[0] in LOOP_PACKAGES],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_unmarked_host_sync_in_a_sampler_or_scorer_loop(path):
    bad = host_syncs_in_loops(path.read_text(encoding="utf-8"))
    assert not bad, f"{path.relative_to(PACKAGE.parent)}: " + ", ".join(f"line {n}: {call}" for n, call in bad)


# What the first CUDA run met, as it was written (hf_seqtemp/generation/power_sampling.py at 667ff45), and a
# per-token loop with a host copy (the resampling count of the SMC loop at 667ff45).
MH_BOUNDARY = """
for _ in range(mcmc_steps):
    boundaries = torch.arange(0, end, block_size)
    boundary = int(boundaries[torch.randint(len(boundaries), (1,), generator=generator)])
"""
SMC_COUNT = """
def _run(state, generator):
    resamples = torch.zeros(batch, dtype=torch.long)
    for step in range(max_new_tokens):
        next_logp, low = _resample(state, next_logp, method, threshold, generator)
        resamples += low.long().cpu()
"""


def test_the_guard_catches_the_defects_the_first_cuda_run_met():
    assert factory_calls_without_device(MH_BOUNDARY) == [(3, "torch.arange"), (4, "torch.randint")]
    assert factory_calls_without_device(SMC_COUNT) == [(3, "torch.zeros")]
    assert host_syncs_in_loops(SMC_COUNT) == [(6, ".cpu()")]
    fixed = SMC_COUNT.replace("low.long().cpu()", "low.long().cpu()  # host sync: counted for the output")
    assert host_syncs_in_loops(fixed) == []
    assert factory_calls_without_device("torch.rand(3, generator=g, device=g.device)") == []
