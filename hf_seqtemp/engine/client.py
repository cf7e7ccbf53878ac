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

The client fails fast and by name: a refused connection is an [`EngineError`] at once; a server that answers none
of the requests in flight for `timeout` seconds is reported then, whatever the number of requests (the ones not
yet sent are dropped); every malformed reply ([`~hf_seqtemp.engine.replies`]) is an [`EngineError`] naming the
server and what was wrong.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from tqdm.auto import tqdm

from ..progress import progress_disabled
from .replies import (
    EngineError,
    EngineReplyError,
    checked_choices,
    checked_models,
    checked_prompt_logprobs,
    excerpt,
    malformed,
    position_logp,
    sampled_tokens,
)
from .transport import _Calls, _connection, _Watch

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
MAX_PROMPTS = 1024
"""Prompts per scoring request: vLLM refuses a longer prompt list (HTTP 400, `VLLM_MAX_COMPLETION_PROMPTS`, 1024 by
default), so [`EngineClient.prompt_logprobs`] sends longer lists as several requests."""
"""Completions per request at most (vLLM refuses `n` above 16384); a larger `n` is split into several requests."""


@dataclass
class Completion:
    """One sampled completion: its token ids, the engine's log-probability of each, and whether it ended at one of
    the request's stop ids (else it was cut at `max_tokens`)."""

    tokens: list[int]
    logps: list[float]
    stopped: bool


class EngineClient:
    """A vLLM server's `/v1/completions`, for exact sampling and scoring with token ids.

    Args:
        base_url (`str`): the server, e.g. `"http://127.0.0.1:8000"` (a trailing `/v1` is accepted).
        timeout (`float`, *optional*, defaults to `600.0`): seconds to wait for an answer before the run stops with
            an [`EngineError`] (a server that hangs, or a request far too large for it). The concurrent requests of
            one call share it: when none of those in flight is answered for `timeout` seconds the call fails then,
            whatever the number of prompts, and the requests not yet sent are dropped.
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
    def _request(self, path: str, body: dict | None = None, timeout: float | None = None, calls=None) -> dict:
        """One request: its whole reply within `timeout` seconds (a server that trickles bytes is cut at the
        deadline, not only a read that waits), or an [`EngineError`]. `calls` (a [`_Calls`]) closes the request
        at once when the call it belongs to fails."""
        timeout = self.timeout if timeout is None else timeout
        expired = threading.Event()
        try:
            connection = _connection(self.base_url, timeout)
            watch = _Watch(connection, timeout, expired, calls)
            try:
                connection.request("GET" if body is None else "POST", path, body=None if body is None else
                                   json.dumps(body).encode(), headers={"Content-Type": "application/json"})  # fmt: skip
                response = connection.getresponse()
                raw = response.read()
            finally:
                watch.end()
        except Exception as error:  # noqa: BLE001 - every failure is named below
            if expired.is_set() or isinstance(error, TimeoutError):
                raise EngineError(
                    f"the engine server at {self.base_url} gave no answer to {path} within {timeout:g} s (or only "
                    "part of one): it hangs, trickles its reply or is overloaded. Raise the timeout (`vllm_server_timeout` / "
                    "`timeout=`) or send smaller batches."
                ) from None
            if calls is not None and calls.cancelled:
                raise EngineError(f"the request to {path} was dropped: another request of the same call failed")
            self._raise_transport(path, error)
        if response.status >= 400:
            detail = raw.decode(errors="replace")[:2000]
            if response.status >= 500:
                raise EngineError(
                    f"the engine server at {self.base_url} failed on {path} (HTTP {response.status}): {detail}. Its "
                    "log says why; a crashed engine must be restarted (`hf-seqtemp serve ...`)."
                )
            raise EngineReplyError(
                f"the engine server at {self.base_url} refused {path} (HTTP {response.status}): {detail}"
            )
        try:
            reply = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            text = raw.decode(errors="replace")
            raise malformed(
                self.base_url, path, f"its body is not JSON ({error}); it begins {excerpt(text, 200)!r}"
            ) from None
        if not isinstance(reply, dict):
            raise malformed(self.base_url, path, "its body is not a JSON object", reply)
        return reply

    def _raise_transport(self, path: str, error: Exception):
        """Raises the [`EngineError`] of a request that got no reply: a body cut short, a dropped or refused
        connection."""
        if isinstance(error, http.client.IncompleteRead):
            total = len(error.partial) + (error.expected or 0)
            raise malformed(
                self.base_url, path, f"its body was cut short ({len(error.partial)} of {total} bytes)"
            ) from None
        if isinstance(error, http.client.RemoteDisconnected):
            raise EngineError(
                f"the engine server at {self.base_url} closed the connection without replying to {path}: it crashed "
                "or restarted mid-request (its log says why). Restart it (`hf-seqtemp serve ...`), then retry; "
                "checkpoints already written are complete."
            ) from None
        if isinstance(error, http.client.HTTPException):
            raise malformed(
                self.base_url, path, f"the HTTP reply broke off ({type(error).__name__}: {error})"
            ) from None
        if isinstance(error, OSError):
            raise EngineError(
                f"the engine server at {self.base_url} does not answer ({error}): it died or was never started, "
                "or it is still loading its model (vLLM accepts connections once it is ready). Start it with "
                "`hf-seqtemp serve MODEL` (or `python -m hf_seqtemp.engine.serve`) and wait for its `serving ... at "
                "URL` line, then retry; checkpoints already written are complete."
            ) from None
        raise error

    def models(self, timeout: float | None = None) -> list[dict]:
        """What `/v1/models` lists: the base model and the LoRA adapters served by name (their `parent` is the
        base)."""
        return checked_models(self.base_url, self._request("/v1/models", timeout=timeout))

    def wait_until_up(self, timeout: float) -> None:
        """Polls `/v1/models` until the server answers, at most `timeout` seconds (a server that is still loading
        its model refuses connections), then raises an [`EngineError`]; a malformed reply raises at once."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.models(timeout=min(10.0, self.timeout))
                return
            except EngineReplyError:
                raise
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
        the answered requests (none without `desc`, or when progress bars are off).

        One deadline for all: when no request in flight is answered for `timeout` seconds, or one fails, the call
        raises at once; the requests not yet sent are dropped and those in flight left to their own timeout."""
        if not bodies:
            return []
        answers: list = [None] * len(bodies)
        stop = threading.Event()  # set at the first failure: no further request is sent
        calls = _Calls()  # and those in flight are ended

        def send(body: dict) -> dict | None:
            if stop.is_set():
                return None
            try:
                return self._request("/v1/completions", body, calls=calls)
            except BaseException:
                stop.set()
                raise

        bar = tqdm(total=len(bodies), desc=desc, disable=desc is None or progress_disabled(), leave=False)
        pool = ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(bodies)))
        try:
            futures = {pool.submit(send, body): i for i, body in enumerate(bodies)}
            pending = set(futures)
            with bar:
                while pending:
                    done, pending = wait(pending, timeout=self.timeout, return_when=FIRST_COMPLETED)
                    if not done:
                        stop.set()
                        running = sum(future.running() for future in pending)
                        raise EngineError(
                            f"the engine server at {self.base_url} gave no answer to /v1/completions within "
                            f"{self.timeout:g} s ({bar.n} of {len(bodies)} requests answered, {running} in flight): it "
                            f"hangs or is overloaded; the {len(pending) - running} requests not yet sent are dropped. "
                            "Raise the timeout (`vllm_server_timeout` / `timeout=`) or send smaller batches."
                        )
                    for future in done:
                        answers[futures[future]] = future.result()  # the first failed request's error
                        bar.update(1)
        finally:
            stop.set()
            calls.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
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
            for choice in checked_choices(self.base_url, answer, body["n"]):
                tokens, logps = sampled_tokens(self.base_url, choice)
                out[owner].append(Completion(tokens, logps, bool(tokens) and tokens[-1] in stop))
        return out

    def prompt_logprobs(self, sequences: list[list[int]], top: int = 0) -> list[list[dict | None]]:
        """The engine's `prompt_logprobs` of each sequence: per position, `{token: {"logprob": ...}}` for the
        position's own token and the `top` most likely ones (`None` at position 0). One request per
        [`MAX_PROMPTS`] sequences, under the base
        model (no adapter); they are computed before any sampling processor, so they are the same whatever the
        server's `--logprobs-mode` (raw `log p`, or logits in the logits modes); the one token the request also
        draws is ignored."""
        if not self.can_score:
            raise ValueError(
                f"the engine server at {self.base_url} cannot score: vLLM's CPU build crashes its engine on prompt "
                "log-probabilities when LoRA is enabled. Score with a server of the base model without adapters "
                "(and propose with this one)."
            )
        common = {**NEUTRAL_SAMPLING, "model": self.model, "temperature": 1.0, "max_tokens": 1, "prompt_logprobs": top}
        common.update(return_token_ids=True, return_tokens_as_token_ids=True)
        chunks = [sequences[start : start + MAX_PROMPTS] for start in range(0, len(sequences), MAX_PROMPTS)]
        bodies = [{**common, "prompt": [list(map(int, seq)) for seq in chunk]} for chunk in chunks]
        out = []
        for chunk, answer in zip(chunks, self._concurrently(bodies, None)):
            choices = checked_choices(self.base_url, answer, len(chunk))
            out.extend(checked_prompt_logprobs(self.base_url, c, len(seq)) for c, seq in zip(choices, chunk))
        return out

    def score(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        """`log p(x_t | x_<t)` of the tokens `sequence[start:]` of each sequence, under the base model (no adapter),
        from one request ([`prompt_logprobs`]); identical sequences are scored once."""
        if any(not 1 <= start <= len(seq) for seq, start in zip(sequences, starts)):
            raise ValueError("each scored span must start after the first token of its sequence.")
        distinct = list(dict.fromkeys(tuple(int(t) for t in seq) for seq in sequences))
        positions = dict(zip(distinct, self.prompt_logprobs([list(seq) for seq in distinct])))
        out, where = [], f"the engine server at {self.base_url}"
        for seq, start in zip(sequences, starts):
            entries = positions[tuple(int(t) for t in seq)]
            out.append([position_logp(entries[t], int(seq[t]), where) for t in range(start, len(seq))])
        return out
