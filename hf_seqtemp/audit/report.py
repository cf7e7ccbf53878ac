# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`audit_decoding`: what a decoding setting does to the distribution over whole answers, per prompt and pooled."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import torch
from transformers import GenerationConfig

from ..checks import check_int
from ..data.formats import tokenize_prompt
from ..data.sampling import as_conversation
from ..metrics.core import effective_temperature, kendall_tau
from .decoding import (
    all_eos_ids,
    as_setting,
    decoding_config,
    logits_processors,
    sample_completions_with,
    score_completions,
)

RARE_QUANTILE = 0.05
"""An answer is one p itself would *rarely* produce when its log p is below this quantile of log p over p's own
samples of the same prompt (so exact samples of p are rare at this rate)."""


def prompt_token_ids(tokenizer, prompts, chat_template: bool = True, system_prompt: str | None = None) -> list:
    """Token ids of prompts in any of TRL's prompt forms: text, a conversation, a dataset with a `prompt` column, or
    token ids. Text becomes a user turn of the chat template when the tokenizer has one (as everywhere in
    hf_seqtemp), rendered with the generation prompt."""
    if hasattr(prompts, "column_names"):
        if "prompt" not in prompts.column_names:
            raise ValueError(f"`prompts` is a dataset without a `prompt` column (columns {prompts.column_names}).")
        prompts = prompts["prompt"]
    if not prompts:
        raise ValueError("`prompts` is empty: give at least one prompt.")
    template = chat_template and getattr(tokenizer, "chat_template", None)
    out = []
    for prompt in prompts:
        if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], int):
            out.append(list(prompt))
        else:
            out.append(tokenize_prompt(tokenizer, as_conversation(prompt, system_prompt) if template else prompt))
    return out


def _seeded(seed: int, index: int) -> None:
    torch.manual_seed(seed * 1_000_003 + index)


def rare_thresholds(
    model,
    prompt_ids: list,
    num_samples: int,
    max_new_tokens: int,
    seed: int = 0,
    quantile: float = RARE_QUANTILE,
    return_samples: bool = False,
):
    """Per prompt, the `quantile` of log p over `num_samples` exact samples of p (see [`RARE_QUANTILE`]); with
    `return_samples`, also those samples (one list of completions per prompt)."""
    config = decoding_config(model, None, max_new_tokens)
    thresholds, samples = [], []
    for index, prompt in enumerate(prompt_ids):
        _seeded(seed + 7919, index)
        samples.append(sample_completions_with(model, prompt, num_samples, config))
        scored = score_completions(model, prompt, samples[-1], config, config.eos_token_id or ())
        thresholds.append(torch.quantile(scored.ref_logps, quantile).item())
    return (thresholds, samples) if return_samples else thresholds


def _distinct(completions: list[list[int]]) -> list[int]:
    seen, keep = set(), []
    for index, completion in enumerate(completions):
        if tuple(completion) not in seen:
            seen.add(tuple(completion))
            keep.append(index)
    return keep


def _rank_figures(ref: torch.Tensor, policy: torch.Tensor, groups: list[int]) -> tuple[float, float]:
    """Within-prompt T_eff and Kendall τ over distinct answers of the prompts that have at least two."""
    counts = torch.bincount(torch.as_tensor(groups, device="cpu")) if groups else torch.zeros(0, device="cpu")
    usable = [i for i, g in enumerate(groups) if counts[g] > 1]
    if not usable:
        return math.nan, math.nan
    codes = [groups[i] for i in usable]
    return (
        effective_temperature(ref[usable], policy[usable], groups=codes),
        kendall_tau(ref[usable], policy[usable], groups=codes),
    )


def _figures(scored: list, completions: list, thresholds: list | None) -> dict[str, float]:
    """Pooled figures of a list of per-prompt [`ScoredCompletions`] (T_eff and τ within prompts, distinct answers)."""
    keep = [_distinct(c) for c in completions]
    groups = [g for g, k in enumerate(keep) for _ in k]
    ref = torch.cat([s.ref_logps[k] for s, k in zip(scored, keep)])
    policy = torch.cat([s.policy_logps[k] for s, k in zip(scored, keep)])
    t_eff, tau = _rank_figures(ref, policy, groups)
    all_ref = torch.cat([s.ref_logps for s in scored])
    all_policy = torch.cat([s.policy_logps for s in scored])
    lengths = torch.cat([s.lengths for s in scored]).double()
    kept = torch.cat([s.log_kept_mass for s in scored])
    figures = {
        "t_eff": t_eff,
        "kendall_tau": tau,
        "ref_nll_per_token": (-all_ref.sum() / lengths.sum()).item(),
        "policy_nll_per_token": (-all_policy[torch.isfinite(all_policy)].sum() / lengths.sum()).item(),
        "mean_log_kept_mass": kept.mean().item(),
        "log_kept_mass_per_token": (kept.sum() / lengths.sum()).item(),
        "mean_length": lengths.mean().item(),
        "truncated_fraction": torch.cat([s.truncated for s in scored]).double().mean().item(),
        "distinct_fraction": len(groups) / len(all_ref),
        "off_support": int((~torch.isfinite(all_policy)).sum()),
    }
    if thresholds is not None:
        rare = torch.cat([s.ref_logps < t for s, t in zip(scored, thresholds)])
        figures["rare_fraction"] = rare.double().mean().item()
    return figures


def audit_decoding(
    model,
    tokenizer,
    prompts,
    setting: Mapping | GenerationConfig | None = None,
    num_samples: int = 8,
    max_new_tokens: int = 32,
    seed: int = 0,
    chat_template: bool = True,
    system_prompt: str | None = None,
    rare_thresholds_: Sequence[float] | None = None,
    reference_samples: int | None = None,
    keep_sequences: bool = True,
    **flags,
) -> dict:
    """Samples completions with exactly one decoding setting and measures what it does to whole answers.

    For every completion x of every prompt c: log p(x|c) under the model, log q(x|c) under the decoding distribution
    (the log-softmax of the logits after transformers' own processors, in `generate`'s order, per prefix; see
    [`hf_seqtemp.audit.decoding`]) and Σ_t log S_t, the log of the mass of p the truncation kept, summed over steps.

    Reported per prompt and pooled: T_eff (Eq. 17) and Kendall τ of q against p *within prompts* over the distinct
    answers of a prompt (copies of one answer are one answer; a prompt with a single distinct answer adds nothing);
    NLL per token under p (`ref_nll_per_token`) and under q (`policy_nll_per_token`); the mean log kept mass per
    answer and per token; and `rare_fraction`, the share of answers whose log p is below the 5 % quantile of log p
    over p's own samples of that prompt ([`RARE_QUANTILE`]; about 0.05 for p itself).

    Args:
        model: a causal LM (`GenerationMixin`).
        tokenizer: its tokenizer.
        prompts: text prompts, conversations, a dataset with a `prompt` column, or lists of token ids.
        setting (`dict` or `GenerationConfig`, *optional*): the decoding, e.g. `{"temperature": 0.7, "top_p": 0.9}`;
            its flags may also be passed as keyword arguments. Nothing else is applied ([`decoding_config`]).
        num_samples (`int`, *optional*, defaults to 8): completions per prompt.
        max_new_tokens (`int`, *optional*, defaults to 32): longest completion (cut ones are scored as cut prefixes).
        seed (`int`, *optional*, defaults to 0): seeds the sampling (prompt by prompt).
        chat_template (`bool`, *optional*, defaults to `True`), system_prompt (`str`, *optional*): how text prompts are
            rendered (as in [`sample_dataset`]).
        rare_thresholds_ (list of `float`, *optional*): per-prompt thresholds from [`rare_thresholds`] (computed
            when not given, from `reference_samples` exact samples of p per prompt).
        reference_samples (`int`, *optional*): samples of p per prompt behind the thresholds; `max(num_samples, 32)`
            by default.
        keep_sequences (`bool`, *optional*, defaults to `True`): include every completion's figures.

    Returns:
        `dict` with `setting`, `processors` (the classes `generate` applied), `summary` (pooled figures),
        `per_prompt` (the same figures per prompt), `sequences` and `wall_time_s`.

    Example:
    ```python
    >>> from hf_seqtemp import load_default_model
    >>> from hf_seqtemp.audit import audit_decoding
    >>> model, tokenizer = load_default_model()  # doctest: +SKIP
    >>> audit = audit_decoding(model, tokenizer, ["Name a colour."], top_p=0.9)  # doctest: +SKIP
    >>> audit["summary"]["t_eff"], audit["summary"]["kendall_tau"]  # doctest: +SKIP
    ```
    """
    start = time.perf_counter()
    num_samples = check_int(num_samples, "num_samples")
    if num_samples < 2:
        raise ValueError(f"`num_samples` must be at least 2 (T_eff and τ compare answers), got {num_samples}.")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens")
    setting = {**as_setting(setting), **flags}
    prompt_ids = prompt_token_ids(tokenizer, prompts, chat_template, system_prompt)
    eos = sorted(set(all_eos_ids(model, tokenizer)))
    pad = getattr(tokenizer, "pad_token_id", None)
    config = decoding_config(model, setting, max_new_tokens, eos, pad)
    if rare_thresholds_ is None:
        reference = reference_samples if reference_samples is not None else max(num_samples, 32)
        rare_thresholds_ = rare_thresholds(model, prompt_ids, reference, max_new_tokens, seed)
    scored, completions = [], []
    for index, prompt in enumerate(prompt_ids):
        _seeded(seed, index)
        completions.append(sample_completions_with(model, prompt, num_samples, config))
        scored.append(score_completions(model, prompt, completions[-1], config, eos))
    device = next(model.parameters()).device
    processors = logits_processors(model, config, torch.as_tensor([prompt_ids[0]], device=device))
    per_prompt = [
        {"prompt": index, **_figures([s], [c], [t])}
        for index, (s, c, t) in enumerate(zip(scored, completions, rare_thresholds_))
    ]
    result = {
        "setting": setting,
        "processors": [type(p).__name__ for p in processors],
        "num_prompts": len(prompt_ids),
        "num_samples": num_samples,
        "max_new_tokens": max_new_tokens,
        "summary": _figures(scored, completions, rare_thresholds_),
        "per_prompt": per_prompt,
    }
    if keep_sequences:
        result["sequences"] = [
            {
                "prompt": index,
                "completion_ids": completion,
                "ref_logp": s.ref_logps[row].item(),
                "policy_logp": s.policy_logps[row].item(),
                "log_kept_mass": s.log_kept_mass[row].item(),
                "length": int(s.lengths[row]),
            }
            for index, (s, comps) in enumerate(zip(scored, completions))
            for row, completion in enumerate(comps)
        ]
    result["wall_time_s"] = time.perf_counter() - start
    return result
