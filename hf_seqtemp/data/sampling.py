# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Completions sampled from the reference model p itself: exact ancestral sampling, one prompt group per prompt."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from datasets import Dataset
from tqdm.auto import tqdm

from ..checks import check_int
from ..progress import progress_disabled
from .ancestral import exact_generate
from .formats import end_at_eos, tokenize_prompt


def eos_ids_of(model, tokenizer=None) -> set[int]:
    """The EOS ids a completion ends at: every id of the model's `generation_config.eos_token_id` (an int or a
    list, where `generate` stops at any of them) and the tokenizer's EOS.

    Example:
    ```python
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[2, 7]))
    >>> sorted(eos_ids_of(model, SimpleNamespace(eos_token_id=2)))
    [2, 7]
    ```
    """
    sources = [getattr(getattr(model, "generation_config", None), "eos_token_id", None)]
    sources.append(getattr(tokenizer, "eos_token_id", None) if tokenizer is not None else None)
    ids = set()
    for source in sources:
        ids.update(source if isinstance(source, (list, tuple, set)) else [source])
    return {int(i) for i in ids if isinstance(i, int)}


@torch.no_grad()
def sample_completions(
    model,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos_ids: set[int] | None = None,
    pad_token_id: int = 0,
    batch_size: int = 16,
    desc: str | None = "Sampling completions from the model",
    return_logps: bool = False,
) -> list[list[int]] | tuple[list[list[int]], list[list[float]]]:
    """One completion per prompt (token ids in, token ids out), drawn exactly from the model: ancestral sampling at
    token temperature 1 with no logits processor, whatever the model's `generation_config` sets
    ([`exact_generate`]). A completion stops at its first EOS token, any of `eos_ids` (kept: ending is part
    of the event), or after `max_new_tokens` tokens.

    Args:
        model: a causal LM (`GenerationMixin`), in eval mode.
        prompts (list of lists of `int`): prompt token ids (repeat a prompt to draw several completions of it).
        max_new_tokens (`int`): longest completion.
        eos_ids (`set` of `int`, *optional*): tokens that end a completion (pass [`eos_ids_of`] of the model: every
            EOS id of its generation config); none: fixed-length completions.
        pad_token_id (`int`, *optional*, defaults to 0): id used for left padding (never attended).
        batch_size (`int`, *optional*, defaults to 16): prompts generated at once.
        desc (`str`, *optional*): progress bar label; `None` hides the bar.
        return_logps (`bool`, *optional*, defaults to `False`): also return `log p(x_t | x_<t)` of every completion
            token, read from the sampler's own (unprocessed) logits ([`sampled_token_logps`]): the sample is drawn
            from `p` at token temperature 1, so these are the model's log-probabilities of what it drew, with no
            second forward pass.

    Returns:
        `list` of completions (lists of token ids), in the order of `prompts`; with `return_logps`, a tuple of it
        and the per-token log-probabilities of each completion (same lengths).
    """
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens")
    eos_ids = eos_ids or set()
    device = next(model.parameters()).device
    out, logps = [], []
    starts = range(0, len(prompts), batch_size)
    for start in tqdm(starts, desc=desc, disable=desc is None or len(starts) < 2 or progress_disabled(), leave=False):
        chunk = [list(p) for p in prompts[start : start + batch_size]]
        width = max(len(p) for p in chunk)
        ids = torch.full((len(chunk), width), pad_token_id, dtype=torch.long, device="cpu")
        attention = torch.zeros(len(chunk), width, dtype=torch.long, device="cpu")
        for row, prompt in enumerate(chunk):
            ids[row, width - len(prompt) :] = torch.tensor(prompt, device="cpu")
            attention[row, width - len(prompt) :] = 1
        generated = exact_generate(
            model,
            ids.to(device),
            attention.to(device),
            max_new_tokens,
            eos_ids,
            pad_token_id,
            return_logits=return_logps,
            share_prompts=True,  # the completions of one prompt share its forward pass
        )
        sequences = generated.sequences if return_logps else generated
        completions = [end_at_eos(row[width:].tolist(), eos_ids) for row in sequences]
        out.extend(completions)
        if return_logps:
            token_logps = sampled_token_logps(generated.logits, sequences[:, width:]).cpu()
            logps.extend(token_logps[row, : len(c)].tolist() for row, c in enumerate(completions))
    return (out, logps) if return_logps else out


def sampled_token_logps(step_logits: Sequence[torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """`log softmax(logits_t)[x_t]` in float32 for every generated token, from `generate`'s `output_logits`.

    Args:
        step_logits (sequence of `torch.Tensor` of shape `(batch, vocab)`): the unprocessed logits of each step.
        tokens (`torch.LongTensor` of shape `(batch, steps)`): the tokens drawn at those steps.

    Returns:
        `torch.FloatTensor` of shape `(batch, steps)` (one step at a time: no float32 copy of all the logits).

    Example:
    ```python
    >>> logits = (torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, 2.0]]))
    >>> [round(p, 3) for p in sampled_token_logps(logits, torch.tensor([[1, 1]])).exp()[0].tolist()]
    [0.5, 0.881]
    ```
    """
    columns = [
        logits.float().log_softmax(dim=-1).gather(1, tokens[:, t : t + 1].to(logits.device))[:, 0]
        for t, logits in enumerate(step_logits)
    ]
    return torch.stack(columns, dim=1)


def as_conversation(prompt: str | list[dict], system_prompt: str | None) -> list[dict]:
    """A text prompt as a conversational user turn (after an optional system message); a conversation unchanged."""
    if isinstance(prompt, list):
        return prompt
    system = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return [*system, {"role": "user", "content": prompt}]


def sample_dataset(
    model,
    tokenizer,
    prompts: Sequence[str | list[dict]],
    num_samples: int = 1,
    max_new_tokens: int = 32,
    seed: int = 0,
    batch_size: int = 16,
    chat_template: bool = True,
    system_prompt: str | None = None,
) -> Dataset:
    """Builds a dataset by sampling completions from the model itself (exact ancestral sampling, no truncation).

    Sequence temperature tempers the model's own distribution p, so the natural training data are samples of p:
    each prompt gets `num_samples` completions drawn at token temperature 1 with no logits processor, whatever the
    model's `generation_config` sets ([`exact_generate`]). A completion stops at any EOS id of the model's
    generation config or the tokenizer (kept, since ending is part of the event) or after `max_new_tokens`. The
    completions of one prompt form one prompt group.

    Args:
        model: a causal LM (`GenerationMixin`).
        tokenizer: its tokenizer.
        prompts (`list` of `str` or of chat conversations): prompts. A text prompt becomes a conversational user
            turn when `chat_template=True` and the tokenizer has a chat template, and is stored in that form, so
            that training, evaluation and generation all render it with the same template (TRL's rule: templates
            apply to conversational examples).
        num_samples (`int`, *optional*, defaults to 1): completions per prompt.
        max_new_tokens (`int`, *optional*, defaults to 32): longest completion.
        seed (`int`, *optional*, defaults to 0): seeds the sampling.
        batch_size (`int`, *optional*, defaults to 16): sequences generated at once.
        chat_template (`bool`, *optional*, defaults to `True`): turn text prompts into conversations.
        system_prompt (`str`, *optional*): system message put before each text prompt turned into a conversation (a
            short one replaces a template's long default system prompt, which makes every sequence cheaper to score).

    Returns:
        [`~datasets.Dataset`] with `prompt` (text or conversation), `completion` (text) and the exact sampled tokens as
        `input_ids` and `completion_mask`, so that scoring never depends on re-tokenising text, and `truncated`
        (`True` for a completion cut at `max_new_tokens` before its EOS).

    Example:
    ```python
    >>> from hf_seqtemp import load_default_model, sample_dataset
    >>> model, tokenizer = load_default_model()  # doctest: +SKIP
    >>> data = sample_dataset(model, tokenizer, ["Name a colour."], num_samples=4, max_new_tokens=8)  # doctest: +SKIP
    ```
    """
    num_samples = check_int(num_samples, "num_samples")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens")
    if not prompts:
        raise ValueError("`prompts` is empty: give at least one prompt.")
    if chat_template and getattr(tokenizer, "chat_template", None):
        prompts = [as_conversation(p, system_prompt) for p in prompts]
    jobs = [(prompt, tokenize_prompt(tokenizer, prompt)) for prompt in prompts for _ in range(num_samples)]
    eos_ids = eos_ids_of(model, tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else next(iter(eos_ids), 0)
    torch.manual_seed(seed)
    completions = sample_completions(
        model, [ids for _, ids in jobs], max_new_tokens, eos_ids, pad_id, batch_size, "Sampling dataset from the model"
    )
    rows = [
        {
            "prompt": prompt,
            "completion": tokenizer.decode(completion, skip_special_tokens=True),
            "input_ids": prompt_ids + completion,
            "completion_mask": [0] * len(prompt_ids) + [1] * len(completion),
            "truncated": completion[-1] not in eos_ids,  # cut at `max_new_tokens`: no EOS is appended to it
        }
        for (prompt, prompt_ids), completion in zip(jobs, completions)
        if completion
    ]
    return Dataset.from_list(rows)
