# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The server helper and the client without vLLM: the command line exact sampling needs, the stop by process group
(SIGTERM, then SIGKILL), the watchdog when the owner dies, and the client's errors and requests, against small
stand-in servers (a fake engine that serves `/v1/models` and spawns a child, stdlib HTTP handlers)."""

from __future__ import annotations

import http.server
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from hf_seqtemp.engine import EngineClient, EngineError, EngineServer, EngineSettings, engine_python
from hf_seqtemp.engine.client import MAX_N, NEUTRAL_SAMPLING
from hf_seqtemp.engine.server import free_port
from hf_seqtemp.engine.supervise import group_alive

FAKE_ENGINE = textwrap.dedent(
    f"""\
    #!{sys.executable}
    # a stand-in for the engine venv's python: `-c` answers the CPU-build probe, anything else serves /v1/models
    import http.server, json, signal, subprocess, sys, time
    if sys.argv[1] == "-c":
        print(1)
        sys.exit()
    if "--exit-at-once" in sys.argv:
        print("boom: the model folder is unreadable", flush=True)
        sys.exit(3)
    if "--ignore-sigterm" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                      "time.sleep(600)"])  # an engine core that outlives a plain kill of its parent
    port = int(sys.argv[sys.argv.index("--port") + 1])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            payload = json.dumps({{"data": [{{"id": "fake", "parent": None, "max_model_len": 64}}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


@pytest.fixture
def fake_python(tmp_path):
    path = tmp_path / "python"
    path.write_text(FAKE_ENGINE)
    path.chmod(0o755)
    return str(path)


def test_the_command_line_has_the_settings_exact_sampling_needs(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 12}))
    settings = EngineSettings(model="base", port=8123, adapters={"tempered": str(adapter)}, max_model_len=512)
    command = " ".join(settings.command("py", cpu_build=True))
    for part in ("--dtype float32", "--logprobs-mode processed_logprobs", "--generation-config vllm",
                 "--enable-prefix-caching", "--max-model-len 512", "--enable-lora", "--max-lora-rank 16",
                 f"--lora-modules tempered={adapter}", f"--kv-cache-memory-bytes {1 << 30}", "--enforce-eager",
                 "--port 8123", "--no-enable-chunked-prefill --max-num-batched-tokens 8192"):  # fmt: skip
        assert part in command, part
    gpu = " ".join(EngineSettings(model="base", gpu_memory_utilization=0.5).command("py", cpu_build=False))
    assert "--gpu-memory-utilization 0.5" in gpu and "--kv-cache-memory-bytes" not in gpu
    assert "--enforce-eager" not in gpu and "--enable-lora" not in gpu and "chunked" not in gpu
    assert settings.environment(cpu_build=True)["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"


@pytest.mark.parametrize("mode", ["raw_logits", "processed_logits"])
def test_the_logits_modes_are_refused_by_name(mode):
    with pytest.raises(ValueError, match=f"`logprobs_mode` must be one of .*got '{mode}': the logits modes return"):
        EngineSettings(model="base", logprobs_mode=mode)


def test_a_missing_engine_venv_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_SEQTEMP_VLLM_PYTHON", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(FileNotFoundError, match="make venv-vllm"):
        engine_python()


def _group_pids(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,pgid=,stat="], capture_output=True, text=True, check=True).stdout
    return [int(p) for p, g, s in (line.split() for line in out.splitlines()) if int(g) == pgid and s[0] != "Z"]


@pytest.mark.parametrize("engine_ignores_sigterm", [False, True])
def test_a_server_is_stopped_by_its_process_group(fake_python, tmp_path, engine_ignores_sigterm):
    extra = ["--ignore-sigterm"] if engine_ignores_sigterm else []
    settings = EngineSettings(model="m", extra_args=extra, log_file=str(tmp_path / "log"))
    server = EngineServer(settings, python=fake_python, grace=2.0).start(timeout=60)
    assert server.client().model == "fake" and server.cpu_build
    pgid = server.pid
    assert len(_group_pids(pgid)) >= 3  # the watchdog, the engine and its child
    start = time.monotonic()
    server.stop()
    assert not group_alive(pgid) and _group_pids(pgid) == []
    assert time.monotonic() - start < 30


def test_the_watchdog_stops_the_server_when_its_owner_is_killed(fake_python, tmp_path):
    owner = textwrap.dedent(
        f"""\
        import os, signal
        from hf_seqtemp.engine import EngineServer, EngineSettings
        server = EngineServer(EngineSettings(model="m"), python={fake_python!r}, grace=2.0).start(timeout=60)
        print(server.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    run = subprocess.run([sys.executable, "-c", owner], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == -signal.SIGKILL, run.stderr
    pgid = int(run.stdout.split()[0])
    deadline = time.monotonic() + 60
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not group_alive(pgid), _group_pids(pgid)


def test_a_server_that_exits_while_starting_is_reported_with_its_log(fake_python, tmp_path):
    settings = EngineSettings(model="m", extra_args=["--exit-at-once"], log_file=str(tmp_path / "log"))
    server = EngineServer(settings, python=fake_python)
    with pytest.raises(EngineError, match="(?s)exited while starting.*boom: the model folder is unreadable"):
        server.start(timeout=60)
    assert server.process is None


class _Stub:
    """A stdlib HTTP server whose POST handler is `answer(body) -> (status, payload)` (it may sleep)."""

    def __init__(self, answer):
        self.bodies = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append(body)
                status, payload = answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.send_response(200)
                data = json.dumps({"data": [{"id": "stub", "parent": None, "max_model_len": 64}]}).encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _choices(body):
    return 200, {"choices": [{"index": i, "token_ids": [7], "logprobs": {"token_logprobs": [-0.5]}}
                             for i in range(body["n"])]}  # fmt: skip


def test_every_sampling_request_is_exact_and_seeded_per_completion():
    stub = _Stub(_choices)
    try:
        client = EngineClient(stub.url + "/v1/")
        out = client.sample([[1, 2], [1, 2, 3]], [4, 2], [9, 7], seeds=[10, 20], n=[2, MAX_N + 3], temperature=0.5)
    finally:
        stub.close()
    assert [len(o) for o in out] == [2, MAX_N + 3] and out[0][0].tokens == [7] and out[0][0].stopped
    by_seed = sorted(stub.bodies, key=lambda body: body["seed"])
    assert [(b["seed"], b["n"], b["max_tokens"]) for b in by_seed] == [(10, 2, 4), (20, MAX_N, 2), (20 + MAX_N, 3, 2)]
    for body in stub.bodies:
        assert {k: body[k] for k in NEUTRAL_SAMPLING} == NEUTRAL_SAMPLING
        assert body["temperature"] == 0.5 and body["stop_token_ids"] == [7, 9] and body["ignore_eos"] is True
        assert body["model"] == "stub" and body["logprobs"] == 0 and body["return_token_ids"] is True


def test_the_clients_errors_name_the_server_and_the_fix():
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineError, match=f"{dead} does not answer .*died or was never started"):
        EngineClient(dead).models()
    with pytest.raises(EngineError, match="no engine server answered within 1 s"):
        EngineClient(dead).wait_until_up(1.0)
    stub = _Stub(lambda body: (time.sleep(2.0), (200, {}))[1])
    try:
        with pytest.raises(EngineError, match="gave no answer to /v1/completions within 0.5 s"):
            EngineClient(stub.url, timeout=0.5).sample([[1]], 1, [], seeds=[0])
    finally:
        stub.close()
    for status, error, match in [(500, EngineError, "failed on /v1/completions \\(HTTP 500\\)"),
                                 (400, EngineError, "refused /v1/completions \\(HTTP 400\\): .*too long")]:  # fmt: skip
        stub = _Stub(lambda body, status=status: (status, {"error": "prompt too long"}))
        try:
            with pytest.raises(error, match=match):
                EngineClient(stub.url).sample([[1]], 1, [], seeds=[0])
        finally:
            stub.close()
    with pytest.raises(ValueError, match="`base_url` must be an http"):
        EngineClient("localhost:8000")


def test_a_server_that_cannot_score_is_refused_before_it_crashes():
    client = EngineClient("http://127.0.0.1:1")
    client.can_score = False
    with pytest.raises(ValueError, match="crashes its engine on prompt log-probabilities when LoRA is enabled"):
        client.score([[1, 2]], [1])


def test_serve_refuses_a_malformed_adapter(tmp_path):
    from hf_seqtemp.engine.serve import parser

    with pytest.raises(SystemExit):
        parser().parse_args(["model", "--adapter", "no-equals-sign"])
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")  # a PEFT adapter folder (its missing form: test_serve_cli.py)
    assert parser().parse_args(["model", "--adapter", f"t0_5={folder}"]).adapter == [("t0_5", str(folder))]
