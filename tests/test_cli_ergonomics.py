# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The first minutes with `hf-seqtemp`: help that starts with our flags, short errors, early checks, fast start."""

import dataclasses
import json
import pathlib
import re
import subprocess
import sys

import huggingface_hub
import pytest
from transformers import TrainingArguments

import hf_seqtemp
from hf_seqtemp import LOSSES, SeqTempConfig, hub
from hf_seqtemp.cli import main
from hf_seqtemp.cli import parser as cli_parser
from hf_seqtemp.cli.arguments import GENERATE_STRATEGIES, TrainScriptArguments
from hf_seqtemp.generation.routing import STRATEGIES

HEAVY = ("torch", "transformers", "datasets", "peft", "trl")


def _run(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def _flag_line(text: str, name: str) -> int:
    lines = text.splitlines()
    return next(i for i, line in enumerate(lines) if line.strip().startswith(f"--{name} "))


def test_train_help_shows_our_flags_first_then_the_inherited_ones(capsys):
    code, out, _ = _run(["train", "--help-all"], capsys)
    assert code == 0 and out.startswith("usage: hf-seqtemp train [--flag VALUE ...]\n")
    headings = [line for line in out.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert headings == [
        "options:",
        "model, data and adapter:",
        "sequence temperature: SeqTempConfig's own fields:",
        "training: inherited from transformers.TrainingArguments:",
    ]
    lines = out.splitlines()
    own_start = lines.index(headings[2])
    inherited_start = lines.index(headings[3])
    inherited = {f.name for f in dataclasses.fields(TrainingArguments)}
    for field in dataclasses.fields(SeqTempConfig):
        if field.init:
            where = _flag_line(out, field.name)
            assert (where > inherited_start) == (field.name in inherited), field.name
            assert where > own_start, field.name
    for field in dataclasses.fields(TrainScriptArguments):
        assert _flag_line(out, field.name) < own_start, field.name
    assert _flag_line(out, "model_name_or_path") < _flag_line(out, "dataset_path")  # the model comes first


@pytest.mark.parametrize("command", ["train", "eval", "generate", "audit"])
def test_help_prints_real_defaults_and_never_default_none(capsys, command):
    """A field whose default is None is unset or resolved later (its help says how): "(default: None)" after
    "Default 0.1 (0 for smc_distill)." contradicted the help. Real defaults are still printed."""
    code, out, _ = _run([command, "--help-all" if command == "train" else "--help"], capsys)
    text = " ".join(out.split())  # argparse wraps lines
    assert code == 0 and "(default: None)" not in text
    assert re.search(r"\(default: (\d+|True|False)\)", text)
    if command == "train":
        assert "Default 0.1 (0 for smc_distill). --likelihood_method" in text
        assert "Random seed that will be set at the beginning of training. (default: 42)" in text


def test_loss_type_help_names_every_registered_loss():
    metadata = SeqTempConfig.__dataclass_fields__["loss_type"].metadata
    for name in LOSSES:
        assert f"'{name}'" in metadata["help"], name


@pytest.mark.parametrize(
    "argv,message",
    [
        (["train", "--bogus", "1"], "unrecognised flag(s): --bogus."),
        (["train", "--target_temprature", "0.3"], "--target_temprature (did you mean --target_temperature?)"),
        (["train", "--loss_type", "x"], "argument --loss_type/--loss-type: invalid choice: 'x'"),
        (["generate", "--strategy", "imh"], "argument --strategy: invalid choice: 'imh'"),
        (["train", "--default_model", "--dataset_path", "x.jsonl", "--target_temperature", "0"], "got 0.0"),
    ],
)
def test_a_mistake_prints_three_lines_not_the_whole_usage(capsys, argv, message):
    code, _, err = _run(argv, capsys)
    command = argv[0]
    assert code == 2 and message in err
    assert err.splitlines()[0] == f"usage: hf-seqtemp {command} [--flag VALUE ...]"
    every = "--help-all" if command == "train" else "--help"  # `train --help` is the short list
    assert err.splitlines()[-1] == f"Run `hf-seqtemp {command} {every}` to list every flag."
    assert len(err.splitlines()) == 3, err


def test_report_to_an_uninstalled_integration_names_the_package_before_loading_anything(capsys, monkeypatch):
    monkeypatch.setitem(cli_parser.INTEGRATION_PACKAGES, "wandb", ("hf_seqtemp_no_such_module", "wandb"))
    argv = ["train", "--model_name_or_path", "no/such-model", "--dataset_path", "missing.jsonl", "--output_dir", "o"]
    code, _, err = _run([*argv, "--report_to", "wandb"], capsys)
    assert code == 2 and len(err.splitlines()) == 3  # no model or data was loaded: both are missing
    assert "`--report_to wandb` needs the `wandb` package, which is not installed: run `pip install wandb`" in err
    assert cli_parser.missing_integration(["tensorboard", "none"]) is None  # installed with the dev extra


def test_push_to_hub_offline_fails_before_training(capsys, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    argv = [
        "train",
        "--model_name_or_path",
        "no/such-model",
        "--dataset_path",
        "missing.jsonl",
        "--push_to_hub",
        "--output_dir",
        "o",
    ]
    code, _, err = _run(argv, capsys)
    assert code == 2 and "cannot push to the Hub: offline mode is on (HF_HUB_OFFLINE=1)" in err


def test_check_can_push_needs_a_token_when_online(monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(huggingface_hub.errors.LocalTokenNotFoundError, match="no token. Log in with `hf auth login`"):
        hub.check_can_push()
    hub.check_can_push("hf_token_given")  # an explicit token is enough


def test_generate_strategies_are_the_causal_strategies_of_the_router():
    assert GENERATE_STRATEGIES == tuple(s for s in STRATEGIES if s != "imh")


def test_help_and_import_load_no_heavy_module():
    code = (
        "import contextlib, io, sys\n"
        "import hf_seqtemp\n"
        "from hf_seqtemp.cli import main\n"
        "for argv in (['--help'], ['eval', '--help'], ['generate', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        main(argv)\n"
        f"print(__import__('json').dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == ["transformers"]  # HfArgumentParser only, for eval/generate; `--help` itself needs none


def test_every_public_name_resolves_lazily():
    for name in hf_seqtemp.__all__:
        assert getattr(hf_seqtemp, name) is not None, name
    assert set(hf_seqtemp.__all__) <= set(dir(hf_seqtemp))
    assert hf_seqtemp.hub is hub  # a submodule as an attribute
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        hf_seqtemp.nope  # noqa: B018


def test_example_scripts_spell_flags_as_hfargumentparser_does():
    examples = pathlib.Path(__file__).resolve().parents[1] / "examples"
    flags = [
        (script.name, flag)
        for script in sorted(examples.glob("*.py"))
        for flag in re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", script.read_text(encoding="utf-8"))
    ]
    assert len(flags) > 20
    assert [(name, flag) for name, flag in flags if "-" in flag[2:]] == []  # `--max_steps`, never `--max-steps`
