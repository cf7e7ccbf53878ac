# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import dataclasses
import re

import pytest
import torch
from datasets import Dataset
from tiny_models import tiny_causal_lm, word_tokenizer
from transformers import TrainingArguments

from hf_seqtemp import LOSSES, AutoregressiveScorer, SeqTempConfig, SeqTempTrainer, SequenceTemperatureConfig
from hf_seqtemp.trainer.engine_arguments import EngineArguments
from hf_seqtemp.trainer.trl_names import RefusedTRLArguments


def _tokenizer():
    return word_tokenizer()


def _args(tmp_path, **kw):
    return SeqTempConfig(output_dir=str(tmp_path), use_cpu=True, max_steps=1, save_strategy="no", **kw)


def test_prompt_completion_scores_only_the_completion(tmp_path):
    tok = _tokenizer()
    model = tiny_causal_lm(6, seed=4)
    data = Dataset.from_dict({"prompt": ["a b", "c"], "completion": [" c d", " a b d"]})  # TRL: text is concatenated
    trainer = SeqTempTrainer(model, _args(tmp_path), train_dataset=data, processing_class=tok)
    ids = [[0, 1, 2, 3, 4], [0, 3, 1, 2, 4]]
    masks = [[0, 0, 0, 1, 1], [0, 0, 1, 1, 1]]
    assert trainer.train_dataset["input_ids"] == ids and trainer.train_dataset["completion_mask"] == masks
    expected = AutoregressiveScorer()(model, torch.tensor(ids), completion_mask=torch.tensor(masks))
    torch.testing.assert_close(torch.tensor(trainer.train_dataset["ref_logps"]), expected.detach())


def test_text_dataset_scores_every_token_after_bos(tmp_path):
    tok = _tokenizer()
    model = tiny_causal_lm(6, seed=4)
    data = Dataset.from_dict({"body": ["a b c", "d d"]})
    trainer = SeqTempTrainer(
        model, _args(tmp_path, dataset_text_field="body"), train_dataset=data, processing_class=tok
    )
    assert trainer.train_dataset["completion_mask"] == [[0, 1, 1, 1], [0, 1, 1]]


def test_long_examples_are_dropped_with_a_warning(tmp_path, caplog):
    data = Dataset.from_dict({"input_ids": [[0, 1, 2], [0, 1, 2, 3, 1, 2]]})
    trainer = SeqTempTrainer(tiny_causal_lm(4), _args(tmp_path, max_length=4), train_dataset=data)
    assert trainer.train_dataset["input_ids"] == [[0, 1, 2]]
    assert "dropped 1 of 2 examples longer than max_length=4" in caplog.text


@pytest.mark.parametrize("value", [0.0, -0.5, float("nan"), float("inf")])
def test_bad_target_temperature(tmp_path, value):
    with pytest.raises(ValueError, match=r"`target_temperature` must be a finite float > 0"):
        _args(tmp_path, target_temperature=value)


def test_bad_config_values(tmp_path):
    with pytest.raises(TypeError, match="`target_temperature` must be a float > 0"):
        _args(tmp_path, target_temperature="0.5x")
    with pytest.raises(ValueError, match=r"`loss_type` must be one of .*'ratio'.*got 'ration'"):
        _args(tmp_path, loss_type="ration")
    with pytest.raises(ValueError, match="`nll_weight` must be a float ≥ 0, got -1"):
        _args(tmp_path, nll_weight=-1.0)
    with pytest.raises(ValueError, match="`max_length` must be an integer ≥ 2"):
        _args(tmp_path, max_length=1)
    with pytest.raises(ValueError, match="`remove_unused_columns=True` would drop"):
        _args(tmp_path, remove_unused_columns=True)
    # fresh samples drawn in dataloader workers never reached the checkpointed pool (a resume drew others)
    with pytest.raises(ValueError, match=r"`dataloader_num_workers=2` with `sample_every_steps`.*Set `dataloader_"):
        _args(tmp_path, sample_every_steps=1, dataloader_num_workers=2)
    assert _args(tmp_path, dataloader_num_workers=2).dataloader_num_workers == 2  # fixed data: workers are fine


def test_bad_datasets(tmp_path):
    model = tiny_causal_lm(4)
    with pytest.raises(ValueError, match="`train_dataset` is empty"):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=Dataset.from_dict({"text": []}))
    with pytest.raises(ValueError, match="`train_dataset` is None"):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=None)
    with pytest.raises(ValueError, match=r"`train_dataset` has columns \['body'\] but needs one of TRL's formats"):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=Dataset.from_dict({"body": ["a"]}))
    with pytest.raises(ValueError, match="`max_length`=3 is shorter than every example of `train_dataset`"):
        SeqTempTrainer(
            model,
            _args(tmp_path, max_length=3),
            train_dataset=Dataset.from_dict({"input_ids": [[0, 1, 2, 3], [0, 1, 2, 3, 0]]}),
        )
    with pytest.raises(ValueError, match="`eval_dataset` is empty"):
        SeqTempTrainer(
            model,
            _args(tmp_path),
            train_dataset=Dataset.from_dict({"input_ids": [[0, 1, 2]]}),
            eval_dataset=Dataset.from_dict({"input_ids": []}),
        )
    with pytest.raises(ValueError, match="text and conversational datasets need a tokenizer"):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=Dataset.from_dict({"text": ["a b"]}))
    # every completion one and the same sequence (e.g. all empty): loss 0 and T_eff NaN, silently, before
    same = Dataset.from_dict({"input_ids": [[0, 1, 2], [0, 1, 2], [0, 1, 2]]})
    with pytest.raises(ValueError, match="the completions are one and the same sequence"):
        SeqTempTrainer(model, _args(tmp_path), train_dataset=same)
    from hf_seqtemp.measure import score_dataset  # `hf-seqtemp eval` scores through it: NaN and a wrong hint before

    with pytest.raises(ValueError, match="`dataset`: in every prompt group"):
        score_dataset(model, same)
    one_differs = Dataset.from_dict({"input_ids": [[0, 1, 2], [0, 1, 2], [0, 2, 1]]})
    assert len(SeqTempTrainer(model, _args(tmp_path), train_dataset=one_differs).train_dataset) == 3
    with pytest.raises(TypeError, match="`args` must be a SeqTempConfig"):
        SeqTempTrainer(model, object(), train_dataset=Dataset.from_dict({"input_ids": [[0, 1, 2]]}))


def test_compute_loss_refuses_return_outputs(tmp_path):
    trainer = SeqTempTrainer(
        tiny_causal_lm(4), _args(tmp_path), train_dataset=Dataset.from_dict({"input_ids": [[0, 1, 2], [0, 2, 1]]})
    )
    with pytest.raises(ValueError, match="does not return model outputs"):
        trainer.compute_loss(trainer.model, {}, return_outputs=True)


def test_every_config_field_is_documented_and_choices_match_the_registry(tmp_path):
    """Read from the dataclass: every field SeqTempConfig adds is in the docstring with a help text, every default
    it changes is in the docstring's note, and every `choices` list is exactly what `__post_init__` accepts."""
    inherited = {field.name: field for field in dataclasses.fields(TrainingArguments)}
    own = [field for field in dataclasses.fields(SeqTempConfig) if field.name not in inherited]
    changed = [
        field
        for field in dataclasses.fields(SeqTempConfig)
        if field.name in inherited and field.default != inherited[field.name].default
    ]
    doc = SeqTempConfig.__doc__
    note = doc[doc.index("> [!NOTE]") :]
    # the engine's fields and the refused TRL names are documented by their own classes, which the docstring links
    for part in (EngineArguments, RefusedTRLArguments):
        assert f"[`~{part.__module__}.{part.__name__}`]" in doc, f"{part.__name__} is not linked"
        doc += part.__doc__
    assert len(own) >= 17 and {"learning_rate", "logging_steps", "remove_unused_columns"} <= {f.name for f in changed}
    for field in own:
        assert re.search(rf"^\s+{field.name} \(`", doc, re.MULTILINE), f"{field.name} is not documented"
        assert field.metadata.get("help"), f"{field.name} has no help text"
    for field in changed:
        assert f"`{field.name}=" in note, f"the changed default of {field.name} is not in the note"
    assert SeqTempConfig.__dataclass_fields__["loss_type"].metadata["choices"] == sorted(LOSSES)
    for field in own:
        choices = field.metadata.get("choices")
        if choices is None:
            continue
        for choice in choices:
            assert getattr(_args(tmp_path, **{field.name: choice}), field.name) == choice
        with pytest.raises(ValueError, match=f"`{field.name}` must be"):
            _args(tmp_path, **{field.name: "not-a-choice"})


def test_sequence_temperature_config_round_trip_and_errors(tmp_path):
    config = SequenceTemperatureConfig(
        target_temperature=0.25,
        base_model_id="x/y",
        loss_type="ssts",
        training_hyperparameters={"nll_weight": 0.1},
        eval_t_eff=0.27,
    )
    config.save_pretrained(tmp_path)
    assert SequenceTemperatureConfig.from_pretrained(tmp_path) == config
    with pytest.raises(ValueError, match="`target_temperature` must be a finite float > 0, got nan"):
        SequenceTemperatureConfig(target_temperature=float("nan"))
    with pytest.raises(ValueError, match="`model_family` must be one of"):
        SequenceTemperatureConfig(target_temperature=1.0, model_family="rnn")
    assert SequenceTemperatureConfig.from_dict({"target_temperature": 1.0, "calibration": []}).target_temperature == 1
    with pytest.raises(ValueError, match=r"unknown keys in a seqtemp_config.json: \['colour'\]"):
        SequenceTemperatureConfig.from_dict({"target_temperature": 1.0, "colour": "red"})
    with pytest.raises(FileNotFoundError, match="no seqtemp_config.json in"):
        SequenceTemperatureConfig.from_pretrained(tmp_path / "..")


def test_singleton_groups_warn_and_an_eval_set_without_pairs_is_an_error(tmp_path, caplog):
    tok = _tokenizer()
    one_each = Dataset.from_dict({"prompt": ["a", "b", "c"], "completion": [" d", " d", " d"]})
    pairs = Dataset.from_dict({"prompt": ["a", "a", "b", "b"], "completion": [" c", " d", " c", " d"]})
    with pytest.raises(ValueError, match=r"`eval_dataset` puts each of the 3 sequences in a group of its own.*Fix"):
        SeqTempTrainer(
            tiny_causal_lm(6, seed=4),
            _args(tmp_path, num_generations=2, per_device_train_batch_size=2),
            train_dataset=pairs,
            eval_dataset=one_each,
            processing_class=tok,
        )
    assert "eval_dataset: all 3 prompt groups hold a single completion" in caplog.text  # warned before training
