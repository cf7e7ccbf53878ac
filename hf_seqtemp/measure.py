# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Scoring whole datasets and reporting how tempered a model is against its base (the reference p)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import warnings

import torch
from datasets import Dataset

from .data import GROUP_ID, detect_format, prepare_dataset
from .dataset_scores import dataset_groups, score_dataset  # noqa: F401 (this module's API too)
from .likelihood import AutoregressiveScorer
from .metrics.core import effective_temperature, kendall_tau, sequence_nll
from .models.fit import check_prepared_fits, check_tokenizer_fits
from .models.validation import check_model_kind
from .peft_compat import is_peft_model
from .token_tuning import (  # noqa: F401 (this module's API too)
    TokenTemperatureScores,
    head_input_cache,
    tune_myopic,
    tuned_once,
)

MEASURED_MODELS = ("base", "myopic", "tempered")
"""The rows of a held-out measurement: the base model p, the myopic baseline (p at token temperature T) and the
tempered model q (plus `"tuned_myopic"`, see [`tune_myopic`], when measured)."""


def sequences_digest(dataset: Dataset, tokenizer=None, max_length: int = 4096) -> str:
    """A digest of the token sequences [`score_dataset`] scores (ids and scored positions, in order).

    Two datasets with the same digest get the same scores under the same model, whatever their layout (text,
    prompt/completion or pre-tokenised), so a measurement can be reused instead of scoring again.

    Example:
    ```python
    >>> from datasets import Dataset
    >>> a = Dataset.from_dict({"input_ids": [[0, 1, 2]]})
    >>> b = Dataset.from_dict({"input_ids": [[0, 1, 2]], "completion_mask": [[0, 1, 1]]})
    >>> sequences_digest(a) == sequences_digest(b) != sequences_digest(Dataset.from_dict({"input_ids": [[0, 2, 1]]}))
    True
    ```
    """
    prepared = prepare_dataset(dataset, tokenizer, "text", max_length, "dataset")
    digest = hashlib.sha256()
    for ids, mask in zip(prepared["input_ids"], prepared["completion_mask"]):
        digest.update(json.dumps([[int(i) for i in ids], [int(m) for m in mask]]).encode())
    return digest.hexdigest()


def temperature_report(
    ref_logps: torch.Tensor, policy_logps: torch.Tensor, lengths: torch.Tensor, groups=None
) -> dict[str, float]:
    """Within-prompt T_eff and Kendall τ of `policy_logps` against the reference (base model) `ref_logps` (pass
    `groups`, one prompt id per sequence; `None` is one group), and the NLL per token of `policy_logps`.

    Example:
    ```python
    >>> report = temperature_report(torch.tensor([-1.0, -2.0, -4.0]), torch.tensor([-2.0, -4.0, -8.0]),
    ...                             torch.tensor([1, 2, 4]))
    >>> report["t_eff"], report["kendall_tau"], report["nll_per_token"]
    (0.5, 1.0, 2.0)
    ```
    """
    return {
        "t_eff": effective_temperature(ref_logps, policy_logps, groups=groups),
        "kendall_tau": kendall_tau(ref_logps, policy_logps, groups=groups),
        "nll_per_token": sequence_nll(policy_logps, lengths)["nll_per_token"],
    }


@contextlib.contextmanager
def _quiet_preparation():
    """Silences the warnings of re-preparing a dataset already prepared (and warned about) once."""
    log = logging.getLogger(prepare_dataset.__module__)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def importance_resampling_logps(
    proposal_logps: torch.Tensor,
    ref_logps: torch.Tensor,
    groups,
    pool_proposal_logps: torch.Tensor,
    pool_ref_logps: torch.Tensor,
    pool_groups,
    target_temperature: float,
    num_particles: int,
    draws: int = 256,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Estimated `log q_N(x | c)` of importance resampling with `N` particles: draw `x_1..x_N ~ r(. | c)`, weigh
    each by `w = p^(1/T) / r`, return one with probability `w_i / sum_j w_j` (SMC with the proposal `r` and no
    resampling before the end: `ess_threshold=0`). Its law is `q_N(x) = N r(x) E[w(x) / (w(x) + S)]`, `S` the summed
    weights of `N - 1` independent draws of `r`: `r` itself at `N = 1`, `p^(1/T) / Z` as `N` grows. The expectation
    is estimated, per prompt, over `draws` random sets of `N - 1` distinct members of a pool of draws of `r` (each
    set is `N - 1` independent draws), so T_eff, τ and NLL of the sampler can be measured on held-out sequences like
    any model's (log of a Monte-Carlo mean: consistent, not unbiased, in the pool size).

    Args:
        proposal_logps, ref_logps (`torch.Tensor` of shape `(n,)`): `log r(x | c)` and `log p(x | c)` of the
            sequences to score.
        groups (list of hashables of length `n`): the prompt of each sequence.
        pool_proposal_logps, pool_ref_logps (`torch.Tensor` of shape `(m,)`): the same of independent draws of `r`.
        pool_groups (list of hashables of length `m`): their prompts; each prompt of `groups` needs at least `N - 1`.
        target_temperature (`float`): T.
        num_particles (`int`): N.
        draws (`int`, *optional*, defaults to 256): sets of `N - 1` pool members per prompt.
        generator (`torch.Generator`, *optional*): for the sets.

    Returns:
        `torch.Tensor` of shape `(n,)`: the estimated `log q_N(x | c)` (float64, on the CPU).

    Example:
    ```python
    >>> r, p = torch.tensor([0.5, 0.5]).log(), torch.tensor([0.8, 0.2]).log()  # one prompt, two answers
    >>> pool = torch.tensor([0] * 500 + [1] * 500)  # draws of r: each answer half the time
    >>> q = importance_resampling_logps(r, p, [0, 0], r[pool], p[pool], [0] * 1000, 1.0, 2, draws=4000,
    ...                                 generator=torch.Generator().manual_seed(0))
    >>> [round(v, 2) for v in q.exp().tolist()]  # exact: 2 r(x) E[w(x) / (w(x) + w(y))] = 0.65, 0.35
    [0.65, 0.35]
    ```
    """
    if num_particles < 1:
        raise ValueError(f"`num_particles` must be a positive integer, got {num_particles}.")
    alpha = 1.0 / target_temperature
    # per-sequence figures, small: computed on the CPU whatever device they were scored on (the generator's)
    proposal_logps, ref_logps = proposal_logps.detach().double().cpu(), ref_logps.detach().double().cpu()
    out = proposal_logps.clone()
    if num_particles == 1:
        return out
    pool_log_weights = alpha * pool_ref_logps.detach().double().cpu() - pool_proposal_logps.detach().double().cpu()
    pool_codes = list(pool_groups)
    for group in dict.fromkeys(groups):
        rows = torch.tensor([i for i, g in enumerate(groups) if g == group], dtype=torch.long, device="cpu")
        members = torch.tensor([i for i, g in enumerate(pool_codes) if g == group], dtype=torch.long, device="cpu")
        pool = pool_log_weights[members]
        if len(pool) < num_particles - 1:
            raise ValueError(
                f"prompt {group!r} has {len(pool)} pool draws; importance resampling with `num_particles`="
                f"{num_particles} needs at least {num_particles - 1}."
            )
        where = generator.device if generator is not None else "cpu"  # drawn where the generator lives
        sets = torch.rand(draws, len(pool), generator=generator, device=where).topk(num_particles - 1, dim=1).indices
        sets = sets.cpu()
        log_sums = pool[sets].logsumexp(dim=1)  # (draws,): log S of each set
        log_weights = alpha * ref_logps[rows] - proposal_logps[rows]
        share = torch.nn.functional.logsigmoid(log_weights[:, None] - log_sums[None, :])  # log w / (w + S)
        out[rows] += math.log(num_particles) + share.logsumexp(dim=1) - math.log(draws)
    return out


MIN_HELD_OUT_PROMPTS = 8
"""Held-out prompts below which [`measure_held_out`] warns (and the card says) that T_eff and τ are indicative only:
a rule of thumb, not a derived bound (`hf-seqtemp train` says the same before it trains). The figures are taken
within each prompt and pooled, and prompts differ, so they are a mean over prompts; below 8 a 95 % bootstrap
interval over the prompts rests on too few to be read, and one prompt more or less can move a figure by as much as
the differences it is meant to show."""


def few_held_out_prompts(prompts: int) -> str:
    """The caveat for held-out figures on `prompts` distinct prompts (fewer than [`MIN_HELD_OUT_PROMPTS`])."""
    return (
        f"These figures rest on {prompts} held-out prompt{'' if prompts == 1 else 's'}, fewer than "
        f"{MIN_HELD_OUT_PROMPTS}: one prompt more or less can move them by as much as the differences they are meant "
        "to show, so read them as indicative only; measure on more unseen prompts to rely on them."
    )


def measure_held_out(
    model,
    held_out_dataset,
    target_temperature: float,
    base_model=None,
    tokenizer=None,
    scorer=None,
    batch_size: int = 16,
    max_length: int = 4096,
    tuned_myopic: bool = True,
    tune_on=None,
) -> tuple[dict[str, dict[str, float]], dict[str, torch.Tensor]]:
    """Scores held-out sequences under the base model, the myopic baseline, the tuned myopic baseline and the
    tempered model.

    The base model is `model` with its adapter disabled (a `PeftModel`) or `base_model` (full fine-tuning). The
    myopic baseline is the base model with every next-token distribution tempered (`token_temperature=T`).

    Args:
        model: the tempered model (`PeftModel` or a fully fine-tuned model).
        held_out_dataset ([`~datasets.Dataset`]): sequences never trained on (see [`score_dataset`] for layouts).
        target_temperature (`float`): T, also the token temperature of the myopic baseline.
        base_model (*optional*): the base model; required when `model` is not a `PeftModel`.
        tokenizer (*optional*): needed for text datasets.
        scorer ([`AutoregressiveScorer`], *optional*): the exact AR scorer by default.
        batch_size (`int`, *optional*, defaults to 16), max_length (`int`, *optional*, defaults to 4096): as in
            [`score_dataset`].
        tuned_myopic (`bool`, *optional*, defaults to `True`): also find the token temperature whose T_eff on these
            sequences is T ([`tune_myopic`]) and report it as `"tuned_myopic"` (with its `token_temperature` and the
            `scoring_passes` the search ran); left
            out, with a warning, when no token temperature reaches T. Searched on the held-out sequences
            themselves, it is an oracle (the figure it is then scored on chose it), not a baseline.
        tune_on (`datasets.Dataset`, *optional*): samples of p on other prompts, the training ones. The
            baseline a user would build is the token temperature tuned once on them ([`tune_myopic`]) and applied
            unchanged to every held-out prompt, reported as `"tuned_once"` (with its `token_temperature`,
            `tuned_on` and the `scoring_passes` of the search, paid once). A prompt of `held_out_dataset` in it is
            refused: the search must never see a held-out prompt.

    Returns:
        `(reports, logps)`: `reports[name]` is [`temperature_report`] against the base model for `name` in
        `("base", "myopic", "tempered")`, `"tuned_myopic"` and `"tuned_once"`; `logps` holds the per-sequence log-likelihoods and
        `"lengths"`.

    Example:
    ```python
    >>> reports, logps = measure_held_out(peft_model, held_out, 0.5)  # doctest: +SKIP
    >>> reports["tempered"]["t_eff"]  # doctest: +SKIP
    ```
    """
    check_model_kind(model, allow_diffusion=False)
    scorer = scorer if scorer is not None else AutoregressiveScorer()
    if not isinstance(scorer, AutoregressiveScorer):
        raise TypeError(
            f"`scorer` must be an AutoregressiveScorer (the myopic baseline is token temperature on an "
            f"autoregressive model), got {type(scorer).__name__}."
        )
    if is_peft_model(model):
        ref_context, ref_model = model.disable_adapter(), model
    elif base_model is not None and not isinstance(base_model, (str, os.PathLike)):
        ref_context, ref_model = contextlib.nullcontext(), base_model
    else:
        raise ValueError(
            "`base_model` must be the base model object when the tempered model is not a PeftModel (full "
            f"fine-tuning), got {base_model!r}: pass the model before training."
        )
    # tokenised once (its warnings given once); within prompts: a prompted model is tempered per prompt
    prepared = prepare_dataset(held_out_dataset, tokenizer, "text", max_length, "held_out_dataset")
    recorded = getattr(getattr(model, "seqtemp_config", None), "tokenizer_sha256", None)
    check_tokenizer_fits(model, tokenizer, recorded, f"the adapter {getattr(model, 'seqtemp_source', '')}".strip())
    check_prepared_fits(model, prepared, 0, "held_out_dataset")
    groups = prepared[GROUP_ID]
    columns = held_out_dataset.column_names
    layout = detect_format(columns, "text", "held_out_dataset")
    prompted = "prompt_id" in columns or layout not in ("text", "input_ids") or "completion_mask" in columns
    if prompted and len(set(groups)) < MIN_HELD_OUT_PROMPTS:
        warnings.warn(f"measure_held_out: {few_held_out_prompts(len(set(groups)))}", UserWarning, stacklevel=2)
    kwargs = {"batch_size": batch_size, "max_length": max_length}
    myopic_scorer = AutoregressiveScorer(token_temperature=target_temperature)
    tuned = None
    with _quiet_preparation(), ref_context:
        # one forward pass of the base model: log p, the myopic baseline and every tuned t read from its head inputs
        cache = head_input_cache(ref_model, prepared, scorer, kwargs)
        if cache is not None:
            ref_logps, myopic_logps = cache.logps(1.0), cache.logps(target_temperature)
            lengths = torch.tensor([sum(mask) for mask in prepared["completion_mask"]], device="cpu")
        else:
            ref_logps, lengths = score_dataset(ref_model, prepared, scorer, desc="Scoring base", **kwargs)
            myopic_logps, _ = score_dataset(ref_model, prepared, myopic_scorer, desc="Scoring myopic", **kwargs)
        if tuned_myopic:
            known, search = {target_temperature: myopic_logps}, {}
            try:
                tuned = tune_myopic(
                    ref_model, prepared, target_temperature, ref_logps, groups, known, search_record=search,
                    cache=cache, **kwargs,
                )  # fmt: skip
            except ValueError as error:
                warnings.warn(f"no tuned myopic row: {error}", UserWarning, stacklevel=2)
        once = None
        if tune_on is not None:
            once = tuned_once(ref_model, tune_on, groups, target_temperature, tokenizer, scorer, myopic_logps, kwargs,
                              held_out=prepared)  # fmt: skip
            if once is not None and once["token_temperature"] != target_temperature and cache is not None:
                once["logps"] = cache.logps(once["token_temperature"])
            elif once is not None and once["token_temperature"] != target_temperature:
                at_once = AutoregressiveScorer(token_temperature=once["token_temperature"])
                once["logps"], _ = score_dataset(ref_model, prepared, at_once, desc="Scoring tuned once", **kwargs)
    with _quiet_preparation():
        policy_logps, _ = score_dataset(model, prepared, scorer, desc="Scoring tempered", **kwargs)
    logps = {"base": ref_logps, "myopic": myopic_logps, "tempered": policy_logps, "lengths": lengths}
    logps["groups"] = groups
    reports = {name: temperature_report(ref_logps, logps[name], lengths, groups) for name in MEASURED_MODELS}
    if tuned is not None:
        logps["tuned_myopic"] = tuned[1]
        reports["tuned_myopic"] = {
            **temperature_report(ref_logps, tuned[1], lengths, groups),
            "token_temperature": tuned[0],
            "scoring_passes": search["evaluations"],  # the search's cost: passes over the held-out sequences
            "tuned_on": "the held-out completions themselves (an oracle)",
        }
    if once is not None:
        logps["tuned_once"] = once.pop("logps")
        reports["tuned_once"] = {**temperature_report(ref_logps, logps["tuned_once"], lengths, groups), **once}
    return reports, logps


def format_table(
    rows: dict[str, dict[str, float]], columns: tuple[str, ...] = ("t_eff", "kendall_tau", "nll_per_token")
) -> str:
    """Renders `{row name: {column: value}}` as a fixed-width text table."""
    width = max(len(name) for name in rows) + 2
    lines = ["model".ljust(width) + "".join(c.rjust(15) for c in columns)]
    lines.append("-" * len(lines[0]))
    for name, values in rows.items():
        lines.append(name.ljust(width) + "".join(f"{values.get(c, float('nan')):15.4f}" for c in columns))
    return "\n".join(lines)
