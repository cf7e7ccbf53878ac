# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp serve MODEL` (or `python -m hf_seqtemp.engine.serve MODEL`): a vLLM server for this package.

Prints its log's path, then starts the server from the engine's venv with
[`~hf_seqtemp.engine.server.EngineSettings`] (float32, processed log-probs, prefix caching, a bounded context),
waits until it answers, prints its URL and process id, and keeps it running until Ctrl-C or SIGTERM, then stops its
whole process group. Point training at it with `SeqTempConfig(use_vllm=True, vllm_server_base_url=URL)` and
sampling with `generate(..., engine=URL)`.

MODEL is a model folder or a Hub id, checked before anything starts; `--default_model` (or the embedded model's
cache folder given as MODEL) serves the embedded SmolLM2-135M-Instruct, whose folder is written first if this
machine has none yet. No flag matches by prefix; vLLM's spellings of `serve`'s own flags (`--max-model-len`) are
accepted, and vLLM's other flags go after `--`, passed to vLLM as they are.

Examples:

    hf-seqtemp serve --default_model --port 8000
    hf-seqtemp serve BASE --port 8001 --adapter tempered=outputs/adapter   # the proposal server of adapter SMC
    hf-seqtemp serve BASE -- --tensor-parallel-size 2                      # a vLLM flag `serve` does not set
"""

from __future__ import annotations

import argparse
import difflib
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

from .client import EngineError
from .server import LOGPROBS_MODES, EngineServer, EngineSettings, engine_python

PROG = "hf-seqtemp serve"
EMBEDDED = "SmolLM2-135M-Instruct"
SET_BY_SERVE = {
    "model": "vLLM's `--model` is the positional MODEL here: `hf-seqtemp serve FOLDER_OR_HUB_ID` (or "
    "`--default_model` for the embedded SmolLM2-135M-Instruct)",
    "lora_modules": "vLLM's `--lora-modules` is `--adapter NAME=FOLDER` here (once per adapter)",
    "enable_lora": "`--adapter NAME=FOLDER` turns LoRA on",
    "max_lora_rank": "`serve` sets it from the adapters' own ranks (their adapter_config.json)",
    "seed": "each request carries its own seed (the samplers draw them, so a draw is reproducible); the engine's "
    "global seed is fixed at 0",
    "generation_config": "`serve` always passes `--generation-config vllm`: exact sampling reads no sampling default "
    "from the model's generation_config.json",
    "enable_prefix_caching": "`serve` always turns prefix caching on",
}
"""vLLM flags that `serve` sets itself (and has no flag of its own for), with what to do instead."""


def _adapter(value: str) -> tuple[str, str]:
    name, sep, folder = value.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"`--adapter` takes NAME=FOLDER, got {value!r}.")
    if not (Path(folder) / "adapter_config.json").is_file():
        where = "does not exist" if not Path(folder).exists() else "holds no adapter_config.json"
        raise argparse.ArgumentTypeError(
            f"`--adapter {value}`: {folder!r} {where}: give NAME=FOLDER of a PEFT adapter folder (a trained "
            "hf_seqtemp folder, or `peft_model.save_pretrained(FOLDER)`)."
        )
    return name, folder


def _name(flag: str) -> str:
    """`--max-model-len=5` -> `max_model_len`."""
    return flag.split("=", 1)[0].lstrip("-").replace("-", "_")


class ServeArgumentParser(argparse.ArgumentParser):
    """The flags of `hf-seqtemp serve`: no prefix matching, vLLM's dash spellings of its own flags (`--max-model-len`
    is `--max_model_len`), vLLM's other flags after `--` (`vllm_args`), and an error that names the flag to use
    instead of a bare "unrecognized arguments"."""

    def __init__(self, **kwargs):
        kwargs.setdefault("prog", PROG)
        kwargs.setdefault("usage", "%(prog)s MODEL | --default_model [--flag VALUE ...] [-- VLLM_FLAG ...]")
        kwargs.setdefault("allow_abbrev", False)  # `--gpu 0.5` must not silently become `--gpu_memory_utilization`
        super().__init__(**kwargs)

    def own_flags(self) -> list[str]:
        return sorted(option for option in self._option_string_actions if option.startswith("--"))

    def _underscored(self, arg: str) -> str:
        """vLLM's `--max-model-len` as `serve`'s `--max_model_len` (any other argument as it is)."""
        flag, sep, value = arg.partition("=")
        own = "--" + flag[2:].replace("-", "_")
        return own + sep + value if arg.startswith("--") and own in self._option_string_actions else arg

    def error(self, message: str):
        """Prints the one-line usage, the error and where to find every flag, then exits with status 2."""
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\nRun `{self.prog} --help` to list every flag.\n")

    def parse_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        split = args.index("--") if "--" in args else len(args)
        own = [self._underscored(arg) for arg in args[:split]]
        parsed, unknown = super().parse_known_args(own, namespace)
        if unknown:
            self.error(self._unknown(unknown))
        parsed.vllm_args = args[split + 1 :]
        for flag in (arg for arg in parsed.vllm_args if arg.startswith("--")):
            name = _name(flag)
            if name in SET_BY_SERVE:
                self.error(f"`{flag.split('=', 1)[0]}` after `--`: {SET_BY_SERVE[name]}.")
            if f"--{name}" in self._option_string_actions:
                self.error(
                    f"`{flag.split('=', 1)[0]}` after `--` would override what `serve` sets: use serve's own "
                    f"`--{name}` (before `--`)."
                )
        return parsed

    def _unknown(self, unknown: list[str]) -> str:
        flags = [arg for arg in unknown if arg.startswith("-")]
        if not flags:
            return f"unexpected value(s) {' '.join(unknown)}: MODEL is one value, every other value follows its flag."
        message = "; ".join(self._advice(flag) for flag in flags)
        return message if message.endswith("?") else message + "."

    def _advice(self, flag: str) -> str:
        given, name, known = flag.split("=", 1)[0], _name(flag), self.own_flags()
        if name in SET_BY_SERVE:
            return f"`{given}`: {SET_BY_SERVE[name]}"
        longer = [option for option in known if option.startswith(given)]
        if longer:
            return f"`{given}`: no flag matches by prefix: did you mean {longer[0]}?"
        close = difflib.get_close_matches(given, known, n=1, cutoff=0.75)
        if close:
            return f"unrecognised flag `{given}` (did you mean {close[0]}?)"
        return (
            f"`{given}` is not a flag of `hf-seqtemp serve`; vLLM's own flags go after `--`, as vLLM spells them: "
            f"`hf-seqtemp serve MODEL -- --{name.replace('_', '-')} VALUE`"
        )


def parser() -> ServeArgumentParser:
    out = ServeArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="vLLM's own flags go after `--`, as vLLM spells them: `hf-seqtemp serve MODEL -- "
        "--tensor-parallel-size 2`. Flags `serve` sets itself are refused there by name.",
    )
    out.add_argument(
        "model", nargs="?", default=None, help="the base model's folder (config.json and weights) or Hub id"
    )
    out.add_argument("--default_model", action="store_true", help=f"serve the embedded {EMBEDDED} (no MODEL)")
    out.add_argument("--port", type=int, default=8000, help="TCP port (0: a free one)")
    out.add_argument("--host", default="127.0.0.1", help="interface (0.0.0.0 serves other nodes)")
    out.add_argument("--adapter", type=_adapter, action="append", default=[], help="a LoRA to serve: NAME=FOLDER")
    out.add_argument(
        "--logprobs_mode",
        default="processed_logprobs",
        choices=LOGPROBS_MODES,
        help="what the engine's log-probability of a sampled token is: under the law it was drawn from (log r), or "
        "raw log p (the token proposal of SMC and MH need the first)",
    )
    out.add_argument("--max_model_len", type=int, default=2048, help="longest prompt + completion")
    out.add_argument("--dtype", default="float32", help="weights' dtype")
    out.add_argument("--served_model_name", default=None, help="name of the base model in requests")
    out.add_argument("--threads", type=int, default=None, help="CPU threads (vLLM's CPU build)")
    out.add_argument("--kv_cache_memory_bytes", type=int, default=None, help="KV cache size (CPU default 1 GiB)")
    out.add_argument("--gpu_memory_utilization", type=float, default=None, help="share of GPU memory (GPU builds)")
    out.add_argument("--skip_tokenizer_init", action="store_true", help="token ids only (no tokenizer)")
    out.add_argument("--start_timeout", type=float, default=300.0, help="seconds to wait for the server to answer")
    out.add_argument("--log_file", default=None, help="the server's output (default: a new temporary file)")
    return out


def checked_model(model: str | None, default_model: bool) -> str | None:
    """MODEL as vLLM should get it, or `None` for the embedded model (its folder may not exist yet); raises a
    `ValueError` naming MODEL for anything vLLM would only fail on after its start (tens of seconds)."""
    if default_model and model is not None:
        raise ValueError(f"give MODEL or `--default_model`, not both (got MODEL {model!r}).")
    if model is None:
        if default_model:
            return None
        raise ValueError(f"MODEL is missing: give a model folder, a Hub id, or `--default_model` ({EMBEDDED}).")
    path = Path(model).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return str(path)
    if path.name == EMBEDDED:  # (torch is imported only here)
        from ..models.default import cached_model_folder

        if path.resolve() == cached_model_folder().resolve():
            return None  # the documented `~/.cache/hf_seqtemp/SmolLM2-135M-Instruct`, written on first use
    if path.is_file():
        raise ValueError(f"MODEL {model!r} is a file: give the folder that holds config.json and the weights.")
    if path.is_dir():
        if (path / "adapter_config.json").is_file():
            raise ValueError(
                f"MODEL {model!r} is a PEFT adapter, not a model: serve its base model with the adapter by name, "
                f"`hf-seqtemp serve BASE --adapter NAME={model}`."
            )
        raise ValueError(f"MODEL {model!r} has no config.json: not a model folder (`save_pretrained` writes one).")
    _check_hub_id(model, path)
    return model


def _check_hub_id(model: str, path: Path) -> None:
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(model)
    except HFValidationError:
        hint = ""
        if path.name == EMBEDDED:
            from ..models.default import cached_model_folder

            hint = f" The embedded model's folder here is {cached_model_folder()}: `--default_model` writes it."
        raise ValueError(
            f"MODEL {model!r} is neither an existing folder nor a Hub id ('name' or 'namespace/name'): give the "
            f"folder of a saved model (config.json and weights), a Hub id, or `--default_model` ({EMBEDDED}).{hint}"
        ) from None
    if "/" in model and Path(model.split("/")[0]).is_dir():
        raise ValueError(
            f"MODEL {model!r} is not a folder here, though {model.split('/')[0]!r} is: a mistyped path? (As a Hub id "
            "it would be downloaded.) Give an existing model folder."
        )
    if constants.HF_HUB_OFFLINE and not isinstance(try_to_load_from_cache(model, "config.json"), str):
        raise ValueError(
            f"MODEL {model!r} is a Hub id, and the Hub is offline (`HF_HUB_OFFLINE=1`) with no copy of it in "
            f"{constants.HF_HUB_CACHE}: download it once online, or give its folder."
        )


def _log_file(given: str | None) -> str:
    if given:
        return given
    handle, path = tempfile.mkstemp(prefix="hf_seqtemp_engine_", suffix=".log")
    os.close(handle)
    return path


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    try:
        model = checked_model(args.model, args.default_model)
        python = engine_python()
    except (ValueError, FileNotFoundError) as error:
        command.error(str(error))
    from ..models.default import cached_model_folder, default_model_path

    log_file = _log_file(args.log_file)
    print(f"starting the engine on {model or cached_model_folder()} (log: {log_file}) ...", flush=True)
    if model is None:
        try:
            model = str(default_model_path())  # converts the embedded GGUF file the first time (about 40 s)
        except (ImportError, FileNotFoundError) as error:
            command.error(str(error))
    settings = EngineSettings(
        model=model,
        port=args.port,
        host=args.host,
        served_model_name=args.served_model_name,
        dtype=args.dtype,
        logprobs_mode=args.logprobs_mode,
        max_model_len=args.max_model_len,
        adapters=dict(args.adapter),
        kv_cache_memory_bytes=args.kv_cache_memory_bytes,
        gpu_memory_utilization=args.gpu_memory_utilization,
        skip_tokenizer_init=args.skip_tokenizer_init,
        threads=args.threads,
        extra_args=args.vllm_args,
        log_file=log_file,
    )
    server = EngineServer(settings, python=str(python))
    try:
        server.start(timeout=args.start_timeout)
    except (ValueError, FileNotFoundError) as error:  # an adapter vLLM cannot serve (its rank, its files)
        command.error(str(error))
    except EngineError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    return _serve_until_stopped(server, model)


def _serve_until_stopped(server: EngineServer, model: str) -> int:
    print(f"serving {model} at {server.url} (process group {server.pid}, log {server.log_file})", flush=True)
    if not server.can_score:
        print(
            "note: vLLM's CPU build crashes its engine on prompt log-probabilities when LoRA is enabled: use this "
            "server to propose with its adapters only, beside a server of the base model without adapters.",
            flush=True,
        )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    try:
        while not done.wait(1.0):
            if server.process.poll() is not None:
                print(f"the engine exited (code {server.process.returncode}):\n{server.log_tail()}", file=sys.stderr)
                return 1
    finally:
        server.stop()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
