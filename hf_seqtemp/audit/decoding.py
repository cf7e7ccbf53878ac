# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The decoding distribution q of a `generate` setting, scored with transformers' own logits processors.

A decoding setting (temperature, top-k, top-p, min-p, typical-p, epsilon cut-off, repetition penalty, no-repeat
n-grams, ...) turns the model's next-token distribution p(·|prefix) into q(·|prefix) = softmax(processed logits).
`generate` samples from q, so the probability of a whole completion under the decoding is
`log q(x|c) = Σ_t log softmax(L(prefix_t, logits_t))[x_t]`, L being the very [`~transformers.LogitsProcessorList`]
that `generate` builds (`model._get_logits_processor`, in its order), applied to each prefix (the repetition penalty
and the no-repeat n-gram rule depend on it). The truncation keeps the tokens whose processed logit is finite; the
mass of p on them, `S_t = Σ_{v kept} p(v|prefix_t)`, is what a truncating sampler silently renormalises by: with
truncation alone (top-k, top-p or min-p at temperature 1) every kept token has `q = p / S_t`, so
`log q(x) − log p(x) = −Σ_t log S_t` (the bias per token of an importance ratio that ignores the truncation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from transformers import GenerationConfig, LogitsProcessorList

from ..data.ancestral import NEUTRAL_GENERATION_VALUES, neutral_generation_config
from ..data.formats import end_at_eos

DECODING_FLAGS = (
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "epsilon_cutoff",
    "eta_cutoff",
    "repetition_penalty",
    "no_repeat_ngram_size",
)
"""The `GenerationConfig` fields a decoding setting is usually given by (any other field may be passed too)."""

NEUTRAL_DECODING = NEUTRAL_GENERATION_VALUES
"""Values under which a processor leaves p unchanged (one table with the samplers of p,
[`~hf_seqtemp.data.ancestral.NEUTRAL_GENERATION_VALUES`]). transformers 5 fills every field left `None` from the
model's own `generation_config` (whose `top_k`, `top_p` or `temperature` may be set), so an audit sets them."""


def all_eos_ids(model, tokenizer=None) -> list[int]:
    """Every id that ends a completion: the tokenizer's EOS and all of the model's `generation_config.eos_token_id`."""
    ids = set()
    for source in (getattr(tokenizer, "eos_token_id", None), model.generation_config.eos_token_id):
        ids |= set(source if isinstance(source, list) else [source])
    return sorted(ids - {None})


def as_setting(setting: Mapping | GenerationConfig | None) -> dict:
    """The fields a setting sets: a dict's entries that are not `None`, a `GenerationConfig`'s non-default ones.

    Example:
    ```python
    >>> as_setting(GenerationConfig(top_p=0.9, do_sample=True))
    {'do_sample': True, 'top_p': 0.9}
    ```
    """
    if isinstance(setting, GenerationConfig):
        default = GenerationConfig().to_dict()
        setting = {k: v for k, v in setting.to_dict().items() if v != default.get(k)}
    return {k: v for k, v in dict(setting or {}).items() if v is not None and k != "transformers_version"}


def decoding_config(
    model,
    setting: Mapping | GenerationConfig | None = None,
    max_new_tokens: int = 32,
    eos_token_id: Sequence[int] | None = None,
    pad_token_id: int | None = None,
) -> GenerationConfig:
    """The `GenerationConfig` that samples a decoding setting and nothing else: the setting's fields, neutral values
    ([`~hf_seqtemp.data.ancestral.neutral_generation_config`]) for every other processor, `do_sample=True`, every EOS id.

    Args:
        model: the causal LM (its `generation_config` names the EOS ids when `eos_token_id` is not given).
        setting (`dict` or `GenerationConfig`, *optional*): e.g. `{"temperature": 0.7, "top_p": 0.9}`; only the
            fields it sets (not `None`) count. `None` is exact sampling of p.
        max_new_tokens (`int`, *optional*, defaults to 32): longest completion.
        eos_token_id (list of `int`, *optional*): ids that end a completion (default: [`all_eos_ids`]).
        pad_token_id (`int`, *optional*): id written after a finished completion (default: the first EOS id).

    Example:
    ```python
    >>> from hf_seqtemp.models.tiny import tiny_causal_lm
    >>> config = decoding_config(tiny_causal_lm(), {"top_p": 0.9})
    >>> config.top_p, config.top_k, config.temperature, config.do_sample
    (0.9, 0, 1.0, True)
    ```
    """
    setting = as_setting(setting)
    if setting.get("do_sample") is False or setting.get("num_beams", 1) != 1:
        raise ValueError(
            f"`setting` must describe sampling (do_sample=True, num_beams=1), got {setting}: an audit measures the "
            "distribution a sampler draws from; greedy and beam search have none."
        )
    eos = list(eos_token_id) if eos_token_id is not None else all_eos_ids(model)
    pad = pad_token_id if pad_token_id is not None else (eos[0] if eos else 0)
    return neutral_generation_config(max_new_tokens, eos, pad, inherited=model.generation_config, **setting)


def logits_processors(model, config: GenerationConfig, prompt_ids: torch.Tensor) -> LogitsProcessorList:
    """The processors `generate(input_ids=prompt_ids, generation_config=config)` applies, in its order, built by
    `generate`'s own path (`_prepare_generation_config`, `_prepare_special_tokens`, `_get_logits_processor`)."""
    prepared, _ = model._prepare_generation_config(config)
    model._prepare_special_tokens(prepared, True, device=prompt_ids.device, batch_size=prompt_ids.shape[0])
    return model._get_logits_processor(
        generation_config=prepared,
        input_ids_seq_length=prompt_ids.shape[1],
        encoder_input_ids=prompt_ids,
        logits_processor=LogitsProcessorList(),
        device=prompt_ids.device,
        model_kwargs={"attention_mask": torch.ones_like(prompt_ids)},
    )


@dataclass
class ScoredCompletions:
    """Per-completion figures of one prompt's completions (all tensors of shape `(n,)`, float64 where real).

    `ref_logps`: log p(x|c); `policy_logps`: log q(x|c) under the decoding; `log_kept_mass`: Σ_t log S_t;
    `lengths`: tokens per completion; `truncated`: cut at `max_new_tokens` before any EOS.
    """

    ref_logps: torch.Tensor
    policy_logps: torch.Tensor
    log_kept_mass: torch.Tensor
    lengths: torch.Tensor
    truncated: torch.Tensor


def _forward_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    position_ids = (attention_mask.cumsum(1) - 1).clamp(min=0)
    return model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits


@torch.no_grad()
def score_completions(
    model, prompt: Sequence[int], completions: Sequence[Sequence[int]], config: GenerationConfig, eos_ids=()
) -> ScoredCompletions:
    """log p, log q and the kept mass of completions of one prompt under the decoding `config` ([`decoding_config`]).

    One forward pass over the right-padded completions gives every step's logits (float32, as `generate` uses);
    at step t the processors see the prefix `prompt + completion[:t]` of every row, exactly as during sampling.
    """
    if any(len(c) == 0 for c in completions):
        raise ValueError("every completion must hold at least one token (an EOS token counts).")
    device = next(model.parameters()).device
    n, width = len(prompt), max(len(c) for c in completions)
    rows = len(completions)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    ids = torch.full((rows, n + width), pad, dtype=torch.long, device="cpu")
    ids[:, :n] = torch.as_tensor(list(prompt), device="cpu")
    mask = torch.zeros(rows, n + width, dtype=torch.long, device="cpu")
    for row, completion in enumerate(completions):
        ids[row, n : n + len(completion)] = torch.as_tensor(list(completion), device="cpu")
        mask[row, : n + len(completion)] = 1
    ids, mask = ids.to(device), mask.to(device)
    processors = logits_processors(model, config, ids[:, :n])
    logits = _forward_logits(model, ids, mask)[:, n - 1 : n + width - 1].float()
    lengths = mask.sum(1) - n
    ref = torch.zeros(rows, dtype=torch.float64, device=device)
    policy, kept_mass = torch.zeros_like(ref), torch.zeros_like(ref)
    for step in range(width):
        live = lengths > step
        raw = logits[:, step].log_softmax(-1)
        processed = processors(ids[:, : n + step], logits[:, step].clone()).log_softmax(-1)
        target = ids[:, n + step, None]
        kept = torch.isfinite(processed)
        mass = torch.where(kept, raw, torch.full_like(raw, -torch.inf)).logsumexp(-1)
        ref += torch.where(live, raw.gather(-1, target).squeeze(-1).double(), 0.0)
        policy += torch.where(live, processed.gather(-1, target).squeeze(-1).double(), 0.0)
        kept_mass += torch.where(live, mass.double(), 0.0)
    ends = torch.tensor([bool(c) and c[-1] in set(eos_ids) for c in completions], device="cpu")
    return ScoredCompletions(ref.cpu(), policy.cpu(), kept_mass.cpu(), lengths.cpu(), ~ends)


@torch.no_grad()
def sample_completions_with(
    model, prompt: Sequence[int], num_samples: int, config: GenerationConfig, batch_size: int = 64
) -> list[list[int]]:
    """`num_samples` completions of one prompt drawn by `model.generate` with exactly `config`, each cut after its
    first EOS id (kept: ending is part of the event) or at `config.max_new_tokens`."""
    device = next(model.parameters()).device
    eos = config.eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
    out = []
    for start in range(0, num_samples, batch_size):
        count = min(batch_size, num_samples - start)
        ids = torch.as_tensor([list(prompt)] * count, device=device)
        generated = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=config)
        generated = getattr(generated, "sequences", generated)  # a config with `return_dict_in_generate=True`
        out.extend(end_at_eos(row[len(prompt) :].tolist(), eos_ids) for row in generated)
    return out
