# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What [`SeqTempTrainer`] makes of the `model`, `processing_class` and `peft_config` it is given, as TRL's trainers do:
a Hub id or path loaded (with `model_init_kwargs`, `trust_remote_code` and a `quantization_config`), its tokenizer
loaded with it when none is given, a raw diffusion model wrapped, the adapter added, and a `PeftModel` whose adapter
is already trained named for what p then is."""

from __future__ import annotations

import os
import warnings

from transformers import AutoModelForCausalLM

from ..models.base import wrapped_model
from ..models.diffusion import is_raw_diffusion_model, wrap_diffusion_model
from ..models.validation import check_model_kind
from ..offline import named_when_offline
from ..peft_compat import adapter_changes_the_model, check_transformers_loads_adapter, peft_model_of
from .config import SeqTempConfig


def default_args(model) -> SeqTempConfig:
    """`SeqTempConfig("<model name>-SeqTemp")`: the output folder is named after the model, as in TRL."""
    inner = wrapped_model(model)
    name = model if isinstance(model, str) else getattr(getattr(inner, "config", None), "_name_or_path", "")
    name = name or type(inner).__name__
    return SeqTempConfig(f"{str(name).split('/')[-1]}-SeqTemp")


def _init_kwargs(args: SeqTempConfig, quantization_config=None) -> dict:
    """`from_pretrained` keywords for a model given by id: `trust_remote_code`, then `model_init_kwargs` (which win),
    then the trainer's `quantization_config`."""
    kwargs = {"trust_remote_code": args.trust_remote_code, **(args.model_init_kwargs or {})}
    if quantization_config is not None:
        kwargs["quantization_config"] = quantization_config
    return kwargs


TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "tokenizer.model", "vocab.json")


def load_processing_class(model, processing_class, args: SeqTempConfig):
    """The tokenizer: the one given, or (as TRL's trainers do) the one of a model given by id or path; `None` for a
    local folder without tokenizer files (pre-tokenised data needs none; text data then says it needs one). With
    `args.chat_template_path`, its chat template is set from there ([`apply_chat_template_path`])."""
    if processing_class is None and isinstance(model, str):
        if os.path.isdir(model) and not any(os.path.isfile(os.path.join(model, n)) for n in TOKENIZER_FILES):
            return apply_chat_template_path(None, args.chat_template_path)
        from transformers import AutoTokenizer

        init = args.model_init_kwargs or {}
        options = {key: init[key] for key in ("revision", "trust_remote_code") if key in init}
        with named_when_offline(model):
            processing_class = AutoTokenizer.from_pretrained(
                model, **{"trust_remote_code": args.trust_remote_code, **options}
            )
    return apply_chat_template_path(processing_class, args.chat_template_path)


def apply_chat_template_path(tokenizer, path: str | None):
    """TRL's `chat_template_path`: a Jinja file (`.jinja` / `.j2`, or any file) whose text becomes
    `tokenizer.chat_template`, or a tokenizer (a local folder or a Hub id) whose template is copied. A template whose
    special tokens the tokenizer lacks is refused: TRL would add them and resize the embeddings, which changes the
    model p being tempered."""
    if path is None:
        return tokenizer
    if tokenizer is None:
        raise ValueError(
            f"`chat_template_path={path!r}` needs a tokenizer to set the template on: pass `processing_class`."
        )
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            tokenizer.chat_template = handle.read()
        return tokenizer
    from transformers import AutoTokenizer

    try:
        source = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise ValueError(
            f"`chat_template_path={path!r}` is neither a file nor a tokenizer that loads ({error}): pass a Jinja "
            "file (`template.jinja`) or a tokenizer folder / Hub id with a chat template."
        ) from None
    if not getattr(source, "chat_template", None):
        raise ValueError(f"`chat_template_path={path!r}`: that tokenizer has no chat template.")
    vocab = tokenizer.get_vocab()
    missing = [token for token in source.all_special_tokens if token not in vocab]
    if missing:
        raise ValueError(
            f"`chat_template_path={path!r}`: its template uses special tokens this tokenizer lacks ({missing}). TRL "
            "would add them and resize the embeddings, which changes the base model p that is tempered: refused. "
            "Pass a Jinja file written for this tokenizer's own tokens."
        )
    tokenizer.chat_template = source.chat_template
    return tokenizer


def prepare_model(model, processing_class, args: SeqTempConfig, quantization_config=None):
    """The model to train: loaded from a Hub id or path, checked, and a raw diffusion model wrapped."""
    if isinstance(model, str):
        check_transformers_loads_adapter(model)
        with named_when_offline(model):
            model = AutoModelForCausalLM.from_pretrained(model, **_init_kwargs(args, quantization_config))
    elif args.model_init_kwargs or quantization_config is not None:
        given = "`model_init_kwargs`" if args.model_init_kwargs else "`quantization_config`"
        raise ValueError(
            f"{given} is given but `model` is already built: it applies when `model` is a Hub id or a path. Pass "
            "those settings to your own `from_pretrained`, or pass the id."
        )
    check_model_kind(model)
    return wrap_diffusion_model(model, processing_class) if is_raw_diffusion_model(model) else model


def add_adapter(model, peft_config, args: SeqTempConfig, family):
    """`model` with the PEFT adapter of `peft_config` (where the family puts it), or `model` itself (a `PeftModel`
    whose adapter is already trained is warned about: p is then its base with that adapter off)."""
    if args.init_from_token_temperature and (peft_config is None or not family.supports_token_temperature_init):
        raise ValueError("`init_from_token_temperature=True` needs a causal LM and a `peft_config` (e.g. LoraConfig).")
    if peft_config is None:
        peft = peft_model_of(model)
        if peft is not None and adapter_changes_the_model(peft):
            warnings.warn(
                "`model` is a PeftModel whose adapter is already trained (non-zero): p, the target and the source of "
                "the samples, is its base model with that adapter switched off, so training tempers the base model, "
                "not your fine-tuned one. To temper the fine-tuned model, merge it first "
                "(`model = model.merge_and_unload()`) and pass a `peft_config` for the new adapter.",
                UserWarning,
                stacklevel=5,
            )
        return model
    if peft_model_of(model) is not None:
        raise ValueError("`model` is already a PeftModel; pass `peft_config=None` to train its adapter.")
    start = args.init_token_temperature if args.init_token_temperature is not None else args.target_temperature
    token_temperature = start if args.init_from_token_temperature else None
    return family.with_adapter(model, peft_config, token_temperature)
