# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The task benchmark's families: checkers read free-form chat replies right, and the split keeps held-out prompts
out of training (no model)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from _tasks import FAMILIES, check_capital, check_integer, check_yes_no, get_family, parse_integer, split_family


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("7 + 5 = 12", 12),
        ("7 + 5 = 12.", 12),
        ("The answer is 12.", 12),
        ("12", 12),
        ("3 + 4 = 7, so the answer is 8", 7),  # the first integer after "=" wins
        ("12 + 5 = 6", 6),  # a wrong sum the model wrote is read as written
        ("Seven plus five is 13", 13),
        ("= -3", -3),
        ("I don't know.", None),
        ("7 + 5 =", 5),  # nothing after "=": the last integer
    ],
)
def test_parse_integer(completion, expected):
    assert parse_integer(completion) == expected


def test_checkers():
    assert check_integer("12", "7 + 5 = 12")
    assert not check_integer("12", "7 + 5 = 13. Wait, 12")
    assert not check_integer("12", "no idea")
    assert check_capital("Paris", "The capital of France is Paris.")
    assert check_capital("Paris", "paris")
    assert check_capital("Paris", "Paris, not Lyon or Berlin.")
    assert not check_capital("Paris", "Berlin, or maybe Paris.")  # the first capital named is the answer
    assert not check_capital("Paris", "Parisian food is great.")  # a whole word, not a prefix
    assert check_capital("Kyiv", "Kiev")
    assert check_capital("Bogota", "Bogotá is the capital.")
    assert check_capital("Buenos Aires", "The capital of Argentina is Buenos Aires")
    assert not check_capital("Canberra", "Sydney")
    assert check_yes_no("yes", "Yes, 7 is greater than 5.")
    assert check_yes_no("no", "No.")
    assert not check_yes_no("yes", "No, it is not. Yes means...")
    assert not check_yes_no("no", "Nobody knows")  # "no" as a whole word only
    assert not check_yes_no("yes", "7 is greater.")


def test_answers_in_the_pools_are_right():
    addition = get_family("addition")
    assert len(addition.items) == 100 and addition.items[75] == ("What is 7 + 5?", "12")
    comparison = dict(get_family("comparison").items)
    assert comparison["Is 7 greater than 5? Answer yes or no."] == "yes"
    assert comparison["Is 7 less than 5? Answer yes or no."] == "no"
    for name in FAMILIES:
        family = get_family(name)
        questions = [q for q, _ in family.items]
        assert len(set(questions)) == len(questions), f"{name}: repeated question"


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_training_prompts_never_appear_among_held_out(name, seed):
    family = get_family(name)
    held_out_size = 16
    train, held_out = split_family(family, len(family.items) - held_out_size, held_out_size, seed)
    train_q, held_q = {q for q, _ in train}, {q for q, _ in held_out}
    assert not train_q & held_q
    assert len(train_q) + len(held_q) == len(family.items)  # all prompts used, none twice
    # deterministic, and asking for fewer training prompts moves no held-out prompt
    assert split_family(family, 8, held_out_size, seed) == (train[:8], held_out)
    assert split_family(family, 8, held_out_size, seed + 1)[1] != held_out  # the seed matters


def test_split_rejects_too_many_prompts():
    with pytest.raises(ValueError, match="`num_train` \\+ `num_held_out` = 101"):
        split_family(get_family("addition"), 90, 11)
    with pytest.raises(ValueError, match="`family` must be one of"):
        get_family("algebra")


def test_rloo_reward_is_log_p_of_the_completion_given_the_prompt():
    """The RL peer's reward is log p_base(completion | chat prompt), each prompt scored as its own row (prompts of
    different lengths, right padding), checked against the product of the model's next-token conditionals."""
    import torch
    from tiny_models import tiny_llama
    from transformers import AutoTokenizer

    from hf_seqtemp.models.default import default_model_path

    _task_training = pytest.importorskip("_task_training")
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    model = tiny_llama(vocab_size=len(tokenizer), seed=3, head_scale=4.0).eval()
    prompts = [
        [{"role": "user", "content": "What is 7 + 5?"}],
        [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Is 3 greater than 12?"}],
    ]
    completion_ids = [[2, 17, 905, 44, tokenizer.eos_token_id], [1234, 5]]
    rewards = _task_training.log_p_reward(model, tokenizer)(prompts, [None, None], completion_ids)
    for prompt, ids, reward in zip(prompts, completion_ids, rewards):
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        prefix = tokenizer(text, add_special_tokens=False)["input_ids"]
        sequence = torch.tensor([prefix + ids])
        with torch.no_grad():
            logps = model(input_ids=sequence).logits[0].double().log_softmax(-1)
        expected = sum(float(logps[len(prefix) - 1 + i, token]) for i, token in enumerate(ids))
        assert abs(reward - expected) <= 64 * torch.finfo(torch.float32).eps * max(1.0, abs(expected))
    assert abs(rewards[0] - rewards[1]) > 1.0  # the two rows were not scored alike


def test_paired_differences_pair_prompts():
    """The difference of two rows is bootstrapped over prompts with both rows resampled together: a row that is
    better by 0.1 on every prompt differs by exactly 0.1, however much the prompts differ among themselves."""
    from _task_report import paired_differences

    ours = [0.9, 0.6, 0.3, 0.15, 0.0]
    rows = [
        {"family": "f", "row": "ours T=0.25", "target_T": 0.25, "pass@1_per_prompt": ours},
        {"family": "f", "row": "token T=0.25", "target_T": 0.25, "pass@1_per_prompt": [v - 0.1 for v in ours]},
        {"family": "f", "row": "ancestral", "target_T": 1.0, "pass@1_per_prompt": ours[::-1]},
        {"family": "f", "row": "token T=0.5", "target_T": 0.5, "pass@1_per_prompt": ours},  # another target: skipped
        {"family": "g", "row": "greedy", "target_T": None, "pass@1_per_prompt": ours},  # another family: skipped
    ]
    result = paired_differences(rows)
    assert sorted(result) == ["f: ours T=0.25 - ancestral", "f: ours T=0.25 - token T=0.25"]
    mean, low, high = result["f: ours T=0.25 - token T=0.25"]
    assert mean == pytest.approx(0.1) and low == pytest.approx(0.1) and high == pytest.approx(0.1)
    mean, low, high = result["f: ours T=0.25 - ancestral"]  # same values in another order: mean 0, wide interval
    assert mean == pytest.approx(0.0, abs=1e-12) and low < -0.2 and high > 0.2


def test_extract_reads_the_answer_the_checker_reads():
    replies = {
        "addition": [("7 + 5 = 12.", "12"), ("The answer is 12", "12"), ("no idea", None)],
        "capitals": [("Paris, not Lyon.", "Paris"), ("I think Kiev.", "Kyiv"), ("Lyon", None)],
        "comparison": [("No, it is not.", "no"), ("YES", "yes"), ("Maybe.", None)],
    }
    for name, cases in replies.items():
        family = get_family(name)
        for reply, expected in cases:
            assert family.extract(reply) == expected
            if expected is not None:
                assert family.check(expected, reply)


def test_answer_distance_is_per_prompt_and_across_seeds():
    from _task_report import answer_agreement, answer_distance, total_variation

    assert total_variation(["a", "a", "b", "b"], ["a", "b", "b", "b"]) == 0.25
    assert total_variation(["a"], [None]) == 1.0
    # two prompts: a row that agrees with MH per prompt, and one with the same pooled answers but swapped prompts
    mh = {"family": "f", "row": "mcmc α=4", "answers": [[["1", "1"], ["2", "2"]], [["1", "1"], ["2", "2"]]]}
    same = {"family": "f", "row": "smc α=4", "answers": mh["answers"]}
    swapped = {"family": "f", "row": "ancestral", "answers": [[["2", "2"], ["1", "1"]], [["2", "2"], ["1", "1"]]]}
    assert answer_distance(same, mh) == 0.0
    assert answer_distance(swapped, mh) == 1.0  # pooling the prompts would call these identical
    # across seeds only: seed 0 of one row is compared with seed 1 of the other
    noisy = {"family": "f", "row": "mcmc α=4", "answers": [[["1", "2"], ["2", "2"]], [["1", "1"], ["2", "2"]]]}
    assert answer_distance(noisy, noisy) == 0.25  # (0.5 + 0 + 0.5 + 0) / 4: its floor
    table = answer_agreement([mh, same, swapped, {"family": "g", "row": "smc α=4", "answers": swapped["answers"]}])
    assert table == {"f: mcmc α=4 vs mcmc α=4": 0.0, "f: smc α=4 vs mcmc α=4": 0.0, "f: ancestral vs mcmc α=4": 1.0}


def test_task_summary_pools_the_trained_rows_over_training_seeds_per_prompt(tmp_path):
    import json

    from task_summary import load, pooled_per_prompt, summary

    def row(name, per_prompt, **extra):
        return {"family": "f", "row": name, "pass@1": sum(per_prompt) / len(per_prompt), "pass@1_ci95": [0, 1],
                "pass@1_per_seed": [0.5], "pass@1_per_prompt": per_prompt, "pass@8": None, "t_eff": 0.3,
                "kendall_tau": 0.8, "calls": 4, "token_forwards_per_answer": 9, "seconds_per_answer": 0.1,
                "target_T": 0.25, **extra}  # fmt: skip

    settings = {"alphas": [4.0], "held_out_prompts": 2, "samples": 2, "seeds": [0], "wall_seconds": 1.0}
    full = {"settings": {**settings, "train_seed": 0}, "rows": [
        row("token T=0.25", [0.5, 0.5]), row("ours T=0.25", [1.0, 0.0], train_seconds=1, train_steps=1)]}  # fmt: skip
    other = {"settings": {**settings, "train_seed": 1, "trained_only": True},
             "rows": [row("ours T=0.25", [0.0, 1.0], train_seconds=1, train_steps=1)]}  # fmt: skip
    # runs of some rows: the distilled adapter on training seeds 0 and 1, and a larger SMC (a sampler row)
    distill = [{"settings": {**settings, "train_seed": seed, "rows": ["distill"]},
                "rows": [row("distill T=0.25", per_prompt, train_seconds=1, train_steps=1)]}
               for seed, per_prompt in ((0, [1.0, 1.0]), (1, [0.0, 1.0]), (2, [0.0, 0.0]))]  # fmt: skip
    smc = {"settings": {**settings, "rows": ["smc"]}, "rows": [row("smc α=4 N=64", [0.0, 0.5], t_eff=None)]}
    paths = []
    runs = (("full", full), ("seed1", other), ("d0", distill[0]), ("d1", distill[1]), ("d2", distill[2]), ("smc", smc))
    for name, payload in runs:
        paths.append(str(tmp_path / f"{name}.json"))
        (tmp_path / f"{name}.json").write_text(json.dumps(payload))
    table, trained = load(paths)
    # the seed-1 runs add no row to the table of training seed 0; the runs of some rows add theirs
    assert [r["row"] for r in table["f"]["rows"]] == ["token T=0.25", "ours T=0.25", "distill T=0.25", "smc α=4 N=64"]
    assert len(table["f"]["runs"]) == 3
    assert sorted(trained[("f", "ours T=0.25")]) == [0, 1]
    assert sorted(trained[("f", "distill T=0.25")]) == [0, 1, 2]
    assert pooled_per_prompt(list(trained[("f", "ours T=0.25")].values())) == [0.5, 0.5]  # per prompt, not pooled
    text = summary(paths)
    assert "| f | ours T=0.25 (seeds [0, 1]) | 0.500 / 0.500 |" in text
    assert "| f: ours T=0.25 − token T=0.25 | +0.000 [+0.000, +0.000] |" in text
    assert "| f | distill T=0.25 (seeds [0, 1, 2]) | 1.000 / 0.500 / 0.000 |" in text
    assert "| f: distill T=0.25 − smc α=4 N=64 | +0.250 [+0.167, +0.333] |" in text  # paired per prompt
    # two trained rows: over the training seeds both have (0 and 1), not distill's three against ours' two
    assert "| f: distill T=0.25 − ours T=0.25 (training seeds [0, 1]) | +0.250 [+0.000, +0.500] |" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rows", "smc-adapter"], "needs distill"),
        (["--rows", "rloo", "distill"], "needs ours"),
        (["--trained_only", "--rows", "smc"], "leaves no row"),
    ],
)
def test_task_table_refuses_row_selections_it_cannot_run(argv, message):
    from task_table import parse_args, resolve_settings

    with pytest.raises(ValueError, match=message):
        resolve_settings(parse_args(["--cpu", *argv]))


def test_task_table_row_selection_and_overrides():
    from task_table import parse_args, resolve_settings

    settings = resolve_settings(parse_args(["--cpu", "--rows", "distill", "smc-adapter", "--adapter_particles", "4"]))
    assert settings["rows"] == ["distill", "smc-adapter"] and settings["adapter_particles"] == [4]
    settings = resolve_settings(parse_args(["--cpu", "--no-rl", "--smc_particles", "64"]))
    assert "rloo" not in settings["rows"] and "ours" in settings["rows"] and settings["smc_particles"] == [64]
