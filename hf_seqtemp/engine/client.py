# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The client of an inference-engine server (vLLM's OpenAI-compatible `/v1/completions`), over HTTP only.

The package never imports vllm: the engine runs as its own process, in its own venv (vLLM's CPU build pins a
transformers older than this package needs), which is also how it is deployed on GPU nodes. Token ids go in and come
out (`return_token_ids`), so nothing depends on re-tokenising text.

Every sampling request is *exact*: each field that could reshape the model's next-token law is set to its neutral
value ([`NEUTRAL_SAMPLING`]; the server's defaults may come from the model's `generation_config.json`), and a
completion stops exactly at the ids the caller names (`ignore_eos=True` turns the engine's own EOS off, the
caller's EOS ids are its `stop_token_ids`; the stop token is kept in the completion: the scored event is the
sampled event). Two kinds of request:

- [`EngineClient.sample`]: completions of distinct prompts, `n` per prompt, at a token temperature, from the base
  model or from a LoRA adapter the server serves by name; each completion comes with the engine's log-probability
  of every token it drew (the server's `--logprobs-mode` says which: raw `log p`, or `log r` of the tempered law).
- [`EngineClient.score`]: `log p(x_t | x_<t)` of given tokens under the base model (`prompt_logprobs`, which no
  sampling processor touches).

Each prompt of a sampling round is its own HTTP request with its own seed (a list of prompts in one request would
share one seed, hence one noise stream), sent concurrently so that the engine batches them.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from tqdm.auto import tqdm

from ..progress import progress_disabled

NEUTRAL_SAMPLING = {
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repetition_penalty": 1.0,
    "min_tokens": 0,
    "logit_bias": None,
    "allowed_token_ids": None,
    "bad_words": [],
    "use_beam_search": False,
    "ignore_eos": True,
}
"""The neutral value of every sampling field of a `/v1/completions` request that could reshape the next-token law
(the token temperature is set per request); `ignore_eos=True` leaves stopping to the request's `stop_token_ids`."""


MAX_N = 4096
"""Completions per request at most (vLLM refuses `n` above 16384); a larger `n` is split into several requests."""


class EngineError(ConnectionError):
    """The engine server did not answer as it should: refused the connection (it died, or was never started), timed
    out, or failed inside (an HTTP 5xx). The message names the server, the request and what to do."""


@dataclass
class Completion:
    """One sampled completion: its token ids, the engine's log-probability of each, and whether it ended at one of
    the request's stop ids (else it was cut at `max_tokens`)."""

    tokens: list[int]
    logps: list[float]
    stopped: bool


def position_logp(entry: dict | None, token: int) -> float:
    """The log-probability of `token` in one position of `prompt_logprobs` (`{"<id>" or "token_id:<id>": ...}`)."""
    if not entry:
        raise EngineError(f"the engine returned no prompt log-probability for token {token}.")
    for key, value in entry.items():
        if key.rsplit(":", 1)[-1] == str(token):
            return float(value["logprob"])
    raise EngineError(f"the engine's prompt log-probabilities do not name token {token}: {sorted(entry)}.")


class EngineClient:
    """A vLLM server's `/v1/completions`, for exact sampling and scoring with token ids.

    Args:
        base_url (`str`): the server, e.g. `"http://127.0.0.1:8000"` (a trailing `/v1` is accepted).
        timeout (`float`, *optional*, defaults to `600.0`): seconds one request may take before the run stops with an
            [`EngineError`] (a server that hangs, or a request far too large for it).
        model (`str`, *optional*): the served name of the base model; defaults to the one model `/v1/models` lists
            without a parent (LoRA adapters list the base as their parent).
        max_concurrency (`int`, *optional*, defaults to `64`): requests in flight at once (one per prompt).

    Example:
    ```python
    >>> client = EngineClient("http://127.0.0.1:8000/v1/")
    >>> client.base_url
    'http://127.0.0.1:8000'
    ```
    """

    def __init__(self, base_url: str, timeout: float = 600.0, model: str | None = None, max_concurrency: int = 64):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"`base_url` must be an http(s) URL such as 'http://127.0.0.1:8000', got {base_url!r}; start a "
                "server with `hf-seqtemp serve MODEL_FOLDER` (it prints its URL)."
            )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"`timeout` must be a number of seconds > 0, got {timeout!r}.")
        url = base_url.rstrip("/")
        self.base_url = url.removesuffix("/v1")
        self.timeout, self.max_concurrency = float(timeout), int(max_concurrency)
        self._model = model
        self.logprobs_mode: str | None = None  # what a probe measured (`hf_seqtemp.engine.agreement`)
        self.checked: set = set()  # the local models whose log-probabilities this server was checked against
        self.can_score = True  # False for a server known to crash on `prompt_logprobs` (CPU build with LoRA)

    # ------------------------------------------------------------------ HTTP
    def _request(self, path: str, body: dict | None = None, timeout: float | None = None) -> dict:
        url = f"{self.base_url}{path}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        timeout = self.timeout if timeout is None else timeout
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:2000]
            if error.code >= 500:
                raise EngineError(
                    f"the engine server at {self.base_url} failed on {path} (HTTP {error.code}): {detail}. Its log "
                    "says why; a crashed engine must be restarted (`hf-seqtemp serve ...`)."
                ) from None
            raise ValueError(
                f"the engine server at {self.base_url} refused {path} (HTTP {error.code}): {detail}"
            ) from None
        except TimeoutError:
            raise EngineError(
                f"the engine server at {self.base_url} gave no answer to {path} within {timeout:g} s: it hangs or is "
                "overloaded. Raise the timeout (`vllm_server_timeout` / `timeout=`) or send smaller batches."
            ) from None
        except (urllib.error.URLError, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise EngineError(
                f"the engine server at {self.base_url} does not answer ({reason}): it died or was never started. "
                "Start it with `hf-seqtemp serve MODEL_FOLDER` (or `python -m hf_seqtemp.engine.serve`), then retry; "
                "checkpoints already written are complete."
            ) from None

    def models(self, timeout: float | None = None) -> list[dict]:
        """What `/v1/models` lists: the base model and the LoRA adapters served by name (their `parent` is the
        base)."""
        return self._request("/v1/models", timeout=timeout)["data"]

    def wait_until_up(self, timeout: float) -> None:
        """Polls `/v1/models` until the server answers, at most `timeout` seconds (a server that is still loading
        its model refuses connections), then raises an [`EngineError`]."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.models(timeout=min(10.0, self.timeout))
                return
            except EngineError as error:
                if time.monotonic() >= deadline:
                    raise EngineError(f"no engine server answered within {timeout:g} s: {error}") from None
                time.sleep(1.0)

    @property
    def model(self) -> str:
        """The served name of the base model."""
        if self._model is None:
            bases = [entry["id"] for entry in self.models() if entry.get("parent") is None]
            if len(bases) != 1:
                raise ValueError(
                    f"the engine server at {self.base_url} serves {len(bases)} base models ({bases}): pass "
                    "`model=` to name the one to use."
                )
            self._model = bases[0]
        return self._model

    def adapters(self) -> list[str]:
        """The LoRA adapters the server serves by name."""
        return sorted(entry["id"] for entry in self.models() if entry.get("parent") is not None)

    def max_model_len(self) -> int | None:
        """The longest prompt + completion the server accepts."""
        for entry in self.models():
            if entry["id"] == self.model:
                return entry.get("max_model_len")
        return None

    def _concurrently(self, bodies: list[dict], desc: str | None = None) -> list[dict]:
        """The answers to `bodies`, sent at most `max_concurrency` at a time; a progress bar labelled `desc` counts
        the answered requests (none without `desc`, or when progress bars are off)."""
        if len(bodies) <= 1:
            return [self._request("/v1/completions", body) for body in bodies]
        answers: list = [None] * len(bodies)
        bar = tqdm(total=len(bodies), desc=desc, disable=desc is None or progress_disabled(), leave=False)
        with bar, ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(bodies))) as pool:
            futures = {pool.submit(self._request, "/v1/completions", body): i for i, body in enumerate(bodies)}
            for future in as_completed(futures):
                answers[futures[future]] = future.result()
                bar.update(1)
        return answers

    # ------------------------------------------------------------------ sampling and scoring
    def sample(
        self,
        prompts: list[list[int]],
        max_tokens: int | list[int],
        stop_ids,
        seeds: list[int],
        n: int | list[int] = 1,
        temperature: float = 1.0,
        adapter: str | None = None,
        desc: str | None = None,
    ) -> list[list[Completion]]:
        """`n` completions of each prompt (token ids), each with the engine's log-probability of every token drawn.

        Args:
            prompts (`list[list[int]]`): prompts, distinct or not (each is its own request).
            max_tokens (`int` or `list[int]`): longest completion, for all prompts or per prompt.
            stop_ids (iterable of `int`): the ids that end a completion (kept in it); empty: fixed length.
            seeds (`list[int]`): one seed per prompt (its `n` completions get `seed`, `seed + 1`, ...).
            n (`int` or `list[int]`, *optional*, defaults to 1): completions per prompt.
            temperature (`float`, *optional*, defaults to `1.0`): token temperature.
            adapter (`str`, *optional*): a LoRA adapter the server serves by name; `None` samples the base model.
            desc (`str`, *optional*): label of a progress bar over the requests (none by default).

        Returns:
            `list` (per prompt) of `list` of [`Completion`].
        """
        sizes = [n] * len(prompts) if isinstance(n, int) else list(n)
        lengths = [max_tokens] * len(prompts) if isinstance(max_tokens, int) else list(max_tokens)
        if not (len(sizes) == len(lengths) == len(seeds) == len(prompts)):
            raise ValueError(
                f"{len(prompts)} prompts need as many seeds, sizes and lengths; got {len(seeds)}, {len(sizes)} and "
                f"{len(lengths)}."
            )
        stop = sorted(int(i) for i in stop_ids)
        common = {**NEUTRAL_SAMPLING, "model": adapter or self.model, "temperature": float(temperature)}
        common.update(stop_token_ids=stop, logprobs=0, return_token_ids=True, return_tokens_as_token_ids=True)
        bodies, owners = [], []
        for index, (prompt, length, size, seed) in enumerate(zip(prompts, lengths, sizes, seeds)):
            for offset in range(0, size, MAX_N):  # the server caps `n`: seeds s, s + 1, ... continue across chunks
                chunk = min(MAX_N, size - offset)
                bodies.append({**common, "prompt": list(map(int, prompt)), "max_tokens": length, "n": chunk})
                bodies[-1]["seed"] = int(seed) + offset
                owners.append(index)
        out: list[list[Completion]] = [[] for _ in prompts]
        for owner, body, answer in zip(owners, bodies, self._concurrently(bodies, desc)):
            choices = sorted(answer["choices"], key=lambda choice: choice["index"])
            if len(choices) != body["n"]:
                raise EngineError(f"the engine returned {len(choices)} completions where {body['n']} were asked.")
            out[owner] += [self._completion(choice, stop) for choice in choices]
        return out

    @staticmethod
    def _completion(choice: dict, stop: list[int]) -> Completion:
        tokens = [int(t) for t in choice["token_ids"]]
        logps = [float(v) for v in choice["logprobs"]["token_logprobs"]]
        if len(logps) != len(tokens):
            raise EngineError(f"the engine returned {len(logps)} log-probabilities for {len(tokens)} tokens.")
        return Completion(tokens, logps, bool(tokens) and tokens[-1] in stop)

    def prompt_logprobs(self, sequences: list[list[int]], top: int = 0) -> list[list[dict | None]]:
        """The engine's `prompt_logprobs` of each sequence: per position, `{token: {"logprob": ...}}` for the
        position's own token and the `top` most likely ones (`None` at position 0). One request, under the base
        model (no adapter); they are computed before any sampling processor, so they are the same whatever the
        server's `--logprobs-mode` (raw `log p`, or logits in the logits modes); the one token the request also
        draws is ignored."""
        if not self.can_score:
            raise ValueError(
                f"the engine server at {self.base_url} cannot score: vLLM's CPU build crashes its engine on prompt "
                "log-probabilities when LoRA is enabled. Score with a server of the base model without adapters "
                "(and propose with this one)."
            )
        body = {**NEUTRAL_SAMPLING, "model": self.model, "temperature": 1.0, "max_tokens": 1, "prompt_logprobs": top}
        body.update(prompt=[list(map(int, seq)) for seq in sequences], return_token_ids=True)
        body["return_tokens_as_token_ids"] = True
        choices = sorted(self._request("/v1/completions", body)["choices"], key=lambda choice: choice["index"])
        if len(choices) != len(sequences):
            raise EngineError(f"the engine scored {len(choices)} sequences where {len(sequences)} were sent.")
        return [choice["prompt_logprobs"] for choice in choices]

    def score(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        """`log p(x_t | x_<t)` of the tokens `sequence[start:]` of each sequence, under the base model (no adapter),
        from one request ([`prompt_logprobs`]); identical sequences are scored once."""
        if any(not 1 <= start <= len(seq) for seq, start in zip(sequences, starts)):
            raise ValueError("each scored span must start after the first token of its sequence.")
        distinct = list(dict.fromkeys(tuple(int(t) for t in seq) for seq in sequences))
        positions = dict(zip(distinct, self.prompt_logprobs([list(seq) for seq in distinct])))
        out = []
        for seq, start in zip(sequences, starts):
            entries = positions[tuple(int(t) for t in seq)]
            out.append([position_logp(entries[t], int(seq[t])) for t in range(start, len(seq))])
        return out
