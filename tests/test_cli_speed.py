# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp --help`, `hf-seqtemp train --help` and flag errors answer before torch is imported, and a flag error
shows only its own message."""

import json
import os
import statistics
import subprocess
import sys
import time

import pytest

from hf_seqtemp import LOSSES
from hf_seqtemp.cli import COMMANDS, _dataclass_types, main, train_short_help
from hf_seqtemp.cli.light import light_train_types
from hf_seqtemp.cli.parser import SeqTempArgumentParser

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
ANSWERED_WITHOUT_TORCH = [
    ["--help"],
    ["train", "--help"],
    ["train", "--learnin_rate", "1"],  # an unknown flag
    ["train", "--learning_rate", "abc", "--output_dir", "o"],  # a value of the wrong type
    ["train", "--save_strategy", "sometimes", "--output_dir", "o"],  # a value outside the field's choices
    ["train", "--loss_type", "nope", "--output_dir", "o"],
]


def test_help_and_flag_errors_answer_before_torch_is_imported():
    code = (
        "import contextlib, io, json, sys\n"
        "from hf_seqtemp.cli import main\n"
        "argv = json.loads(sys.argv[1])\n"
        "err = io.StringIO()\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(err):\n"
        "    try:\n"
        "        code = main(argv)\n"
        "    except SystemExit as exit:\n"
        "        code = exit.code\n"
        "print(json.dumps([code, 'torch' in sys.modules, err.getvalue()]))\n"
    )
    for argv in ANSWERED_WITHOUT_TORCH:
        run = subprocess.run(
            [sys.executable, "-c", code, json.dumps(argv)],
            check=False,
            capture_output=True,
            text=True,
            env=ENV,
            timeout=300,
        )
        exit_code, torch_loaded, err = json.loads(run.stdout.strip().splitlines()[-1])
        assert exit_code == (0 if "--help" in argv else 2), (argv, err)
        assert not torch_loaded, argv
        if exit_code == 2:
            assert "error:" in err and "eval_fraction" not in err, (argv, err)


def test_train_help_answers_faster_than_importing_torch_and_transformers():
    """Side by side, taking turns (the machine may be shared): the median `train --help` against the median
    `import torch, transformers`."""
    help_cmd = [sys.executable, "-m", "hf_seqtemp.cli", "train", "--help"]
    import_cmd = [sys.executable, "-c", "import torch, transformers"]
    times = {"help": [], "import": []}
    for _ in range(3):
        for name, cmd in (("help", help_cmd), ("import", import_cmd)):
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True, env=ENV, timeout=300, check=True)
            times[name].append(time.perf_counter() - start)
    assert statistics.median(times["help"]) < statistics.median(times["import"]), times


def test_the_fast_train_help_is_the_full_parsers():
    """The short `train --help` read from the fields' source is the one the full parser (torch imported) prints, and
    both parsers have the same flags with the same defaults and choices where the source says them plainly."""
    light = SeqTempArgumentParser(light_train_types(), prog="hf-seqtemp train", description=COMMANDS["train"])
    full = SeqTempArgumentParser(_dataclass_types("train"), prog="hf-seqtemp train", description=COMMANDS["train"])
    assert train_short_help(light) == train_short_help(full)
    assert set(light._option_string_actions) == set(full._option_string_actions)
    assert light._option_string_actions["--loss_type"].choices == sorted(LOSSES)
    for option in ("--learning_rate", "--save_strategy", "--num_generations", "--use_peft", "--bf16"):
        ours, theirs = light._option_string_actions[option], full._option_string_actions[option]
        assert (ours.default, ours.choices, ours.nargs) == (theirs.default, list(theirs.choices or []) or None,
                                                            theirs.nargs), option  # fmt: skip


def test_a_flag_error_shows_only_its_own_message(tmp_path, capsys):
    """A mistake in the data flags was printed after an unrelated note on `--eval_fraction`."""
    missing = str(tmp_path / "missing.jsonl")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--model_name_or_path", "m", "--output_dir", str(tmp_path / "o"), "--dataset_path", missing])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "missing.jsonl" in err
    assert "eval_fraction" not in err, err
