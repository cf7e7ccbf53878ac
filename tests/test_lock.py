# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The lock of tested versions (`requirements/lock.txt`, what `make venv` and CI install) against pyproject.toml:
every direct dependency pinned with `==`, at a version its range allows, and the floors of `requirements/oldest.txt`
equal to pyproject's lower bounds. Offline: reads files only."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def direct_requirements(pyproject: str, extras: tuple[str, ...] = ("dev",)) -> list[Requirement]:
    """The dependencies and the given extras of a pyproject.toml text."""
    project = tomllib.loads(pyproject)["project"]
    extra = [r for name in extras for r in project["optional-dependencies"][name]]
    return [Requirement(r) for r in project["dependencies"] + extra]


def pins(lock: str) -> dict[str, Version]:
    """`name -> version` of a pip constraints text of `name==version` lines (comments and blanks skipped)."""
    pinned = {}
    for line in lock.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            if spec.operator != "==":
                raise ValueError(f"{line!r} is not an exact pin (`name==version`)")
            pinned[canonicalize_name(requirement.name)] = Version(spec.version)
    return pinned


def lock_problems(pyproject: str, lock: str) -> list[str]:
    """What is wrong with `lock` for `pyproject`: direct dependencies (the `dev`, `docs` and `eval` extras included:
    `make venv` installs all three) missing from it or pinned outside their range."""
    pinned, problems = pins(lock), []
    for requirement in direct_requirements(pyproject, ("dev", "docs", "eval")):
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name} is a direct dependency but the lock does not pin it")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} is outside pyproject's range {requirement.specifier}")
    return problems


def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_the_lock_pins_every_direct_dependency_inside_its_range():
    assert lock_problems(_read("pyproject.toml"), _read("requirements/lock.txt")) == []


@pytest.mark.parametrize("dropped", ["peft", "trl", "ruff", "mkdocs-material"])
def test_a_lock_missing_a_direct_dependency_is_caught(dropped):
    lock = "\n".join(
        line for line in _read("requirements/lock.txt").splitlines() if not line.lower().startswith(f"{dropped}==")
    )
    assert lock_problems(_read("pyproject.toml"), lock) == [
        f"{dropped} is a direct dependency but the lock does not pin it"
    ]


def test_the_harness_stays_an_optional_extra():
    """`pip install hf-seqtemp` does not pull lm-eval: it is the `eval` extra only, pinned at the locked version."""
    project = tomllib.loads(_read("pyproject.toml"))["project"]
    core = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    assert "lm-eval" not in core
    (harness,) = [Requirement(r) for r in project["optional-dependencies"]["eval"]]
    assert canonicalize_name(harness.name) == "lm-eval" and harness.extras == {"hf"}
    assert harness.specifier.contains(pins(_read("requirements/lock.txt"))["lm-eval"])


def test_a_pin_outside_the_range_is_caught():
    lock = _read("requirements/lock.txt").replace("\ntransformers==", "\ntransformers==5.24.0\n#")
    assert lock_problems(_read("pyproject.toml"), lock) == [
        "transformers==5.24.0 is outside pyproject's range <5.24,>=5.23"
    ]


def test_the_oldest_pins_are_pyprojects_floors():
    """`make test-oldest` tests the lower bounds pyproject states, not others."""
    floors = {}
    for requirement in direct_requirements(_read("pyproject.toml")):
        lower = [s.version for s in requirement.specifier if s.operator == ">="]
        if lower:
            floors[canonicalize_name(requirement.name)] = Version(lower[0])
    oldest = pins(_read("requirements/oldest.txt"))
    runtime = {canonicalize_name(r.name) for r in direct_requirements(_read("pyproject.toml"), extras=())}
    assert {name: floors[name] for name in oldest} == oldest
    assert runtime & set(floors) <= set(oldest)
