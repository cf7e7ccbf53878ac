# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The training-free strategies include the call's logits processors in their target: with `suppress_tokens`,
`repetition_penalty`, `min_new_tokens` and `no_repeat_ngram_size`, mcmc and glauber sample
p̃(answer)^(1/T), p̃(x_t | x_<t) = softmax(processors(x_<t, logits_t)), enumerated here on a tiny model with
transformers' own processor classes (several prompts, left padding included), and never a suppressed token."""

import itertools

import pytest
import torch
from distribution_checks import chi_square_pvalue
from tiny_models import tiny_llama
from transformers.generation.logits_process import (
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    SuppressTokensLogitsProcessor,
)

from hf_seqtemp.generation import seqtemp_generate
from hf_seqtemp.generation.processed import ProcessedConditionals

V, NEW, EOS, BANNED, T = 4, 3, 3, 1, 0.5
# (prompts, generate kwargs): prompts of different lengths share a left-padded batch (the repetition penalty skips
# the padding, row by row); the n-gram ban sees the whole row, padding included, so its prompts share one length
CASES = {
    "padded": ([[1, 2], [2, 1, 1]], {"suppress_tokens": [BANNED], "repetition_penalty": 1.5, "min_new_tokens": 1}),
    "ngram": ([[2, 0], [0, 2]], {"suppress_tokens": [BANNED], "no_repeat_ngram_size": 2, "min_new_tokens": 1}),
}


def _processors(prompt_length: int, kwargs: dict) -> list:
    """transformers' processors for one unpadded prompt, in `generate`'s order."""
    out = []
    if "repetition_penalty" in kwargs:
        out.append(RepetitionPenaltyLogitsProcessor(kwargs["repetition_penalty"]))
    if "no_repeat_ngram_size" in kwargs:
        out.append(NoRepeatNGramLogitsProcessor(kwargs["no_repeat_ngram_size"]))
    out.append(MinNewTokensLengthLogitsProcessor(prompt_length, kwargs["min_new_tokens"], torch.tensor([EOS])))
    return out + [SuppressTokensLogitsProcessor(kwargs["suppress_tokens"])]


@torch.no_grad()
def _target(model, prompt, kwargs) -> dict[tuple, float]:
    """p̃(answer)^(1/T) / Z over the answers of p̃ (up to the first EOS, or NEW tokens), one prefix at a time."""
    processors, logps = _processors(len(prompt), kwargs), {}
    for tail in itertools.product(range(V), repeat=NEW):
        answer = tail[: tail.index(EOS) + 1] if EOS in tail else tail
        if answer in logps:
            continue
        total = 0.0
        for t, token in enumerate(answer):
            prefix = torch.tensor([prompt + list(answer[:t])])
            scores = model(input_ids=prefix).logits[:, -1].float()
            for processor in processors:
                scores = processor(prefix, scores)
            total += scores.double().log_softmax(-1)[0, token].item()
        if total > float("-inf"):
            logps[answer] = total
    answers = list(logps)
    probs = (torch.tensor([logps[a] for a in answers], dtype=torch.float64) / T).softmax(0)
    return dict(zip(answers, probs.tolist()))


def _answers(sequences: torch.Tensor, width: int) -> list[tuple]:
    out = []
    for row in sequences[:, width:].tolist():
        out.append(tuple(row[: row.index(EOS) + 1]) if EOS in row else tuple(row))
    return out


def _generate(model, prompts, copies, kwargs, **strategy):
    width = max(len(p) for p in prompts)
    rows = [p for p in prompts for _ in range(copies)]
    ids = torch.tensor([[0] * (width - len(p)) + p for p in rows])
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in rows])
    out = model.generate(
        input_ids=ids,
        attention_mask=attention,
        max_new_tokens=NEW,
        eos_token_id=EOS,
        pad_token_id=0,
        custom_generate=seqtemp_generate,
        seq_temperature=T,
        generator=torch.Generator().manual_seed(0),
        **kwargs,
        **strategy,
    )
    return _answers(out, width)


def _assert_processed_target(model, prompts, copies, kwargs, answers):
    for index, prompt in enumerate(prompts):
        drawn = answers[index * copies : (index + 1) * copies]
        assert not any(BANNED in a for a in drawn)  # the suppressed token is never sampled
        target = _target(model, prompt, kwargs)
        cells = list(target)
        assert all(a in target for a in drawn), [a for a in drawn if a not in target][:3]  # no banned event at all
        counts = torch.tensor([drawn.count(a) for a in cells], dtype=torch.float64)
        _, p_value, _ = chi_square_pvalue(counts, torch.tensor([target[a] for a in cells]))
        assert p_value > 1e-3, (prompt, p_value)


@pytest.mark.parametrize("case", list(CASES))
def test_mcmc_samples_the_processed_target(case):
    model = tiny_llama(vocab_size=V, seed=3, head_scale=3.0)
    prompts, kwargs = CASES[case]
    answers = _generate(model, prompts, 1500, kwargs, strategy="mcmc", mcmc_steps=10)
    _assert_processed_target(model, prompts, 1500, kwargs, answers)


def test_mcmc_steps_on_some_rows_apply_each_rows_own_processors():
    """With blocks, an MH step resamples the rows that drew one boundary: the repetition penalty's per-row prompt
    padding must follow them (it failed on the batch-size mismatch when the rows were not mapped back)."""
    model = tiny_llama(vocab_size=V, seed=3, head_scale=3.0)
    prompts, kwargs = CASES["padded"]
    answers = _generate(model, prompts, 1500, kwargs, strategy="mcmc", mcmc_steps=10, block_size=1)
    _assert_processed_target(model, prompts, 1500, kwargs, answers)


@pytest.mark.parametrize(("case", "num_candidates"), [("padded", None), ("ngram", None), ("padded", 2)])
def test_glauber_samples_the_processed_target(case, num_candidates):
    model = tiny_llama(vocab_size=V, seed=3, head_scale=3.0)
    prompts, kwargs = CASES[case]
    answers = _generate(
        model, prompts, 1000, kwargs, strategy="glauber", glauber_rounds=6, num_candidates=num_candidates
    )
    _assert_processed_target(model, prompts, 1000, kwargs, answers)


def test_the_processed_target_is_not_the_plain_target_without_the_banned_token():
    """The oracle can tell p̃^(1/T) from p^(1/T) restricted to answers without the banned token: suppressing a
    token renormalises every conditional, so dropping processors and rejecting banned answers is not the same."""
    model = tiny_llama(vocab_size=V, seed=3, head_scale=3.0)
    prompts, kwargs = CASES["padded"]
    plain = _target(model, prompts[0], {"suppress_tokens": [], "min_new_tokens": 0})
    kept = {a: p for a, p in plain.items() if BANNED not in a and a[0] != EOS}
    processed = _target(model, prompts[0], kwargs)
    total = sum(kept.values())
    assert 0.5 * sum(abs(processed[a] - kept.get(a, 0.0) / total) for a in processed) > 0.05


@pytest.mark.parametrize("strategy", ["mcmc", "glauber"])
def test_a_processor_that_cannot_be_part_of_the_target_is_refused_by_name(strategy):
    model = tiny_llama(vocab_size=V, seed=3)
    with pytest.raises(ValueError, match="UnbatchedClassifierFreeGuidanceLogitsProcessor"):
        _generate(model, [[1, 2]], 1, {"guidance_scale": 1.5}, strategy=strategy)


def test_processed_conditionals_reindex_per_row_state():
    """The repetition penalty `generate` builds skips each row's padding; applied to other rows (Glauber's site
    candidates) it follows them, and gives what the whole batch gives."""
    penalty = RepetitionPenaltyLogitsProcessor(2.0, prompt_ignore_length=torch.tensor([0, 2]))
    conditionals = ProcessedConditionals([penalty])
    ids, logits = torch.tensor([[1, 2, 3], [1, 1, 2]]), torch.ones(2, 4)
    whole = conditionals.scores(ids, logits)
    rows = torch.tensor([1, 1, 0])
    torch.testing.assert_close(conditionals.scores(ids[rows], logits[rows], rows), whole[rows])
