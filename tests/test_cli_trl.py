# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The command line takes TRL's habits: `--config cfg.yaml` (read as TRL's `TrlParser` reads it, the command line
winning), `--dataset_name` (a Hub dataset, never silently taken as `--dataset_names`), `--use_peft` and `--dtype`;
no flag matches by prefix."""

import pytest
import torch
from test_cli import _error, _train_args, workspace  # noqa: F401 (fixture)

from hf_seqtemp.cli import main
from hf_seqtemp.cli.arguments import TrainScriptArguments
from hf_seqtemp.cli.parser import SeqTempArgumentParser, config_file_flags
from hf_seqtemp.trainer import SeqTempConfig


def _parse(argv):
    parser = SeqTempArgumentParser((TrainScriptArguments, SeqTempConfig), prog="hf-seqtemp train")
    return parser.parse_flags(config_file_flags(argv, "hf-seqtemp train"))


def test_a_yaml_config_is_read_as_trls_parser_reads_it(tmp_path):
    """Its keys become the flags' values; a flag on the command line wins, as with `TrlParser`."""
    from trl import GRPOConfig, TrlParser

    path = tmp_path / "train.yaml"
    path.write_text("learning_rate: 0.002\nmax_steps: 7\nbf16: false\nlora_target_modules: [q_proj, v_proj]\n")
    script, config = _parse(["--config", str(path), "--output_dir", str(tmp_path / "o"), "--max_steps", "9"])
    assert config.learning_rate == 0.002 and config.max_steps == 9 and config.bf16 is False
    assert script.lora_target_modules == ["q_proj", "v_proj"]
    (theirs,) = TrlParser((GRPOConfig,)).parse_args_and_config(
        args=["--config", str(path), "--output_dir", str(tmp_path / "t"), "--max_steps", "9"],
        fail_with_unknown_args=False,
    )[:1]
    assert (theirs.learning_rate, theirs.max_steps, theirs.bf16) == (config.learning_rate, config.max_steps, False)


def test_dataset_name_is_its_own_flag_and_no_flag_matches_by_prefix(workspace, tmp_path, capsys):  # noqa: F811
    """`--dataset_name X` used to be taken silently as `--dataset_names` (card metadata), flags matching by
    prefix."""
    script, _ = _parse(["--output_dir", str(tmp_path / "o"), "--dataset_name", "me/prompts"])
    assert script.dataset_name == "me/prompts" and script.dataset_names == []
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_nam", "me/prompts"], capsys)
    assert "unrecognised flag(s): --dataset_nam (did you mean --dataset_name?)" in message
    message = _error([*_train_args(workspace, tmp_path / "o"), "--dataset_name", "nobody/nothing-here"], capsys)
    assert "`--dataset_name` 'nobody/nothing-here' could not be read" in message and "--dataset_path" in message


def test_use_peft_false_fine_tunes_the_whole_model_and_dtype_loads_it(workspace, tmp_path):  # noqa: F811
    """TRL's `--use_peft` and `--dtype`: on by default here (the adapter is what is shipped), `false` trains the
    whole model; `--dtype bfloat16` loads the base in bfloat16."""
    from hf_seqtemp.cli.arguments import ModelArguments
    from hf_seqtemp.cli.commands import _load_base

    model, _ = _load_base(ModelArguments(model_name_or_path=str(workspace / "base"), dtype="bfloat16"))
    assert next(model.parameters()).dtype == torch.bfloat16
    out = tmp_path / "full"
    argv = [*_train_args(workspace, out, "--dataset_path", str(workspace / "train.jsonl")), "--use_peft", "false"]
    argv[argv.index("--max_steps") + 1] = "1"
    assert main(argv) == 0
    names = {path.name for path in out.iterdir()}
    assert "model.safetensors" in names and "adapter_model.safetensors" not in names


@pytest.mark.parametrize("flag", ["--use_peft", "--dtype", "--dataset_name", "--dataset_config"])
def test_the_trl_flags_are_in_train_help(flag, capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help-all"])
    assert flag in capsys.readouterr().out


def test_trls_model_and_lora_flags_mean_the_same_here(workspace, tmp_path):  # noqa: F811
    """`--attn_implementation`, `--trust_remote_code`, `--model_revision`, `--lora_modules_to_save`, `--use_rslora`,
    `--use_dora`, `--lora_task_type` and the bitsandbytes flags used to be a bare "unrecognised flag"; now they do
    what `trl grpo` does with them."""
    import json

    out = tmp_path / "o"
    extra = [
        "--dataset_path", str(workspace / "train.jsonl"), "--attn_implementation", "eager", "--model_revision",
        "main", "--trust_remote_code", "false", "--lora_modules_to_save", "lm_head", "--use_rslora", "true",
        "--lora_task_type", "CAUSAL_LM", "--load_in_4bit", "false",
    ]  # fmt: skip
    argv = _train_args(workspace, out, *extra)
    argv[argv.index("--max_steps") + 1] = "1"
    assert main(argv) == 0
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert adapter["use_rslora"] is True and adapter["modules_to_save"] == ["lm_head"]
    script, config = _parse(["--output_dir", str(tmp_path / "p"), "--lora_dropout", "0.05"])
    assert script.lora_dropout == 0.05 == TrainScriptArguments.lora_dropout  # TRL's default, turned off while training
    assert config.trust_remote_code is False


def test_quantisation_without_bitsandbytes_is_named(workspace, tmp_path, capsys):  # noqa: F811
    data = ["--dataset_path", str(workspace / "train.jsonl")]
    message = _error([*_train_args(workspace, tmp_path / "o", *data), "--load_in_4bit", "true"], capsys)
    assert "`--load_in_4bit` needs the `bitsandbytes` package" in message


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--temperature", "GRPO's `--temperature`: a sampling setting of GRPO's policy"),
        ("--beta", "a beta corresponds to `target_temperature=beta / (1 + beta)`"),
        ("--max_prompt_length", "TRL's `--max_prompt_length`: TRL's prompt cut; here `--max_length`"),
        ("--dataset_streaming", "a streamed dataset cannot be read here"),
        ("--epsilon", "GRPO's `--epsilon`: a setting of GRPO's clipped policy-gradient objective"),
    ],
)
def test_a_trl_flag_is_told_what_it_means_here_never_sent_to_another(workspace, tmp_path, capsys, flag, words):  # noqa: F811
    """ "Did you mean" used to send `--temperature` to `--target_temperature` and `--dataset_test_split` to
    `--dataset_train_split`: flags of another meaning."""
    message = _error([*_train_args(workspace, tmp_path / "o"), flag, "1"], capsys)
    assert words in message and "did you mean" not in message


def test_dataset_test_split_is_the_held_out_split_as_in_trl(workspace, tmp_path):  # noqa: F811
    import json

    from datasets import Dataset, DatasetDict

    from hf_seqtemp import SequenceTemperatureConfig

    texts = [json.loads(row)["text"] for row in (workspace / "train.jsonl").read_text().splitlines()]
    DatasetDict(
        {"train": Dataset.from_dict({"text": texts[:24]}), "test": Dataset.from_dict({"text": texts[24:]})}
    ).save_to_disk(tmp_path / "splits")
    out = tmp_path / "o"
    argv = _train_args(workspace, out, "--dataset_path", str(tmp_path / "splits"), "--dataset_test_split", "test")
    argv[argv.index("--max_steps") + 1] = "1"
    assert main(argv) == 0
    assert SequenceTemperatureConfig.from_pretrained(out).eval_sequences == 8


def test_a_yaml_configs_env_section_is_set_as_trls_parser_sets_it(tmp_path, monkeypatch):
    """TrlParser's `env:` section used to fail (`--env` is no flag)."""
    import os

    monkeypatch.delenv("SEQTEMP_TEST_VARIABLE", raising=False)
    path = tmp_path / "train.yaml"
    path.write_text("env:\n  SEQTEMP_TEST_VARIABLE: seen\nmax_steps: 3\n")
    _, config = _parse(["--config", str(path), "--output_dir", str(tmp_path / "o")])
    assert config.max_steps == 3 and os.environ["SEQTEMP_TEST_VARIABLE"] == "seen"
