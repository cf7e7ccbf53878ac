# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Per-prompt fidelity and the once-tuned token temperature, against an enumerable prompted toy.

The toy: a tiny causal LM answering four prompts whose conditionals differ in entropy, every completion of 3 tokens
enumerated. A model tempered at its own temperature T_c on each prompt (q(x|c) ∝ p(x|c)^{1/T_c}, exact) has per-prompt
T_eff exactly T_c and per-prompt error exactly mean |T_c − T| / T, whatever its pooled T_eff; token temperature t
tempers the prompts unequally (its per-prompt T_eff spread is measured exactly on the toy).

The once-tuned baseline is searched on samples of the *training* prompts and applied unchanged to held-out ones:
a `tune_on` set that holds a held-out prompt is refused, and the tuned temperature does not depend on which
prompts are held out (it would, had the search seen them)."""

import pytest
import torch
from conditional_toy import PROMPTS, as_prompted_dataset, completion_logps, enumerate_completions, sample_completions
from tiny_models import conditional_lm

from hf_seqtemp import AutoregressiveScorer, effective_temperature
from hf_seqtemp.measure import dataset_groups, measure_held_out, score_dataset, tune_myopic
from hf_seqtemp.metrics import per_prompt_effective_temperature, per_prompt_t_eff_error

VOCAB, LENGTH = 4, 3


def _toy():
    model = conditional_lm(VOCAB)
    rows, groups = enumerate_completions(VOCAB, LENGTH)
    return model, rows, groups, completion_logps(model, rows, 2)


def test_per_prompt_t_eff_is_each_prompts_exact_temperature_and_the_error_its_mean_distance():
    _, _, groups, ref = _toy()
    temperatures = torch.tensor([0.3, 0.5, 0.7, 0.5], dtype=torch.float64)  # T_c of each prompt
    tempered = ref / temperatures[groups]  # log q + log Z_T(c): the normaliser is constant within a prompt
    per_prompt = per_prompt_effective_temperature(ref, tempered, groups)
    assert list(per_prompt) == list(range(len(PROMPTS)))
    torch.testing.assert_close(torch.tensor(list(per_prompt.values()), dtype=torch.float64), temperatures)
    expected = ((temperatures - 0.5).abs() / 0.5).mean().item()
    assert per_prompt_t_eff_error(ref, tempered, groups, 0.5) == pytest.approx(expected, abs=1e-12)
    assert per_prompt_t_eff_error(ref, ref / 0.5, groups, 0.5) == pytest.approx(0.0, abs=1e-12)
    pooled = effective_temperature(ref, tempered, groups=groups)
    assert 0.3 < pooled < 0.7 and expected == pytest.approx(0.2)  # one pooled figure hides the spread


def test_token_temperature_tempers_the_toys_prompts_unequally_and_the_metric_reads_it_exactly():
    model, rows, groups, ref = _toy()
    scorer = AutoregressiveScorer(token_temperature=0.5)
    mask = torch.zeros_like(rows, dtype=torch.bool)
    mask[:, 2:] = True
    with torch.no_grad():
        myopic = scorer(model, rows, torch.ones_like(rows), mask).double()
    per_prompt = torch.tensor(
        list(per_prompt_effective_temperature(ref, myopic, groups).values()), dtype=torch.float64
    )
    for g, value in enumerate(per_prompt.tolist()):  # each prompt's figure is its own least-squares slope
        members = groups == g
        assert value == pytest.approx(effective_temperature(ref[members], myopic[members]), rel=1e-6)
    assert per_prompt.max() - per_prompt.min() > 0.01
    error = per_prompt_t_eff_error(ref, myopic, groups, 0.5)
    assert error == pytest.approx(((per_prompt - 0.5).abs() / 0.5).mean().item(), rel=1e-6)
    with pytest.raises(ValueError, match="no within-prompt slope"):
        per_prompt_t_eff_error(ref[:5], ref[:5], [0, 0, 0, 0, 1], 0.5)


def _samples(model, prompts, seed):
    return as_prompted_dataset(sample_completions(model, 12, LENGTH, prompts=prompts, seed=seed), 2)


def test_the_once_tuned_token_temperature_never_sees_a_held_out_prompt():
    model = conditional_lm(VOCAB)
    train = _samples(model, PROMPTS[:2], seed=0)
    reports = {}
    for held in (PROMPTS[2:3], PROMPTS[3:4]):  # two held-out sets, one tuning set
        held_out = _samples(model, held, seed=1)
        reports[held] = measure_held_out(model, held_out, 0.5, base_model=model, tune_on=train)[0]
    once = [r["tuned_once"] for r in reports.values()]
    assert once[0]["token_temperature"] == once[1]["token_temperature"]  # chosen on the training prompts alone
    assert once[0]["tuned_on"] == "training prompts" and once[0]["tuning_prompts"] == 2
    ref, _ = score_dataset(model, train, AutoregressiveScorer())
    groups = dataset_groups(train)
    alone, _ = tune_myopic(model, train, 0.5, ref, groups)
    assert once[0]["token_temperature"] == pytest.approx(alone)
    oracles = [r["tuned_myopic"]["token_temperature"] for r in reports.values()]
    assert oracles[0] != pytest.approx(oracles[1], abs=1e-3)  # searched in sample, it moves with the held-out set
    with pytest.raises(ValueError, match=r"`tune_on` holds 1 of the 1 held-out prompts"):
        measure_held_out(model, _samples(model, PROMPTS[:1], seed=1), 0.5, base_model=model, tune_on=train)


def test_the_evaluate_module_reports_the_per_prompt_error_given_the_target():
    import evaluate

    from hf_seqtemp.metrics import module_path

    _, _, groups, ref = _toy()
    tempered = ref / torch.tensor([0.3, 0.5, 0.7, 0.5], dtype=torch.float64)[groups]
    metric = evaluate.load(module_path("effective_temperature"))
    out = metric.compute(
        base_logp=ref.tolist(), tempered_logp=tempered.tolist(), groups=groups.tolist(), target_temperature=0.5
    )
    assert out["per_prompt_t_eff_error"] == pytest.approx(0.2, abs=1e-9)
    with pytest.raises(ValueError, match="needs `groups`"):
        metric.compute(base_logp=ref.tolist(), tempered_logp=tempered.tolist(), target_temperature=0.5)


def test_the_card_gives_its_verdict_against_the_once_tuned_token_temperature_and_defines_its_figures():
    from hf_seqtemp import SequenceTemperatureConfig
    from hf_seqtemp.card import ROW_NAMES, _evaluation_section

    row = {"t_eff": 0.5, "kendall_tau": 0.9, "nll_per_token": 4.0}
    reports = {
        "base": {"t_eff": 1.0, "kendall_tau": 1.0, "nll_per_token": 3.0},
        "myopic": {**row, "t_eff": 0.56},
        "tuned_once": {**row, "t_eff": 0.48, "kendall_tau": 0.88, "token_temperature": 0.422, "tuning_prompts": 32},
        "tempered": {**row, "t_eff": 0.51},
        "tuned_myopic": {**row, "token_temperature": 0.444},
    }
    config = SequenceTemperatureConfig(0.5, eval_prompts=14, eval_answer_tokens=43.25)
    text = _evaluation_section(reports, 224, None, None, "held out", None, config)
    assert "Measured on 224 held-out sequences (answers of 43.2 tokens on average)" in text
    assert "They hold for answers of about 43 tokens" in text  # the verdict says the length it holds for
    unmeasured = _evaluation_section(reports, 224, None, None, "held out", None, SequenceTemperatureConfig(0.5))
    assert "tokens on average" not in unmeasured and "They hold for answers" not in unmeasured
    assert f"| {ROW_NAMES['tuned_once']} | 0.4800 |" in text
    assert (
        text.index(ROW_NAMES["tuned_once"]) < text.index(ROW_NAMES["tempered"]) < text.index(ROW_NAMES["tuned_myopic"])
    )
    assert "a user would tune once (0.422, searched on samples of p of 32 training prompts" in text
    assert "T_eff 0.510 for the adapter and 0.480 for it, Kendall τ +0.020 for the adapter" in text
    assert "T_eff: the within-prompt least-squares slope" in text and "NLL / token:" in text
    assert "not as a baseline" in text


def test_scoring_a_dataset_under_a_trainable_adapter_keeps_no_graph():
    """`score_dataset` scores without gradients: the card's plot turns its figures into numpy arrays (a moved
    decorator once left a graph on them, and `save_for_hub` of a just-trained adapter crashed in matplotlib)."""
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(conditional_lm(VOCAB), LoraConfig(r=2, target_modules=["q_proj"])).train()
    rows = {"input_ids": [[0, 1, 2, 3], [0, 1, 3, 2]], "completion_mask": [[0, 0, 1, 1], [0, 0, 1, 1]]}
    logps, _ = score_dataset(model, Dataset.from_dict(rows))
    assert not logps.requires_grad and logps.grad_fn is None and torch.isfinite(logps).all()


def test_held_out_figures_on_few_prompts_are_said_to_be_indicative(tmp_path):
    """The Python API warns, as the command line does, when the held-out figures rest on fewer than 8 prompts (the
    quick start printed "Kendall tau 1.000 over 8 completions of 2 unseen prompts" without a word), and the card
    says it; on 8 prompts or more nothing is said."""
    import warnings

    from hf_seqtemp import SequenceTemperatureConfig
    from hf_seqtemp.card import write_card

    model = conditional_lm(VOCAB)
    few = _samples(model, PROMPTS[:2], seed=1)
    with pytest.warns(UserWarning, match=r"rest on 2 held-out prompts, fewer than 8: .* indicative only"):
        measurement = measure_held_out(model, few, 0.5, base_model=model)
    written = write_card(tmp_path, SequenceTemperatureConfig(0.5, base_model_id="my/base"), measurement)
    assert "rest on 2 held-out prompts, fewer than 8" in (tmp_path / "README.md").read_text()
    # the answer length the figures hold for: the mean count of completion tokens (prompt and padding never count)
    tokens = [sum(mask) for mask in few["completion_mask"]]
    assert written.eval_answer_tokens == pytest.approx(sum(tokens) / len(tokens))
    assert SequenceTemperatureConfig.from_pretrained(tmp_path).eval_answer_tokens == written.eval_answer_tokens
    assert f"(answers of {written.eval_answer_tokens:.1f} tokens on average)" in (tmp_path / "README.md").read_text()
    eight = tuple((a, b) for a in range(2) for b in range(VOCAB))
    many = as_prompted_dataset(sample_completions(model, 12, LENGTH, prompts=eight, seed=1), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        measure_held_out(model, many, 0.5, base_model=model)


def test_a_held_out_prompt_in_tune_on_is_refused_when_one_set_names_prompts_by_a_prompt_id_column():
    """The held-out set named its prompts by a `prompt_id` column and `tune_on` by their tokens: the group ids
    differ, and a held-out prompt in `tune_on` went unnoticed (an oracle, not a baseline). Prompts are compared by
    their tokens as well."""
    model = conditional_lm(VOCAB)
    train = _samples(model, PROMPTS[:2], seed=0)
    held_out = _samples(model, PROMPTS[:1], seed=1)
    held_out = held_out.add_column("prompt_id", ["question-7"] * len(held_out))
    with pytest.raises(ValueError, match=r"`tune_on` holds 1 of the 1 held-out prompts"):
        measure_held_out(model, held_out, 0.5, base_model=model, tune_on=train)
    other = _samples(model, PROMPTS[2:3], seed=1)
    other = other.add_column("prompt_id", ["question-8"] * len(other))
    assert measure_held_out(model, other, 0.5, base_model=model, tune_on=train)[0]["tuned_once"] is not None
