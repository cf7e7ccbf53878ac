# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""TRL's GRPO names that have no counterpart here, and what to use instead: read by `SeqTempConfig` (refused by name)
and by the command line (told instead of a near flag of another meaning). Nothing here imports torch or TRL: the
GRPOConfig fields are read from TRL's source file, so that a mistyped flag fails in a second."""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

_SAMPLING = (
    "a sampling setting of GRPO's policy: completions here are exact samples of p (temperature 1, no top-k, top-p, "
    "min-p or penalty), which the losses need; the sequence temperature to reach is `target_temperature`"
)
_CLIPPED = "a setting of GRPO's clipped policy-gradient objective; here `loss_type` picks the objective"
_FIXED_P = "p, the reference, is the fixed base model here and is never synced or mixed"
_NO_REWARD = "there is no reward: the objective is the distance to p^(1/T) per prompt"
_COLOCATE = (
    "a setting of vLLM inside the training process (TRL's `vllm_mode='colocate'`, or its weight sync); here vLLM is "
    "a server of the fixed base model p, started on its own (`hf-seqtemp serve MODEL_FOLDER --help` lists its "
    "settings) and reached with `use_vllm=True, vllm_server_base_url=...`"
)
_CORRECTION = (
    "GRPO corrects for the engine sampling another policy than the trained one; here the engine samples p exactly "
    "(its log-probabilities checked against the scorer on the first batch), so there is nothing to correct"
)
GRPO_ONLY = {
    "beta": "GRPO's KL weight. p^(1/T) is the optimum of KL-regularised RL with reward log p and KL weight "
    "beta = 1/(alpha - 1), alpha = 1/T: a beta corresponds to `target_temperature=beta / (1 + beta)`",
    **dict.fromkeys(("temperature", "top_p", "top_k", "min_p", "repetition_penalty"), _SAMPLING),
    "vllm_structured_outputs_regex": _SAMPLING,
    "cache_implementation": "a generation setting of GRPO's policy: completions are sampled with the model's own cache",
    **dict.fromkeys(("epsilon", "epsilon_high", "delta", "importance_sampling_level"), _CLIPPED),
    "num_iterations": _CLIPPED + " (each batch is used once per optimisation step)",
    **dict.fromkeys(("scale_rewards", "reward_weights", "multi_objective_aggregation"), _NO_REWARD),
    "mask_truncated_completions": "a completion without EOS is scored as the truncated event (its first tokens)",
    **dict.fromkeys(("sync_ref_model", "ref_model_mixup_alpha", "ref_model_sync_steps"), _FIXED_P),
    "cast_lm_head_to_fp32": "log-probabilities are computed in float32 from the head's output already",
    "num_completions_to_print": "not available; the sampled completions are in each checkpoint's pool",
    "shuffle_dataset": "batches are runs of `num_generations` completions of one prompt, prompts in a seeded "
    "random order; there is no unshuffled mode",
    **dict.fromkeys(
        (
            "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_enable_sleep_mode", "vllm_model_impl",
            "vllm_max_model_length", "vllm_group_port",
        ),
        _COLOCATE,
    ),
    **dict.fromkeys(
        (
            "vllm_importance_sampling_correction", "vllm_importance_sampling_mode", "vllm_importance_sampling_cap",
            "vllm_importance_sampling_clip_min", "vllm_importance_sampling_clip_max",
        ),
        _CORRECTION,
    ),
}  # fmt: skip
"""GRPOConfig fields with no counterpart here (TRL 1.16), with what to use instead; GRPO's other RL-only settings
(entropy, tool calling, ...) get [`GENERIC`]."""
GENERIC = "a setting of GRPO's reinforcement learning with no counterpart here"


@functools.cache
def grpo_config_fields() -> frozenset[str]:
    """The field names of TRL's `GRPOConfig`, read from its source file (empty when TRL cannot be found)."""
    spec = importlib.util.find_spec("trl")  # a top-level package: found without being imported
    if spec is None or spec.origin is None:
        return frozenset()
    source = Path(spec.origin).parent / "trainer" / "grpo_config.py"
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return frozenset()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "GRPOConfig":
            return frozenset(
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            )
    return frozenset()


def grpo_only_meaning(name: str) -> str | None:
    """Why the GRPOConfig field `name` has no counterpart here and what to use instead; `None` when it is not one."""
    if name in GRPO_ONLY:
        return GRPO_ONLY[name]
    return GENERIC if name in grpo_config_fields() else None
