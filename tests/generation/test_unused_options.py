# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Every option of `seqtemp_generate` does something on the strategy it is given to, or is refused by name
(reliability round 4 / first hour take seven): `pimh_steps=3` with `strategy="mcmc"`, `"glauber"` or `"adapter"` ran
without a word, as did every SMC, MH and Glauber option on the other strategies; `generator=42` gave torch's raw
error; the adapter route and plain sampling ignored `generator`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from hf_seqtemp import load_tempered
from hf_seqtemp.generation import seqtemp_generate
from hf_seqtemp.generation.answer_level import majority_vote, sharpen_answers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_routing import _base, _save_tempered_adapter

PROMPTS = torch.tensor([[1, 2], [3, 1]])


def _generate(model, **kwargs):
    kwargs.setdefault("max_new_tokens", 3)
    return model.generate(PROMPTS, pad_token_id=0, custom_generate=seqtemp_generate, **kwargs)


@pytest.fixture(scope="module")
def tempered(tmp_path_factory):
    folder = _save_tempered_adapter(tmp_path_factory.mktemp("adapter") / "cold", 0.5, 0)
    return load_tempered(str(folder), base_model=_base())


@pytest.mark.parametrize(
    ("strategy", "option", "reader"),
    [
        ("mcmc", {"pimh_steps": 3}, "'smc'"),
        ("glauber", {"pimh_steps": 3}, "'smc'"),
        ("adapter", {"pimh_steps": 3}, "'smc'"),
        ("mcmc", {"num_particles": 4}, "'smc'"),
        ("glauber", {"mcmc_steps": 2}, "'mcmc'"),
        ("smc", {"glauber_rounds": 3}, "'glauber'"),
        ("smc", {"mcmc_steps": 8}, "'mcmc'"),
        ("adapter", {"proposal": "token"}, "'smc'"),
        ("mcmc", {"num_candidates": 4}, "'glauber'"),
        ("adapter", {"defensive_mixture": 0.5}, "'smc'"),
    ],
)
def test_an_option_the_strategy_does_not_read_is_refused_by_name(tempered, strategy, option, reader):
    ((name, value),) = option.items()
    with pytest.raises(ValueError, match=rf"`strategy='{strategy}'` does not read `{name}={value!r}` \({reader}"):
        _generate(tempered, seq_temperature=0.5, strategy=strategy, **option)


def test_block_size_on_smc_needs_an_engine():
    with pytest.raises(ValueError, match="`block_size=4`.*sets the engine's rounds, so it needs `engine=`"):
        _generate(_base(), seq_temperature=0.5, strategy="smc", block_size=4)


def test_options_without_a_sequence_temperature_are_refused():
    with pytest.raises(ValueError, match=r"`num_particles=4`, `pimh_steps=3` need `seq_temperature`"):
        _generate(_base(), do_sample=True, pimh_steps=3, num_particles=4)


def test_a_generator_that_is_not_one_is_named():
    with pytest.raises(TypeError, match=r"`generator` must be a `torch.Generator`, got int \(42\)"):
        _generate(_base(), seq_temperature=0.5, strategy="mcmc", generator=42)


@pytest.mark.parametrize("route", ["adapter", "plain"])
def test_the_adapter_route_and_plain_sampling_draw_from_the_generator(tempered, route):
    """The same generator state gives the same completions, another seed others; the global RNG is left as it was."""
    kwargs = {"seq_temperature": 0.5, "strategy": "adapter"} if route == "adapter" else {}
    model = tempered if route == "adapter" else _base()

    def draw(seed):
        return _generate(model, max_new_tokens=6, num_return_sequences=8, generator=torch.Generator().manual_seed(seed),
                         do_sample=True, **kwargs)  # fmt: skip

    torch.manual_seed(123)
    state = torch.get_rng_state()
    first, again, other = draw(0), draw(0), draw(1)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(first, again) and not torch.equal(first, other)


@pytest.mark.parametrize("rule", [majority_vote, lambda answers, generator: sharpen_answers(answers, 0.25, generator)])
def test_answers_given_as_tensors_are_read_as_values(rule):
    """`majority_vote(torch.tensor([1, 1, 2]))` returned 0 / 1 / 2 in 105 / 91 / 104 of 300 seeds: 0-d tensors hash
    by identity, so each element was its own answer. They are values now: the majority (index 0 or 1) every time,
    as for the list `[1, 1, 2]`; a NaN element is no answer."""
    picks = {rule(torch.tensor([1, 1, 2]), torch.Generator().manual_seed(seed)) for seed in range(60)}
    lists = {rule([1, 1, 2], torch.Generator().manual_seed(seed)) for seed in range(60)}
    if rule is majority_vote:
        assert picks == lists == {0, 1}
    else:
        assert picks == lists
    assert majority_vote(torch.tensor([float("nan"), 3.0, 3.0, 4.0])) in (1, 2)
    assert majority_vote([torch.tensor(5), torch.tensor(5), torch.tensor(6)]) in (0, 1)


def test_the_defensive_mixture_reaches_smc_through_generate(tempered, monkeypatch):
    """`generate(strategy="smc", defensive_mixture=...)` reaches the adapter proposal of the SMC loop (the value it
    was built with is recorded), and with the token proposal, which it cannot change, it is refused by name."""
    from hf_seqtemp.generation import smc_proposals

    built = []
    original = smc_proposals.AdapterProposal.__init__

    def record(self, model, adapter_name=None, defensive_mixture=0.0):
        built.append(defensive_mixture)
        original(self, model, adapter_name, defensive_mixture)

    monkeypatch.setattr(smc_proposals.AdapterProposal, "__init__", record)
    _generate(tempered, seq_temperature=0.5, strategy="smc", num_particles=2, defensive_mixture=0.25)
    assert built == [0.25]
    with pytest.raises(ValueError, match="`defensive_mixture=0.5` mixes the token proposal.*is 'token'"):
        _generate(tempered, seq_temperature=0.5, strategy="smc", proposal="token", defensive_mixture=0.5)
