# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The flag dataclasses of the `hf-seqtemp` commands (parsed with [`~transformers.HfArgumentParser`])."""

from __future__ import annotations

from dataclasses import dataclass, field

# `hf_seqtemp.generation.routing.STRATEGIES` minus "imh" (diffusion only); written out so that `--help` does not
# import torch (tests/test_cli.py checks the two agree)
GENERATE_STRATEGIES = ("auto", "adapter", "mcmc", "glauber", "smc")


@dataclass
class ModelArguments:
    """Which base model to load (shared by every command)."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "Base causal LM: a Hub id or a local folder (model + tokenizer)."}
    )
    default_model: bool = field(
        default=False, metadata={"help": "Use the embedded SmolLM2-135M-Instruct instead of --model_name_or_path."}
    )
    dtype: str | None = field(
        default=None,
        metadata={
            "help": "dtype the base model is loaded in (TRL's name): 'auto', 'bfloat16', 'float16' or 'float32'; "
            "default float32.",
            "choices": ["auto", "bfloat16", "float16", "float32"],
        },
    )
    model_revision: str = field(
        default="main", metadata={"help": "Branch, tag or commit of --model_name_or_path to load (TRL's name)."}
    )
    attn_implementation: str | None = field(
        default=None,
        metadata={
            "help": "Attention kernel of the base model, e.g. 'eager' or 'sdpa' (TRL's name; transformers'"
            " choice by default)."
        },
    )


@dataclass
class RemoteCodeArguments:
    """`--trust_remote_code` for the commands whose flags do not include [`SeqTempConfig`]'s (which has it)."""

    trust_remote_code: bool = field(
        default=False,
        metadata={
            "help": "Run the model's own code from its repository (TRL's name). Only for repositories you trust."
        },
    )


@dataclass
class DataArguments:
    """Where the sequences come from: a dataset on disk, or completions sampled from the base model."""

    dataset_path: str | None = field(
        default=None, metadata={"help": "A `datasets.load_from_disk` folder, or a .json / .jsonl file."}
    )
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "A dataset on the Hub (TRL's name), read with `datasets.load_dataset` (or from its cache)."},
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "The configuration of --dataset_name, if it has several (TRL's name)."}
    )
    dataset_train_split: str = field(
        default="train",
        metadata={
            "help": "Split to use when --dataset_path holds several (TRL's name; --dataset_split is its deprecated alias)."
        },
    )
    sample_prompts_file: str | None = field(
        default=None,
        metadata={
            "help": "Text file with one prompt per line, instead of a dataset: `train` and `eval` sample "
            "--num_generations completions per prompt (up to --max_completion_length tokens)."
        },
    )
    system_prompt: str | None = field(default=None, metadata={"help": "System prompt for the chat template."})
    sample_seed: int = field(default=0, metadata={"help": "Seed of the dataset sampling."})


@dataclass
class TrainScriptArguments(DataArguments, ModelArguments):
    """`hf-seqtemp train`: what to train on and the LoRA adapter (the training settings are SeqTempConfig's)."""

    _argument_group_name = "model, data and adapter"

    eval_fraction: float = field(
        default=0.0,
        metadata={"help": "Fraction of the data held out: measured after training and put in the card; 0 for none."},
    )
    use_peft: bool = field(
        default=True,
        metadata={
            "help": "Train a LoRA adapter (TRL's name; on by default here, since the adapter is what is shipped); "
            "`--use_peft false` fine-tunes the whole model (a frozen copy of it is the reference)."
        },
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha (the update is scaled by alpha / r)."})
    lora_dropout: float = field(
        default=0.05,
        metadata={"help": "LoRA dropout (TRL's default; set to 0 while training unless --disable_dropout false)."},
    )
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["all-linear"],
        metadata={
            "help": "Modules to adapt, or 'all-linear' (the default here; TRL's is PEFT's per-model choice, e.g. "
            "q_proj and v_proj for Llama: tempering whole answers needs more than the attention's q and v)."
        },
    )
    lora_modules_to_save: list[str] | None = field(
        default=None, metadata={"help": "Modules trained whole and saved beside the adapter (TRL's name)."}
    )
    lora_target_parameters: list[str] | None = field(
        default=None, metadata={"help": "Parameters (not modules) to adapt, e.g. of MoE experts (TRL's name)."}
    )
    lora_task_type: str = field(default="CAUSAL_LM", metadata={"help": "PEFT task type (TRL's name)."})
    use_rslora: bool = field(default=False, metadata={"help": "Rank-stabilised LoRA: scale by alpha / sqrt(r)."})
    use_dora: bool = field(default=False, metadata={"help": "Weight-decomposed LoRA (DoRA)."})
    load_in_4bit: bool = field(default=False, metadata={"help": "Load the base model in 4 bits (bitsandbytes)."})
    load_in_8bit: bool = field(default=False, metadata={"help": "Load the base model in 8 bits (bitsandbytes)."})
    bnb_4bit_quant_type: str = field(
        default="nf4", metadata={"help": "4-bit quantisation type.", "choices": ["fp4", "nf4"]}
    )
    use_bnb_nested_quant: bool = field(default=False, metadata={"help": "Quantise the quantisation constants."})
    bnb_4bit_quant_storage: str | None = field(default=None, metadata={"help": "Storage dtype of 4-bit weights."})
    dataset_test_split: str | None = field(
        default=None,
        metadata={
            "help": "A split of the dataset to measure on after training instead of --eval_fraction's held-out "
            "prompts (TRL's name)."
        },
    )
    dataset_names: list[str] = field(
        default_factory=list, metadata={"help": "Hub dataset ids recorded in the model card (with --push_to_hub)."}
    )


@dataclass
class EvalArguments(RemoteCodeArguments, DataArguments, ModelArguments):
    """`hf-seqtemp eval`: a tempered adapter against its base model on held-out sequences."""

    _argument_group_name = "adapter, base model and held-out data"

    adapter_path: str | None = field(default=None, metadata={"help": "Tempered adapter: a folder or a Hub repo id."})
    token_temperature: float | None = field(
        default=None, metadata={"help": "Token temperature of the myopic baseline; the adapter's T by default."}
    )
    dataset_test_split: str = field(
        default="test",
        metadata={
            "help": "Split to use when --dataset_path holds several (TRL's name; --dataset_split is its deprecated alias)."
        },
    )
    num_generations: int = field(
        default=8,
        metadata={
            "help": "Completions sampled per prompt, for --sample_prompts_file or a prompt-only dataset (TRL's name; "
            "--num_samples is its deprecated alias)."
        },
    )
    max_completion_length: int = field(
        default=32,
        metadata={"help": "Longest sampled completion, in tokens (--max_new_tokens is its deprecated alias)."},
    )
    dataset_text_field: str = field(default="text", metadata={"help": "Text column of plain-text datasets."})
    max_length: int = field(default=4096, metadata={"help": "Longer sequences are skipped."})
    per_device_eval_batch_size: int = field(
        default=16,
        metadata={"help": "Sequences per forward pass (transformers' name; --batch_size is its deprecated alias)."},
    )
    output_json: str | None = field(default=None, metadata={"help": "Also write the figures to this JSON file."})


@dataclass
class GenerateArguments(RemoteCodeArguments, ModelArguments):
    """`hf-seqtemp generate`: prompt → completions at a sequence temperature."""

    _argument_group_name = "prompts, model and sampler"

    prompt: list[str] = field(default_factory=list, metadata={"help": "One or more prompts."})
    seq_temperature: float | None = field(
        default=None,
        metadata={"help": "Sequence temperature T > 0; with --adapter_path, the T it was trained for by default."},
    )
    adapter_path: str | None = field(
        default=None, metadata={"help": "Tempered adapter (folder or Hub id) loaded with load_tempered."}
    )
    strategy: str = field(
        default="auto",
        metadata={
            "help": "'auto' ('adapter' with --adapter_path, else 'smc': plain sampling's model calls per answer, where "
            "'mcmc' takes 5-6x as many), 'adapter' (needs --adapter_path), 'mcmc' "
            "(power sampling), 'glauber' or 'smc' (sequential Monte Carlo: --num_particles, --ess_threshold, "
            "--alpha_ramp_tokens, --resampling, --pimh_steps, --proposal, --defensive_mixture, "
            "--return_particles).",
            "choices": list(GENERATE_STRATEGIES),
        },
    )
    num_generations: int = field(
        default=1, metadata={"help": "Completions per prompt (TRL's name; --num_samples is its deprecated alias)."}
    )
    max_completion_length: int = field(
        default=32,
        metadata={"help": "Longest completion, in tokens (TRL's name; --max_new_tokens is its deprecated alias)."},
    )
    mcmc_steps: int = field(default=4, metadata={"help": "Metropolis-Hastings steps per block (mcmc)."})
    block_size: int | None = field(default=None, metadata={"help": "MH block size (mcmc); one block by default."})
    glauber_rounds: int = field(default=2, metadata={"help": "Glauber sweeps over the completion (glauber)."})
    num_candidates: int | None = field(
        default=None, metadata={"help": "Proposals scored per site (glauber); by default the whole vocabulary."}
    )
    num_particles: int = field(default=16, metadata={"help": "Particles per prompt (smc)."})
    ess_threshold: float = field(
        default=0.5,
        metadata={
            "help": "Resample when the effective sample size falls below this fraction of --num_particles (smc; "
            "0 never resamples, 1 at every token)."
        },
    )
    alpha_ramp_tokens: int = field(
        default=0,
        metadata={"help": "Ramp the exponent from 1 to 1/T over this many tokens (smc; the target stays p^(1/T))."},
    )
    resampling: str = field(
        default="systematic",
        metadata={"help": "Resampling scheme (smc).", "choices": ["systematic", "multinomial"]},
    )
    pimh_steps: int = field(
        default=0,
        metadata={
            "help": "Steps of a particle independent Metropolis-Hastings chain over K + 1 SMC runs (smc): exact "
            "p^(1/T) answers for any --num_particles; 0 returns one run's answer, biased at few particles."
        },
    )
    proposal: str | None = field(
        default=None,
        metadata={
            "help": "Who proposes (smc): 'token' (the base model at token temperature T) or 'adapter' (the "
            "--adapter_path adapter; the base model weighs). Default: 'adapter' with --adapter_path, else 'token'.",
            "choices": ["token", "adapter"],
        },
    )
    defensive_mixture: float = field(
        default=0.0,
        metadata={
            "help": "With --proposal adapter (smc): the token proposal's share mixed into the adapter's at every "
            "step, which bounds the weights (0.5: exact PIMH at 1/T = 4 where a poor adapter alone was not)."
        },
    )
    return_particles: bool = field(
        default=False,
        metadata={"help": "Also print and save every particle with its normalised weight (smc)."},
    )
    chat_template: bool = field(
        default=True,
        metadata={
            "help": "Wrap prompts in the tokenizer's chat template (--no_chat_template sends them as they are)."
        },
    )
    seed: int = field(default=0, metadata={"help": "Random seed."})
    output_json: str | None = field(default=None, metadata={"help": "Also write the samples to this JSON file."})
    vllm_server_base_url: str | None = field(
        default=None,
        metadata={
            "help": "smc / mcmc on an engine: the URL of a vLLM server of the base model (`hf-seqtemp serve "
            "MODEL`), which draws the particles or rollouts (SMC resamples every --block_size tokens, default 16)."
        },
    )
    vllm_proposal_server_base_url: str | None = field(
        default=None,
        metadata={"help": "smc with the adapter proposal on an engine: the server of the adapter, if another one."},
    )
    vllm_adapter_name: str | None = field(
        default=None, metadata={"help": "The served name of the adapter (default: its local name)."}
    )


@dataclass
class AuditArguments(RemoteCodeArguments, ModelArguments):
    """`hf-seqtemp audit`: what a decoding setting does to whole answers, against the model's exact p."""

    _argument_group_name = "model, prompts and decoding"

    prompt: list[str] = field(default_factory=list, metadata={"help": "One or more prompts."})
    prompts_file: str | None = field(
        default=None, metadata={"help": "Text file with one prompt per line (instead of, or besides, --prompt)."}
    )
    dataset_path: str | None = field(
        default=None, metadata={"help": "A dataset with a `prompt` column: a load_from_disk folder or .json/.jsonl."}
    )
    dataset_train_split: str = field(
        default="train",
        metadata={
            "help": "Split to use when --dataset_path holds several (TRL's name; --dataset_split is its deprecated alias)."
        },
    )
    num_prompts: int | None = field(default=None, metadata={"help": "Audit only the first N prompts."})
    system_prompt: str | None = field(default=None, metadata={"help": "System prompt for the chat template."})
    chat_template: bool = field(
        default=True,
        metadata={
            "help": "Wrap text prompts in the tokenizer's chat template (--no_chat_template sends them as they are)."
        },
    )
    temperature: float | None = field(default=None, metadata={"help": "Token temperature of the audited decoding."})
    top_k: int | None = field(default=None, metadata={"help": "Top-k of the audited decoding."})
    top_p: float | None = field(default=None, metadata={"help": "Top-p (nucleus) of the audited decoding."})
    min_p: float | None = field(default=None, metadata={"help": "Min-p of the audited decoding."})
    typical_p: float | None = field(default=None, metadata={"help": "Typical-p of the audited decoding."})
    epsilon_cutoff: float | None = field(default=None, metadata={"help": "Epsilon cut-off of the audited decoding."})
    eta_cutoff: float | None = field(default=None, metadata={"help": "Eta cut-off of the audited decoding."})
    repetition_penalty: float | None = field(default=None, metadata={"help": "Repetition penalty (1 = none)."})
    no_repeat_ngram_size: int | None = field(default=None, metadata={"help": "Forbid repeating n-grams of this size."})
    grid: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Several settings in one run, one row each: `name=v1,v2 ...` is the product of the values; "
            "`+` separates blocks (`temperature=0.3,0.7 + top_p=0.9,0.95`). Replaces the single-setting flags."
        },
    )
    target_temperature: list[float] = field(
        default_factory=list,
        metadata={
            "help": "Sequence temperatures T for which to find the token temperature whose T_eff is T (the tuned "
            "myopic baseline), added as rows."
        },
    )
    num_generations: int = field(
        default=8,
        metadata={
            "help": "Completions sampled per prompt and setting (TRL's name; --num_samples is its deprecated alias)."
        },
    )
    reference_samples: int = field(
        default=32, metadata={"help": "Exact samples of p per prompt behind the 'rare under p' threshold."}
    )
    max_completion_length: int = field(
        default=32,
        metadata={"help": "Longest completion, in tokens (TRL's name; --max_new_tokens is its deprecated alias)."},
    )
    seed: int = field(default=0, metadata={"help": "Random seed."})
    output_dir: str = field(default="audit", metadata={"help": "Folder for audit.json, audit.md and audit.png."})
    plot: bool = field(
        default=True, metadata={"help": "Also draw audit.png (log q against log p by prompt); --no_plot skips it."}
    )
