# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The TRL config names a TRL user passes to [`SeqTempConfig`]: taken where they mean the same here (the engine
settings of TRL's server mode), refused by name, with why and what to use, where they would mean something else or
nothing."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

from ..checks import check_int
from ..trl_vocabulary import grpo_only_meaning

REFUSED_TRL_NAMES = {
    "steps_per_generation": "TRL's GRPO knob (a generation every k micro-batches, by default every optimisation "
    "step). SeqTempTrainer samples the reference p, which does not change: by default once, before training. "
    "For fresh samples every k optimisation steps use `sample_every_steps=k` (k=1 is GRPO's default)",
    "generation_batch_size": "TRL's GRPO knob (completions per generation). Here each prompt gets "
    "`num_generations` completions, drawn in sampling calls of `sampling_batch_tokens` tokens (its size in rows: "
    "rows × (longest prompt + max_completion_length)); for fresh ones every k optimisation steps use "
    "`sample_every_steps=k`",
    "generation_kwargs": "completions are exact samples of p (temperature 1, no top-k/top-p, every EOS id), which "
    "the losses need; any generation setting would change the distribution they are drawn from",
    "chat_template_kwargs": "one chat template renders every prompt here (training, evaluation, sampling, the "
    "CLI); set the variables in `tokenizer.chat_template` itself",
    "dataset_num_proc": "tokenisation runs in the main process here; leave it unset",
    "log_completions": "not available; the sampled completions are in the pool saved with each checkpoint "
    "(`seqtemp_state_<rank>.json`)",
}
"""TRL config names that mean something else here, or nothing: refused, with why and what to use instead."""


@dataclass
class RefusedTRLArguments:
    r"""
    TRL config fields that [`SeqTempConfig`] takes only to refuse them by name ([`REFUSED_TRL_NAMES`]): a TRL user's
    config or command line that sets one gets why and what to use, not a silent no-op.

    Parameters:
        steps_per_generation (`int`, *optional*): GRPO's sampling cadence; see `sample_every_steps`.
        generation_batch_size (`int`, *optional*): GRPO's sampling cadence; see `sample_every_steps`.
        generation_kwargs (`dict`, *optional*): completions are exact samples of p, with no processor.
        chat_template_kwargs (`dict`, *optional*): set the template's variables in `tokenizer.chat_template` (one
            template renders every prompt: training, evaluation, sampling).
        dataset_num_proc (`int`, *optional*): tokenisation runs in the main process.
        log_completions (`bool`, *optional*): not available; sampled completions are in the pool saved with each
            checkpoint.
    """

    steps_per_generation: int | None = field(
        default=None, metadata={"help": "Refused: GRPO's cadence; use --sample_every_steps (optimisation steps)."}
    )
    generation_batch_size: int | None = field(
        default=None, metadata={"help": "Refused: GRPO's cadence; use --sample_every_steps (optimisation steps)."}
    )
    generation_kwargs: dict | str | None = field(
        default=None, metadata={"help": "Refused: completions are exact samples of p, with no processor."}
    )
    chat_template_kwargs: dict | str | None = field(
        default=None, metadata={"help": "Refused: set the variables in tokenizer.chat_template itself."}
    )
    dataset_num_proc: int | None = field(
        default=None, metadata={"help": "Refused: tokenisation runs in the main process."}
    )
    log_completions: bool = field(default=False, metadata={"help": "Refused: not available."})


def check_trl_names(config) -> None:
    """Refuses the [`REFUSED_TRL_NAMES`] a config sets, and reads `model_init_kwargs` from its JSON (the command
    line) into a dict."""
    for name, why in REFUSED_TRL_NAMES.items():
        if getattr(config, name) not in (None, False):
            raise ValueError(f"`{name}` is not supported by SeqTempConfig, got {getattr(config, name)!r}: {why}.")
    strategy = getattr(config.hub_strategy, "value", config.hub_strategy)
    if config.push_to_hub and strategy in ("checkpoint", "all_checkpoints"):
        raise ValueError(
            f"`hub_strategy='{strategy}'` is not supported: checkpoints are not uploaded here (a checkpoint's card has "
            "no measured figures, and a run resumes from its local `output_dir`). The adapter is uploaded with its "
            "measured card by `push_to_hub()` and by every `save_model()` (`hub_strategy='every_save'`, the "
            "default, or `'end'`)."
        )
    if isinstance(config.model_init_kwargs, str):
        config.model_init_kwargs = json.loads(config.model_init_kwargs)
    if config.model_init_kwargs is not None and not isinstance(config.model_init_kwargs, dict):
        raise TypeError(f"`model_init_kwargs` must be a dict (or its JSON), got {config.model_init_kwargs!r}.")
    for key in ("dtype", "torch_dtype"):
        check_dtype((config.model_init_kwargs or {}).get(key), f"model_init_kwargs['{key}']")


DTYPE_NAMES = ("auto", "bfloat16", "float16", "float32")


def check_dtype(value, name: str) -> None:
    """Refuses a dtype that `from_pretrained` cannot take (`"bf16"` would fail as `module 'torch' has no attribute
    'bf16'`), naming `name`, the value and the accepted ones; `None`, `"auto"`, a `torch.dtype` or the name of one
    pass."""
    import torch

    if value is None or isinstance(value, torch.dtype) or value == "auto":
        return
    if isinstance(value, str) and isinstance(getattr(torch, value, None), torch.dtype):
        return
    raise ValueError(
        f"Invalid dtype: `{name}` is {value!r}; pass one of {', '.join(repr(v) for v in DTYPE_NAMES)} or a "
        "`torch.dtype` (e.g. `torch.bfloat16`)."
    )


REFUSED_TRAINER_ARGUMENTS = {
    "reward_funcs": "there is no reward here: sequence temperature needs none. The objective is the distance of the "
    "trained model to p^(1/T), the base model tempered per prompt, set by `SeqTempConfig(target_temperature=T)`; "
    "drop `reward_funcs`",
    "reward_processing_classes": "there is no reward model here: the objective is the distance to p^(1/T) per "
    "prompt (`SeqTempConfig(target_temperature=T)`); drop it",
    "model_init": "SeqTempTrainer prepares its model once, at construction (the adapter added, the reference p and "
    "the datasets scored with it), so `Trainer.hyperparameter_search` cannot rebuild it per trial. Pass the model "
    "itself (`model=model_init()`), and for a search build one SeqTempTrainer per trial, e.g. in an Optuna "
    "objective: `trainer = SeqTempTrainer(model_init(), SeqTempConfig(..., learning_rate=trial.suggest_float(...)), "
    "...)`, `trainer.train()`, then return a figure of `trainer.evaluate()`",
}
"""Arguments of TRL's or transformers' trainers that `SeqTempTrainer` does not take, with why and what to do."""


def refusing_trainer_arguments(init):
    """`init` (`SeqTempTrainer.__init__`) naming a TRL / transformers trainer argument it does not take
    ([`REFUSED_TRAINER_ARGUMENTS`]), with why and what to do, rather than Python's bare "unexpected keyword
    argument"."""

    @functools.wraps(init)
    def checked(self, *args, **kwargs):
        for name, why in REFUSED_TRAINER_ARGUMENTS.items():
            if name in kwargs:
                raise TypeError(f"`{name}` is not an argument of SeqTempTrainer: {why}.")
        init(self, *args, **kwargs)

    return checked


def refuse_grpo_only(names) -> None:
    """Raises `TypeError` for a GRPOConfig field that SeqTempConfig does not have, with what to use instead
    ([`~hf_seqtemp.trl_vocabulary.GRPO_ONLY`])."""
    for name in names:
        why = grpo_only_meaning(name)
        if why is not None:
            raise TypeError(f"`{name}` is a GRPOConfig field that SeqTempConfig does not take: {why}.")


def refusing_grpo_only(init):
    """`init` (a dataclass's `__init__`) naming a GRPOConfig field it does not take, with what to use instead, rather
    than Python's bare "unexpected keyword argument"."""

    @functools.wraps(init)
    def checked(self, *args, **kwargs):
        unknown = [name for name in kwargs if name not in self.__dataclass_fields__]
        if unknown:
            refuse_grpo_only(unknown)
        init(self, *args, **kwargs)

    return checked


def check_engine_settings(config) -> None:
    """The engine settings of a config (`use_vllm`, `vllm_mode`, `vllm_server_*`), with TRL's names and meanings:
    only TRL's server mode exists here."""
    if config.vllm_mode != "server":
        raise ValueError(
            f"`vllm_mode` must be 'server', got {config.vllm_mode!r}: vLLM runs as its own server (`hf-seqtemp serve "
            "MODEL_FOLDER`, in the engine's venv from `make venv-vllm`), since vLLM's CPU build pins "
            "transformers < 5.20 and cannot share this package's venv, so TRL's 'colocate' (vLLM inside the "
            "training process) is not available."
        )
    for name in ("vllm_server_timeout", "vllm_logprob_tolerance"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"`{name}` must be a number > 0, got {value!r}.")
    check_int(config.vllm_server_port, "vllm_server_port")
    if config.use_vllm and config.loss_type == "smc_distill":
        raise ValueError(
            "`use_vllm=True` with `loss_type='smc_distill'`: its particles are drawn by the transformers SMC loop "
            "(the engine samples p for the other objectives; SMC on the engine is `generate(..., engine=URL)`). "
            "Leave `use_vllm=False` for smc_distill."
        )
