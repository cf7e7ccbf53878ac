# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Token temperatures tuned to a sequence temperature: the baselines every adapter is read against.

- [`tune_myopic`]: the token temperature t whose within-prompt T_eff on a set of samples of p is T (a 1-D search).
  Searched on the held-out completions themselves it is an oracle; searched on samples of the *training* prompts
  ([`tuned_once`], `measure_held_out(tune_on=...)`) it is the baseline a user builds once.
- [`TokenTemperatureScores`]: every step of the search scores the same sequences at another t, and only the last
  layer's softmax depends on t: the LM head's inputs at the scored positions are kept from one forward pass, and each
  t applies the head to them. A search of 6-8 steps then costs about one forward pass and 6-8 head passes.
"""

from __future__ import annotations

import time
import warnings

import torch
from torch.utils.data import DataLoader

from .audit.grid import tune_token_temperature
from .data import GROUP_ID, SeqTempCollator, prepare_dataset
from .dataset_scores import score_dataset
from .likelihood import AutoregressiveScorer
from .likelihood.autoregressive import (
    _accepts_logits_to_keep,
    _accepts_position_ids,
    _first_scored_logit,
    position_ids_from_attention_mask,
)
from .likelihood.chunked_head import gather_token_logps_from_hidden, plain_output_head
from .likelihood.shared_prompt import prompt_learning
from .metrics.core import effective_temperature


class TokenTemperatureScores:
    """Sequence log-likelihoods of `dataset` under `model` at any token temperature, from one forward pass.

    The inputs of the LM head at every scored position are kept (`(tokens, width)` floats: a completion's tokens,
    not the vocabulary); [`logps`] applies the head to them at temperature t, by chunks, in float32, as
    [`~hf_seqtemp.likelihood.AutoregressiveScorer`]`(token_temperature=t)` scores. `available` is `False` for a
    model whose logits are not its head's output alone (soft-capping, a logit scale, a hooked head) or that carries
    a prompt-learning adapter: score it with [`~hf_seqtemp.measure.score_dataset`] instead.

    Example:
    ```python
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> from datasets import Dataset
    >>> model = tiny_causal_lm(8, seed=0)
    >>> data = Dataset.from_dict({"input_ids": [[1, 2, 3, 4], [1, 2, 5]], "completion_mask": [[0, 0, 1, 1], [0, 0, 1]]})
    >>> cached = TokenTemperatureScores(model, data)
    >>> scorer = AutoregressiveScorer(token_temperature=0.5)
    >>> torch.allclose(cached.logps(0.5), score_dataset(model, data, scorer)[0], atol=1e-5)
    True
    ```
    """

    def __init__(self, model, dataset, tokenizer=None, batch_size: int = 16, max_length: int = 4096):
        self.head = plain_output_head(model)
        self.available = self.head is not None and not prompt_learning(model)
        if not self.available:
            return
        prepared = prepare_dataset(dataset, tokenizer, "text", max_length, "dataset")
        device = next(model.parameters()).device
        loader = DataLoader(prepared, batch_size=batch_size, collate_fn=SeqTempCollator())
        self.hidden, self.targets, self.rows, self.count = [], [], [], 0
        captured: list[torch.Tensor] = []
        hook = self.head.register_forward_pre_hook(lambda module, args: captured.append(args[0].detach()))
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for batch in loader:
                    self._keep(model, {k: v.to(device) for k, v in batch.items()}, captured)
        finally:
            hook.remove()
            model.train(was_training)

    def _keep(self, model, batch: dict, captured: list) -> None:
        ids, mask, completion = batch["input_ids"], batch["attention_mask"], batch["completion_mask"].bool()
        kwargs = {"attention_mask": mask}
        if _accepts_position_ids(model):
            kwargs["position_ids"] = position_ids_from_attention_mask(mask)
        start = _first_scored_logit(completion) if _accepts_logits_to_keep(model) else 0
        if start > 0:
            kwargs["logits_to_keep"] = torch.arange(start, ids.shape[1], device=ids.device)
        captured.clear()
        model(input_ids=ids, **kwargs)
        hidden = captured[-1]
        hidden = hidden[:, hidden.shape[1] - (ids.shape[1] - start) :]  # a model that ignored `logits_to_keep`
        scored = completion[:, start + 1 :]  # position i predicts token i + 1
        self.hidden.append(hidden[:, :-1][scored])
        self.targets.append(ids[:, start + 1 :][scored])
        rows = torch.arange(ids.shape[0], device=ids.device)[:, None].expand_as(scored)[scored]
        self.rows.append(rows + self.count)
        self.count += ids.shape[0]

    @torch.no_grad()
    def logps(self, token_temperature: float) -> torch.Tensor:
        """`(n,)` float32 sequence log-likelihoods at token temperature `token_temperature` (on the CPU)."""
        out = torch.zeros(self.count, dtype=torch.float32, device="cpu")
        for hidden, targets, rows in zip(self.hidden, self.targets, self.rows):
            token = gather_token_logps_from_hidden(hidden[None], self.head, targets[None], token_temperature)[0]
            out.index_add_(0, rows.cpu(), token.float().cpu())
        return out


def head_input_cache(model, prepared, scorer, kwargs: dict) -> TokenTemperatureScores | None:
    """One forward pass of `model` over `prepared` keeping the LM head's inputs ([`TokenTemperatureScores`]), from
    which `log p` (t = 1) and every token temperature are scored, when `scorer` is the plain autoregressive scorer
    at temperature 1 and the model's logits are its head's alone; else `None` (score with [`score_dataset`])."""
    if type(scorer) is not AutoregressiveScorer or scorer.token_temperature != 1.0:
        return None
    cache = TokenTemperatureScores(model, prepared, **kwargs)
    return cache if cache.available else None


def tune_myopic(
    ref_model,
    dataset,
    target_temperature: float,
    ref_logps,
    groups,
    known=None,
    rel_tol: float = 0.005,
    search_record: dict | None = None,
    cache: TokenTemperatureScores | None = None,
    **kwargs,
) -> tuple[float, torch.Tensor]:
    """The *tuned myopic* baseline: the token temperature t whose sequence T_eff (within prompts, against
    `ref_logps`) on `dataset` equals `target_temperature`, and the log-likelihoods at t.

    Token temperature T does not temper whole sequences at T (its T_eff is usually nearer 1); the best a user can do
    without training is to pick t so that T_eff hits T, and then the question is τ and NLL. Found by
    [`~hf_seqtemp.audit.tune_token_temperature`] (one forward pass, then one pass of the LM head per step:
    [`TokenTemperatureScores`]; `known` maps token temperatures to log-likelihoods already scored). `search_record`, when given, is updated with the search's result
    (`evaluations`: the scoring passes it ran, `points`: every `{t: T_eff}` seen): what the tuning cost. `cache`:
    the [`TokenTemperatureScores`] of `dataset` when the caller has it already. Keyword arguments go to
    [`score_dataset`].
    """
    scored = dict(known or {})
    if cache is None:
        cache = TokenTemperatureScores(ref_model, dataset, **kwargs)  # one forward pass; each t then a head pass

    def t_eff_at(t: float) -> float:
        if t not in scored and cache.available:
            scored[t] = cache.logps(t).to(ref_logps.device if isinstance(ref_logps, torch.Tensor) else "cpu")
        elif t not in scored:
            scorer = AutoregressiveScorer(token_temperature=t)
            scored[t], _ = score_dataset(ref_model, dataset, scorer, desc=f"Tuning myopic (t={t:.3g})", **kwargs)
        return effective_temperature(ref_logps, scored[t], groups=groups)

    high = max(4.0, 4.0 * target_temperature)
    seen = {t: t_eff_at(t) for t in list(scored)}
    search = tune_token_temperature(t_eff_at, target_temperature, known=seen, high=high, rel_tol=rel_tol)
    if search_record is not None:
        search_record.update(search)
    return search["token_temperature"], scored[search["token_temperature"]]


def prompt_keys(prepared) -> set[tuple[int, ...]]:
    """The prompts of a prepared dataset as token tuples (a prompt-only row's `prompt_ids`, else the tokens before its
    completion), leaving out prompts of at most one token (a corpus's start token): what two datasets share whether
    they name their prompts by a `prompt_id` column or not."""
    from .data.prepare import PROMPT_IDS

    if PROMPT_IDS in prepared.column_names:
        keys = {tuple(ids) for ids in prepared[PROMPT_IDS]}
    else:
        keys = set()
        for ids, mask in zip(prepared["input_ids"], prepared["completion_mask"]):
            start = mask.index(1) if 1 in mask else len(mask)
            keys.add(tuple(ids[:start]))
    return {key for key in keys if len(key) > 1}


def tuned_once(ref_model, tune_on, held_out_groups, target_temperature, tokenizer, scorer, myopic_logps, kwargs,
               held_out=None):  # fmt: skip
    """The token temperature tuned once on `tune_on` (samples of p on prompts that are not held out), with what it
    cost: `{"token_temperature", "tuned_on", "tuning_prompts", "tuning_sequences", "scoring_passes"}` and, when it
    is T itself, the held-out `logps` already scored at T. `None`, with a warning, when no token temperature reaches
    T on them."""
    tuning = prepare_dataset(tune_on, tokenizer, "text", kwargs["max_length"], "tune_on")
    tuning_groups = tuning[GROUP_ID]
    shared = (set(tuning_groups) & set(held_out_groups)) - {0}  # 0: an unconditional corpus, held out by sequence
    if held_out is not None:  # by tokens too: one set may name its prompts by a `prompt_id` column, the other not
        shared = shared or (prompt_keys(tuning) & prompt_keys(held_out))
    if shared:
        raise ValueError(
            f"`tune_on` holds {len(shared)} of the {len(set(held_out_groups))} held-out prompts: the token "
            "temperature tuned on them would be chosen on the prompts it is scored on (an oracle, not a baseline). "
            "Tune on samples of the training prompts only."
        )
    started = time.perf_counter()
    cache = head_input_cache(ref_model, tuning, scorer, kwargs)
    if cache is not None:  # log p and every t from one forward pass
        ref = cache.logps(1.0)
    else:
        ref, _ = score_dataset(ref_model, tuning, scorer, desc="Scoring base (tuning prompts)", **kwargs)
    search: dict = {}
    try:
        t, _ = tune_myopic(
            ref_model, tuning, target_temperature, ref, tuning_groups, None, search_record=search, cache=cache,
            **kwargs,
        )  # fmt: skip
    except ValueError as error:
        warnings.warn(f"no tuned-once row: {error}", UserWarning, stacklevel=3)
        return None
    record = {
        "token_temperature": t,
        "tuned_on": "training prompts",
        "tuning_prompts": len(set(tuning_groups)),
        "tuning_sequences": len(tuning_groups),
        "scoring_passes": 1 + search["evaluations"],  # log p of the tuning samples, then the search's steps
        "search_seconds": time.perf_counter() - started,  # scoring and searching, once (not drawing the samples)
        "forward_passes": 1 if cache is not None else 2,  # over the tuning samples: the head inputs the search reuses
    }
    if t == target_temperature:
        record["logps"] = myopic_logps
    return record


def tune_token_temperature_once(
    model, samples, target_temperature: float, tokenizer=None, batch_size: int = 16, max_length: int = 4096
) -> float:
    """The token temperature t to use in place of an adapter: the t whose within-prompt sequence T_eff on `samples`
    (completions of p on *your training prompts*, e.g. [`~hf_seqtemp.sample_dataset`]'s) is `target_temperature`.

    Tune it once on prompts you will not score it on, then sample with `generate(..., temperature=t)`. On long
    answers t lies well below T: the per-step normalisers of softmax(z / t) add up over the answer. One forward pass
    of the samples (its `log p` and the search's head inputs alike), then one LM-head pass per step of the search
    ([`tune_myopic`]).

    Raises:
        ValueError: when no token temperature reaches T on these samples (T above the largest T_eff a token
            temperature gives: train an adapter instead), or the samples hold fewer than two completions of any prompt.

    Example:
    ```python
    >>> from hf_seqtemp import load_default_model, sample_dataset
    >>> model, tokenizer = load_default_model()  # doctest: +SKIP
    >>> samples = sample_dataset(model, tokenizer, my_prompts, num_samples=8, max_new_tokens=64)  # doctest: +SKIP
    >>> t = tune_token_temperature_once(model, samples, 0.5, tokenizer)  # doctest: +SKIP
    >>> model.generate(**inputs, do_sample=True, temperature=t)  # doctest: +SKIP
    ```
    """
    data = prepare_dataset(samples, tokenizer, "text", max_length, "samples")
    groups = data[GROUP_ID]
    counts: dict = {}
    for group in groups:
        counts[group] = counts.get(group, 0) + 1
    if not any(n > 1 for n in counts.values()):
        raise ValueError(
            "`samples` holds no prompt with two or more completions: T_eff is measured within a prompt. Sample "
            "several completions per prompt (`sample_dataset(..., num_samples=8)`)."
        )
    kwargs = {"batch_size": batch_size, "max_length": max_length}
    cache = head_input_cache(model, data, AutoregressiveScorer(), kwargs)  # log p and every t from one pass
    if cache is not None:
        ref = cache.logps(1.0)
    else:
        ref, _ = score_dataset(model, data, AutoregressiveScorer(), desc="Scoring p", **kwargs)
    t, _ = tune_myopic(model, data, target_temperature, ref, groups, cache=cache, **kwargs)
    return t
