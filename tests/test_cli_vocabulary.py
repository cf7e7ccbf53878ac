# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
# ruff: noqa: F811 (the fixtures `workspace` and `trained` of test_cli.py are imported, then requested by name)
"""One flag vocabulary across the commands (TRL's and transformers' names, old names as deprecated aliases), every
`smc` option on `generate`, and errors that say "not found" and name the fix, on the tiny model of test_cli.py."""

import inspect
import json
import subprocess
import sys
import warnings

import pytest
import torch
from test_cli import _error, _train_args, trained, workspace  # noqa: F401 (fixtures)
from transformers import AutoModelForCausalLM

import hf_seqtemp
from hf_seqtemp import SeqTempConfig
from hf_seqtemp.cli import commands as cli_commands
from hf_seqtemp.cli import main
from hf_seqtemp.cli.arguments import GenerateArguments
from hf_seqtemp.cli.parser import SeqTempArgumentParser
from hf_seqtemp.generation.routing import generate_tempered

SMC = ["--strategy", "smc", "--num_particles", "8", "--ess_threshold", "1.0", "--resampling", "multinomial"]


def _generate(workspace, out_json, *flags):
    base = ["--model_name_or_path", str(workspace / "base"), "--prompt", "a b", "c", "--seq_temperature", "0.5"]
    argv = ["generate", *base, "--seed", "7", "--output_json", str(out_json), *flags]
    assert main(argv) == 0
    return json.loads(out_json.read_text(encoding="utf-8"))


def test_generate_smc_flags_draw_what_the_python_api_draws(workspace, tmp_path, capsys):
    """`--strategy smc` with every smc flag gives, completion for completion, what `generate_tempered` gives with the
    same options and seed; changing one option (`--resampling`) changes the draws; `--return_particles` saves the
    particles of every completion with normalised weights (logsumexp 0), heaviest first."""
    flags = [*SMC, "--alpha_ramp_tokens", "1", "--num_generations", "3", "--max_completion_length", "4"]
    samples = _generate(workspace, tmp_path / "smc.json", *flags, "--return_particles")
    from test_cli import _tokenizer

    tokenizer = _tokenizer()
    model = AutoModelForCausalLM.from_pretrained(workspace / "base").eval()
    torch.manual_seed(7)
    for entry, prompt in zip(samples, ["a b", "c"]):
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"].repeat(3, 1)
        out = generate_tempered(model, ids, torch.ones_like(ids), seq_temperature=0.5, strategy="smc",
                                max_new_tokens=4, num_particles=8, ess_threshold=1.0, resampling="multinomial",
                                alpha_ramp_tokens=1, pad_token_id=5)  # fmt: skip
        assert entry["completions"] == tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)
        assert len(entry["particles"]) == 3 and all(len(particles) == 8 for particles in entry["particles"])
        for particles in entry["particles"]:
            weights = torch.tensor([particle["log_weight"] for particle in particles], dtype=torch.float64)
            assert abs(torch.logsumexp(weights, 0).item()) < 1e-4 and torch.all(weights[:-1] >= weights[1:])
    assert "particles of completion 1" in capsys.readouterr().out
    systematic = _generate(workspace, tmp_path / "sys.json", *flags[:-6], "--num_generations", "3",
                           "--max_completion_length", "4", "--resampling", "systematic")  # fmt: skip
    assert [e["completions"] for e in systematic] != [e["completions"] for e in samples]


def test_smc_flags_without_smc_and_bad_values_are_errors(workspace, capsys):
    base = ["generate", "--model_name_or_path", str(workspace / "base"), "--prompt", "a", "--seq_temperature", "0.5"]
    message = _error([*base, "--strategy", "mcmc", "--num_particles", "8"], capsys)
    assert "--num_particles only apply to `--strategy smc` (got `--strategy mcmc`)" in message
    assert "invalid choice: 'stratified'" in _error([*base, *SMC[:2], "--resampling", "stratified"], capsys)
    assert "`--ess_threshold` must be a float in [0, 1], got 2.0" in _error(
        [*base, *SMC[:2], "--ess_threshold", "2"], capsys
    )


def test_the_cli_defaults_of_generate_are_the_python_defaults():
    """Every sampler option of `generate` defaults to what `seqtemp_generate` defaults to (`--num_candidates` was 8
    on the command line and `None` in Python)."""
    python = inspect.signature(hf_seqtemp.seqtemp_generate).parameters
    shared = [field for field in GenerateArguments.__dataclass_fields__ if field in python]
    assert {"num_candidates", "num_particles", "ess_threshold", "alpha_ramp_tokens", "resampling"} <= set(shared)
    for name in shared:
        if name not in ("seq_temperature", "strategy"):
            assert GenerateArguments.__dataclass_fields__[name].default == python[name].default, name


@pytest.mark.parametrize(
    ("command", "old", "new"),
    [
        ("generate", "--num_samples", "--num_generations"),
        ("generate", "--max_new_tokens", "--max_completion_length"),
        ("audit", "--num_samples", "--num_generations"),
        ("audit", "--max_new_tokens", "--max_completion_length"),
        ("audit", "--dataset_split", "--dataset_train_split"),
        ("train", "--dataset_split", "--dataset_train_split"),
        ("train", "--precompute_ref_logps", "--precompute_ref_log_probs"),
        ("eval", "--dataset_split", "--dataset_test_split"),
        ("eval", "--batch_size", "--per_device_eval_batch_size"),
    ],
)
def test_old_flag_names_are_deprecated_aliases_of_the_trl_names(command, old, new, capsys):
    from hf_seqtemp.cli import _dataclass_types
    from hf_seqtemp.cli.parser import renamed_flags

    value = "False" if "precompute" in old else "3"
    renamed = renamed_flags([old, value], f"hf-seqtemp {command}")
    assert renamed == [new, value]
    assert f"`{old}` is deprecated and will be removed: use `{new}`" in capsys.readouterr().err
    parser = SeqTempArgumentParser(_dataclass_types(command))
    parsed = parser.parse_args_into_dataclasses([*renamed, *(["--output_dir", "x"] if command == "train" else [])])
    values = [getattr(p, new[2:]) for p in parsed if hasattr(p, new[2:])]
    assert values == [False if "precompute" in old else (3 if "split" not in new else "3")]
    options = parser._option_string_actions  # the old name is no flag of its own, save train's Python field
    assert new in options and (old not in options or command == "train")


def test_precompute_ref_logps_is_a_deprecated_alias_in_python():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = SeqTempConfig(output_dir="unused", precompute_ref_logps=False)
    assert config.precompute_ref_log_probs is False and config.precompute_ref_logps is None
    assert any("use `precompute_ref_log_probs`" in str(w.message) for w in caught if w.category is FutureWarning)


def test_negative_flags_say_what_they_do_and_parse():
    from hf_seqtemp.cli.arguments import AuditArguments

    parser = SeqTempArgumentParser(AuditArguments)
    helps = " ".join(parser.format_help().split())
    assert "--no_plot, --no-plot Turn `--plot` off (it is on by default)." in helps
    assert "--no_chat_template, --no-chat-template Turn `--chat_template` off" in helps
    (args,) = parser.parse_args_into_dataclasses(["--no_plot"])
    (default,) = parser.parse_args_into_dataclasses([])
    assert (args.plot, args.chat_template, default.plot) == (False, True, True)


def test_bench_help_names_the_command_and_ends_its_sentence():
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "run_all.py"
    env = {"HF_SEQTEMP_PROG": "hf-seqtemp bench", "PATH": ""}
    run = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    text = " ".join(run.stdout.split())
    assert run.returncode == 0 and text.startswith("usage: hf-seqtemp bench ") and "run_all.py" not in text
    assert "with its target and verdict, and the fidelity figures." in text


# ---------------------------------------------------------------------------------------------------- errors
def test_errors_say_not_found_and_name_the_fix(workspace, trained, tmp_path, capsys, monkeypatch):
    base = ["--model_name_or_path", str(workspace / "base")]
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_path", "missing.jsonl"], capsys)
    assert "`--dataset_path` 'missing.jsonl' not found" in message
    monkeypatch.chdir(trained.parent)
    message = _error(["generate", *base, "--adapter_path", f"{trained.name}x/", "--prompt", "a",
                      "--seq_temperature", "0.5"], capsys)  # fmt: skip
    assert "is not a local folder; did you mean" in message
    typo = f"{trained.parent.name}/{trained.name}x"  # `user/name`-shaped, but `user` is a local folder
    monkeypatch.chdir(trained.parent.parent)
    message = _error(["generate", *base, "--adapter_path", typo, "--prompt", "a", "--seq_temperature", "0.5"], capsys)
    assert f"did you mean '{trained.parent.name}/{trained.name}'?" in message and "Hub" not in message


def test_a_wrong_column_names_the_flag_and_the_rename_before_loading_a_model(workspace, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_commands, "_load_base", lambda *a, **k: pytest.fail("loaded a model before the check"))
    data = tmp_path / "data.jsonl"
    data.write_text('{"Prompt": "a", "completions": "b"}\n', encoding="utf-8")
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_path", str(data)], capsys)
    assert "`--dataset_path` has columns ['Prompt', 'completions']" in message and "train_dataset" not in message
    assert "`dataset.rename_columns({'Prompt': 'prompt', 'completions': 'completion'})`" in message
    assert "set `--dataset_text_field`" in message


def test_train_without_output_dir_is_an_error(workspace, capsys):
    argv = [arg for arg in _train_args(workspace, "unused") if arg not in ("--output_dir", "unused")]
    message = _error([*argv, "--dataset_path", str(workspace / "train.jsonl")], capsys)
    assert "`--output_dir` is required" in message


def test_a_jsonl_with_a_cut_last_line_is_named_by_line(workspace, tmp_path, capsys):
    """A JSON Lines file whose last line was cut (a copy still being written) used to give a 78-line datasets
    traceback; the error names the file, the line and the fix, before any model loads."""
    path = tmp_path / "data.jsonl"
    good = '{"prompt": "a", "completion": "b"}\n'
    path.write_text(good * 3 + '{"prompt": "a", "compl', encoding="utf-8")
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_path", str(path)], capsys)
    assert f"`--dataset_path` '{path}': line 4 is not valid JSON (cut short" in message, message
    path.write_text(good + "[1, 2]\n", encoding="utf-8")
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_path", str(path)], capsys)
    assert "line 2 is a JSON list, not an object" in message, message


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".json []"])
def test_an_empty_dataset_file_is_named_by_train_and_eval(workspace, trained, tmp_path, capsys, suffix):
    """An empty (or blank) dataset file used to end `train` and `eval` in a bare `StopIteration` from datasets, and
    an empty JSON list in datasets' "Instruction "train" corresponds to no data!" without the file's name."""
    path = tmp_path / f"data{suffix.split()[0]}"
    path.write_text({".jsonl": "\n  \n", ".json": "", ".json []": " [ ]\n"}[suffix], encoding="utf-8")
    words = "is empty" if suffix == ".json" else "holds no example"
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_path", str(path)], capsys)
    assert f"`--dataset_path` '{path}' {words}" in message, message
    argv = ["eval", "--adapter_path", str(trained), "--model_name_or_path", str(workspace / "base")]
    message = _error([*argv, "--dataset_path", str(path)], capsys)
    assert f"`--dataset_path` '{path}' {words}" in message, message
