# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp` command line: `train`, `eval`, `generate`, `audit`, `bench` and `serve`.

Each command parses its own flags with [`~transformers.HfArgumentParser`] (as TRL's CLI does), so every field of
its dataclasses, including every [`SeqTempConfig`] field for `train`, is a flag; `hf-seqtemp <command> --help`
lists them.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from .arguments import AuditArguments, EvalArguments, GenerateArguments, TrainScriptArguments

COMMANDS = {
    "train": "fine-tune a LoRA adapter to a sequence temperature and save it",
    "eval": "measure T_eff, Kendall tau and NLL of a tempered adapter against its base model",
    "generate": "sample completions of a prompt at a sequence temperature",
    "audit": "what a decoding setting (temperature, top-p, min-p, ...) does to whole answers, against exact p",
    "bench": "run the benchmarks (python benchmarks/run_all.py, arguments passed through)",
    "serve": "start a vLLM server of a model for use_vllm / generate(engine=...) (its own venv: make venv-vllm)",
}


def _dataclass_types(command: str):
    if command == "train":
        from ..trainer import SeqTempConfig

        return (TrainScriptArguments, SeqTempConfig)
    return {"eval": (EvalArguments,), "generate": (GenerateArguments,), "audit": (AuditArguments,)}[command]


def _check_train_flags(rest: list[str], prog: str) -> None:
    """Rejects a mistyped `train` flag before the trainer (and torch) is imported, from the fields' source."""
    from .parser import SeqTempArgumentParser, train_config_fields, unknown_flags

    names = train_config_fields()
    if names is None or {"-h", "--help"} & set(rest):
        return  # the full parser decides
    names |= {field.name for field in fields(TrainScriptArguments)}
    unknown = unknown_flags(rest, names)
    if unknown:
        parser = SeqTempArgumentParser((TrainScriptArguments,), prog=prog, description=COMMANDS["train"])
        parser.error(parser._unknown(unknown, [f"--{name}" for name in sorted(names)]))


def _check_output_dir(rest: list[str], parser) -> None:
    """`train` needs `--output_dir`: without it transformers would write to `./trainer_output` unannounced."""
    if not any(arg.split("=", 1)[0].replace("-", "_") == "__output_dir" for arg in rest):
        parser.error(
            "`--output_dir` is required: the folder the adapter is saved to, e.g. `--output_dir out/adapter`."
        )


def train_short_help(parser) -> str:
    """`hf-seqtemp train --help`: the flags a first run needs, in their groups, and how to list every one."""
    from .parser import TRAIN_SHORT_HELP

    more = f"{len(parser._actions) - len(TRAIN_SHORT_HELP)} more flags (LoRA, quantisation, logging, every "
    return parser.format_short_help(TRAIN_SHORT_HELP, more + "TrainingArguments field): `hf-seqtemp train --help-all`")


def _run(command: str, rest: list[str]) -> int:
    from huggingface_hub.errors import LocalTokenNotFoundError, OfflineModeIsEnabled

    from .parser import SeqTempArgumentParser, config_file_flags, renamed_flags

    prog = f"hf-seqtemp {command}"
    rest = config_file_flags(rest, prog)  # TRL's `--config cfg.yaml`: its keys first, the command line's flags win
    rest = renamed_flags(rest, prog)  # one vocabulary, TRL's: --num_generations, --max_completion_length, ...
    full_help = "--help-all" in rest  # `train --help` is short; `--help-all` lists every flag
    rest = ["--help" if arg == "--help-all" else arg for arg in rest]
    if command == "train":
        _check_train_flags(rest, prog)
        # the short `--help` and a bad value answer from the fields' source, before the trainer (torch) is imported
        from .light import light_train_types

        light = light_train_types()
        if light is not None:
            light_parser = SeqTempArgumentParser(light, prog=prog, description=COMMANDS[command])
            if {"-h", "--help"} & set(rest) and not full_help:
                print(train_short_help(light_parser))
                return 0
            light_parser.parse_known_args(rest)  # exits on a value of the wrong type or outside the choices
    types = _dataclass_types(command)
    parser = SeqTempArgumentParser(types, prog=prog, description=COMMANDS[command])
    if command == "train" and {"-h", "--help"} & set(rest) and not full_help:
        print(train_short_help(parser))
        return 0
    try:
        parsed = parser.parse_flags(rest)
        if command == "train":
            _check_output_dir(rest, parser)
        from . import commands

        if command == "train":
            return commands.run_train(*parsed)
        if command == "audit":
            from .audit import run_audit
            from .data import _read_dataset

            return run_audit(*parsed, load_base=commands._load_base, read_dataset=_read_dataset)
        if command == "eval":
            return commands.run_eval(*parsed)
        from .generate import run_generate

        return run_generate(*parsed)
    except (
        ValueError,
        TypeError,
        FileNotFoundError,
        ImportError,
        LocalTokenNotFoundError,
        OfflineModeIsEnabled,
    ) as error:
        from .commands import _flagged

        parser.error(_flagged(str(error), types))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hf-seqtemp` console script.

    Example:
    ```python
    >>> from hf_seqtemp.cli import main
    >>> main(["eval", "--adapter_path", "outputs/quickstart/adapter", "--default_model",
    ...       "--sample_prompts_file", "prompts.txt"])  # doctest: +SKIP
    ```
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="hf-seqtemp",
        description="Sequence-level temperature for Hugging Face language models.",
        epilog="Run `hf-seqtemp <command> --help` for the flags of a command.",
    )
    subparsers = parser.add_subparsers(dest="command", title="commands", metavar="{" + ",".join(COMMANDS) + "}")
    for name, help_text in COMMANDS.items():
        subparsers.add_parser(name, help=help_text, add_help=False)
    args, _ = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    rest = argv[argv.index(args.command) + 1 :]
    if args.command == "serve":
        from ..engine.serve import main as serve

        return serve(rest)
    if args.command == "bench":
        from .commands import run_bench

        try:
            return run_bench(rest)
        except FileNotFoundError as error:
            parser.error(str(error))
    return _run(args.command, rest)
