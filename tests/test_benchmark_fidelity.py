# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The fidelity benchmark's bookkeeping: modes, the ±10 % / τ flags and the per-method summary (no model runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch
from scripts import load_script

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def fidelity():
    return load_script(BENCHMARKS / "fidelity.py", "bench_fidelity", on_path=True)


def _args(**overrides) -> argparse.Namespace:
    values = {"quick": False, "full": False, "temperatures": None, "methods": None, "max_steps": None, "seed": 0}
    values.update(
        {name: None for name in ("learning_rate", "nll_weight", "lora_r", "train_prompts", "held_out_prompts")}
    )
    values.update({name: None for name in ("num_generations", "batch_size")})
    return argparse.Namespace(**{**values, **overrides})


def test_modes_pick_sizes_and_overrides(fidelity):
    quick = fidelity.resolve_settings(_args(quick=True))
    assert quick["mode"] == "quick" and quick["temperatures"] == [0.5, 2.0] and quick["max_steps"] == 20
    default = fidelity.resolve_settings(_args())
    assert default["temperatures"] == [0.25, 0.5, 0.8, 2.0] and default["methods"] == [
        "ssts",
        "ratio",
        "smc_distill",
        "smc_distill_adapter",
    ]
    assert default["train_prompts"] == 128 and default["held_out_prompts"] == 16
    assert default["learning_rate"] == 1e-3 and default["lr_scheduler_type"] == "cosine"
    full = fidelity.resolve_settings(_args(full=True, temperatures=[0.8], max_steps=7, methods=["ratio"]))
    assert full["mode"] == "full" and full["temperatures"] == [0.8] and full["max_steps"] == 7
    assert full["methods"] == ["ratio"] and full["num_generations"] == 64
    assert fidelity.resolve_settings(_args(methods=["none"]))["methods"] == []  # baselines (myopic, tuned) only
    more = fidelity.resolve_settings(_args(held_out_prompts=30))  # the pool's 158 prompts: 128 + 30
    assert more["held_out_prompts"] == 30 and more["train_prompts"] == 128
    with pytest.raises(SystemExit):
        fidelity.parse_args(["--held_out_prompts", "0"])
    with pytest.raises(SystemExit):
        fidelity.parse_args(["--ess_train_prompts", "-3"])
    assert fidelity.parse_args(["--ess_train_prompts", "16"]).ess_train_prompts == 16
    # the split follows --seed unless --split_seed fixes it; fresh SMC particles only when asked
    assert default["split_seed"] == 0 and default["sample_every_steps"] is None
    assert fidelity.resolve_settings(fidelity.parse_args(["--seed", "3"]))["split_seed"] == 3
    parsed = fidelity.parse_args(["--seed", "3", "--split_seed", "0", "--sample_every_steps", "1"])
    assert fidelity.resolve_settings(parsed)["split_seed"] == 0 and parsed.sample_every_steps == 1
    with pytest.raises(SystemExit):
        fidelity.parse_args(["--sample_every_steps", "0"])


def test_flags_and_summary(fidelity):
    rows = [
        {"method": "myopic", "target": 0.5, "t_eff": 0.56, "kendall_tau": 0.95, "nll_per_token": 3.0},
        {"method": "myopic", "target": 2.0, "t_eff": 1.0, "kendall_tau": 0.8, "nll_per_token": 5.0},
        {"method": "ssts", "target": 0.5, "t_eff": 0.54, "kendall_tau": 0.9, "nll_per_token": 2.0},
        {"method": "ratio", "target": 0.5, "t_eff": 0.45, "kendall_tau": 0.89, "nll_per_token": 4.0},
    ]
    fidelity.add_flags(rows)
    assert [r["within_10pct"] for r in rows] == [False, False, True, True]
    assert [r["tau_ok"] for r in rows] == [True, False, True, False]
    assert rows[0]["rel_error"] == pytest.approx(0.12) and rows[1]["rel_error"] == pytest.approx(0.5)
    summary = fidelity.summarise(rows)
    assert summary["myopic_within_10pct"] == "0/2" and summary["ssts_within_10pct"] == "1/1"
    assert summary["myopic_mean_rel_t_eff_error"] == pytest.approx(0.31)
    assert summary["myopic_min_kendall_tau"] == 0.8 and summary["myopic_mean_nll_per_token"] == 4.0
    assert summary["ratio_min_kendall_tau"] == 0.89


def test_shared_preparation_reuses_the_samples_and_their_reference_across_runs(fidelity, tmp_path, monkeypatch):
    """The benchmark's runs share one sampled pool: the first run's samples carry the sampler's reference columns, a
    later run with the same objective scores nothing, and one that needs more columns (SSTS's per-token values)
    gets them, equal to a rescoring."""
    import torch
    from datasets import Dataset
    from tiny_models import conditional_lm
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from hf_seqtemp import SeqTempConfig
    from hf_seqtemp.likelihood import AutoregressiveScorer
    from hf_seqtemp.trainer.reference import ReferenceMixin

    backend = Tokenizer(models.WordLevel({"<s>": 0, "x": 1, "y": 2, "z": 3}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="z")
    scored = []
    original = ReferenceMixin._reference_values
    monkeypatch.setattr(ReferenceMixin, "_reference_values", lambda self, b: scored.append(1) or original(self, b))
    shared, data = fidelity.SharedPreparation(), Dataset.from_dict({"prompt": ["x", "x y", "y x y"]})
    model = conditional_lm(4)

    def trainer(loss_type):
        args = SeqTempConfig(output_dir=str(tmp_path), target_temperature=0.5, loss_type=loss_type, num_generations=4,
                             max_completion_length=4, per_device_train_batch_size=12, save_strategy="no",
                             use_cpu=True, seed=0, disable_tqdm=True)  # fmt: skip
        return shared.trainer_class()(model, args, train_dataset=data, processing_class=tokenizer)

    first = trainer("ratio")
    assert shared.reference is shared.completed and not scored  # the sampler's reference, no scoring pass
    assert trainer("ratio").train_dataset is shared.completed and not scored
    ssts = trainer("ssts").train_dataset
    assert scored and "ref_token_logps" in ssts.column_names and len(ssts) == len(first.train_dataset)
    for row in ssts:
        ids = torch.tensor([row["input_ids"]])
        with torch.no_grad():
            token_logps, _ = AutoregressiveScorer().token_logps(
                model, ids, torch.ones_like(ids), torch.tensor([row["completion_mask"]]).bool()
            )
        torch.testing.assert_close(torch.tensor(row["ref_logps"]), token_logps.sum(), atol=1e-5, rtol=0)
    # SMC distillation draws its own particles during training: it neither takes nor replaces the shared samples
    kept = shared.completed
    distill = trainer("smc_distill").train_dataset
    assert distill is not kept and len(distill) == len(first.train_dataset) and shared.completed is kept


def test_method_steps_variant_is_parsed_and_bad_ones_are_named(fidelity):
    """`ratio@144` is the ratio loss trained for 144 steps (its own row); a typo or a bad step count is an error that
    names the value and the expected form, not a silently dropped row."""
    args = fidelity.parse_args(["--methods", "ratio", "ratio@144", "smc_distill"])
    assert fidelity.resolve_settings(args)["methods"] == ["ratio", "ratio@144", "smc_distill"]
    for bad in ("ratio@0", "ratio@x", "ratoi", "ratio@", "none@3"):
        with pytest.raises(argparse.ArgumentTypeError, match="optionally followed by @STEPS"):
            fidelity.method_spec(bad)
    assert fidelity.resolve_settings(fidelity.parse_args(["--ess_repeats", "4"]))["ess_repeats"] == 4
    assert fidelity.resolve_settings(args)["ess_repeats"] == 1
    for bad in ("0", "-2", "two"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a positive integer"):
            fidelity.positive_int(bad)


def test_per_prompt_tau_and_paired_intervals(fidelity):
    """τ is computed prompt by prompt (two prompts, one ranked in order, one reversed), its mean is the row's pooled
    τ when prompts have as many completions, and the interval against the tuned row pairs prompts at the same T."""
    import torch

    from hf_seqtemp.metrics import kendall_tau, per_prompt_kendall_tau

    ref = torch.tensor([-1.0, -2.0, -3.0, -1.0, -2.0, -3.0])
    policy = torch.tensor([-5.0, -6.0, -9.0, -9.0, -6.0, -5.0])
    groups = [7, 7, 7, 3, 3, 3]
    per_prompt = list(per_prompt_kendall_tau(ref, policy, groups).values())
    assert per_prompt == [1.0, -1.0]  # in order of first appearance
    assert sum(per_prompt) / 2 == pytest.approx(kendall_tau(ref, policy, groups=groups))

    tuned = [0.90, 0.80, 0.95, 0.85]
    rows = [
        {"method": "tuned", "target": 0.5, "tau_per_prompt": tuned},
        {"method": "tuned", "target": 0.25, "tau_per_prompt": [0.0, 0.0, 0.0, 0.0]},
        {"method": "ratio", "target": 0.5, "tau_per_prompt": [t + d for t, d in zip(tuned, (0.02, 0.04, 0.01, 0.03))]},
        {"method": "myopic", "target": 0.5, "tau_per_prompt": tuned},
    ]
    intervals = fidelity.paired_tau_intervals(rows)
    assert list(intervals) == ["ratio_T0.5_tau_minus_tuned"]  # not the baselines, not the other T's tuned row
    mean, low, high = intervals["ratio_T0.5_tau_minus_tuned"]
    assert mean == pytest.approx(0.025)
    # paired: the differences are all in [0.01, 0.04], whereas the rows' own τ spread over 0.15
    assert 0.01 <= low <= mean <= high <= 0.04 and high - low < 0.03
    assert fidelity.paired_tau_intervals(rows) == intervals  # seeded: the same figures on every run


def test_trained_prompt_indices_are_the_prompts_of_the_batches_the_trainer_read(fidelity, tmp_path):
    """`--ess_train_prompts` measures the ESS on prompts the adapter trained on: with 2 steps of one prompt each out of
    5, exactly the two prompts the trainer's sampler put in its first two batches, and none for a trainer whose
    samples were all drawn before training."""
    from datasets import Dataset
    from tiny_models import conditional_lm
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from hf_seqtemp import SeqTempConfig

    backend = Tokenizer(models.WordLevel({"<s>": 0, "x": 1, "y": 2, "z": 3}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="z")
    data = Dataset.from_dict({"prompt": ["x", "x y", "y x y", "y y", "y"]})
    indices = {}
    for loss_type in ("smc_distill", "ratio"):
        args = SeqTempConfig(output_dir=str(tmp_path), target_temperature=0.5, loss_type=loss_type, num_generations=4,
                             max_completion_length=3, per_device_train_batch_size=4, max_steps=2, save_strategy="no",
                             use_cpu=True, seed=3, disable_tqdm=True, report_to="none")  # fmt: skip
        trainer = fidelity.SharedPreparation().trainer_class()(
            conditional_lm(4), args, train_dataset=data, processing_class=tokenizer
        )
        seen = set()

        def recording(model, inputs, _seen=seen, _original=trainer.compute_loss, **kwargs):
            _seen.update(inputs["group_id"].tolist())
            return _original(model, inputs, **kwargs)

        trainer.compute_loss = recording
        trainer.train()
        indices[loss_type] = fidelity.trained_prompt_indices(trainer, data, tokenizer)
        if loss_type == "smc_distill":  # the groups the loss saw; a third prompt's particles were drawn ahead
            pool = trainer._pool
            assert indices[loss_type] == sorted(i for i in range(5) if pool.group_ids[4 * i] in seen)
            assert len(indices[loss_type]) == 2 and sum(row is not None for row in pool.rows) == 12
    assert indices["ratio"] is None


def test_saved_adapters_load_back_as_the_trained_model(fidelity, tmp_path, monkeypatch):
    """`--save_adapters DIR`: the folder that `train_adapter` writes loads with `load_tempered` onto a fresh base and
    gives the trained model's log-probabilities on several prompts (the folded 1/T norm included), not the base's."""
    from datasets import Dataset
    from tiny_models import conditional_lm
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from hf_seqtemp import load_tempered

    backend = Tokenizer(models.WordLevel({"<s>": 0, "x": 1, "y": 2, "z": 3}, unk_token="<s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="z")
    monkeypatch.setattr(fidelity, "load_default_model", lambda device=None: (conditional_lm(4), tokenizer))
    settings = {**fidelity.TRAINING, "seed": 1, "max_steps": 3, "num_generations": 4, "max_completion_length": 3,
                "batch_size": 4, "save_adapters": str(tmp_path / "adapters")}  # fmt: skip
    data = Dataset.from_dict({"prompt": ["x", "x y", "y x y", "y y"]})
    shared = fidelity.SharedPreparation()
    model, _, _ = fidelity.train_adapter(
        "smc_distill_adapter@3", 0.5, settings, data, tokenizer, torch.device("cpu"), shared, str(tmp_path / "work")
    )
    folder = fidelity.adapter_folder(settings["save_adapters"], "smc_distill_adapter@3", 0.5)
    assert folder.endswith("smc_distill_adapter_steps3_T0.5")
    inputs = torch.tensor([[0, 1, 2, 1], [0, 2, 2, 1], [0, 1, 1, 2]])
    loaded = load_tempered(folder, base_model=conditional_lm(4)).eval()
    expected = model.eval()(input_ids=inputs).logits.log_softmax(-1)
    torch.testing.assert_close(loaded(input_ids=inputs).logits.log_softmax(-1), expected)
    base = conditional_lm(4)(input_ids=inputs).logits.log_softmax(-1)
    assert (expected - base).abs().max() > 0.1  # trained and tempered, not the base
    assert loaded.seqtemp_config.target_temperature == 0.5
    # a second run into the same folder is refused before it trains, and the saved adapter stays as it was
    args = _args(
        methods=["smc_distill_adapter@3", "ratio"], temperatures=[0.5, 2.0], save_adapters=settings["save_adapters"]
    )
    with pytest.raises(ValueError, match=r"smc_distill_adapter_steps3_T0\.5 already hold\(s\) a saved adapter"):
        fidelity.resolve_settings(args)
    assert fidelity.resolve_settings(_args(methods=["ratio"], save_adapters=settings["save_adapters"]))[
        "save_adapters"
    ]
    with pytest.raises(SystemExit, match="fidelity.py: error: --save_adapters"):
        fidelity.main(["--methods", "smc_distill_adapter@3", "--temperatures", "0.5", "--save_adapters",
                       settings["save_adapters"]])  # fmt: skip


@pytest.mark.parametrize("repeats", [1, 3])
def test_proposal_figures_keep_what_the_draws_allow(fidelity, monkeypatch, repeats):
    """The fidelity row's ESS keys with the default one draw per prompt (`make bench`'s quick mode): no
    these-prompts interval (it needs several draws), no error; the reachable companion's interval is the prompt
    bootstrap over exactly the prompts with token ESS/N <= 1/2. The sampling is replaced by fixed per-draw figures:
    what is checked is which prompts and draws each figure uses."""
    import proposal_ess

    token = [[0.9] * repeats, [0.2] * repeats, [0.5] * repeats, [0.1] * repeats, [0.6] * repeats]
    adapter = [[0.45] * repeats, [0.6] * repeats, [0.7] * repeats, [0.15] * repeats, [0.9] * repeats]
    fixed = {"token": token, "adapter": adapter}

    def figures(model, ids, mask, settings, temperature, proposal, eos, pad, stream=None):
        draws = fixed[proposal]  # the selection's draws (stream "selection") read as the token's here
        return {"ess_fraction": [sum(d) / len(d) for d in draws], "log_weight_variance": [1.0] * len(draws),
                "ess_fraction_draws": draws}  # fmt: skip

    monkeypatch.setattr(proposal_ess, "per_prompt_figures", figures)
    monkeypatch.setattr(proposal_ess, "render", lambda tokenizer, prompts, system: (torch.zeros(5, 2), None))
    monkeypatch.setattr("hf_seqtemp.data.sampling.eos_ids_of", lambda model, tokenizer: [0])
    tokenizer = argparse.Namespace(pad_token_id=0)
    settings = {"ess_samples": 16, "ess_repeats": repeats, "max_completion_length": 4, "seed": 3}
    out = fidelity.proposal_figures(None, tokenizer, [f"p{i}" for i in range(5)], 0.25, settings)
    assert ("ess_ratio_interval_these_prompts" in out) == (repeats > 1)
    assert out["prompts_where_2_is_reachable"] == 3  # prompts 1, 2, 3 (0.5 counts: a perfect proposal gives 2)
    assert out["reachable_selected_on"].startswith(f"{repeats} independent token-temperature draw")
    assert out["ess_ratio_where_2_is_reachable"] == pytest.approx(1.5)  # ratios 3.0, 1.4, 1.5
    rows = [1, 2, 3]
    expected = proposal_ess.median_ratio_interval(
        torch.tensor(token)[rows], torch.tensor(adapter)[rows], level="prompts", seed=3
    )
    assert out["ess_ratio_where_2_is_reachable_interval"] == pytest.approx(expected)
    assert out["ess_ratio_adapter_over_token"] == pytest.approx(1.5) and len(out["ess_per_prompt"]) == 5
