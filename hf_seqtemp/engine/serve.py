# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp serve MODEL` (or `python -m hf_seqtemp.engine.serve MODEL`): a vLLM server for this package.

Starts the server from the engine's venv with [`~hf_seqtemp.engine.server.EngineSettings`] (float32, processed
log-probs, prefix caching, a bounded context), waits until it answers, prints its URL and process id, and keeps
it running until Ctrl-C or SIGTERM, then stops its whole process group. Point training at it with
`SeqTempConfig(use_vllm=True, vllm_server_base_url=URL)` and sampling with `generate(..., engine=URL)`.

Examples:

    hf-seqtemp serve ~/.cache/hf_seqtemp/SmolLM2-135M-Instruct --port 8000
    hf-seqtemp serve BASE --port 8001 --adapter tempered=outputs/adapter   # the proposal server of adapter SMC
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .server import LOGPROBS_MODES, EngineServer, EngineSettings


def _adapter(value: str) -> tuple[str, str]:
    name, sep, folder = value.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"`--adapter` takes NAME=FOLDER, got {value!r}.")
    return name, folder


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(prog="hf-seqtemp serve", description=__doc__.splitlines()[0])
    out.add_argument("model", help="the base model's folder (or Hub id) the server samples and scores")
    out.add_argument("--port", type=int, default=8000, help="TCP port (0: a free one)")
    out.add_argument("--host", default="127.0.0.1", help="interface (0.0.0.0 serves other nodes)")
    out.add_argument("--adapter", type=_adapter, action="append", default=[], help="a LoRA to serve: NAME=FOLDER")
    out.add_argument("--logprobs_mode", default="processed_logprobs", choices=LOGPROBS_MODES)
    out.add_argument("--max_model_len", type=int, default=2048, help="longest prompt + completion")
    out.add_argument("--dtype", default="float32", help="weights' dtype")
    out.add_argument("--served_model_name", default=None, help="name of the base model in requests")
    out.add_argument("--threads", type=int, default=None, help="CPU threads (vLLM's CPU build)")
    out.add_argument("--kv_cache_memory_bytes", type=int, default=None, help="KV cache size (CPU default 1 GiB)")
    out.add_argument("--gpu_memory_utilization", type=float, default=None, help="share of GPU memory (GPU builds)")
    out.add_argument("--skip_tokenizer_init", action="store_true", help="token ids only (no tokenizer)")
    out.add_argument("--start_timeout", type=float, default=300.0, help="seconds to wait for the server to answer")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = EngineSettings(
        model=args.model,
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
    )
    server = EngineServer(settings)
    print(f"starting the engine on {args.model} (log: {server.log_file or 'a temporary file'}) ...", flush=True)
    server.start(timeout=args.start_timeout)
    print(f"serving {args.model} at {server.url} (process group {server.pid}, log {server.log_file})", flush=True)
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
