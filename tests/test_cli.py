# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import dataclasses
import json
import os
import random
import re

import pytest
import torch
from tiny_models import save_word_base, tiny_causal_lm, word_tokenizer
from transformers import AutoModelForCausalLM

from hf_seqtemp import SeqTempConfig, SequenceTemperatureConfig, hub, load_tempered
from hf_seqtemp.cli import COMMANDS, main
from hf_seqtemp.cli import commands as cli_commands
from hf_seqtemp.generation.routing import generate_tempered
from hf_seqtemp.metrics.core import effective_temperature, kendall_tau

WORDS = ["a", "b", "c", "d"]


def _tokenizer():
    return word_tokenizer()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A tiny base model + tokenizer folder, a train and a held-out jsonl file, and a prompts file."""
    root = tmp_path_factory.mktemp("cli")
    save_word_base(root / "base")
    rng = random.Random(0)
    for name, count in (("train", 32), ("held_out", 16)):
        with open(root / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            handle.writelines(
                json.dumps({"text": " ".join(rng.choice(WORDS) for _ in range(4))}) + "\n" for _ in range(count)
            )
    (root / "prompts.txt").write_text("a b\n\nc\n", encoding="utf-8")
    return root


def _train_args(root, out, *extra):
    return [
        "train",
        "--model_name_or_path",
        str(root / "base"),
        "--output_dir",
        str(out),
        "--max_steps",
        "6",
        "--learning_rate",
        "0.05",
        "--lora_r",
        "4",
        "--lora_alpha",
        "8",
        "--lora_target_modules",
        "q_proj",
        "v_proj",
        "--per_device_train_batch_size",
        "16",
        "--use_cpu",
        "--save_strategy",
        "no",
        "--target_temperature",
        "0.5",
        *extra,
    ]


@pytest.fixture(scope="module")
def trained(workspace):
    out = workspace / "adapter"
    assert main(_train_args(workspace, out, "--dataset_path", str(workspace / "train.jsonl"))) == 0
    return out


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert all(name in text for name in COMMANDS) and "hf-seqtemp <command> --help" in text
    assert main([]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in COMMANDS)


@pytest.mark.parametrize("command", ["train", "eval", "generate"])
def test_command_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help-all" if command == "train" else "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: hf-seqtemp {command}" in text and "--default_model" in text
    if command == "train":  # every SeqTempConfig field is a flag
        flags = [f"--{f.name}" for f in dataclasses.fields(SeqTempConfig) if f.init]
        assert [flag for flag in flags if flag not in text] == []
        for flag in (
            "--lora_r",
            "--lora_alpha",
            "--lora_target_modules",
            "--dataset_path",
            "--sample_prompts_file",
            "--num_generations",
            "--max_completion_length",
            "--model_name_or_path",
        ):
            assert flag in text
    if command == "generate":
        assert "--seq-temperature" in text and "{auto,adapter,mcmc,glauber,smc}" in text


def test_train_help_is_short_and_the_full_list_is_one_flag_away(capsys):
    """`train --help` shows the flags a first run needs (in their groups) and how to see the rest; `--help-all`
    lists every flag, LoRA, quantisation and every TrainingArguments field included."""
    assert main(["train", "--help"]) == 0
    short = capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["train", "--help-all"])
    full = capsys.readouterr().out
    assert len(short.splitlines()) <= 120 and len(full.splitlines()) > 400
    for flag in ("--dataset_path", "--eval_fraction", "--target_temperature", "--output_dir", "--max_steps"):
        assert flag in short
    assert "`hf-seqtemp train --help-all`" in short and "more flags" in short
    assert "--lora_dropout" not in short and "--lora_dropout" in full and "--gradient_accumulation_steps" in full


def _oracle(base, tempered, tokenizer, path):
    """T_eff, τ and NLL/token from a plain per-sequence loop in float64 (no hf_seqtemp scoring)."""
    values = {"base": [], "tempered": []}
    tokens = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            ids = torch.tensor([tokenizer(json.loads(line)["text"])["input_ids"]])
            tokens += ids.shape[1] - 1
            with torch.no_grad():
                for name, model in (("base", base), ("tempered", tempered)):
                    logps = model(input_ids=ids).logits[0, :-1].double().log_softmax(-1)
                    values[name].append(logps.gather(-1, ids[0, 1:, None]).sum().item())
    return {
        name: {
            "t_eff": effective_temperature(values["base"], v),
            "kendall_tau": kendall_tau(values["base"], v),
            "nll_per_token": -sum(v) / tokens,
        }
        for name, v in values.items()
    }


def test_train_then_eval(workspace, trained, tmp_path, capsys):
    assert {"adapter_model.safetensors", "seqtemp_config.json"} <= set(os.listdir(trained))
    assert SequenceTemperatureConfig.from_pretrained(trained).target_temperature == 0.5
    out_json = tmp_path / "eval.json"
    held_out = workspace / "held_out.jsonl"
    assert (
        main(
            [
                "eval",
                "--adapter_path",
                str(trained),
                "--dataset_path",
                str(held_out),
                "--output_json",
                str(out_json),
                "--batch_size",
                "5",
            ]
        )
        == 0
    )  # base resolved from the config
    printed = capsys.readouterr().out
    result = json.loads(out_json.read_text())
    base = AutoModelForCausalLM.from_pretrained(workspace / "base")
    tempered = load_tempered(trained, base_model=AutoModelForCausalLM.from_pretrained(workspace / "base"))
    oracle = _oracle(base, tempered, _tokenizer(), held_out)
    assert result["num_sequences"] == 16 and result["myopic_token_temperature"] == 0.5
    for name in ("base", "tempered"):
        for key, value in oracle[name].items():
            assert result["reports"][name][key] == pytest.approx(value, abs=1e-5), (name, key)
    assert abs(result["reports"]["tempered"]["t_eff"] - 1) > 0.05  # the adapter moved away from the base
    assert f"{result['reports']['tempered']['t_eff']:15.4f}" in printed and "myopic baseline" in printed


def test_train_from_sampled_prompts_and_push(workspace, tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(hub, "push_to_hub", lambda folder, repo_id, **kw: calls.append((folder, repo_id, kw)))
    monkeypatch.setattr(hub, "check_can_push", lambda token=None: None)  # the tests run offline
    monkeypatch.setattr(hub, "create_repo", lambda repo_id, private=None, token=None: repo_id)  # already user/name
    out = tmp_path / "sampled"
    assert (
        main(
            _train_args(
                workspace,
                out,
                "--sample_prompts_file",
                str(workspace / "prompts.txt"),
                "--num_generations",
                "8",
                "--max_completion_length",
                "3",
                "--eval_fraction",
                "0.25",
                "--push_to_hub",
                "--hub_model_id",
                "me/cli-run",
                "--hub_private_repo",
                "true",
                "--dataset_names",
                "me/prompts",
            )
        )
        == 0
    )
    folder, repo_id, kwargs = calls[0]
    assert repo_id == "me/cli-run" and kwargs["private"] is True
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as handle:
        card = handle.read()
    config = SequenceTemperatureConfig.from_pretrained(folder)
    # prompt only: the trainer sampled 8 completions of each prompt; one of the two prompts is held out, unseen
    assert "Measured on 8 held-out sequences from `me/prompts`" in card
    assert f"| tempered (this adapter) | {config.eval_t_eff:.4f} |" in card
    # and `train` says what it measured, as recorded beside the adapter
    saved = SequenceTemperatureConfig.from_pretrained(out)
    printed = capsys.readouterr().out
    assert (
        f"measured within prompts on 8 completions of 1 held-out prompt, never trained on: T_eff "
        f"{saved.eval_t_eff:.4f} (target 0.5), Kendall tau {saved.eval_kendall_tau:.4f}"
    ) in printed
    # before any of it, the plan: the work and its estimated time on this machine
    plan = re.search(
        r"the plan: sample 8 completions of at most 3 tokens for each of 1 training prompts and 8 of each of 1 "
        r"held-out prompts \(16 completions, 2 sampling calls\), then 6 optimisation steps of 16 rows, then measure "
        r"the adapter on the held-out prompts\. Estimated on this machine \(a probe of the loaded model, \d+ s\): "
        r"sampling at most \d+ s, training about \d+ s, measuring about \d+ s: about \d+ s in all",
        printed,
    )
    assert plan is not None, printed
    assert printed.index("the plan:") < printed.index("measured within prompts")


def test_train_without_a_held_out_set_says_that_nothing_was_measured(trained):
    assert cli_commands._saved_summary(str(trained)) == (
        f"adapter saved to {trained} (seqtemp_config.json, model card README.md); nothing measured: pass "
        "`--eval_fraction` to hold out prompts and measure on them."
    )


def test_generate_matches_the_python_api(workspace, trained, tmp_path):
    out_json = tmp_path / "samples.json"
    assert (
        main(
            [
                "generate",
                "--adapter_path",
                str(trained),
                "--model_name_or_path",
                str(workspace / "base"),
                "--prompt",
                "a b",
                "c",
                "--seq-temperature",
                "0.5",
                "--num_samples",
                "3",
                "--max_new_tokens",
                "4",
                "--seed",
                "7",
                "--output_json",
                str(out_json),
            ]
        )
        == 0
    )
    samples = json.loads(out_json.read_text())
    tokenizer = _tokenizer()
    model = load_tempered(trained, base_model=AutoModelForCausalLM.from_pretrained(workspace / "base"))
    torch.manual_seed(7)
    for entry, prompt in zip(samples, ["a b", "c"]):
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"].repeat(3, 1)
        out = generate_tempered(
            model, ids, torch.ones_like(ids), seq_temperature=0.5, max_new_tokens=4, pad_token_id=5
        )
        assert entry["completions"] == tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)
    assert sum(len(c.split()) for e in samples for c in e["completions"]) > 0


def test_generate_mcmc_on_the_base_model(workspace, tmp_path):
    out_json = tmp_path / "mcmc.json"
    assert (
        main(
            [
                "generate",
                "--model_name_or_path",
                str(workspace / "base"),
                "--prompt",
                "a",
                "--strategy",
                "mcmc",
                "--seq_temperature",
                "0.5",
                "--num_samples",
                "2",
                "--max_new_tokens",
                "3",
                "--mcmc_steps",
                "2",
                "--output_json",
                str(out_json),
            ]
        )
        == 0
    )
    completions = json.loads(out_json.read_text())[0]["completions"]
    assert len(completions) == 2 and all(len(c.split()) <= 3 for c in completions)


def test_bench_passes_arguments_through(tmp_path, monkeypatch):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "run_all.py").write_text(
        "import sys, pathlib\npathlib.Path('argv.txt').write_text(' '.join(sys.argv[1:]))\nsys.exit(3)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--quick", "--only", "block_dp"]) == 3
    expected = f"--quick --only block_dp --results {tmp_path / 'outputs' / 'bench'}"  # written where it runs
    assert (tmp_path / "argv.txt").read_text() == expected


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_errors_name_the_flag(workspace, trained, tmp_path, capsys, monkeypatch):
    base = ["--model_name_or_path", str(workspace / "base")]
    data = ["--dataset_path", str(workspace / "train.jsonl")]
    assert "`--target_temperature` must be a finite float > 0, got 0.0" in _error(
        ["train", "--target_temperature", "0", "--output_dir", str(tmp_path), *base, *data], capsys
    )
    assert "argument --loss_type/--loss-type: invalid choice: 'x'" in _error(["train", "--loss_type", "x"], capsys)
    assert "exactly one of `--dataset_path`, `--dataset_name` and `--sample_prompts_file`" in _error(
        ["train", "--output_dir", str(tmp_path), *base], capsys
    )
    (tmp_path / "data.csv").write_text("text\na b\n", encoding="utf-8")
    assert "`--dataset_path` must be a `load_from_disk` folder or a .json/.jsonl file" in _error(
        ["train", "--output_dir", str(tmp_path), *base, "--dataset_path", str(tmp_path / "data.csv")], capsys
    )
    assert "`--dataset_path` 'nope.jsonl' not found" in _error(
        ["train", "--output_dir", str(tmp_path), *base, "--dataset_path", "nope.jsonl"], capsys
    )
    assert "`--eval_fraction` must be in [0, 1), got 1.5" in _error(
        ["train", "--output_dir", str(tmp_path), *base, *data, "--eval_fraction", "1.5"], capsys
    )
    assert "pass either `--default_model` or `--model_name_or_path`, not both" in _error(
        ["train", "--output_dir", str(tmp_path), *base, *data, "--default_model"], capsys
    )
    assert "no base model: pass `--model_name_or_path" in _error(
        ["train", "--output_dir", str(tmp_path), *data], capsys
    )
    assert "`--num_generations` must be an integer ≥ 1, got 0" in _error(
        [
            "train",
            "--output_dir",
            str(tmp_path),
            *base,
            "--sample_prompts_file",
            str(workspace / "prompts.txt"),
            "--num_generations",
            "0",
        ],
        capsys,
    )
    assert "`--adapter_path` is required" in _error(["eval", *base, *data], capsys)
    assert "`--prompt` is required" in _error(["generate", *base, "--seq_temperature", "0.5"], capsys)
    assert "`--seq_temperature` is required without `--adapter_path`" in _error(
        ["generate", *base, "--prompt", "a"], capsys
    )
    diffusion = tmp_path / "diffusion"
    SequenceTemperatureConfig(0.5, model_family="masked_diffusion").save_pretrained(diffusion)
    assert "supports causal LMs only (schedule variance of diffusion models is not supported here" in _error(
        ["eval", "--adapter_path", str(diffusion), *base, *data], capsys
    )
    monkeypatch.setattr(cli_commands, "_bench_candidates", lambda: [tmp_path / "benchmarks" / "run_all.py"])
    assert "`hf-seqtemp bench` needs benchmarks/run_all.py" in _error(["bench"], capsys)


def test_eval_on_completions_that_are_one_and_the_same_is_refused_by_name(workspace, trained, tmp_path, capsys):
    """`hf-seqtemp eval` on a file whose completions are all one sequence printed NaN everywhere and a wrong hint
    ("widen `low`/`high`"): T_eff and τ are undefined without two different completions. Now one error says so."""
    same = tmp_path / "same.jsonl"
    same.write_text((json.dumps({"text": "a b c d"}) + "\n") * 8)
    argv = ["eval", "--adapter_path", str(trained), "--model_name_or_path", str(workspace / "base")]
    error = _error([*argv, "--dataset_path", str(same)], capsys)
    assert "hf-seqtemp eval: error: `held_out_dataset`: " in error and "one and the same sequence" in error
    assert "low" not in error and "nan" not in error.lower()
    assert main([*argv, "--dataset_path", str(workspace / "held_out.jsonl")]) == 0  # different completions: it runs
    assert "nan" not in capsys.readouterr().out.lower()


@pytest.mark.slow
def test_train_then_eval_on_the_embedded_model(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Name a colour.\nName an animal.\n", encoding="utf-8")
    sampling = [
        "--sample_prompts_file",
        str(prompts),
        "--num_generations",
        "4",
        "--max_completion_length",
        "4",
        "--system_prompt",
        "Answer briefly.",
    ]
    assert (
        main(
            [
                "train",
                "--default_model",
                *sampling,
                "--output_dir",
                str(tmp_path / "adapter"),
                "--max_steps",
                "2",
                "--lora_r",
                "4",
                "--per_device_train_batch_size",
                "8",
                "--use_cpu",
                "--save_strategy",
                "no",
            ]
        )
        == 0
    )
    out_json = tmp_path / "eval.json"
    assert (
        main(
            [
                "eval",
                "--adapter_path",
                str(tmp_path / "adapter"),
                *sampling,
                "--sample_seed",
                "1",
                "--output_json",
                str(out_json),
            ]
        )
        == 0
    )
    result = json.loads(out_json.read_text())
    assert result["base_model"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and result["num_sequences"] == 8
    assert result["reports"]["base"]["t_eff"] == pytest.approx(1.0)
    assert result["reports"]["myopic"]["t_eff"] < 1.0  # token temperature 0.5 sharpens


def test_generate_takes_t_from_the_adapter_and_auto_never_picks_mh(workspace, trained, tmp_path, capsys, monkeypatch):
    """With an adapter, `--seq_temperature` defaults to the T it was trained for (said on stdout); without one,
    `--strategy auto` samples by SMC (plain sampling's model calls per answer), never by MH (5-6x as many)."""
    from hf_seqtemp.generation import strategies

    base = ["--model_name_or_path", str(workspace / "base"), "--prompt", "a", "--max_completion_length", "3"]
    out_json = tmp_path / "adapter.json"
    assert main(["generate", "--adapter_path", str(trained), *base, "--output_json", str(out_json)]) == 0
    assert f"T = 0.5, the temperature {trained} was trained for" in capsys.readouterr().out
    assert len(json.loads(out_json.read_text())[0]["completions"]) == 1
    used = []
    monkeypatch.setitem(strategies.STRATEGY_REGISTRY, "mcmc", lambda call: pytest.fail("`auto` picked MH"))
    smc = strategies.STRATEGY_REGISTRY["smc"]
    monkeypatch.setitem(strategies.STRATEGY_REGISTRY, "smc", lambda call: used.append("smc") or smc(call))
    assert main(["generate", *base, "--seq_temperature", "0.5"]) == 0
    assert used == ["smc"]


def test_no_warning_for_a_top_k_nobody_set(monkeypatch):
    """transformers fills in `top_k=50` when neither the call nor the model's generation config sets it; the
    sequence temperature drops it without a warning. A top-k someone did set is named when dropped."""
    from transformers.generation.logits_process import TopKLogitsWarper

    from hf_seqtemp.generation import strategies

    warned = []
    monkeypatch.setattr(strategies.logger, "warning_once", lambda message: warned.append(message))
    model = tiny_causal_lm(6, seed=0)
    call = strategies.GenerateCall(model, None, [TopKLogitsWarper(50)], None, None, False, None, {}, 0.5)
    assert list(call.target_processors()) == [] and warned == []
    call.logits_processor = [TopKLogitsWarper(10)]
    assert list(call.target_processors()) == [] and "TopKLogitsWarper" in warned[0]
    model.generation_config.top_k = 50  # the model's own setting: named too
    call.logits_processor = [TopKLogitsWarper(50)]
    call.target_processors()
    assert len(warned) == 2
