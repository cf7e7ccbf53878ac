# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The long-answer family (`capital_after_sentence`): a sentence of content, then the answer the checker reads,
checked on hand-written replies; its split is by question and never mixes train and held-out."""

from __future__ import annotations

import pytest

from hf_seqtemp.metrics import pass_at_k
from hf_seqtemp.tasks.chat import get_family, split_family

FAMILY = get_family("capital_after_sentence")


@pytest.mark.parametrize(
    ("reply", "right"),
    [
        ("The river winds slowly through green hills under a pale sky. The capital of Peru is Lima.", True),
        ("Rivers carry water to the sea. Lima.", True),
        ("A river in Lima is calm at dawn, and Paris is far away. The capital of Peru is Lima.", True),
        ("The river is calm. The capital of Peru is Lima, not Quito.", False),  # the last capital named is read
        ("The river is calm and wide, flowing past old stone bridges and quiet towns.", False),  # no answer: cut
        ("Rivers are long. The capital of Peru is lima.", True),  # case
        ("Bogotá is the answer.", False),
    ],
)
def test_the_last_capital_named_is_the_answer(reply, right):
    assert FAMILY.check("Lima", reply) is right
    assert (FAMILY.extract(reply) == "Lima") is right


def test_accents_and_other_spellings_are_the_same_capital():
    assert FAMILY.check("Bogota", "Sentence about a garden. Then: Bogotá.")
    assert FAMILY.check("Kyiv", "Snow falls on the market. The capital of Ukraine is Kiev.")
    assert FAMILY.extract("A storm rolls in.") is None


def test_pass_at_k_of_hand_written_replies():
    question, answer = FAMILY.items[0]
    replies = ["The sky is blue and wide. The capital of France is Paris.", "The sky is grey. Lyon.",
               "Clouds drift over the hills. Paris.", "The sky at dusk is orange."]  # fmt: skip
    correct = sum(FAMILY.check(answer, r) for r in replies)
    assert answer == "Paris" and "France" in question and correct == 2
    assert pass_at_k(len(replies), correct, 1) == pytest.approx(0.5)
    assert pass_at_k(len(replies), correct, 2) == pytest.approx(1 - (2 * 1) / (4 * 3))


def test_the_split_is_by_question_and_disjoint():
    train, held_out = split_family(FAMILY, 64, 32, seed=0)
    assert len(FAMILY.items) == 316 and len(held_out) == 32
    assert not {q for q, _ in train} & {q for q, _ in held_out}


def test_the_harness_writes_the_family_with_room_for_its_sentence(tmp_path):
    """The harness task of the long-answer family gets 96 tokens by default (16 for the others); fewer is refused by
    name, since a reply cut before its answer reads as a wrong one."""
    from hf_seqtemp.harness.tasks import write_tasks

    folder = write_tasks(tmp_path / "tasks", families=["capital_after_sentence", "capitals"], num_held_out=4)
    assert "max_gen_toks: 96" in (folder / "seqtemp_capital_after_sentence.yaml").read_text()
    assert "max_gen_toks: 16" in (folder / "seqtemp_capitals.yaml").read_text()
    with pytest.raises(ValueError, match=r"`max_gen_toks=16` cuts the replies of \['capital_after_sentence'\]"):
        write_tasks(tmp_path / "short", families=["capital_after_sentence"], num_held_out=4, max_gen_toks=16)
