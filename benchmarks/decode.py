# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Decoding cost of sequence-tempered samplers against their plain baselines, side by side on the same prompts.

(a) Masked diffusion: IMH global tempering (`diffusion_generate(seq_temperature=0.5)`, 8 proposals) vs confidence
decoding (`seq_temperature=None`), both with the confidence position policy, on the trained `outputs/tiny_mdlm`
(2-digit addition, BERT) when it exists, else a random tiny `BertForMaskedLM` wrapped with `MaskedLMAdapter`.
Reported: sequential model calls per committed token (`num_model_calls / max_new_tokens`; a call is one batched
forward), evaluated sequences per token, and tokens/s (`batch * max_new_tokens / seconds`).

(b) Autoregressive, SmolLM2-135M-Instruct: MCMC power sampling (`power_sample`) and Glauber refinement
(`glauber_refine`, multiple-try with 8 candidates, ancestral draft; skipped when not available) vs plain ancestral
sampling (`model.generate(do_sample=True, top_k=0, top_p=1.0)` with `min_new_tokens = max_new_tokens`). All produce
completions of the same fixed length for the same prompts, `samples` rows in one batch; model calls are the
sequential (batched) forwards counted by a forward pre-hook on the model, and wall time is divided by `samples`.

Timings: warm-up, then variants round-robin, medians. Usage:
    python benchmarks/decode.py [--quick] [--output benchmarks/results/decode.json] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import REPO, default_output, pick_device, print_device, time_interleaved, write_json

SETTINGS = {
    "quick": {
        "mdlm_batch": 8,
        "mdlm_new": 16,
        "ar_new": 8,
        "ar_samples": 2,
        "warmup": 1,
        "repeats": 2,
        "ar_warmup": 0,
        "ar_repeats": 1,
    },
    "full": {
        "mdlm_batch": 32,
        "mdlm_new": 32,
        "ar_new": 32,
        "ar_samples": 4,
        "warmup": 1,
        "repeats": 5,
        "ar_warmup": 1,
        "ar_repeats": 3,
    },
}


def _mdlm(device, batch: int, new_tokens: int, path: Path):
    """The trained tiny MDLM (addition prompts `[BOS] a + b =`) if present, else a random tiny BERT."""
    from transformers import BertConfig, BertForMaskedLM

    from hf_seqtemp.models import MaskedLMAdapter

    generator = torch.Generator().manual_seed(0)
    if (path / "config.json").is_file():
        model = BertForMaskedLM.from_pretrained(path).to(device).eval()
        digits = torch.randint(4, 14, (batch, 4), generator=generator)
        plus, equals = torch.full((batch, 1), 14), torch.full((batch, 1), 17)
        prompt = torch.cat([torch.full((batch, 1), 2), digits[:, :2], plus, digits[:, 2:], equals], dim=1)
        new_tokens = model.config.max_position_embeddings - prompt.shape[1]
        return MaskedLMAdapter(model, mask_token_id=1), prompt.to(device), new_tokens, f"trained {path}"
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
    )
    model = BertForMaskedLM(config).to(device).eval()
    prompt = torch.randint(0, 999, (batch, 4), generator=generator).to(device)
    return MaskedLMAdapter(model, mask_token_id=999), prompt, new_tokens, "random BertForMaskedLM(vocab 1000, h 64)"


def diffusion_part(device, settings: dict, path: Path) -> dict:
    from hf_seqtemp.generation import diffusion_generate

    model, prompt, new_tokens, name = _mdlm(device, settings["mdlm_batch"], settings["mdlm_new"], path)
    print(f"[a] masked diffusion: {name}; batch {prompt.shape[0]}, prompt {prompt.shape[1]}, {new_tokens} new tokens")
    configs = {"confidence": {}, "imh_T0.5": {"seq_temperature": 0.5, "num_proposals": 8}}
    outs = {}

    def runner(key):
        def run():
            outs[key] = diffusion_generate(
                model,
                prompt,
                max_new_tokens=new_tokens,
                policy="confidence",
                generator=torch.Generator().manual_seed(0),
                return_dict_in_generate=True,
                **configs[key],
            )

        return run

    timings = time_interleaved({k: runner(k) for k in configs}, device, settings["warmup"], settings["repeats"])
    rows = []
    print(f"{'sampler':<11} | {'calls/token':>11} {'states/token':>12} {'tokens/s':>9} {'median s':>9} | accept")
    for key in configs:
        out, t = outs[key], timings[key]
        row = {
            "sampler": key,
            **t,
            "calls_per_token": out.num_model_calls / new_tokens,
            "states_per_token": out.num_evaluated_states / new_tokens,
            "tokens_per_s": prompt.shape[0] * new_tokens / t["median_s"],
            "acceptance": None if out.acceptance_rate is None else out.acceptance_rate.mean().item(),
        }
        rows.append(row)
        acc = "-" if row["acceptance"] is None else f"{row['acceptance']:.2f}"
        print(
            f"{key:<11} | {row['calls_per_token']:>11.2f} {row['states_per_token']:>12.1f} "
            f"{row['tokens_per_s']:>9.1f} {t['median_s']:>9.4f} | {acc}"
        )
    calls = rows[1]["calls_per_token"] / rows[0]["calls_per_token"]
    speed = rows[1]["median_s"] / rows[0]["median_s"]
    print(f"IMH / confidence: {calls:.2f}x sequential calls per token, {speed:.2f}x wall time")
    return {"model": name, "rows": rows, "imh_calls_ratio": calls, "imh_time_ratio": speed}


def _glauber():
    try:
        from hf_seqtemp.generation.glauber import glauber_refine
    except ImportError:
        return None
    return glauber_refine


def _ar_variants(model, ids, attn, new_tokens: int, pad_id: int, outs: dict) -> dict:
    from hf_seqtemp.generation import power_sample

    def plain():
        outs["plain_ar"] = model.generate(
            input_ids=ids,
            attention_mask=attn,
            do_sample=True,
            top_k=0,
            top_p=1.0,
            temperature=1.0,
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            pad_token_id=pad_id,
        )

    def power():
        outs["power_T0.5"] = power_sample(
            model,
            ids,
            attn,
            max_new_tokens=new_tokens,
            seq_temperature=0.5,
            mcmc_steps=2,
            block_size=max(1, new_tokens // 2),
            generator=torch.Generator().manual_seed(0),
        )

    variants = {"plain_ar": plain, "power_T0.5": power}
    glauber_refine = _glauber()
    if glauber_refine is not None:
        draft = torch.cat([ids, ids.new_zeros(ids.shape[0], new_tokens)], dim=1)
        draft_attn = torch.cat([attn, attn.new_ones(ids.shape[0], new_tokens)], dim=1)
        cmask = torch.zeros_like(draft, dtype=torch.bool)
        cmask[:, ids.shape[1] :] = True

        def glauber():
            outs["glauber_T0.5"] = glauber_refine(
                model,
                draft,
                draft_attn,
                cmask,
                seq_temperature=0.5,
                num_rounds=1,
                num_candidates=8,
                draft="ancestral",
                generator=torch.Generator().manual_seed(0),
            )

        variants["glauber_T0.5"] = glauber
    return variants


def ar_part(device, settings: dict) -> dict:
    from hf_seqtemp.models import load_default_model

    model, tokenizer = load_default_model(device=device)
    samples, new_tokens = settings["ar_samples"], settings["ar_new"]
    enc = tokenizer(["The capital of France is"] * samples, return_tensors="pt").to(device)
    print(f"[b] autoregressive: SmolLM2-135M-Instruct, {samples} samples x {new_tokens} new tokens")
    outs, calls = {}, []
    variants = _ar_variants(model, enc["input_ids"], enc["attention_mask"], new_tokens, tokenizer.pad_token_id, outs)
    counted = {}

    def counting(name, fn):
        def run():
            calls.clear()
            fn()
            counted[name] = len(calls)

        return run

    hook = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    with torch.no_grad():
        variants["plain_ar"]()  # warms the model up; quick mode has no full warm-up round (MCMC is slow on CPU)
        timings = time_interleaved(
            {k: counting(k, f) for k, f in variants.items()}, device, settings["ar_warmup"], settings["ar_repeats"]
        )
    hook.remove()
    rows = []
    print(
        f"{'sampler':<13} | {'model calls':>11} {'x plain':>8} {'s/sample':>9} {'x plain':>8}  (calls batched over samples)"
    )
    for name, t in timings.items():
        row = {
            "sampler": name,
            **t,
            "model_calls": counted[name],
            "calls_ratio": counted[name] / counted["plain_ar"],
            "seconds_per_sample": t["median_s"] / samples,
            "time_ratio": t["median_s"] / timings["plain_ar"]["median_s"],
        }
        rows.append(row)
        print(
            f"{name:<13} | {row['model_calls']:>11} {row['calls_ratio']:>7.2f}x {row['seconds_per_sample']:>9.3f} "
            f"{row['time_ratio']:>7.2f}x"
        )
    if "glauber_T0.5" not in variants:
        print("glauber_refine: skipped: not available")
    return {"rows": rows, "glauber_available": "glauber_T0.5" in variants}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="MDLM batch 8; AR: 2 samples x 8 new tokens")
    parser.add_argument("--output", default=default_output("decode"))
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--mdlm-path",
        default=str(REPO / "outputs" / "tiny_mdlm"),
        help="trained tiny masked diffusion LM (falls back to a random BERT when missing)",
    )
    args = parser.parse_args()
    settings = SETTINGS["quick" if args.quick else "full"]
    device = pick_device(args.device)
    info = print_device(device)
    diffusion = diffusion_part(device, settings, Path(args.mdlm_path))
    ar = ar_part(device, settings)
    summary = {
        "imh_over_confidence_calls_per_token": diffusion["imh_calls_ratio"],
        "imh_over_confidence_time": diffusion["imh_time_ratio"],
    }
    for row in ar["rows"]:
        if row["sampler"] != "plain_ar":
            summary[f"{row['sampler']}_over_plain_time"] = row["time_ratio"]
            summary[f"{row['sampler']}_over_plain_calls"] = row["calls_ratio"]
    rows = [{"part": "diffusion", **r} for r in diffusion["rows"]] + [{"part": "ar", **r} for r in ar["rows"]]
    write_json(
        args.output,
        "decode",
        info,
        {**settings, "mdlm": diffusion["model"], "glauber_available": ar["glauber_available"]},
        rows,
        summary,
    )


if __name__ == "__main__":
    main()
