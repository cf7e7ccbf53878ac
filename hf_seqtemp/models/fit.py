# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Whether sequences and a tokenizer fit a model: positions it has, token ids its embedding holds, and the id
mapping an adapter was trained with. A sequence longer than a GPT-2's positions is torch's raw `IndexError`, one
longer than a Llama's trains past what the model was built for without a word, and a tokenizer that maps words to
other ids than the adapter's scores other token sequences than the words say: each is refused here by name."""

from __future__ import annotations

import hashlib
import json

from .base import wrapped_model

POSITION_FIELDS = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length")


def _config(model):
    inner = wrapped_model(model)
    get_base_model = getattr(inner, "get_base_model", None)
    inner = get_base_model() if callable(get_base_model) else inner
    return inner, getattr(inner, "config", None)


def position_limit(model) -> tuple[int, str] | None:
    """`(positions, field)`: the longest sequence the model's config allows and the field that says so (e.g.
    `max_position_embeddings`); `None` when its config names none."""
    _, config = _config(model)
    for name in POSITION_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, name
    return None


def embedding_rows(model) -> int | None:
    """How many token ids the model's input embedding holds (`None` when it has none to ask)."""
    inner, _ = _config(model)
    get_embeddings = getattr(inner, "get_input_embeddings", None)
    embeddings = get_embeddings() if callable(get_embeddings) else None
    rows = getattr(embeddings, "num_embeddings", None)
    return rows if isinstance(rows, int) else None


def tokenizer_sha256(tokenizer) -> str | None:
    """A SHA-256 of the tokenizer's mapping of tokens to ids (`get_vocab()`, added tokens included): two tokenizers
    of one size that map words to other ids differ. `None` for an object without `get_vocab`.

    Example:
    ```python
    >>> from types import SimpleNamespace
    >>> a = SimpleNamespace(get_vocab=lambda: {"a": 0, "b": 1})
    >>> b = SimpleNamespace(get_vocab=lambda: {"a": 1, "b": 0})
    >>> tokenizer_sha256(a) == tokenizer_sha256(b)
    False
    ```
    """
    get_vocab = getattr(tokenizer, "get_vocab", None)
    if not callable(get_vocab):
        return None
    mapping = sorted((str(token), int(index)) for token, index in get_vocab().items())
    return hashlib.sha256(json.dumps(mapping, ensure_ascii=False).encode("utf-8")).hexdigest()


def check_tokenizer_fits(model, tokenizer, recorded_sha256: str | None = None, source: str = "the adapter") -> None:
    """Refuses a tokenizer with more tokens than the model's embedding, or one whose id mapping is not the one
    `recorded_sha256` says the adapter was trained with ([`tokenizer_sha256`])."""
    if tokenizer is None:
        return
    rows = embedding_rows(model)
    size = len(tokenizer) if hasattr(tokenizer, "__len__") else None
    if rows is not None and size is not None and size > rows:
        raise ValueError(
            f"the tokenizer has {size} tokens, more than the {rows} token ids the model's embedding holds: it is not "
            "this model's tokenizer (ids past the embedding cannot be scored). Pass the model's own tokenizer, or "
            "`model.resize_token_embeddings(len(tokenizer))` before training if you added tokens on purpose."
        )
    found = tokenizer_sha256(tokenizer) if recorded_sha256 is not None else None
    if found is not None and found != recorded_sha256:
        raise ValueError(
            f"the tokenizer maps tokens to other ids than the one {source} was saved with (SHA-256 of its "
            f"vocabulary {found[:12]}… here, {recorded_sha256[:12]}… recorded in its seqtemp_config.json): its "
            "figures would be of other token sequences than the text says. Pass the tokenizer saved beside the "
            "adapter (`AutoTokenizer.from_pretrained(folder)`) or the base model's."
        )


def check_sequences_fit(model, lengths, largest_id: int | None, name: str, fix: str) -> None:
    """Refuses sequences longer than the model's positions (`lengths`: their token counts) or with a token id its
    embedding does not hold, naming `name`, the numbers and `fix` for the length."""
    lengths = list(lengths)
    limit = position_limit(model)
    if limit is not None and lengths and max(lengths) > limit[0]:
        over = sum(1 for length in lengths if length > limit[0])
        raise ValueError(
            f"`{name}`: {over} of {len(lengths)} sequences are longer than the model's {limit[0]} positions "
            f"(`{limit[1]}` in its config; the longest has {max(lengths)} tokens): {fix}"
        )
    rows = embedding_rows(model)
    if rows is not None and largest_id is not None and largest_id >= rows:
        raise ValueError(
            f"`{name}` holds token id {largest_id}, but the model's embedding holds ids 0-{rows - 1}: the data were "
            "tokenised with another tokenizer than the model's. Tokenise them with the model's tokenizer."
        )


def check_prepared_fits(model, dataset, max_completion_length: int, name: str) -> None:
    """[`check_sequences_fit`] for a prepared dataset: prompt + completion rows as they are; prompt-only rows as the
    prompt plus `max_completion_length` sampled tokens (the sampler writes that many positions)."""
    if "prompt_ids" in dataset.column_names:
        prompts = dataset["prompt_ids"]
        lengths = [len(prompt) + max_completion_length for prompt in prompts]
        largest = max((max(prompt) for prompt in prompts if prompt), default=None)
        fix = (
            f"each prompt plus `max_completion_length`={max_completion_length} sampled tokens must fit: lower "
            "`max_completion_length` or shorten the prompts."
        )
    else:
        rows = dataset["input_ids"]
        lengths = [len(row) for row in rows]
        largest = max((max(row) for row in rows if row), default=None)
        limit = position_limit(model)
        fix = (
            f"set `max_length` to at most {limit[0] if limit else 'the positions'} (longer examples are then dropped, "
            "with a warning) or shorten them."
        )
    check_sequences_fit(model, lengths, largest, name, fix)
