# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp serve` without starting vLLM: the embedded model's folder exists before the server is launched, a
MODEL that is neither a folder nor a Hub id is refused at once, the log path is printed first, no flag matches by
prefix, and vLLM's own spellings are answered with the flag to use. The launch itself is intercepted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hf_seqtemp.engine import serve
from hf_seqtemp.models import default as default_module


class _Launched(Exception):
    """Raised by the stand-in server where the real one would start vLLM."""


@pytest.fixture
def launches(monkeypatch, capsys):
    """Replaces the engine server of `serve`: records its settings, what was printed and whether the model's folder
    existed when it was about to be launched, then stops `main` with [`_Launched`]."""
    seen = []

    class FakeServer:
        def __init__(self, settings, python=None, grace=10.0):
            self.settings, self.log_file, self.process = settings, settings.log_file, None

        def start(self, timeout=300.0):
            model = Path(self.settings.model)
            seen.append({"settings": self.settings, "printed": capsys.readouterr().out,
                         "config_exists": (model / "config.json").is_file()})  # fmt: skip
            raise _Launched()

    monkeypatch.setattr(serve, "EngineServer", FakeServer)
    monkeypatch.setattr(serve, "engine_python", lambda: Path("/fake/python"), raising=False)
    yield seen
    for launched in seen:  # the temporary logs `serve` created
        log = Path(launched["settings"].log_file or "")
        if log.name.startswith("hf_seqtemp_engine_"):
            log.unlink(missing_ok=True)


def _fake_conversion(gguf, target: Path):
    """The GGUF conversion's result, without its 40 s: a folder with a config (written beside, then moved in)."""
    partial = target.with_name(target.name + ".partial")
    partial.mkdir(parents=True)
    (partial / "config.json").write_text(json.dumps({"model_type": "llama"}))
    partial.rename(target)


@pytest.mark.parametrize("how", ["--default_model", "documented cache path"])
def test_serve_materialises_the_embedded_model_folder_before_it_launches_the_server(how, launches, monkeypatch,
                                                                                     tmp_path):  # fmt: skip
    """On a clean machine (an empty cache), `serve --default_model` and the documented
    `serve ~/.cache/hf_seqtemp/SmolLM2-135M-Instruct` convert the embedded model first, and vLLM gets that folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HF_SEQTEMP_CACHE", raising=False)
    monkeypatch.setattr(default_module, "_convert", _fake_conversion)
    monkeypatch.setattr(default_module, "default_gguf_path", lambda: Path("/fake/model.gguf"))
    folder = tmp_path / ".cache" / "hf_seqtemp" / "SmolLM2-135M-Instruct"
    assert not folder.exists()
    argv = ["--default_model"] if how == "--default_model" else [str(folder)]
    with pytest.raises(_Launched):
        serve.main([*argv, "--port", "8000"])
    (launched,) = launches
    assert launched["settings"].model == str(folder) and launched["config_exists"]


@pytest.mark.slow
def test_serve_default_model_converts_the_real_embedded_model(launches, monkeypatch, tmp_path):
    """The same with the real conversion of the package's GGUF file (about 40 s)."""
    monkeypatch.setenv("HF_SEQTEMP_CACHE", str(tmp_path))
    with pytest.raises(_Launched):
        serve.main(["--default_model"])
    (launched,) = launches
    assert launched["settings"].model == str(tmp_path / "SmolLM2-135M-Instruct") and launched["config_exists"]


def test_serve_prints_its_log_path_before_it_starts_the_server(launches, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(_Launched):
        serve.main([str(folder)])
    (launched,) = launches
    log = launched["settings"].log_file
    assert log and Path(log).is_file() and f"log: {log}" in launched["printed"]
    with pytest.raises(_Launched):
        serve.main([str(folder), "--log_file", str(tmp_path / "engine.log")])
    assert f"log: {tmp_path / 'engine.log'}" in launches[1]["printed"]


@pytest.mark.parametrize(
    "model,message",
    [
        ("/no/such/folder/SmolLM2", r"MODEL '/no/such/folder/SmolLM2' is neither an existing folder nor a Hub id"),
        ("{folder}/missing", r"neither an existing folder nor a Hub id"),
        ("{file}", r"MODEL '.*weights.bin' is a file"),
        ("{empty}", r"has no config.json"),
        ("{adapter}", r"is a PEFT adapter.*--adapter NAME="),
        ("/elsewhere/SmolLM2-135M-Instruct", r"--default_model"),
    ],
)
def test_serve_refuses_a_model_that_is_neither_a_folder_nor_a_hub_id_at_once(model, message, launches, capsys,
                                                                           tmp_path):  # fmt: skip
    (tmp_path / "weights.bin").write_text("")
    (tmp_path / "empty").mkdir()
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    model = model.format(folder=tmp_path, file=tmp_path / "weights.bin", empty=tmp_path / "empty",
                         adapter=tmp_path / "adapter")  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        serve.main([model])
    assert exit_info.value.code == 2 and not launches
    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize(
    "argv,message",
    [
        ([], r"MODEL is missing: give a model folder, a Hub id, or `--default_model`"),
        (["some/model", "--default_model"], r"give MODEL or `--default_model`, not both"),
        (["adapter/checkpoint"], r"MODEL 'adapter/checkpoint' is not a folder here, though 'adapter' is"),
    ],
)
def test_serve_names_a_missing_doubled_or_mistyped_model(argv, message, launches, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adapter").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        serve.main(argv)
    assert exit_info.value.code == 2 and not launches
    assert re.search(message, capsys.readouterr().err)


def test_serve_refuses_an_uncached_hub_id_offline(launches, capsys, monkeypatch, tmp_path):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(SystemExit):
        serve.main(["someone/never-downloaded"])
    assert "offline" in capsys.readouterr().err and not launches
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(_Launched):  # online, a Hub id is vLLM's to download
        serve.main(["someone/never-downloaded"])


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        serve.parser().parse_args(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_serve_flags_never_match_by_prefix(capsys):
    err = _error(["model", "--gpu", "0.5"], capsys)
    assert "--gpu" in err and "did you mean --gpu_memory_utilization" in err and "prefix" in err
    assert serve.parser().parse_args(["model", "--gpu_memory_utilization", "0.5"]).gpu_memory_utilization == 0.5


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--model", "folder"], r"`--model`.*positional MODEL.*`hf-seqtemp serve FOLDER_OR_HUB_ID`"),
        (["m", "--tensor_parallel_size", "1"], r"`--tensor_parallel_size`.*after `--`.*-- --tensor-parallel-size"),
        (["m", "--tensor-parallel-size", "1"], r"`--tensor-parallel-size`.*after `--`"),
        (["m", "--lora-modules", "a=b"], r"`--lora-modules`.*`--adapter NAME=FOLDER`"),
        (["m", "--seed", "1"], r"`--seed`.*each request"),
        (["m", "--", "--dtype", "bfloat16"], r"`--dtype` after `--`.*serve's own `--dtype`"),
        (["m", "--", "--port=9000"], r"`--port` after `--`.*serve's own `--port`"),
    ],
)
def test_serve_names_the_flag_to_use_for_vllms_spellings(argv, message, capsys):
    err = _error(argv, capsys)
    assert "unrecognized arguments" not in err
    assert re.search(message, err), err


def test_serve_takes_vllms_dash_spellings_of_its_own_flags_and_passes_the_rest_after_a_double_dash():
    args = serve.parser().parse_args(["m", "--max-model-len", "64", "--dtype", "bfloat16", "--port", "0", "--host",
                                      "0.0.0.0", "--", "--tensor-parallel-size", "2"])  # fmt: skip
    assert (args.max_model_len, args.dtype, args.port, args.host) == (64, "bfloat16", 0, "0.0.0.0")
    assert args.vllm_args == ["--tensor-parallel-size", "2"]


@pytest.mark.parametrize("made", [False, True])
def test_serve_names_a_missing_adapter_folder_without_a_traceback(made, capsys, tmp_path):
    """`hf-seqtemp serve --adapter NAME=MISSING` printed a traceback (after the model's start-up); now a one-line
    error at once, naming the folder and what it lacks."""
    folder = tmp_path / "adapter"
    if made:
        folder.mkdir()
    err = _error(["m", "--adapter", f"cold={folder}"], capsys)
    what = "holds no adapter_config.json" if made else "does not exist"
    assert re.search(rf"`--adapter cold=.*adapter'? {what}: give NAME=FOLDER of a PEFT adapter", err), err
    assert "Traceback" not in err
