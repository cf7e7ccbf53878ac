# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Runs every `Example:` of the package's docstrings, as `pytest --doctest-modules` would.

Our docstrings follow the HF doc-builder format, which wraps examples in ```python fences; plain doctest would read
the closing fence as expected output, so the fences are removed before parsing. Lines that need the real model or
the network carry `# doctest: +SKIP`."""

import doctest
import importlib
import importlib.util
import os
import pkgutil

import pytest
import torch

import hf_seqtemp


def _modules() -> list[str]:
    names = [hf_seqtemp.__name__]
    for info in pkgutil.walk_packages(hf_seqtemp.__path__, prefix=f"{hf_seqtemp.__name__}."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf != "__main__" and not (info.name.count(".") >= 3 and "metrics" in info.name):  # evaluate scripts
            names.append(info.name)
    return sorted(names)


class _FencelessParser(doctest.DocTestParser):
    def parse(self, string, name="<string>"):
        lines = [line for line in string.splitlines() if not line.strip().startswith("```")]
        return super().parse("\n".join(lines) + "\n", name)


@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples_run_as_written(module_name):
    if module_name.startswith("hf_seqtemp.harness") and importlib.util.find_spec("lm_eval") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs the harness's examples, and lm-eval (the `eval` extra) is missing", pytrace=False)
        pytest.skip("hf_seqtemp.harness needs lm-eval: pip install -e '.[eval]'")
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(parser=_FencelessParser(), exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for test in finder.find(module, module_name, globs={**vars(module), "torch": torch}):
        runner.run(test, out=report.append)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0, "".join(report)
