# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The TRL config names a TRL user passes to [`SeqTempConfig`]: taken where they mean the same here, refused by name,
with why and what to use, where they would mean something else or nothing."""

from __future__ import annotations

import dataclasses
import json

REFUSED_TRL_NAMES = {
    "steps_per_generation": "TRL's GRPO knob (a generation every k micro-batches, by default every optimisation "
    "step). SeqTempTrainer samples the reference p, which does not change: by default once, before training. "
    "For fresh samples every k optimisation steps use `sample_every_steps=k` (k=1 is GRPO's default)",
    "generation_batch_size": "TRL's GRPO knob (completions per generation). Here each prompt gets "
    "`num_generations` completions; for fresh ones every k optimisation steps use `sample_every_steps=k`",
    "generation_kwargs": "completions are exact samples of p (temperature 1, no top-k/top-p, every EOS id), which "
    "the losses need; any generation setting would change the distribution they are drawn from",
    "chat_template_kwargs": "one chat template renders every prompt here (training, evaluation, sampling, the "
    "CLI); set the variables in `tokenizer.chat_template` itself",
    "dataset_num_proc": "tokenisation runs in the main process here; leave it unset",
    "log_completions": "not available; the sampled completions are in the pool saved with each checkpoint "
    "(`seqtemp_state_<rank>.json`)",
}
"""TRL config names that mean something else here, or nothing: refused, with why and what to use instead."""


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


_SAMPLING = (
    "a sampling setting of GRPO's policy: completions here are exact samples of p (temperature 1, no top-k, top-p, "
    "min-p or penalty), which the losses need; the sequence temperature to reach is `target_temperature`"
)
_CLIPPED = "a setting of GRPO's clipped policy-gradient objective; here `loss_type` picks the objective"
_FIXED_P = "p, the reference, is the fixed base model here and is never synced or mixed"
GRPO_ONLY = {
    "beta": "GRPO's KL weight. p^(1/T) is the optimum of KL-regularised RL with reward log p and KL weight "
    "beta = 1/(alpha - 1), alpha = 1/T: a beta corresponds to `target_temperature=beta / (1 + beta)`",
    "temperature": _SAMPLING,
    "top_p": _SAMPLING,
    "top_k": _SAMPLING,
    "min_p": _SAMPLING,
    "repetition_penalty": _SAMPLING,
    "cache_implementation": "a generation setting of GRPO's policy: completions are sampled with the model's own cache",
    "epsilon": _CLIPPED,
    "epsilon_high": _CLIPPED,
    "delta": _CLIPPED,
    "importance_sampling_level": _CLIPPED,
    "num_iterations": _CLIPPED + " (each batch is used once per optimisation step)",
    "scale_rewards": "there is no reward: the objective is the distance to p^(1/T) per prompt",
    "reward_weights": "there is no reward: the objective is the distance to p^(1/T) per prompt",
    "multi_objective_aggregation": "there is no reward: the objective is the distance to p^(1/T) per prompt",
    "mask_truncated_completions": "a completion without EOS is scored as the truncated event (its first tokens)",
    "sync_ref_model": _FIXED_P,
    "ref_model_mixup_alpha": _FIXED_P,
    "ref_model_sync_steps": _FIXED_P,
    "cast_lm_head_to_fp32": "log-probabilities are computed in float32 from the head's output already",
    "num_completions_to_print": "not available; the sampled completions are in each checkpoint's pool",
    "shuffle_dataset": "batches are runs of `num_generations` completions of one prompt, prompts in a seeded "
    "random order; there is no unshuffled mode",
    **dict.fromkeys(
        (
            "vllm_gpu_memory_utilization",
            "vllm_tensor_parallel_size",
            "vllm_enable_sleep_mode",
            "vllm_model_impl",
            "vllm_max_model_length",
            "vllm_group_port",
        ),
        "a setting of vLLM inside the training process (TRL's `vllm_mode='colocate'`, or its weight sync); here vLLM "
        "is a server of the fixed base model p, started on its own (`hf-seqtemp serve MODEL_FOLDER --help` lists its "
        "settings) and reached with `use_vllm=True, vllm_server_base_url=...`",
    ),
    **dict.fromkeys(
        (
            "vllm_importance_sampling_correction",
            "vllm_importance_sampling_mode",
            "vllm_importance_sampling_cap",
            "vllm_importance_sampling_clip_min",
            "vllm_importance_sampling_clip_max",
        ),
        "GRPO corrects for the engine sampling another policy than the trained one; here the engine samples p "
        "exactly (its log-probabilities checked against the scorer on the first batch), so there is nothing to "
        "correct",
    ),
    "vllm_structured_outputs_regex": _SAMPLING,
}
"""GRPOConfig fields with no counterpart here (TRL 1.16), refused by name with what to use instead; the others of
GRPO's RL-only settings (entropy, tool calling, importance-sampling corrections...) get a generic message."""


def refuse_grpo_only(names) -> None:
    """Raises `TypeError` for a GRPOConfig field that SeqTempConfig does not have, with what to use instead."""
    from trl import GRPOConfig

    grpo = {f.name for f in dataclasses.fields(GRPOConfig)}
    for name in names:
        if name in GRPO_ONLY or name in grpo:
            why = GRPO_ONLY.get(name, "a setting of GRPO's reinforcement learning with no counterpart here")
            raise TypeError(f"`{name}` is a GRPOConfig field that SeqTempConfig does not take: {why}.")
