# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The sampling engine's fields of [`SeqTempConfig`] (TRL's names for its vLLM server mode)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class EngineArguments:
    r"""
    Where [`SeqTempConfig`] draws the samples of p when `use_vllm=True`: TRL's names and meanings for its server
    mode (checked by `hf_seqtemp.trainer.trl_names.check_engine_settings`).

    Parameters:
        use_vllm (`bool`, *optional*, defaults to `False`):
            Draw the completions of p for a prompt-only dataset (once, or every `sample_every_steps`) on a vLLM
            server instead of with `generate`, and take their reference log-probabilities from the engine (token
            temperature 1 and every sampling field neutral, so the engine's log-probability of a sampled token is
            log p). p is the fixed base model: the server serves the base model's folder, and nothing is synced
            during training (unlike GRPO, whose policy the engine samples). The first draw is checked against the
            scorer on the reference model (`vllm_logprob_tolerance`); a server that dies or times out stops the run
            with an error naming it, and the checkpoints already written stay complete. Start the server with
            `hf-seqtemp serve MODEL_FOLDER` (the package never imports vllm: the engine has its own venv,
            `make venv-vllm`). Not available with `loss_type="smc_distill"` (its particles are drawn by the
            transformers SMC loop).
        vllm_mode (`str`, *optional*, defaults to `"server"`):
            How the engine runs; only `"server"` (TRL's other mode, `"colocate"`, runs vLLM inside the training
            process, and vLLM's CPU build cannot share this package's venv: it pins transformers < 5.20).
        vllm_server_base_url (`str` or `None`, *optional*, defaults to `None`):
            The server's URL (e.g. `"http://127.0.0.1:8000"`); `None` uses `vllm_server_host` and
            `vllm_server_port`.
        vllm_server_host (`str`, *optional*, defaults to `"0.0.0.0"`):
            Host of the server, when `vllm_server_base_url` is `None`.
        vllm_server_port (`int`, *optional*, defaults to `8000`):
            Port of the server, when `vllm_server_base_url` is `None`.
        vllm_server_timeout (`float`, *optional*, defaults to `240.0`):
            Seconds the server may leave every request of a draw unanswered before the run stops with an error
            naming it (one timeout whatever the number of prompts; raise it for large draws on a slow engine). A
            refused connection (no server, or one still loading its model) stops the run at once: start training
            once `hf-seqtemp serve` prints its URL. Must be > 0.
        vllm_logprob_tolerance (`float`, *optional*, defaults to `1e-3`):
            Largest accepted difference per token between the engine's log p of the first batch of samples and the
            scorer's (float32 servers of the same weights agree to ~3e-5; a bfloat16 server needs more). Must be > 0.
    """

    use_vllm: bool = field(
        default=False,
        metadata={
            "help": "Sample the completions of p (and their reference log p) on a vLLM server (hf-seqtemp serve)."
        },
    )
    vllm_mode: str = field(
        default="server",
        metadata={"help": "Only 'server': vLLM's CPU build cannot share this venv, so 'colocate' is refused."},
    )
    vllm_server_base_url: str | None = field(
        default=None, metadata={"help": "URL of the vLLM server; None uses --vllm_server_host and --vllm_server_port."}
    )
    vllm_server_host: str = field(default="0.0.0.0", metadata={"help": "Host of the vLLM server (without base URL)."})
    vllm_server_port: int = field(default=8000, metadata={"help": "Port of the vLLM server (without base URL)."})
    vllm_server_timeout: float = field(
        default=240.0,
        metadata={
            "help": "Seconds the server may leave a draw's requests unanswered (a refused connection fails at once); > 0."
        },
    )
    vllm_logprob_tolerance: float = field(
        default=1e-3,
        metadata={"help": "Largest |engine − scorer| log p per token accepted on the first batch of samples; > 0."},
    )
