# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The model card's metadata (its YAML header): PEFT's and the package's tags, the measured figures as
`model-index` results on the held-out prompts, and the tags of a card already in the folder (kept)."""

from __future__ import annotations

import math
import os

from .config import SequenceTemperatureConfig

CARD_NAME = "README.md"


def _tags(config: SequenceTemperatureConfig, existing: list[str]) -> list[str]:
    """PEFT's tags (from the card `save_pretrained` wrote, or rebuilt: `base_model:adapter:<id>`, `lora`,
    `transformers`), `Trainer`'s (`generated_from_trainer`; not `trl`, which trains nothing here), hf_seqtemp's, the
    user's, and `custom_generate` (the repository carries a `custom_generate/` folder, which transformers' docs ask
    to be tagged)."""
    adapter = "lora_r" in config.training_hyperparameters
    tags = list(existing)
    if config.base_model_id:
        tags.append(f"base_model:{'adapter' if adapter else 'finetune'}:{config.base_model_id}")
    tags += ["lora"] if adapter else []
    tags += ["transformers", "peft", "generated_from_trainer", "hf_seqtemp", "seqtemp", "custom_generate"]
    tags.append(f"sequence-temperature-{config.target_temperature:g}")
    return list(dict.fromkeys(tags))  # in order, once each


def _eval_results(config: SequenceTemperatureConfig, dataset_names) -> list | None:
    """The tempered model's measured T_eff, Kendall τ and NLL per token as `model-index` results, the dataset being
    the held-out prompts they were measured on."""
    from huggingface_hub import EvalResult

    figures = [
        (
            "effective_temperature",
            f"T_eff (within prompts; target T = {config.target_temperature:g})",
            config.eval_t_eff,
        ),
        ("kendall_tau", "Kendall τ with the base model (within prompts)", config.eval_kendall_tau),
        ("nll_per_token", "NLL per token (nats)", config.eval_nll),
    ]
    figures = [(kind, name, value) for kind, name, value in figures if value is not None and not math.isnan(value)]
    if not figures:
        return None
    counts = [f"{config.eval_prompts} prompts"] if config.eval_prompts else []
    counts += [f"{config.eval_sequences} sequences"] if config.eval_sequences else []
    dataset = {
        "dataset_type": (list(dataset_names or []) or ["held-out-prompts"])[0],
        "dataset_name": "held-out prompts" + (f" ({', '.join(counts)})" if counts else ""),
        "dataset_split": "held-out",
    }
    return [
        EvalResult(
            task_type="text-generation",
            task_name="sequence-temperature scaling",
            metric_type=kind,
            metric_name=name,
            metric_value=round(float(value), 6),
            **dataset,
        )
        for kind, name, value in figures
    ]


def _metadata(config: SequenceTemperatureConfig, dataset_names, existing_tags=(), model_name=None) -> str:
    from huggingface_hub import ModelCardData

    eval_results = _eval_results(config, dataset_names)
    data = ModelCardData(
        base_model=config.base_model_id,
        library_name="peft",
        tags=_tags(config, list(existing_tags)),
        datasets=list(dataset_names or []) or None,
        pipeline_tag="text-generation" if config.model_family == "causal_lm" else None,
        model_name=model_name if eval_results else None,
        eval_results=eval_results,
    )
    return data.to_yaml()


def _existing_tags(folder) -> list[str]:
    """The tags of the card already in `folder` (PEFT's `save_pretrained` writes one), so that none is dropped."""
    import yaml
    from huggingface_hub import ModelCard

    path = os.path.join(folder, CARD_NAME)
    if not os.path.isfile(path):
        return []
    try:
        return list(ModelCard.load(path).data.tags or [])
    except (ValueError, yaml.YAMLError):  # malformed metadata: nothing to keep
        return []
