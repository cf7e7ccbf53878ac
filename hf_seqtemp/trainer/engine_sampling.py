# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The samples of p of `SeqTempConfig(use_vllm=True)`: drawn by an engine server, their log p the reference.

TRL's GRPO samples its *policy* with vLLM and must send the policy's new weights to the server after every step.
Here the samples are of the reference p, the fixed base model, so the server serves the base model's folder and
nothing is ever synced. The engine returns `log p` of every token it drew (token temperature 1, every sampling
field neutral: raw and processed log-probabilities agree there), which is the precomputed reference the trainer
stores. On the first draw those values are checked against the scorer on the reference model itself
([`~hf_seqtemp.engine.check_against_scorer`]): a server of another model, another dtype or in a logits mode is
refused with the numbers before anything is trained on its samples.
"""

from __future__ import annotations

from ..engine import EngineClient, check_against_scorer, engine_sample_completions
from ..progress import get_logger, progress_disabled

logger = get_logger(__name__)


def engine_url(args) -> str:
    """The server of `args`: `vllm_server_base_url`, else `http://{vllm_server_host}:{vllm_server_port}` (TRL's)."""
    return args.vllm_server_base_url or f"http://{args.vllm_server_host}:{args.vllm_server_port}"


class EngineDraws:
    """Draws completions of p from the engine server of `args`, checking the first draw against the scorer.

    Args:
        args ([`SeqTempConfig`]): `vllm_server_*`, `vllm_logprob_tolerance`, `max_completion_length` and the
            evaluation batch size (the first `per_device_eval_batch_size` rows of the first draw are checked).
    """

    def __init__(self, args):
        self.args, self.client, self.checked = args, None, False

    def connect(self) -> EngineClient:
        """The client, once the server answers: a refused connection is an [`EngineError`] at once, a server that
        gives no answer one after `vllm_server_timeout` seconds."""
        if self.client is None:
            client = EngineClient(engine_url(self.args), timeout=self.args.vllm_server_timeout)
            logger.info(f"sampling completions of p from the engine server at {client.base_url} ({client.model})")
            self.client = client
        return self.client

    def __call__(self, reference, prompts: list[list[int]], eos_ids, seed: int):
        """`(completions, logps)`: one completion per prompt and the engine's log p of each of its tokens."""
        client = self.connect()
        desc = None if progress_disabled(self.args.disable_tqdm) else f"Sampling p on the engine ({client.base_url})"
        args = (client, prompts, self.args.max_completion_length, eos_ids, seed, desc)
        completions, logps = engine_sample_completions(*args)
        if not self.checked:
            rows = range(min(len(prompts), self.args.per_device_eval_batch_size))
            check_against_scorer(
                f"the first batch of samples of p from the engine server at {client.base_url}",
                reference,
                [list(prompts[i]) + completions[i] for i in rows],
                [len(prompts[i]) for i in rows],
                [logps[i] for i in rows],
                self.args.vllm_logprob_tolerance,
            )
            self.checked = True
        return completions, logps
