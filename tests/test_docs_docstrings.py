# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The docstring conversion the API reference is built with (`docs/hf_docstrings.py`): the doc-builder format in,
Google style with plain types, autoref links, titled parameter groups, admonitions, lists and "More" blocks out.
The built pages themselves are checked in `tests/test_docs_build.py`."""

from __future__ import annotations

import doctest
import textwrap
from pathlib import Path

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hf():
    pytest.importorskip("griffe", reason="the `docs` extra is not installed (make venv installs it)")
    return load_script(ROOT / "docs" / "hf_docstrings.py", "hf_docstrings")


def test_its_examples_run(hf):
    class Fenceless(doctest.DocTestParser):
        def parse(self, string, name="<string>"):
            return super().parse("\n".join(s for s in string.splitlines() if not s.strip().startswith("```")), name)

    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder(parser=Fenceless()).find(hf, "hf_docstrings"):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize(
    ("written", "annotation", "notes"),
    [
        ("`float`, *optional*, defaults to `0.5`", "float", ["Defaults to `0.5`."]),
        ("`str` or `None`, *optional*", "str | None", []),
        ("`list` of `str`", "list[str]", []),
        ("[`~datasets.Dataset`] or `dict`, *optional*", "datasets.Dataset | dict", []),
        ("`torch.LongTensor` of shape `(batch, n)`", "torch.LongTensor", ["Shape `(batch, n)`"]),
        ("`torch.Tensor` or list of `float`, shape `(n,)`", "torch.Tensor | list[float]", ["Shape `(n,)`"]),
    ],
)
def test_a_type_loses_its_markup_and_keeps_its_shape_and_default_as_words(hf, written, annotation, notes):
    assert hf.parse_item_type(written) == (annotation, notes)


def test_a_config_docstring_becomes_titled_groups_with_plain_types_links_and_notes(hf):
    text = textwrap.dedent(
        """\
        Configuration of [`Trainer`], see [`~transformers.TrainingArguments`].

        Parameters:
            > Parameters that control the training

            beta (`float`, *optional*, defaults to `0.1`):
                How far. One of:
                - small
                - large
            gamma (`int` or `None`, *optional*, defaults to `None`, and to `3` for `mode="x"`):
                The count.

            > Parameters of `mode`

            mode (`str`, *optional*, defaults to `"a"`):
                The mode.

        > [!NOTE]
        > Defaults that differ: `x=1`.
        """
    )
    out = hf.convert(text, {"Trainer": "pkg.trainer.Trainer"}.get, {"beta": "0.1", "gamma": "None", "mode": "'a'"})
    assert "[`" not in out and "[!NOTE]" not in out and "> " not in out
    assert '<autoref identifier="pkg.trainer.Trainer" optional><code>Trainer</code></autoref>' in out
    assert '<autoref identifier="transformers.TrainingArguments" optional><code>TrainingArguments</code>' in out
    lines = out.splitlines()
    # one titled section per group, directly followed by its items (a blank line would end the section)
    first = lines.index("Parameters: Parameters that control the training")
    assert lines[first + 1] == "    beta (float): How far. One of:" and "Parameters:" not in lines[:first]
    assert lines[lines.index("Parameters: Parameters of mode") + 1] == "    mode (str): The mode."
    # the list is separated from its sentence, so Markdown sees a list
    assert lines[first + 2 : first + 5] == ["", "        - small", "        - large"]
    # a default the signature shows is left to the signature; one it cannot show stays in words
    assert 'gamma (int | None): The count. Defaults to `None`, and to `3` for `mode="x"`.' in out
    assert "Defaults to `0.1`" not in out and 'Defaults to `"a"`' not in out
    assert "Note:\n    Defaults that differ: `x=1`." in out


def test_a_long_description_keeps_its_first_paragraph_and_folds_the_rest(hf):
    long = "word " * 100
    text = f"Args:\n    x (`int`):\n        First.\n\n        {long}\n\n        - a\n        - b\n"
    out = hf.convert(text).splitlines()
    assert out[1] == "    x (int): First."
    assert out[3] == '        ??? note "More"' and out[5].strip() == long.strip()
    assert out[-2:] == ["            - a", "            - b"]  # inside the folded block
    short = hf.convert("Args:\n    x (`int`):\n        First.\n\n        Second.\n")
    assert "???" not in short


def test_an_hf_returns_line_gets_its_type_in_parentheses(hf):
    out = hf.convert("Returns:\n    `torch.Tensor` of shape `(n,)`: the estimate.\n")
    assert out.splitlines()[1] == "    (torch.Tensor): Shape `(n,)`: the estimate."


def test_two_parameters_documented_together_become_two_items(hf):
    out = hf.convert("Args:\n    a (`int`, *optional*, defaults to 16), b (`str`): as in `f`.\n", defaults={"a": "16"})
    assert out.splitlines()[1:] == ["    a (int): as in `f`.", "    b (str): as in `f`."]
    out = hf.convert("Args:\n    a, b (`float`): the two.\n")
    assert out.splitlines()[1:] == ["    a (float): the two.", "    b (float): the two."]
