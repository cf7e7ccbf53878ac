# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The `hf-seqtemp generate` command: answers of a model at a sequence temperature, through a saved adapter or a
training-free route, printed and optionally written as JSON."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from ..checks import check_int, check_temperature
from .arguments import GenerateArguments
from .commands import _load_base


def run_generate(args: GenerateArguments) -> int:
    """Samples `--num_generations` completions per prompt at `--seq_temperature` and prints them."""
    import torch

    from ..data import as_conversation, tokenize_prompt
    from ..generation.routing import generate_tempered

    if not args.prompt:
        raise ValueError("`--prompt` is required: give one or more prompts.")
    args.seq_temperature = _generate_temperature(args)
    check_temperature(args.seq_temperature, "seq_temperature")
    check_int(args.num_generations, "num_generations")
    check_int(args.max_completion_length, "max_completion_length")
    if args.strategy != "smc":
        smc_only = [f"--{name}" for name, default in SMC_FLAGS.items() if getattr(args, name) != default]
        if smc_only:
            raise ValueError(
                f"{', '.join(smc_only)} only apply to `--strategy smc` (got `--strategy {args.strategy}`)."
            )
    model, tokenizer = _load_generate_model(args)
    torch.manual_seed(args.seed)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    smc = {name: getattr(args, name) for name in SMC_FLAGS} if args.strategy == "smc" else {}
    if smc:
        smc["return_dict_in_generate"] = args.return_particles
    engine = {}
    if args.vllm_server_base_url is not None:
        engine = {"engine": args.vllm_server_base_url, "proposal_engine": args.vllm_proposal_server_base_url}
        engine["engine_adapter"] = args.vllm_adapter_name
    elif args.vllm_proposal_server_base_url or args.vllm_adapter_name:
        raise ValueError("`--vllm_proposal_server_base_url` and `--vllm_adapter_name` need `--vllm_server_base_url`.")
    results = []
    template = args.chat_template and getattr(tokenizer, "chat_template", None)
    for prompt in args.prompt:
        ids = tokenize_prompt(tokenizer, as_conversation(prompt, None) if template else prompt)
        ids = torch.tensor([ids], device=model.device).repeat(args.num_generations, 1)
        out = generate_tempered(
            model,
            ids,
            torch.ones_like(ids),
            seq_temperature=args.seq_temperature,
            strategy=args.strategy,
            max_new_tokens=args.max_completion_length,
            mcmc_steps=args.mcmc_steps,
            block_size=args.block_size,
            glauber_rounds=args.glauber_rounds,
            num_candidates=args.num_candidates,
            pad_token_id=pad,
            **smc,
            **engine,
        )
        sequences = out.sequences if hasattr(out, "sequences") else out
        completions = tokenizer.batch_decode(sequences[:, ids.shape[1] :], skip_special_tokens=True)
        results.append({"prompt": prompt, "completions": completions})
        print(f"### {prompt}")
        for completion in completions:
            print(f"- {completion}")
        if args.return_particles:
            results[-1]["particles"] = _particles(out, tokenizer, ids.shape[1])
            for row, particles in enumerate(results[-1]["particles"]):
                print(f"  particles of completion {row + 1} (normalised log-weight, text):")
                for particle in particles:
                    print(f"    {particle['log_weight']:8.3f}  {particle['text']}")
    if args.output_json:
        Path(args.output_json).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def _generate_temperature(args: GenerateArguments) -> float:
    """`--seq_temperature`, or the T the `--adapter_path` adapter was trained for (said on stdout)."""
    if args.seq_temperature is not None:
        return args.seq_temperature
    if args.adapter_path is None:
        raise ValueError(
            "`--seq_temperature` is required without `--adapter_path`: the sequence temperature T > 0 to sample at, "
            "e.g. `--seq_temperature 0.5` (with an adapter, its trained T is the default)."
        )
    from ..config import SequenceTemperatureConfig

    temperature = SequenceTemperatureConfig.from_pretrained(args.adapter_path).target_temperature
    print(f"hf-seqtemp generate: T = {temperature:g}, the temperature {args.adapter_path} was trained for")
    return temperature


SMC_FLAGS = {
    f.name: f.default
    for f in fields(GenerateArguments)
    if f.name
    in (
        "num_particles",
        "ess_threshold",
        "alpha_ramp_tokens",
        "resampling",
        "pimh_steps",
        "proposal",
        "defensive_mixture",
        "return_particles",
    )
}
"""The `generate` flags of `--strategy smc` and their defaults."""


def _load_generate_model(args: GenerateArguments):
    """(model, tokenizer) of `generate`: the tempered adapter on its base, or the base model alone."""
    from ..loading import load_tempered

    base, tokenizer = _load_base(args, required=args.adapter_path is None)
    if args.adapter_path is None:
        return base.eval(), tokenizer
    model = load_tempered(args.adapter_path, base_model=base)
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.adapter_path)
    return model, tokenizer


def _particles(out, tokenizer, prompt_length: int) -> list[list[dict]]:
    """Per returned completion: every SMC particle as `{"text", "log_weight"}`, heaviest first."""
    rows = []
    for particles, weights in zip(out.particles, out.particle_log_weights):
        texts = tokenizer.batch_decode(particles[:, prompt_length:], skip_special_tokens=True)
        pairs = sorted(zip(weights.tolist(), texts), key=lambda pair: -pair[0])
        rows.append([{"text": text, "log_weight": weight} for weight, text in pairs])
    return rows
