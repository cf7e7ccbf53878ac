# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The engine client fails fast and by name (issue 58, item 5), against stdlib stand-in servers on 127.0.0.1: a
server that hangs is reported within one timeout whatever the number of prompts, a closed port stops training at
once, and every malformed reply is an [`EngineError`] naming the server and what was wrong. No vLLM is started."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from hf_seqtemp.engine import EngineClient, EngineError, EngineReplyError
from hf_seqtemp.engine.server import free_port

HANG_BOUND = 30.0  # seconds: the longest a stand-in handler ever waits, even if a test forgets to close its stub


class _Stub:
    """A threaded stdlib HTTP server on 127.0.0.1 whose POST handler is `answer(body) -> (status, raw bytes,
    declared Content-Length or None)`; `answer` may return `None` to hang until the stub is closed (at most
    `HANG_BOUND` seconds). GET answers `/v1/models` with `models` (raw bytes)."""

    def __init__(self, answer, models: bytes | None = None):
        self.bodies, self.closed = [], threading.Event()
        stub = self
        models = models or json.dumps({"data": [{"id": "stub", "parent": None, "max_model_len": 64}]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, status: int, data: bytes, length: int | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                self.close_connection = True

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append(body)
                reply = answer(body)
                if reply is None:
                    stub.closed.wait(HANG_BOUND)  # a hung engine: the request is read, never answered
                    return
                self._send(*reply)

            def do_GET(self):
                self._send(200, models)

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            request_queue_size = 512  # 64 concurrent connects must not overflow the listen backlog (SYN retries)
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _json(payload) -> tuple[int, bytes, None]:
    return 200, json.dumps(payload).encode(), None


def _sampled(body, logp=-0.5):
    return _json({"choices": [{"index": i, "token_ids": [7], "logprobs": {"token_logprobs": [logp]}}
                              for i in range(body["n"])]})  # fmt: skip


# ---------------------------------------------------------------- a hung server


def test_a_hung_server_is_reported_within_one_timeout_whatever_the_number_of_prompts():
    """256 distinct prompts, 64 requests in flight at a time, a server that reads every request and answers none:
    the error comes after one `timeout`, not one per wave of 64 (4×), and the requests not yet sent are dropped."""
    timeout = 2.0
    with _Stub(lambda body: None) as stub:
        client = EngineClient(stub.url, timeout=timeout, model="stub")
        start = time.monotonic()
        with pytest.raises(EngineError, match=f"{stub.url}.*(no answer|answered none).* within 2 s"):
            client.sample([[1, i] for i in range(256)], 4, [3], seeds=list(range(256)))
        elapsed = time.monotonic() - start
        sent = len(stub.bodies)
    print(f"hung server, 256 prompts, timeout {timeout:g} s: EngineError after {elapsed:.2f} s ({sent} requests sent)")
    assert elapsed < timeout + 1.5, elapsed
    assert sent <= client.max_concurrency, sent


def test_a_server_that_keeps_answering_is_not_cut_by_the_timeout():
    """The timeout bounds the wait for an answer, not the whole call: 6 waves of answers 0.3 s apart, 1 s timeout."""
    with _Stub(lambda body: (time.sleep(0.3), _sampled(body))[1]) as stub:
        client = EngineClient(stub.url, timeout=1.0, model="stub", max_concurrency=2)
        out = client.sample([[1, i] for i in range(12)], 4, [3], seeds=list(range(12)))
    assert [len(o) for o in out] == [1] * 12


# ---------------------------------------------------------------- a closed port during training


def test_a_refused_connection_stops_training_at_once_naming_the_server(tmp_path):
    """Nothing listens at `vllm_server_base_url`: the trainer's first draw fails in about no time, not after
    `vllm_server_timeout` (30 s here; 240 s by default) of polling a closed port."""
    from datasets import Dataset
    from engine_models import engine_llama, word_tokenizer
    from peft import LoraConfig

    from hf_seqtemp import SeqTempConfig, SeqTempTrainer

    dead = f"http://127.0.0.1:{free_port()}"
    args = SeqTempConfig(
        output_dir=str(tmp_path), target_temperature=0.5, num_generations=2, max_completion_length=3,
        per_device_train_batch_size=2, per_device_eval_batch_size=2, max_steps=1, save_strategy="no", use_cpu=True,
        disable_tqdm=True, report_to="none", use_vllm=True, vllm_server_base_url=dead, vllm_server_timeout=30.0,
    )  # fmt: skip
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"])
    prompts = Dataset.from_dict({"prompt": ["x", "x y"]})
    start = time.monotonic()
    with pytest.raises(EngineError, match=f"{dead} does not answer .*refused.*hf-seqtemp serve"):
        trainer = SeqTempTrainer(engine_llama(), args, train_dataset=prompts, processing_class=word_tokenizer(),
                                 peft_config=lora)  # fmt: skip
        trainer.train()
    assert time.monotonic() - start < 10.0


# ---------------------------------------------------------------- malformed replies


def _truncated(body):
    data = json.dumps({"choices": [{"index": 0, "token_ids": [7], "logprobs": {"token_logprobs": [-0.5]}}]})
    return 200, data.encode()[:20], len(data)  # declares the whole body, sends 20 bytes, closes


def _scored(sequences_logprob):
    def answer(body):
        return _json({"choices": [{"index": i, "prompt_logprobs": [None] + [{str(t): {"logprob": sequences_logprob}}
                                   for t in seq[1:]]} for i, seq in enumerate(body["prompt"])]})  # fmt: skip

    return answer


def _sample(client):
    return client.sample([[1, 2]], 2, [3], seeds=[0])


def _score(client):
    return client.score([[1, 2, 3]], [1])


MALFORMED = {  # case: (the stub's POST answer, its /v1/models reply, the call, what the error must say)
    "truncated body": (_truncated, None, _sample, r"cut short \(20 of \d+ bytes\)"),
    "not JSON": (
        lambda body: (200, b"<html>502 Bad Gateway</html>", None),
        None,
        _sample,
        "not JSON.*502 Bad Gateway",
    ),
    "no choices": (lambda body: _json({"object": "error", "message": "oops"}), None, _sample, "no `choices`.*oops"),
    "null log-prob": (lambda body: _sampled(body, None), None, _sample, "log-probability.* null"),
    "no token ids": (
        lambda body: _json({"choices": [{"index": 0, "text": "a", "logprobs": {"token_logprobs": [-1]}}]}),
        None,
        _sample,
        "no `token_ids`",
    ),
    "null prompt log-prob": (_scored(None), None, _score, "prompt log-probability.* null"),
    "models without data": (
        _sampled,
        json.dumps({"models": []}).encode(),
        lambda client: client.model,
        "no `data`",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_every_malformed_reply_is_an_engine_error_naming_the_server_and_the_fault(case):
    answer, models, call, what = MALFORMED[case]
    with _Stub(answer, models) as stub:
        client = EngineClient(stub.url, timeout=10.0)
        with pytest.raises(EngineReplyError, match=f"(?s){stub.url}.*{what}"):
            call(client)


def test_a_malformed_reply_is_not_waited_for():
    """Polling a server until it is up stops at a malformed reply: it answers, so waiting does not help (a LoRA
    entry's null `max_model_len` once made every poll of a good server fail for the whole start timeout)."""
    good = {
        "data": [{"id": "b", "parent": None, "max_model_len": 64}, {"id": "a", "parent": "b", "max_model_len": None}]
    }
    with _Stub(_sampled, json.dumps(good).encode()) as stub:
        EngineClient(stub.url).wait_until_up(5.0)
    with _Stub(_sampled, json.dumps({"models": []}).encode()) as stub:
        start = time.monotonic()
        with pytest.raises(EngineReplyError, match="no `data`"):
            EngineClient(stub.url).wait_until_up(30.0)
    assert time.monotonic() - start < 5.0


# ---------------------------------------------------------------- long scoring lists


def test_more_sequences_than_vllm_takes_in_one_request_are_scored_in_several():
    """vLLM refuses a prompt list longer than 1024 (HTTP 400, `VLLM_MAX_COMPLETION_PROMPTS`): PIMH over 33 runs of
    2000 answers at N = 4 asked it to score 1078 distinct sequences at once. 2500 distinct sequences are scored in
    three requests of at most 1024, every sequence with its own log-probabilities, in order."""

    def answer(body):
        prompts = body["prompt"]
        if len(prompts) > 1024:
            return (
                400,
                json.dumps({"error": {"message": f"prompt list length {len(prompts)} exceeds 1024"}}).encode(),
                None,
            )
        choices = [
            {"index": i, "prompt_logprobs": [None] + [{str(t): {"logprob": -0.001 * seq[0] - t}} for t in seq[1:]]}
            for i, seq in enumerate(prompts)
        ]
        return _json({"choices": choices})

    sequences = [[i, 1, 2] for i in range(2500)]
    with _Stub(answer) as stub:
        client = EngineClient(stub.url, model="stub")
        scores = client.score(sequences, [1] * len(sequences))
        sizes = sorted(len(body["prompt"]) for body in stub.bodies)
    assert sizes == [452, 1024, 1024]
    assert scores == [[-0.001 * i - 1, -0.001 * i - 2] for i in range(2500)]


# ---------------------------------------------------------------- round 4: trickles, HTTP errors, impossible replies


class _Trickle:
    """A stand-in server that answers every request with a valid header and then one byte of its body every
    `gap` seconds (at most `HANG_BOUND` seconds): a socket read never waits long, the reply never ends."""

    def __init__(self, gap: float = 0.2):
        closed = self.closed = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _trickle(self):
                body = json.dumps({"data": [{"id": "stub", "parent": None, "max_model_len": 64}], "pad": "x" * 999})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for byte in body.encode():
                    if closed.wait(gap):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:
                        return

            def do_GET(self):
                self._trickle()

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self._trickle()

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_server_that_trickles_v1_models_is_cut_at_the_timeout():
    """`/v1/models` sent one byte at a time used to hold `client.model` and `wait_until_up` for as long as the server
    kept sending (about 35 minutes for that stub at timeout 3): the timeout bounded each socket read, not the reply."""
    with _Trickle() as stub:
        client = EngineClient(stub.url, timeout=2.0)
        start = time.monotonic()
        with pytest.raises(EngineError, match=f"{stub.url} gave no answer to /v1/models within 2 s"):
            _ = client.model
        assert time.monotonic() - start < 4.0
        start = time.monotonic()
        with pytest.raises(EngineError, match="no engine server answered within 3 s"):
            client.wait_until_up(3.0)
        assert time.monotonic() - start < 3.0 + 2.0 + 2.0


_TRICKLED_CALL = """
import sys, time
sys.path.insert(0, sys.argv[2])
from hf_seqtemp.engine import EngineClient, EngineError
client = EngineClient(sys.argv[1], timeout=2.0, model="stub")
start = time.monotonic()
try:
    client.sample([[1, i] for i in range(8)], 4, [3], seeds=list(range(8)))
except EngineError as error:
    print(f"raised after {time.monotonic() - start:.1f} s: {error}", flush=True)
"""


def test_a_trickling_server_ends_the_process_with_its_error_not_later():
    """The error was raised at the timeout, but the requests' threads went on reading the trickle: the process
    stayed alive about 100 s after it. A failed call now ends its requests in flight."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with _Trickle(gap=0.1) as stub:
        start = time.monotonic()
        command = [sys.executable, "-c", _TRICKLED_CALL, stub.url, root]
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - start
    assert "raised after" in done.stdout and "no answer to /v1/completions within 2 s" in done.stdout, done.stderr
    raised = float(done.stdout.split("raised after ")[1].split(" s")[0])
    assert raised < 3.5 and elapsed - raised < 15.0, (raised, elapsed)  # start-up, then exit right after the error


def test_an_http_error_is_an_engine_error():
    """An HTTP 400 used to come back as `ValueError`; it is an `EngineError` (the engine refused the request), with
    the server's words."""
    refusal = (400, json.dumps({"error": {"message": "max_tokens is too large"}}).encode(), None)
    with _Stub(lambda body: refusal) as stub:
        client = EngineClient(stub.url, timeout=10.0, model="stub")
        with pytest.raises(EngineError, match=f"{stub.url} refused /v1/completions \\(HTTP 400\\).*too large"):
            client.sample([[1, 2]], 4, [3], seeds=[0])


@pytest.mark.parametrize("where", ["sampled", "scored"])
def test_a_positive_log_probability_is_an_impossible_reply(where):
    """A log-probability of +0.7 was used as it came; a probability is at most 1, so it is a malformed reply."""

    def answer(body):
        if where == "sampled":
            return _sampled(body, logp=0.7)
        return _json({"choices": [{"index": 0, "prompt_logprobs": [None, {"2": {"logprob": 0.7}}]}]})

    with _Stub(answer) as stub:
        client = EngineClient(stub.url, timeout=10.0, model="stub")
        with pytest.raises(EngineReplyError, match=r"is 0\.7 \(float\), not a number ≤ 0\.001 \(a log-probability\)"):
            client.sample([[1, 2]], 4, [3], seeds=[0]) if where == "sampled" else client.score([[1, 2]], [1])
