# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Answer-level routes against exact oracles on an enumerable toy, for several prompts.

The toy: a tiny causal LM, completions of 3 tokens out of 4 (64 per prompt, enumerated), the answer read from a
completion is its token sum mod 3. The law of the answer that answer-level sharpening returns from N samples is
computed exactly (a sum over the multinomial count vectors of N draws), so the route is checked against it at small
N (chi-square), and that exact law is checked to tend to p(a)^alpha normalised as N grows (and not to the answer law
of whole-sequence tempering, which differs). Majority vote returns the mode once N is large."""

import math

import pytest
import torch
from distribution_checks import chi_square_pvalue
from tiny_models import tiny_causal_lm
from toy import all_sequences, exact_logps

from hf_seqtemp.generation.answer_level import majority_vote, sharpen_answers

ALPHA, ANSWERS = 4.0, 3
PROMPTS = (0, 1, 2)  # the first token of the sequence: three prompts with their own answer laws


def _toy(prompt: int):
    """`(sequence probabilities, answer of each sequence, p(a))` for completions of 3 tokens after `prompt`."""
    model = tiny_causal_lm(4, seed=0, init_range=0.3)
    sequences = all_sequences(4, 3)
    sequences[:, 0] = prompt
    probs = exact_logps(model, sequences).exp()
    answers = sequences[:, 1:].sum(1) % ANSWERS
    marginal = torch.zeros(ANSWERS, dtype=torch.float64).index_add_(0, answers, probs)
    return probs / probs.sum(), answers, marginal / marginal.sum()


def _count_vectors(marginal: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every count vector of `n` draws over the answers, and its multinomial probability under `marginal`."""
    grid = torch.cartesian_prod(*[torch.arange(n + 1, dtype=torch.float64)] * (ANSWERS - 1)).view(-1, ANSWERS - 1)
    counts = torch.cat([grid, n - grid.sum(1, keepdim=True)], dim=1)
    counts = counts[counts[:, -1] >= 0]
    log_prob = math.lgamma(n + 1) - torch.lgamma(counts + 1).sum(1) + (counts * marginal.log()).sum(1)
    return counts, log_prob.exp()


def _exact_sharpened_law(marginal: torch.Tensor, n: int) -> torch.Tensor:
    """`E[p̂(a)^alpha / sum_b p̂(b)^alpha]` over the count vectors of `n` draws from `marginal`."""
    counts, prob = _count_vectors(marginal, n)
    powered = counts**ALPHA
    return (prob[:, None] * powered / powered.sum(1, keepdim=True)).sum(0)


def _exact_vote_law(marginal: torch.Tensor, n: int) -> torch.Tensor:
    """The law of the answer majority vote returns from `n` draws: each count vector's modes share its mass."""
    counts, prob = _count_vectors(marginal, n)
    modes = (counts == counts.max(1, keepdim=True).values).double()
    return (prob[:, None] * modes / modes.sum(1, keepdim=True)).sum(0)


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("n", [4, 16])
def test_answer_level_sharpening_draws_the_exact_law_of_its_estimate(prompt, n):
    probs, answers, marginal = _toy(prompt)
    generator = torch.Generator().manual_seed(10 * prompt + n)
    draws = torch.multinomial(probs.float(), 3000 * n, replacement=True, generator=generator).view(3000, n)
    counts = torch.zeros(ANSWERS, dtype=torch.float64)
    for row in draws:
        read = answers[row].tolist()
        counts[read[sharpen_answers(read, 1 / ALPHA, generator)]] += 1
    _, p_value, _ = chi_square_pvalue(counts, _exact_sharpened_law(marginal, n))
    assert p_value > 1e-3


@pytest.mark.parametrize("prompt", PROMPTS)
def test_the_sharpened_answer_law_tends_to_the_powered_marginal_not_the_tempered_answer_law(prompt):
    probs, answers, marginal = _toy(prompt)
    powered = marginal**ALPHA / (marginal**ALPHA).sum()
    tempered = torch.zeros(ANSWERS, dtype=torch.float64).index_add_(0, answers, probs**ALPHA)
    tempered = tempered / tempered.sum()
    distances = [0.5 * (_exact_sharpened_law(marginal, n) - powered).abs().sum().item() for n in (4, 64, 1024)]
    assert distances[0] > distances[1] > distances[2] and distances[2] < 0.01
    assert 0.5 * (powered - tempered).abs().sum().item() > 0.05  # another target than whole-sequence tempering


@pytest.mark.parametrize("prompt", PROMPTS)
def test_majority_vote_draws_its_exact_law_and_tends_to_the_mode(prompt):
    """At N = 16 the returned answers follow the exact law of the vote (chi-square), each returned completion has a
    most frequent answer; as N grows that law concentrates on the mode of p(a)."""
    probs, answers, marginal = _toy(prompt)
    generator = torch.Generator().manual_seed(prompt)
    counts = torch.zeros(ANSWERS, dtype=torch.float64)
    for row in torch.multinomial(probs.float(), 3000 * 16, replacement=True, generator=generator).view(3000, 16):
        read = answers[row].tolist()
        index = majority_vote(read, generator)
        assert read.count(read[index]) == max(read.count(a) for a in set(read))
        counts[read[index]] += 1
    _, p_value, _ = chi_square_pvalue(counts, _exact_vote_law(marginal, 16))
    assert p_value > 1e-3
    on_the_mode = [_exact_vote_law(marginal, n)[marginal.argmax()].item() for n in (16, 256, 2048)]
    assert on_the_mode[0] < on_the_mode[1] < on_the_mode[2] and on_the_mode[2] > 0.95


def test_ties_are_broken_uniformly_and_completions_without_an_answer_take_no_part():
    """As in self-consistency: "no answer" is no vote, even when it is the most frequent reading."""
    generator = torch.Generator().manual_seed(0)
    picks = [majority_vote(["a", "b", "a", "b", None], generator) for _ in range(2000)]
    firsts = sum(p in (0, 2) for p in picks)
    assert 900 < firsts < 1100 and set(picks) == {0, 1, 2, 3}
    assert {majority_vote([None, None, "a"], generator) for _ in range(50)} == {2}
    assert {sharpen_answers([None, None, None, "a"], 0.25, generator) for _ in range(50)} == {3}
    assert {majority_vote([None, None], generator) for _ in range(50)} == {0, 1}  # nothing read: any of them
    with pytest.raises(ValueError, match="`answers` is empty"):
        sharpen_answers([], 0.25)


@pytest.mark.parametrize("route", ["vote", "sharpen"])
def test_what_users_hand_as_answers_is_read_as_answers_or_refused_by_name(route):
    """NaN (what `float()` parsing and pandas give for a missing answer) used to crash in torch's `random_` (each NaN
    counted as its own answer that no completion then matched); lists gave raw `TypeError`s; a bare string was read
    one character per completion, a generator failed on `len`. Now NaN and `None` are "no answer", lists and tuples
    are answers, and a bare string, a generator or a set is refused by name."""
    pick = (lambda a, g: majority_vote(a, g)) if route == "vote" else (lambda a, g: sharpen_answers(a, 0.25, g))
    generator = torch.Generator().manual_seed(0)
    nan = float("nan")
    for answers in ([nan, 1.0, nan], [1.0, nan, nan], [nan, nan, 1.0]):
        assert {pick(answers, generator) for _ in range(30)} == {answers.index(1.0)}
    assert {pick([nan, nan], generator) for _ in range(50)} == {0, 1}  # nothing read: any of them
    assert {pick([[1, 2], None, [1, 2]], generator) for _ in range(50)} == {0, 2}  # a list is one answer
    assert {pick([(1, 2), nan, (1, 2)], generator) for _ in range(50)} == {0, 2}
    assert {pick([12, nan, 12.0, None], generator) for _ in range(50)} == {0, 2}  # 12 and 12.0 are one answer
    for bad, named in (("12", "single str"), ((a for a in ["1", "2"]), "a generator"), ({"1", "2"}, "a set")):
        with pytest.raises(TypeError, match=named):
            pick(bad, generator)
    with pytest.raises(TypeError, match=r"answer 1 is a dict"):
        pick(["1", {"a": 1}], generator)
