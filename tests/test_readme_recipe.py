# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The README and the pages a new user follows next, run as written: every block is read from the page itself, so a
test fails as soon as a page drifts.

Default run: the README's quick-start snippet (a 10-step training run of the embedded model) runs verbatim; the
training-free `custom_generate` recipe of `docs/sampling.md` runs verbatim; every `hf-seqtemp` line of
`docs/cli.md` is parsed by its own command's parser (the benchmarks answer `--help`), every flag its prose names
exists, and its `held_out.jsonl` example is read the way `hf-seqtemp eval` reads it. Slow: the quick start's
Hub-model variant runs in its place with the Hub id pointed at the embedded model's folder (offline); the steps run
end to end, every block in order (the README's quick start, then `docs/cli.md`) in one empty folder, with
`hf-seqtemp` found on `PATH` as `source .venv/bin/activate` puts it there.
"""

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import Dataset
from transformers import AutoTokenizer

from hf_seqtemp import cli
from hf_seqtemp.cli.parser import RENAMED_FLAGS, SeqTempArgumentParser
from hf_seqtemp.data import GROUP_ID, prepare_dataset
from hf_seqtemp.engine.serve import parser as serve_parser
from hf_seqtemp.models.default import default_model_path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CLI_PAGE = ROOT / "docs" / "cli.md"
SAMPLING_PAGE = ROOT / "docs" / "sampling.md"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
BIN = Path(sys.executable).parent  # the environment's scripts folder: what `source .venv/bin/activate` puts on PATH


def _blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in order."""
    return re.findall(r"```(\w+)\n(.*?)```", text, flags=re.DOTALL)


def _python_block(marker: str, page: Path = README) -> str:
    return next(
        code for lang, code in _blocks(page.read_text(encoding="utf-8")) if lang == "python" and marker in code
    )


def _command_lines(bash: str) -> list[list[str]]:
    """The commands of a bash block as argument lists (continuation lines joined, comments dropped)."""
    lines = bash.replace("\\\n", " ").splitlines()
    return [words for words in (shlex.split(line, comments=True) for line in lines) if words]


def _run(command: list[str], cwd: Path, stderr: list | None = None) -> str:
    """Runs `command` in `cwd` as a user would after activating the environment; returns its stdout (its stderr
    appended to `stderr` when given)."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    result = subprocess.run(command, cwd=cwd, check=False, capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, f"{command[:3]} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    if stderr is not None:
        stderr.append(result.stderr)
    return result.stdout


def test_the_custom_generate_recipe_runs_as_written(tmp_path):
    recipe = _python_block("custom_generate=hf_seqtemp.seqtemp_generate", SAMPLING_PAGE)
    (tmp_path / "recipe.py").write_text(recipe, encoding="utf-8")
    stdout = _run([sys.executable, "recipe.py"], tmp_path)
    answers = ast.literal_eval(stdout.strip().splitlines()[-1])  # the recipe prints the decoded answers
    assert isinstance(answers, list) and len(answers) == 1 and answers[0].strip()


def _prompt_questions(snippet: str, name: str) -> list[str]:
    """The questions passed to `prompts(...)` in the snippet's assignment to `name`."""
    for node in ast.walk(ast.parse(snippet)):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return [arg.value for arg in node.value.args]
    raise AssertionError(f"the quick start no longer assigns `{name} = prompts(...)`")


def test_readme_quick_start_runs_as_written_and_prints_what_it_measured(tmp_path):
    snippet = _python_block("SeqTempTrainer(")
    train, held_out = _prompt_questions(snippet, "train"), _prompt_questions(snippet, "held_out")
    assert held_out and not set(held_out) & set(train)  # measured on prompts unseen in training
    (tmp_path / "quick_start.py").write_text(snippet, encoding="utf-8")
    said: list[str] = []
    lines = _run([sys.executable, "quick_start.py"], tmp_path, said).strip().splitlines()
    assert "fewer than 8" not in said[0]  # enough held-out prompts for its figures: it warns of nothing of its own

    # it prints the figures `save_model` measured on the held-out prompts, the ones written beside the adapter
    adapter = tmp_path / "quickstart" / "adapter"
    config = json.loads((adapter / "seqtemp_config.json").read_text(encoding="utf-8"))
    generations = json.loads((adapter / "training_args.json").read_text(encoding="utf-8"))["num_generations"]
    assert config["eval_prompts"] == len(held_out) and config["eval_sequences"] == len(held_out) * generations
    printed = (
        f"held-out T_eff {config['eval_t_eff']:.3f} (target 0.5), Kendall tau {config['eval_kendall_tau']:.3f}, "
        f"over {config['eval_sequences']} completions of {config['eval_prompts']} unseen prompts"
    )
    assert printed in lines
    card = (adapter / "README.md").read_text(encoding="utf-8")
    assert f"| tempered (this adapter) | {config['eval_t_eff']:.4f} |" in card and "| myopic baseline" in card
    # ... then a completion of the first held-out prompt, sampled at sequence temperature 0.5
    prompt, completion = lines[-1].split(" -> ", 1)
    assert prompt == held_out[0] and completion.strip()


def _hub_variant() -> str:
    """The quick start with its `load_default_model()` line replaced by the README's Hub-model block, the Hub id
    pointed at the embedded model's converted folder (the same weights, offline) and 2 training steps."""
    quick_start, hub = _python_block("SeqTempTrainer("), _python_block("AutoModelForCausalLM.from_pretrained(")
    assert hub.count(f'"{HUB_ID}"') == 2  # the variant loads the model and the tokenizer from the Hub id
    line = next(line for line in quick_start.splitlines() if "load_default_model()" in line and "=" in line)
    script = quick_start.replace(line, hub.replace(f'"{HUB_ID}"', repr(str(default_model_path()))))
    assert "max_steps=10" in script
    return script.replace("max_steps=10", "max_steps=2")


@pytest.mark.slow  # a second real-model training run (37 s); the quick start above is the default run's
def test_readme_hub_model_variant_runs_in_place_of_the_embedded_model(tmp_path):
    (tmp_path / "hub_variant.py").write_text(_hub_variant(), encoding="utf-8")
    lines = _run([sys.executable, "hub_variant.py"], tmp_path).strip().splitlines()
    config = json.loads((tmp_path / "quickstart" / "adapter" / "seqtemp_config.json").read_text(encoding="utf-8"))
    assert any(line.startswith(f"held-out T_eff {config['eval_t_eff']:.3f} (target 0.5)") for line in lines)
    assert lines[-1].startswith("Name an animal. -> ")


def _parsers() -> dict[str, SeqTempArgumentParser]:
    return {
        name: SeqTempArgumentParser(cli._dataclass_types(name), prog=f"hf-seqtemp {name}")
        for name in ("train", "eval", "generate", "audit")
    }


def test_the_command_line_page_parses_as_written(tmp_path, monkeypatch):
    """Every command of `docs/cli.md` parses with its own flags, every flag in its prose exists, and the
    `held_out.jsonl` rows it shows are read as one prompt with the completions it names."""
    section = CLI_PAGE.read_text(encoding="utf-8")
    assert (BIN / "hf-seqtemp").is_file()  # installed by `make venv` (`pip install -e .`) next to the interpreter
    monkeypatch.chdir(tmp_path)
    parsers, shown = _parsers(), set()
    for lang, code in _blocks(section):
        for words in _command_lines(code) if lang == "bash" else []:
            if words[0] != "hf-seqtemp":
                continue
            shown.add(words[1])
            if words[1] == "bench":  # the benchmarks take minutes: `--help` after the flags checks them
                assert "--only" in _run([*words, "--help"], tmp_path)
            elif words[1] == "serve":  # a server runs until stopped (tests/engine starts them): its flags only
                serve_parser().parse_args(words[2:])
            else:
                parsers[words[1]].parse_flags(words[2:])  # an unknown flag or a bad value exits here
    assert shown == set(cli.COMMANDS)
    known = {option for parser in parsers.values() for option in parser._option_string_actions}
    known |= {"--quick", "--only", "--results"}  # benchmarks/run_all.py, checked by `--help` above
    known |= set(serve_parser()._option_string_actions)  # `hf-seqtemp serve`'s argparse flags
    known |= {"--config"}  # TRL's YAML file, read before the parser (`hf_seqtemp.cli.parser.config_file_flags`)
    known |= {old for renames in RENAMED_FLAGS.values() for old in renames}  # deprecated aliases, still accepted
    assert set(re.findall(r"(?<![\w-])--\w+", section)) <= known

    rows = [json.loads(line) for lang, code in _blocks(section) if lang == "json" for line in code.splitlines()]
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    prepared = prepare_dataset(Dataset.from_list(rows), tokenizer, "text", 4096, "held_out")
    assert len(prepared) == len(rows) >= 2 and len(set(prepared[GROUP_ID])) == 1  # one prompt, several completions
    scored = [
        tokenizer.decode([t for t, m in zip(r["input_ids"], r["completion_mask"]) if m], skip_special_tokens=True)
        for r in prepared
    ]
    assert scored == [row["completion"][0]["content"] for row in rows]  # the completion, not the prompt, is scored


def _first_hour_blocks() -> list[tuple[str, str]]:
    """The steps a new user runs one after the other: every python and bash block of the README (the quick start),
    then of `docs/cli.md`, less setup (`make`, `pip install`: the demo has tests of its own) and the Hub-model
    variant (it needs the Hub; tested above in place of the quick start's model)."""
    blocks = _blocks(README.read_text(encoding="utf-8")) + _blocks(CLI_PAGE.read_text(encoding="utf-8"))

    def setup(lang: str, code: str) -> bool:  # and `hf-seqtemp serve`, a server that runs until it is stopped
        lines = _command_lines(code) if lang == "bash" else []
        return any(
            words[0] in ("make", "pip")
            or words[:2] == ["hf-seqtemp", "serve"]
            or "examples/my_prompts.jsonl" in words  # the own-data run: minutes, timed by benchmarks/first_hour.py
            for words in lines
        )

    return [
        (lang, code)
        for lang, code in blocks
        if lang in ("python", "bash") and not setup(lang, code) and f'"{HUB_ID}"' not in code
    ]


@pytest.mark.slow
def test_readme_blocks_run_in_order_in_one_folder_as_written(tmp_path):
    """Every step in order, in one folder: no step trips over what an earlier one wrote (the quick start's
    checkpoints and the command line's `--output_dir out` are different folders)."""
    stdout = []
    for index, (lang, code) in enumerate(_first_hour_blocks()):
        if lang == "bash":
            stdout.append(_run(["bash", "-e", "-c", code], tmp_path))
        elif lang == "python":
            (tmp_path / f"block_{index}.py").write_text(code, encoding="utf-8")
            stdout.append(_run([sys.executable, f"block_{index}.py"], tmp_path))
    stdout = "\n".join(stdout)

    assert (tmp_path / "quickstart" / "adapter" / "seqtemp_config.json").is_file()  # the quick start's, kept apart
    # `train` held out whole prompts, measured the adapter on them and said so
    trained = (tmp_path / "prompts.txt").read_text(encoding="utf-8").split("\n")
    trained = [line for line in trained if line]
    config = json.loads((tmp_path / "out" / "seqtemp_config.json").read_text(encoding="utf-8"))
    assert 1 <= config["eval_prompts"] < len(trained) and config["eval_sequences"] >= 2 * config["eval_prompts"]
    assert f"T_eff {config['eval_t_eff']:.4f} (target 0.5)" in stdout
    # `eval` measured on completions of prompts that are not in the training file
    held_out = [json.loads(line) for line in (tmp_path / "held_out.jsonl").read_text(encoding="utf-8").splitlines()]
    unseen = {row["prompt"][-1]["content"] for row in held_out}
    assert unseen and not unseen & set(trained)
    result = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))
    assert result["num_prompts"] == len(unseen) and result["num_sequences"] == len(held_out)
    assert result["reports"]["base"]["t_eff"] == pytest.approx(1.0) and result["reports"]["myopic"]["t_eff"] < 1.0
    # `generate` printed a completion of its prompt
    completion = stdout.split("### Name a colour.\n", 1)[1].splitlines()[0]
    assert completion.startswith("- ") and completion[2:].strip()


def test_the_own_data_recipe_of_the_training_page_parses_and_reads_as_prompts(tmp_path, monkeypatch):
    """Training's "your own data": its JSONL rows are a prompt-only dataset, and its command line parses with
    `train`'s own flags (the run itself is `train`'s, tested in tests/test_cli_first_hour.py)."""
    from hf_seqtemp.data import detect_format

    section = (ROOT / "docs" / "training.md").read_text(encoding="utf-8").split("## Your own data", 1)[1]
    blocks = _blocks(section.split("\n## ", 1)[0])
    rows = [json.loads(line) for lang, code in blocks if lang == "json" for line in code.splitlines()]
    assert len(rows) >= 3 and detect_format(Dataset.from_list(rows).column_names, "text", "my.jsonl") == "prompt_only"
    commands = [words for lang, code in blocks if lang == "bash" for words in _command_lines(code)]
    assert [words[:2] for words in commands] == [["hf-seqtemp", "train"]]
    monkeypatch.chdir(tmp_path)
    script, config = _parsers()["train"].parse_flags(commands[0][2:])
    assert script.dataset_path == "my.jsonl" and script.eval_fraction == 0.25 and config.target_temperature == 0.5


def test_the_readmes_own_data_command_parses_and_its_file_holds_prompts(tmp_path, monkeypatch):
    """The README's own-data command (timed by `benchmarks/first_hour.py`, step `owndata`) parses with `train`'s own
    flags, and the file it trains on is a prompt-only dataset of enough prompts that a quarter held out is 8."""
    from hf_seqtemp.data import detect_format

    section = README.read_text(encoding="utf-8").split("### Your own data", 1)[1].split("\n## ", 1)[0]
    commands = [words for lang, code in _blocks(section) if lang == "bash" for words in _command_lines(code)]
    assert [words[:2] for words in commands] == [["hf-seqtemp", "train"]]
    script, _ = _parsers()["train"].parse_flags(commands[0][2:])
    rows = [json.loads(line) for line in (ROOT / script.dataset_path).read_text(encoding="utf-8").splitlines()]
    assert detect_format(Dataset.from_list(rows).column_names, "text", script.dataset_path) == "prompt_only"
    assert len({row["prompt"][-1]["content"] for row in rows}) * script.eval_fraction >= 8
