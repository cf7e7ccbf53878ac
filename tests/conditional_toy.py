# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""An enumerable *conditional* oracle: a tiny causal LM answering a few prompts, every completion enumerated.

Each prompt c is `[BOS, c]`; its completions are all `vocab_size ** length` token strings. The prompts' conditionals
p(·|c) differ in entropy (checked by the tests that rely on it), so their tempered normalisers log Z_T(c) differ:
exactly what pooled metrics and losses get wrong.
"""

from __future__ import annotations

import itertools

import torch
from datasets import Dataset
from tiny_models import BOS

PROMPTS = ((BOS, 0), (BOS, 1), (BOS, 2), (BOS, 3))


def enumerate_completions(vocab_size: int, length: int, prompts=PROMPTS) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (prompt, completion) pair: `input_ids` `(len(prompts) · V^L, P + L)` and the prompt index of each row."""
    tails = torch.tensor(list(itertools.product(range(vocab_size), repeat=length)))
    rows, groups = [], []
    for index, prompt in enumerate(prompts):
        rows.append(torch.cat([torch.tensor(prompt).expand(len(tails), -1), tails], dim=1))
        groups += [index] * len(tails)
    return torch.cat(rows), torch.tensor(groups)


@torch.no_grad()
def completion_logps(model, input_ids: torch.Tensor, prompt_length: int) -> torch.Tensor:
    """Exact log q(x | c): the sum of the completion tokens' conditionals, in float64."""
    logits = model(input_ids=input_ids).logits[:, :-1].double().log_softmax(-1)
    token = logits.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    return token[:, prompt_length - 1 :].sum(1)


def per_prompt_tempered_kl(ref: torch.Tensor, model: torch.Tensor, groups: torch.Tensor, temperature: float):
    """KL(p_T(·|c) ‖ q(·|c)) of every prompt c, both normalised over that prompt's enumerated completions."""
    out = []
    for g in torch.unique(groups).tolist():
        log_pt = ref[groups == g] / temperature
        log_pt = log_pt - torch.logsumexp(log_pt, 0)
        log_q = model[groups == g] - torch.logsumexp(model[groups == g], 0)
        out.append((log_pt.exp() * (log_pt - log_q)).sum().item())
    return out


def draw(ref: torch.Tensor, groups: torch.Tensor, per_group: int, seed: int = 0) -> torch.Tensor:
    """Indices of `per_group` distinct completions per prompt, drawn from p(·|c) without replacement (no ties)."""
    generator = torch.Generator().manual_seed(seed)
    picked = []
    for g in torch.unique(groups).tolist():
        members = (groups == g).nonzero().flatten()
        probs = (ref[members] - torch.logsumexp(ref[members], 0)).exp().float()
        picked.append(members[torch.multinomial(probs, per_group, replacement=False, generator=generator)])
    return torch.cat(picked)


def entropies(ref: torch.Tensor, groups: torch.Tensor) -> list[float]:
    out = []
    for g in torch.unique(groups).tolist():
        logp = ref[groups == g] - torch.logsumexp(ref[groups == g], 0)
        out.append(-(logp.exp() * logp).sum().item())
    return out


@torch.no_grad()
def sample_completions(model, num_per_prompt: int, length: int, prompts=PROMPTS, seed: int = 0) -> torch.Tensor:
    """`num_per_prompt` exact ancestral samples per prompt, prompt-major: `(len(prompts) · num, P + L)`."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.cat([torch.tensor(p).expand(num_per_prompt, -1) for p in prompts])
    for _ in range(length):
        probs = model(input_ids=rows).logits[:, -1].float().softmax(-1)
        rows = torch.cat([rows, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return rows


def as_prompted_dataset(rows: torch.Tensor, prompt_length: int) -> Dataset:
    """Pre-tokenised rows with the prompt unscored; no group column (the default grouping must find the prompts)."""
    mask = [0] * prompt_length + [1] * (rows.shape[1] - prompt_length)
    return Dataset.from_dict({"input_ids": rows.tolist(), "completion_mask": [mask] * rows.shape[0]})


def word_tokenizer():
    """A tokenizer of the prompts as words: "x", "y", "z" → `[BOS, 1]`, `[BOS, 2]`, `[BOS, 3]` (prompt-only data)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"<s>": BOS, "x": 1, "y": 2, "z": 3}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>")
