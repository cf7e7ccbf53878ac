# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The flag parser of the `hf-seqtemp` commands: our own flags first, one-line errors, and early checks.

`hf-seqtemp train --help` lists the command's flags (model, data, adapter), then [`SeqTempConfig`]'s own fields,
then the ones it inherits from [`~transformers.TrainingArguments`]. A mistake prints the short usage line, the
error and a pointer to `--help`, never the whole flag list.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import get_type_hints

from transformers import HfArgumentParser

USAGE = "%(prog)s [--flag VALUE ...]"
INHERITED_GROUP = "training: inherited from transformers.TrainingArguments"
_TRL_NAMES = {"--num_samples": "--num_generations", "--max_new_tokens": "--max_completion_length"}
RENAMED_FLAGS = {
    "train": {"--dataset_split": "--dataset_train_split", "--precompute_ref_logps": "--precompute_ref_log_probs"},
    "eval": {**_TRL_NAMES, "--dataset_split": "--dataset_test_split", "--batch_size": "--per_device_eval_batch_size"},
    "generate": dict(_TRL_NAMES),
    "audit": {**_TRL_NAMES, "--dataset_split": "--dataset_train_split"},
}
"""Per command, old flag names -> the names TRL / transformers use for the same thing (one vocabulary across the
commands); the old ones still work, with a deprecation message."""

# `--report_to` integration -> (module imported by its transformers callback, pip package that provides it)
INTEGRATION_PACKAGES = {
    **{name: (name, name) for name in ("clearml", "codecarbon", "dagshub", "dvclive", "mlflow", "neptune")},
    **{name: (name, name) for name in ("swanlab", "tensorboard", "trackio", "wandb")},
    "azure_ml": ("azureml.core", "azureml-core"),
    "comet_ml": ("comet_ml", "comet-ml"),
    "flyte": ("flytekit", "flytekit"),
}


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """`(default: X)` after a flag's help, except where the default is None: there the field is unset or resolved
    later (e.g. `--nll_weight`: 0.1, or 0 for smc_distill), and its help says what happens; "(default: None)" would
    contradict it."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class SeqTempArgumentParser(HfArgumentParser):
    """[`~transformers.HfArgumentParser`] that groups a `TrainingArguments` subclass's own fields first and keeps
    errors short.

    A dataclass with an `_argument_group_name` gets its own group (as in `HfArgumentParser`); a subclass of
    `TrainingArguments` is split into its own fields and the inherited ones, in that order.

    Example:
    ```python
    >>> from hf_seqtemp.cli.arguments import GenerateArguments
    >>> parser = SeqTempArgumentParser(GenerateArguments, prog="hf-seqtemp generate")
    >>> parser.format_usage().strip()
    'usage: hf-seqtemp generate [--flag VALUE ...]'
    >>> parser.parse_args_into_dataclasses(["--prompt", "Hi", "--seq_temperature", "0.5"])[0].seq_temperature
    0.5
    ```
    """

    def __init__(self, dataclass_types, **kwargs):
        kwargs.setdefault("usage", USAGE)
        kwargs.setdefault("allow_abbrev", False)  # `--dataset_name` must not silently become `--dataset_names`
        kwargs.setdefault("formatter_class", _DefaultsHelpFormatter)
        super().__init__(dataclass_types, **kwargs)
        for action in self._actions:  # `--no_x` got the help of `--x`: say what it does instead
            if isinstance(action, argparse._StoreFalseAction) and action.option_strings[0].startswith("--no_"):
                action.help, action.default = f"Turn `--{action.dest}` off (it is on by default).", argparse.SUPPRESS

    def _add_dataclass_arguments(self, dtype) -> None:
        # a TrainingArguments subclass has imported transformers.training_args already; others need not import it
        training_args = sys.modules.get("transformers.training_args")
        if training_args is None or not issubclass(dtype, training_args.TrainingArguments):
            super()._add_dataclass_arguments(dtype)
            return
        inherited = {field.name for field in dataclasses.fields(training_args.TrainingArguments)}
        own = self.add_argument_group(f"sequence temperature: {dtype.__name__}'s own fields")
        rest = self.add_argument_group(INHERITED_GROUP)
        hints = get_type_hints(dtype)
        # the class's own fields first, then those of its other bases (the engine's, the refused TRL names)
        depth = {}
        for index, cls in enumerate(dtype.__mro__):
            for name in inspect.get_annotations(cls):
                depth.setdefault(name, index)
        for field in sorted(dataclasses.fields(dtype), key=lambda f: f.name not in inherited and depth[f.name]):
            if field.init:
                field.type = hints[field.name]
                self._parse_dataclass_field(rest if field.name in inherited else own, field)

    def format_short_help(self, names: set[str], more: str) -> str:
        """The help of the flags in `names` only (in their groups, in order), then `more`: a short `--help`."""
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        for group in self._action_groups:
            actions = [action for action in group._group_actions if action.dest in names]
            if actions:
                formatter.start_section(group.title)
                formatter.add_arguments(actions)
                formatter.end_section()
        formatter.add_text(more)
        return formatter.format_help()

    def error(self, message: str):
        """Prints the one-line usage, the error and where to find every flag, then exits with status 2."""
        self.print_usage(sys.stderr)
        every = "--help-all" if self.prog.endswith(" train") else "--help"  # `train --help` is the short list
        self.exit(2, f"{self.prog}: error: {message}\nRun `{self.prog} {every}` to list every flag.\n")

    def parse_flags(self, args: list[str]) -> tuple:
        """Parses `args` into the dataclasses; an unknown flag is an error that suggests the nearest known one."""
        *parsed, remaining = self.parse_args_into_dataclasses(args=args, return_remaining_strings=True)
        if remaining:
            self.error(self._unknown(remaining))
        return tuple(parsed)

    def _unknown(self, remaining: list[str], known: list[str] | None = None) -> str:
        flags = [arg.split("=", 1)[0] for arg in remaining if arg.startswith("-")]
        if not flags:
            return f"unexpected value(s) {' '.join(remaining)}: every value follows its flag (`--flag VALUE`)."
        known = known or [option for option in self._option_string_actions if option.startswith("--")]
        hints = []
        for flag in flags:
            trl = trl_flag_meaning(flag)
            if trl is not None:  # a TRL flag: what it means here, never a near name that means something else
                hints.append(f"{flag} ({trl})")
                continue
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
            hints.append(f"{flag} (did you mean {close[0]}?)" if close else flag)
        return f"unrecognised flag(s): {', '.join(hints)}."


TRAIN_SHORT_HELP = {
    "model_name_or_path", "default_model", "dataset_path", "dataset_name", "sample_prompts_file", "eval_fraction",
    "system_prompt", "use_peft", "lora_r", "target_temperature", "loss_type", "nll_weight",
    "init_from_token_temperature", "num_generations", "max_completion_length", "output_dir", "max_steps",
    "num_train_epochs", "learning_rate", "per_device_train_batch_size", "seed", "save_strategy",
    "resume_from_checkpoint", "push_to_hub", "help",
}  # fmt: skip
"""The flags `hf-seqtemp train --help` shows; `--help-all` shows every one."""

# TRL flags of its scripts that have no counterpart in a command here, and why (GRPOConfig's are told by
# `hf_seqtemp.trl_vocabulary`)
TRL_SCRIPT_FLAGS = {
    "max_prompt_length": "TRL's prompt cut; here `--max_length` bounds prompt + completion, longer examples are "
    "dropped with a warning",
    "dataset_streaming": "a streamed dataset cannot be read here: the trainer stores each example's reference "
    "log-probabilities; load it without streaming",
    "reward_funcs": "there is no reward: the objective is the distance to p^(1/T) per prompt (`--target_temperature`)",
    "reward_model_name_or_path": "there is no reward model: the objective is the distance to p^(1/T) per prompt",
    "dataset_mixture": "one dataset per run here (`--dataset_path` or `--dataset_name`)",
    "datasets": "one dataset per run here (`--dataset_path` or `--dataset_name`)",
}


def trl_flag_meaning(flag: str) -> str | None:
    """What a TRL flag that is not a flag here means here (`None` for a flag TRL does not have); imports neither
    torch nor TRL."""
    from ..trl_vocabulary import grpo_only_meaning

    name = flag.lstrip("-").replace("-", "_")
    if name in TRL_SCRIPT_FLAGS:
        return f"TRL's `--{name}`: {TRL_SCRIPT_FLAGS[name]}"
    why = grpo_only_meaning(name)
    return None if why is None else f"GRPO's `--{name}`: {why}"


def renamed_flags(args: list[str], prog: str) -> list[str]:
    """`args` with the old flag names of [`RENAMED_FLAGS`] (for the command of `prog`) replaced by the new ones,
    printing one deprecation line per old name used.

    Example:
    ```python
    >>> renamed_flags(["--num_samples", "4", "--seed=1"], "hf-seqtemp eval")[:2]  # doctest: +ELLIPSIS
    ['--num_generations', '4']
    ```
    """
    renames = RENAMED_FLAGS.get(prog.split()[-1], {})
    out, told = [], set()
    for arg in args:
        flag, sep, value = arg.partition("=")
        new = renames.get(flag.replace("-", "_").replace("__", "--", 1))
        if new is not None and flag not in told:
            told.add(flag)
            print(f"{prog}: `{flag}` is deprecated and will be removed: use `{new}`.", file=sys.stderr)
        out.append(new + sep + value if new is not None else arg)
    return out


_TRAINER = Path(__file__).parents[1] / "trainer"
CONFIG_SOURCES = (
    (str(_TRAINER / "config.py"), "SeqTempConfig"),
    (str(_TRAINER / "engine_arguments.py"), "EngineArguments"),
    (str(_TRAINER / "trl_names.py"), "RefusedTRLArguments"),
)
"""Where [`SeqTempConfig`]'s own fields are written: its class, then its engine and refused-TRL-names bases (the
order of `train --help-all`), read from source by the flag checks that run before torch is imported."""


def _source_fields(path: str, class_name: str) -> set[str]:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    raise LookupError(class_name)


def train_config_fields() -> set[str] | None:
    """The field names of [`SeqTempConfig`] and of `TrainingArguments`, read from their source files without
    importing them (which imports torch), so that a mistyped `train` flag fails in a second; `None` when a source
    cannot be read (the full parser then decides)."""
    try:
        spec = importlib.util.find_spec("transformers.training_args")
        inherited = _source_fields(spec.origin, "TrainingArguments")
        for path, name in CONFIG_SOURCES:
            inherited |= _source_fields(path, name)
        return inherited
    except (LookupError, OSError, SyntaxError, AttributeError, ImportError):
        return None


def unknown_flags(args: list[str], fields: set[str]) -> list[str]:
    """The `--flags` of `args` that name none of `fields` (as `--name`, `--name=v`, `--no_name`, with dashes, or
    abbreviated as argparse allows).

    Example:
    ```python
    >>> unknown_flags(["--seed", "1", "--no-use_cpu", "--use", "--sed=2", "-5"], {"seed", "use_cpu"})
    ['--sed=2']
    ```
    """
    unknown = []
    for arg in args:
        if not arg.startswith("--"):
            continue
        name = arg[2:].split("=", 1)[0].replace("-", "_")
        if name in fields or (name.startswith("no_") and name[3:] in fields):
            continue
        if not any(field.startswith(name) for field in fields):  # argparse takes a prefix as an abbreviation
            unknown.append(arg)
    return unknown


def missing_integration(report_to) -> str | None:
    """The one-line fix when an integration in `report_to` is not installed, or `None` when all are.

    Example:
    ```python
    >>> missing_integration(["none"]) is None
    True
    >>> missing_integration(["surely_not_installed"]) is None  # unknown names are transformers' to reject
    True
    ```
    """
    names = [report_to] if isinstance(report_to, str) else list(report_to or [])
    for name in names:
        module, package = INTEGRATION_PACKAGES.get(name, (None, None))
        if module is not None and importlib.util.find_spec(module.split(".")[0]) is None:
            return (
                f"`--report_to {name}` needs the `{package}` package, which is not installed: run "
                f"`pip install {package}`, or pick another integration (`--report_to none` turns reporting off)."
            )
    return None


def config_file_flags(args: list[str], prog: str) -> list[str]:
    r"""`--config FILE` (a YAML file of `flag: value`, as TRL's `TrlParser` reads it) as flags placed before the
    command line's own, so that a flag given on the command line wins. Lists become several values, booleans
    `true`/`false`, mappings JSON; an `env:` mapping sets environment variables, as `TrlParser` does.

    Example:
    ```python
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
    ...     _ = handle.write("learning_rate: 0.001\nlora_target_modules: [q_proj, v_proj]\nbf16: false\n")
    >>> flags = config_file_flags(["--config", handle.name, "--learning_rate", "0.01"], "hf-seqtemp train")
    >>> flags[:5]
    ['--learning_rate', '0.001', '--lora_target_modules', 'q_proj', 'v_proj']
    >>> flags[5:]
    ['--bf16', 'false', '--learning_rate', '0.01']
    ```
    """
    import json

    position = next((i for i, arg in enumerate(args) if arg == "--config" or arg.startswith("--config=")), None)
    if position is None:
        return args
    if "=" in args[position]:
        path, rest = args[position].split("=", 1)[1], args[:position] + args[position + 1 :]
    elif position + 1 < len(args):
        path, rest = args[position + 1], args[:position] + args[position + 2 :]
    else:
        raise SystemExit(f"{prog}: error: `--config` needs a YAML file: `--config train.yaml`.")
    try:
        import yaml

        with open(path, encoding="utf-8") as handle:
            values = yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as error:
        raise SystemExit(f"{prog}: error: `--config` {path!r} cannot be read: {error}") from None
    if not isinstance(values, dict):
        raise SystemExit(f"{prog}: error: `--config` {path!r} must hold a mapping of flag: value, got {values!r}.")
    environment = values.pop("env", None)
    if environment is not None:  # TrlParser's `env:` section: environment variables set before anything runs
        if not isinstance(environment, dict):
            raise SystemExit(
                f"{prog}: error: `env` in {path!r} must be a mapping of NAME: value, got {environment!r}."
            )
        os.environ.update({str(name): str(value) for name, value in environment.items()})
    flags = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = ["true" if value else "false"]
        elif isinstance(value, dict):
            value = [json.dumps(value)]
        elif not isinstance(value, list):
            value = [value]
        flags += [f"--{key}", *(str(item) for item in value)]
    return flags + rest
