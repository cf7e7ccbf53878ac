# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A TRL / transformers user's habits, round 4 (issue 61, part 5): each one works as there or is refused by name with
what to do: `seq_temperature` on a plain model, an id mistyped offline, a plain PEFT folder, the model's own
`generation_config`, `model_init_kwargs`' dtype, `reward_funcs` / `model_init`, prompt-only data and TRL's tldr."""

import json
import pathlib

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_tempered
from hf_seqtemp.cli import main

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
LORA = {"r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"]}


def _config(tmp_path, **overrides):
    values = {"output_dir": str(tmp_path / "run"), "target_temperature": 0.5, "max_steps": 1, "seed": 0}
    values.update(per_device_train_batch_size=8, save_strategy="no", use_cpu=True, disable_tqdm=True, report_to=[])
    return SeqTempConfig(**{**values, **overrides})


@pytest.fixture(scope="module")
def tempered_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("habits4")
    base = tiny_causal_lm(6, seed=3)
    base.config.pad_token_id = 0
    base.save_pretrained(root / "base")
    from conditional_toy import word_tokenizer

    word_tokenizer().save_pretrained(root / "base")
    args = _config(root, num_generations=4)
    data = as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 16, 4, seed=2))
    trainer = SeqTempTrainer(str(root / "base"), args, train_dataset=data, peft_config=LoraConfig(**LORA))
    trainer.train()
    trainer.save_model(str(root / "adapter"))
    return root


# ------------------------------------------------------------------------------------------- a: plain model
def test_seq_temperature_on_a_plain_model_is_documented_with_the_fix():
    """transformers refuses the keyword before hf_seqtemp sees the call; the troubleshooting entry quotes that error
    and the three routes that work."""
    model = tiny_causal_lm(6, seed=3)
    model.generation_config.pad_token_id = 0
    with pytest.raises(ValueError, match=r"model_kwargs` are not used by the model: \['seq_temperature'\]"):
        model.generate(torch.tensor([[1, 2]]), seq_temperature=0.5, max_new_tokens=2)
    text = " ".join((DOCS / "sampling.md").read_text(encoding="utf-8").split())
    assert "following `model_kwargs` are not used by the model: ['seq_temperature']" in text
    for fix in ("custom_generate=hf_seqtemp.seqtemp_generate", "hf_seqtemp.generate_tempered(", "load_tempered"):
        assert fix in text, fix
    from hf_seqtemp import seqtemp_generate

    out = model.generate(
        torch.tensor([[1, 2]]), custom_generate=seqtemp_generate, seq_temperature=0.5, max_new_tokens=2
    )
    assert out.shape == (1, 4)


# ------------------------------------------------------------------------------------------- b: offline typo
def test_a_mistyped_id_offline_names_the_id_and_the_setting(tempered_folder, tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    typo = "HuggingFaceTB/SmolLM2-135M-Instructt"
    with pytest.raises(FileNotFoundError) as error:
        load_tempered(tempered_folder / "adapter", base_model=typo)
    message = str(error.value)
    assert typo in message and "HF_HUB_OFFLINE is set" in message and "Check the spelling" in message
    assert "local folder" in message and len(message.splitlines()) == 1
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "a b c"}) + "\n", encoding="utf-8")
    argv = ["train", "--model_name_or_path", typo, "--dataset_path", str(data), "--output_dir", str(tmp_path / "o")]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and typo in err and "HF_HUB_OFFLINE is set" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------------- c: plain PEFT
def test_a_plain_peft_folder_is_named_with_how_to_load_and_attach_a_temperature(tmp_path):
    peft = get_peft_model(tiny_causal_lm(6, seed=3), LoraConfig(**LORA))
    peft.save_pretrained(tmp_path / "plain")
    with pytest.raises(FileNotFoundError) as error:
        load_tempered(tmp_path / "plain")
    message = str(error.value)
    assert "plain PEFT adapter" in message and "without a SequenceTemperatureConfig" in message
    assert "PeftModel.from_pretrained(" in message and "measure_held_out(" in message
    assert "SequenceTemperatureConfig(target_temperature=T" in message and ".save_pretrained(" in message


# ------------------------------------------------------------------------------------------- d: generation_config
def test_seq_temperature_on_the_models_generation_config_samples_as_the_keyword(tempered_folder):
    model = load_tempered(tempered_folder / "adapter", base_model=str(tempered_folder / "base"))
    inputs = {"input_ids": torch.tensor([[1, 2]]), "max_new_tokens": 6, "pad_token_id": 0}

    def answers(**kwargs):
        outs = []
        for seed in range(6):
            torch.manual_seed(seed)
            outs.append(tuple(model.generate(**inputs, **kwargs)[0].tolist()))
        return outs

    by_keyword = answers(seq_temperature=0.5)
    model.generation_config.seq_temperature = 0.5
    try:
        by_config = answers()
    finally:
        del model.generation_config.seq_temperature
    assert len(set(by_keyword)) > 1  # the keyword samples
    assert by_config == by_keyword  # the config field is the keyword: the same samples for the same seeds


# ------------------------------------------------------------------------------------------- e: dtype
@pytest.mark.parametrize("key", ["dtype", "torch_dtype"])
def test_an_invalid_dtype_in_model_init_kwargs_is_refused_by_name(tmp_path, key):
    with pytest.raises(ValueError) as error:
        _config(tmp_path, model_init_kwargs={key: "bf16"})
    message = str(error.value)
    assert "Invalid dtype" in message and f"model_init_kwargs['{key}']" in message and "'bf16'" in message
    assert all(name in message for name in ("'auto'", "'bfloat16'", "'float16'", "'float32'", "torch.dtype"))
    assert _config(tmp_path, model_init_kwargs={key: "bfloat16"}).model_init_kwargs == {key: "bfloat16"}
    assert _config(tmp_path, model_init_kwargs=json.dumps({key: "auto"})).model_init_kwargs == {key: "auto"}


# ------------------------------------------------------------------------------------------- f: CLI kwargs
def test_the_cli_applies_model_init_kwargs_to_the_model_it_loads(tempered_folder, tmp_path, monkeypatch):
    """`--model_init_kwargs` with `--model_name_or_path` said "pass the id" although the id was passed."""
    import hf_seqtemp.trainer

    seen = {}

    class Stop(Exception):
        pass

    def fake_trainer(model, args, **kwargs):
        seen.update(dtype=model.dtype, init_kwargs=args.model_init_kwargs)
        raise Stop

    monkeypatch.setattr(hf_seqtemp.trainer, "SeqTempTrainer", fake_trainer)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input_ids": [1, 2, 3]}) + "\n", encoding="utf-8")
    argv = ["train", "--model_name_or_path", str(tempered_folder / "base"), "--dataset_path", str(data)]
    argv += ["--output_dir", str(tmp_path / "o"), "--model_init_kwargs", '{"dtype": "bfloat16"}', "--use_cpu"]
    with pytest.raises(Stop):
        main(argv)
    assert seen == {"dtype": torch.bfloat16, "init_kwargs": None}


# ------------------------------------------------------------------------------------------- g: trainer arguments
@pytest.mark.parametrize(
    ("name", "words"),
    [("reward_funcs", "needs none"), ("reward_processing_classes", "no reward model"), ("model_init", "per trial")],
)
def test_trl_and_trainer_arguments_without_meaning_here_are_refused_by_name(tmp_path, name, words):
    with pytest.raises(TypeError) as error:
        SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path), train_dataset=None, **{name: lambda *a: 0})
    message = str(error.value)
    assert message.startswith(f"`{name}` is not an argument of SeqTempTrainer") and words in message


def test_messages_without_an_assistant_turn_point_to_a_prompt_column(tmp_path):
    from conditional_toy import word_tokenizer

    tokenizer = word_tokenizer()
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    data = Dataset.from_dict({"messages": [[{"role": "user", "content": "x"}]] * 4})
    with pytest.raises(ValueError) as error:
        SeqTempTrainer(tiny_causal_lm(6, seed=3), _config(tmp_path), train_dataset=data, processing_class=tokenizer)
    message = str(error.value)
    assert "must end with an assistant turn" in message and "a `prompt` column of message lists" in message


# ------------------------------------------------------------------------------------------- h: TRL's tldr
def test_prompt_completion_data_without_whole_groups_says_to_select_the_prompts(tmp_path):
    """TRL's quick start dataset (trl-lib/tldr: `prompt`, `completion`) has one completion per prompt."""
    from conditional_toy import word_tokenizer

    data = Dataset.from_dict({"prompt": ["x", "y", "z", "x y"], "completion": [" y", " z", " x", " z"]})
    trainer = SeqTempTrainer(
        tiny_causal_lm(6, seed=3), _config(tmp_path, num_generations=2, per_device_train_batch_size=2),
        train_dataset=data, processing_class=word_tokenizer(), peft_config=LoraConfig(**LORA),
    )  # fmt: skip
    with pytest.raises(ValueError) as error:
        trainer.train()
    message = str(error.value)
    assert "No prompt group has" in message and 'dataset.select_columns(["prompt"])' in message
    docs = " ".join((DOCS / "training.md").read_text(encoding="utf-8").split())
    assert "trl-lib/tldr" in docs and 'select_columns(["prompt"])' in docs
    scale_out = " ".join((DOCS / "scale_out.md").read_text(encoding="utf-8").split())
    assert "trl vllm-serve" in scale_out and "--dtype float32" in scale_out


# ------------------------------------------------------------------------------------- g: chat_template_path
def test_chat_template_path_sets_the_template_the_data_are_rendered_with_as_in_trl(tmp_path):
    """TRL's `chat_template_path`: a Jinja file's text becomes the tokenizer's chat template before the data are
    rendered (two templates give two renderings of the same conversation); a tokenizer folder's template is copied;
    one whose special tokens this tokenizer lacks is refused by name (TRL would resize the embeddings: another p)."""
    from conditional_toy import word_tokenizer

    data = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": "x"}]] * 4,
            "completion": [[{"role": "assistant", "content": w}] for w in ("y", "z", "y y", "z y")],
        }
    )
    rendered = {}
    for name, template in {
        "plain": "{% for m in messages %}{{ m['content'] }} {% endfor %}",
        "twice": "{% for m in messages %}{{ m['content'] }} {{ m['content'] }} {% endfor %}",
    }.items():
        (tmp_path / f"{name}.jinja").write_text(template)
        args = _config(tmp_path, num_generations=4, chat_template_path=str(tmp_path / f"{name}.jinja"))
        trainer = SeqTempTrainer(
            tiny_causal_lm(6, seed=3), args, train_dataset=data, processing_class=word_tokenizer()
        )
        assert trainer.processing_class.chat_template == template
        rendered[name] = trainer.train_dataset[0]["input_ids"]
    assert rendered["plain"] != rendered["twice"] and len(rendered["twice"]) > len(rendered["plain"])
    folder = tmp_path / "tokenizer"
    source = word_tokenizer()
    source.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    source.save_pretrained(folder)
    args = _config(tmp_path, num_generations=4, chat_template_path=str(folder))
    trainer = SeqTempTrainer(tiny_causal_lm(6, seed=3), args, train_dataset=data, processing_class=word_tokenizer())
    assert trainer.processing_class.chat_template == source.chat_template
    source.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    source.save_pretrained(folder)
    with pytest.raises(ValueError, match=r"special tokens this tokenizer lacks \(\['<\|im_start\|>'\]\).*refused"):
        SeqTempTrainer(tiny_causal_lm(6, seed=3), args, train_dataset=data, processing_class=word_tokenizer())
