# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact ancestral sampling of the reference p with `generate`: every sampler of p uses this one configuration.

`generate` fills every [`~transformers.GenerationConfig`] field left `None` from the model's own
`generation_config` (then from global defaults such as `top_k=50`). A model whose config sets
`repetition_penalty`, `no_repeat_ngram_size`, `suppress_tokens`, `min_new_tokens`, `min_p`, `forced_eos_token_id`,
... would then be sampled from a distorted p. [`exact_generation_config`] sets the neutral value of every field
that has one, and [`exact_ancestral_sample`] (the `custom_generate` callable it is used with) runs `_sample` with
*no* logits processor at all and with stopping criteria built from the requested length and EOS ids only, so that
fields whose neutral value is `None` (`forced_bos_token_id`, `bad_words_ids`, `sequence_bias`, watermarking,
`max_time`, `stop_strings`, ...) cannot shape the samples either; [`model_generation_config_ignored`] hides the
model's config from `generate` altogether during the call, so that none of it is even read (a `stop_strings` entry
would otherwise ask for a tokenizer). The model's generation config contributes its EOS ids only, through the
caller (see [`~hf_seqtemp.data.eos_ids_of`]).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import torch
from transformers.generation import GenerationConfig, GenerationMixin
from transformers.generation.logits_process import LogitsProcessorList
from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria, StoppingCriteriaList

NEUTRAL_GENERATION_VALUES = {
    "do_sample": True,
    "num_beams": 1,
    "num_return_sequences": 1,
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "typical_p": 1.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
    "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "min_length": 0,
    "min_new_tokens": 0,  # takes precedence over an inherited `min_length`
    "suppress_tokens": [],
    "begin_suppress_tokens": [],
    "guidance_scale": 1.0,
    "renormalize_logits": False,
    "remove_invalid_values": False,
    "token_healing": False,
    "use_mtp": False,
    "output_scores": False,
    "output_logits": False,
    "output_attentions": False,
    "output_hidden_states": False,
    "return_dict_in_generate": False,
}
"""The value of every `GenerationConfig` field that leaves ancestral sampling of the model untouched (fields whose
only neutral value is `None` cannot be pinned in a config; [`exact_ancestral_sample`] ignores them)."""

NEUTRAL_WHEN_INHERITED = ("min_p", "min_new_tokens", "suppress_tokens", "begin_suppress_tokens")
"""Fields whose default, `None`, adds no processor at all: [`neutral_generation_config`] pins them to their neutral
value only where `generate` would otherwise fill them from a generation config that sets them."""


def neutral_generation_config(
    max_new_tokens: int,
    eos_token_ids: Iterable[int],
    pad_token_id: int,
    inherited: GenerationConfig | None = None,
    **setting,
) -> GenerationConfig:
    """The one builder of a [`~transformers.GenerationConfig`] that samples the model with every processor neutral
    ([`NEUTRAL_GENERATION_VALUES`]), then `setting` on top: exact sampling of p with no setting (the samplers of p),
    one decoding setting and nothing else with one (the audit).

    Args:
        max_new_tokens (`int`): longest completion.
        eos_token_ids (iterable of `int`): every id that ends a completion (empty: fixed-length completions).
        pad_token_id (`int`): written after a completion's EOS.
        inherited (`GenerationConfig`, *optional*): the config `generate` fills unset fields from (the model's);
            the fields of [`NEUTRAL_WHEN_INHERITED`] are pinned only where it sets them (so that no neutral
            processor shows up in the list `generate` builds). `None`: all of them are pinned.
        **setting: `GenerationConfig` fields that override the neutral values, e.g. `top_p=0.9`.

    Example:
    ```python
    >>> config = neutral_generation_config(8, {7, 2}, pad_token_id=0, top_p=0.9)
    >>> config.eos_token_id, config.top_p, config.top_k, config.temperature
    ([2, 7], 0.9, 0, 1.0)
    ```
    """
    values = {
        key: value
        for key, value in NEUTRAL_GENERATION_VALUES.items()
        if key not in NEUTRAL_WHEN_INHERITED or inherited is None or getattr(inherited, key, None) is not None
    }
    if "min_new_tokens" in values:  # it overrides `min_length`; both set make `generate` warn on every call
        values.pop("min_length")
    eos = sorted(int(i) for i in eos_token_ids)
    values.update(max_new_tokens=max_new_tokens, eos_token_id=eos or None, pad_token_id=int(pad_token_id))
    values.update(setting)
    return GenerationConfig(**values)


def exact_generation_config(max_new_tokens: int, eos_token_ids: Iterable[int], pad_token_id: int) -> GenerationConfig:
    """The [`~transformers.GenerationConfig`] of exact ancestral sampling of p: token temperature 1, no truncation,
    no penalty, no constraint, stopping at any of `eos_token_ids` (kept) or after `max_new_tokens` tokens.

    Use it with `custom_generate=exact_ancestral_sample`, which also drops whatever `generate` would inherit from
    the model's `generation_config` in the fields that have no neutral value besides `None`.

    Args:
        max_new_tokens (`int`): longest completion.
        eos_token_ids (iterable of `int`): every id that ends a completion (empty: fixed-length completions).
        pad_token_id (`int`): written after a completion's EOS.

    Example:
    ```python
    >>> config = exact_generation_config(8, {2, 7}, pad_token_id=0)
    >>> config.eos_token_id, config.top_k, config.repetition_penalty, config.suppress_tokens
    ([2, 7], 0, 1.0, [])
    ```
    """
    return neutral_generation_config(max_new_tokens, eos_token_ids, pad_token_id)


@contextlib.contextmanager
def model_generation_config_ignored(model):
    """Within the block, the transformers model under `model` (PEFT and DDP wrappers looked through) carries a
    default [`~transformers.GenerationConfig`], so that `generate` inherits nothing from its own (`stop_strings`,
    `max_time`, processors whose neutral value is `None`, ...); the original is restored on exit."""
    inner = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    inner = inner.get_base_model() if callable(getattr(inner, "get_base_model", None)) else inner
    original = getattr(inner, "generation_config", None)
    if original is None:
        yield
        return
    inner.generation_config = GenerationConfig()
    try:
        yield
    finally:
        inner.generation_config = original


def exact_ancestral_sample(
    model,
    input_ids,
    logits_processor=None,
    stopping_criteria=None,
    generation_config=None,
    synced_gpus: bool = False,
    streamer=None,
    **model_kwargs,
):
    """`custom_generate` callable: `_sample` with no logits processor and with the length and EOS criteria only.

    `generate` still prepares the inputs, the cache and the final `generation_config` (whose `max_length` and EOS
    ids come from [`exact_generation_config`]); the processors and extra stopping criteria it built from the
    model's own generation config are discarded, so every token is drawn from `softmax(logits)` itself.
    """
    criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=generation_config.max_length)])
    eos = getattr(generation_config, "_eos_token_tensor", None)
    if eos is not None and eos.numel():
        criteria.append(EosTokenCriteria(eos_token_id=eos))
    return GenerationMixin._sample(
        model,
        input_ids,
        logits_processor=LogitsProcessorList(),
        stopping_criteria=criteria,
        generation_config=generation_config,
        synced_gpus=synced_gpus,
        streamer=streamer,
        **model_kwargs,
    )


def exact_generate(
    model,
    input_ids,
    attention_mask,
    max_new_tokens: int,
    eos_token_ids,
    pad_token_id: int,
    return_logits: bool = False,
    share_prompts: bool = False,
):
    """`model.generate` drawing exactly from p: [`exact_generation_config`] with [`exact_ancestral_sample`], the
    model's own generation config hidden ([`model_generation_config_ignored`]). Every sampler of p calls this.

    With `share_prompts=True`, rows that repeat a prompt (several completions of one prompt) share its forward
    pass: each distinct prompt is run once and its key/value cache copied to its rows before sampling starts
    ([`shared_prompt_cache`]). The draws are the same random process; on a short answer to a long chat prompt this
    is most of the cost saved.

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + new_tokens)`: prompts and completions, `pad_token_id`
        after a completion's EOS (any of `eos_token_ids`). With `return_logits=True`, `generate`'s output with
        `sequences` and `logits` (each step's unprocessed logits: the conditionals p itself was drawn from).

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(8, seed=0, eos_token_id=2)
    >>> model.generation_config.update(top_k=1, repetition_penalty=3.0, suppress_tokens=[5])  # all ignored
    {}
    >>> exact_generate(model, torch.tensor([[1, 3]]), torch.ones(1, 2, dtype=torch.long), 4, {2, 7}, 0).shape[0]
    1
    ```
    """
    config = exact_generation_config(max_new_tokens, eos_token_ids, pad_token_id)
    if return_logits:
        config.update(output_logits=True, return_dict_in_generate=True)
    cache = shared_prompt_cache(model, input_ids, attention_mask) if share_prompts else None
    with model_generation_config_ignored(model):
        return model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            generation_config=config,
            custom_generate=exact_ancestral_sample,
            **({"past_key_values": cache} if cache is not None else {}),
        )


@torch.no_grad()
def shared_prompt_cache(model, input_ids: torch.Tensor, attention_mask: torch.Tensor):
    """The key/value cache of every prompt token but the last, computed once per distinct row of a left-padded
    batch and copied to the rows that repeat it; `None` when no row repeats another, for a prompt of one token, or
    for a model whose `generate` does not take a [`~transformers.DynamicCache`] (`generate` then runs as usual).

    `generate` given this cache forwards only each row's last prompt token before sampling, with the positions it
    derives from `attention_mask`, the ones used here. A PEFT prompt-learning adapter (its virtual tokens enter every
    pass) gets `None` too.

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> model = tiny_causal_lm(8, seed=0)
    >>> ids = torch.tensor([[0, 3, 4], [0, 3, 4], [5, 6, 7]])
    >>> mask = torch.tensor([[0, 1, 1], [0, 1, 1], [1, 1, 1]])
    >>> cache = shared_prompt_cache(model, ids, mask)
    >>> cache.get_seq_length(), cache.layers[0].keys.shape[0]
    (2, 3)
    >>> shared_prompt_cache(model, ids[1:], mask[1:]) is None  # nothing repeats
    True
    ```
    """
    from transformers import DynamicCache, PreTrainedModel

    from ..likelihood.shared_prompt import prompt_learning

    inner = model.get_base_model() if callable(getattr(model, "get_base_model", None)) else model
    supported = isinstance(inner, PreTrainedModel) and not inner.config.is_encoder_decoder
    supported = supported and not prompt_learning(model)  # its virtual tokens would enter each pass
    if not supported or not inner._supports_default_dynamic_cache() or input_ids.shape[1] < 2:
        return None
    rows = [tuple(row) for row in torch.cat([input_ids, attention_mask.to(input_ids.dtype)], dim=1).tolist()]
    first: dict[tuple, int] = {}  # each distinct row -> where it first appears
    for position, row in enumerate(rows):
        first.setdefault(row, position)
    if len(first) == len(rows):
        return None
    slot = {row: k for k, row in enumerate(first)}
    distinct = torch.tensor(list(first.values()), device=input_ids.device)
    ids, mask = input_ids[distinct, :-1], attention_mask[distinct, :-1]
    cache = DynamicCache(config=inner.config.get_text_config(decoder=True))
    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
    model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
    cache.batch_select_indices(torch.tensor([slot[row] for row in rows], device=input_ids.device))
    return cache
