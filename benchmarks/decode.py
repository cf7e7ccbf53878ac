# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Decoding cost of sequence-tempered samplers against the plain decoders a user would otherwise run, side by side.

(a) Masked diffusion: IMH global tempering (`diffusion_generate(seq_temperature=0.5)`, 8 proposals) vs confidence
decoding (`seq_temperature=None`), both with the confidence position policy, on the trained `outputs/tiny_mdlm`
(2-digit addition, BERT) when it exists, else a random tiny `BertForMaskedLM` wrapped with `MaskedLMAdapter`.
Costs: sequential model calls per committed token (`num_model_calls / max_new_tokens`; a call is one batched
forward), with the target <= 1.0 (Fang et al.: the proposals share one batched call, so IMH adds no sequential
call); and seconds per run (no target: the batch of each call is wider, which a GPU absorbs and a CPU does not).

(b) Autoregressive, SmolLM2-135M-Instruct: EOS-aware MCMC power sampling (`power_sample`) at the reference
algorithm's defaults (Karan & Du: alpha = 4, i.e. T = 0.25, and 10 MH steps after each block) vs plain ancestral
sampling (`exact_generate`: `generate` with no logits processor). Both draw `samples` answers of at most
`max_new_tokens` tokens for the same chat-templated prompt in one batch, and both stop an answer at EOS; model
calls are the sequential (batched) forwards counted by a forward pre-hook on the model. Costs: model calls and
seconds per answer, ours / plain, reported without a target (for answers that run to `max_new_tokens`, the
algorithm needs `1 + steps (K + 3) / 4` times plain's calls in expectation for K blocks, since a step resamples
from a uniformly chosen block boundary to the end; the printout gives that figure); and seconds per model call,
ours / plain, also reported without a target: each MH step re-reads its prefix in one call (as the reference
algorithm does), which costs more than a one-token step of `generate`, so this ratio mixes the algorithm's price
with the implementation's. In `--full` mode Glauber refinement (`glauber_refine`,
multiple-try with 8 candidates, ancestral draft) is compared with plain sampling the same way.

All pairs: warm-up, then A B A B ..., median [min, max] of the paired ratios (`hf_seqtemp.costs`). Usage:
    python benchmarks/decode.py [--quick] [--output outputs/bench/decode.json] [--device cpu]
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

from _common import REPO, default_output, pick_device, print_device, write_json

from hf_seqtemp.costs import format_summary, summarise, time_pairs

SETTINGS = {
    "quick": {
        "mdlm_batch": 8,
        "mdlm_new": 16,
        "warmup": 1,
        "pairs": 5,
        "ar_new": 8,
        "ar_blocks": 4,
        "ar_samples": 2,
        "ar_warmup": 0,
        "ar_pairs": 3,
        "glauber": False,
    },
    "full": {
        "mdlm_batch": 32,
        "mdlm_new": 32,
        "warmup": 1,
        "pairs": 7,
        "ar_new": 64,
        "ar_blocks": 16,
        "ar_samples": 4,
        "ar_warmup": 1,
        "ar_pairs": 3,
        "glauber": True,
    },
}
POWER_T, POWER_STEPS = 0.25, 10  # the reference algorithm's defaults: alpha = 4, 10 MH steps per block


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
    calls = {key: [] for key in configs}

    def runner(key):
        def run():
            out = diffusion_generate(
                model,
                prompt,
                max_new_tokens=new_tokens,
                policy="confidence",
                generator=torch.Generator().manual_seed(len(calls[key])),
                return_dict_in_generate=True,
                **configs[key],
            )
            calls[key].append((out.num_model_calls / new_tokens, out.num_evaluated_states / new_tokens))

        return run

    timed = time_pairs(runner("confidence"), runner("imh_T0.5"), device, settings["warmup"], settings["pairs"])
    skip = settings["warmup"]  # calls recorded during the warm-up rounds
    call_ratios = [b[0] / a[0] for a, b in zip(calls["confidence"][skip:], calls["imh_T0.5"][skip:])]
    state_ratios = [b[1] / a[1] for a, b in zip(calls["confidence"][skip:], calls["imh_T0.5"][skip:])]
    summary = {
        "imh_over_confidence_calls_per_token": summarise(call_ratios, 1.0),
        "imh_over_confidence_time": summarise(timed["ratios"], None),
        "imh_over_confidence_states_per_token": summarise(state_ratios, None),
    }
    for key, label in (("confidence", "baseline_s"), ("imh_T0.5", "ours_s")):
        per_token, states = calls[key][-1]
        print(f"{key:<11} calls/token {per_token:.2f}, states/token {states:.1f}, s/run {timed[label]}")
    for key, value in summary.items():
        print(format_summary(key.replace("_over_", " / "), value))
    rows = [
        {"sampler": "confidence", "seconds": timed["baseline_s"], "calls": calls["confidence"]},
        {"sampler": "imh_T0.5", "seconds": timed["ours_s"], "calls": calls["imh_T0.5"]},
    ]
    return {"model": name, "rows": rows, "summary": summary}


def _glauber():
    try:
        from hf_seqtemp.generation.glauber import glauber_refine
    except ImportError:
        return None
    return glauber_refine


def _ar_samplers(model, ids, attn, settings: dict, pad_id: int) -> dict:
    """Plain ancestral sampling, power sampling at the reference defaults and (full mode) Glauber refinement."""
    from hf_seqtemp.data import eos_ids_of, exact_generate
    from hf_seqtemp.generation import power_sample

    new_tokens, seeds = settings["ar_new"], iter(range(10**6))

    def plain():
        torch.manual_seed(next(seeds))
        exact_generate(model, ids, attn, new_tokens, eos_ids_of(model), pad_id)

    def power():
        power_sample(
            model,
            ids,
            attn,
            max_new_tokens=new_tokens,
            seq_temperature=POWER_T,
            mcmc_steps=POWER_STEPS,
            block_size=new_tokens // settings["ar_blocks"],
            generator=torch.Generator().manual_seed(next(seeds)),
        )

    samplers = {"plain": plain, "power": power}
    glauber_refine = _glauber() if settings["glauber"] else None
    if glauber_refine is not None:
        draft = torch.cat([ids, ids.new_zeros(ids.shape[0], new_tokens)], dim=1)
        draft_attn = torch.cat([attn, attn.new_ones(ids.shape[0], new_tokens)], dim=1)
        cmask = torch.zeros_like(draft, dtype=torch.bool)
        cmask[:, ids.shape[1] :] = True

        def glauber():
            glauber_refine(
                model,
                draft,
                draft_attn,
                cmask,
                seq_temperature=0.5,
                num_rounds=1,
                num_candidates=8,
                draft="ancestral",
                generator=torch.Generator().manual_seed(next(seeds)),
            )

        samplers["glauber"] = glauber
    return samplers


def _counting(fn, hook_calls: list, counts: list):
    def run():
        hook_calls.clear()
        fn()
        counts.append(len(hook_calls))

    return run


def ar_part(device, settings: dict) -> dict:
    from hf_seqtemp.models import load_default_model

    model, tokenizer = load_default_model(device=device)
    samples, new_tokens, blocks = settings["ar_samples"], settings["ar_new"], settings["ar_blocks"]
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Tell me a story about a dragon."}], tokenize=False, add_generation_prompt=True
    )
    enc = tokenizer([text] * samples, return_tensors="pt").to(device)
    expected = 1 + POWER_STEPS * (blocks + 3) / 4
    print(
        f"[b] autoregressive: SmolLM2-135M-Instruct, {samples} answers x {new_tokens} tokens; power sampling at "
        f"T = {POWER_T} (alpha {1 / POWER_T:g}), {POWER_STEPS} MH steps per block, {blocks} blocks of "
        f"{new_tokens // blocks} tokens: for answers that run to {new_tokens} tokens the algorithm needs "
        f"{expected:.2f}x plain's calls in expectation"
    )
    hook_calls, summary, rows = [], {}, []
    samplers = _ar_samplers(model, enc["input_ids"], enc["attention_mask"], settings, tokenizer.pad_token_id)
    hook = model.register_forward_pre_hook(lambda module, args: hook_calls.append(1))
    try:
        with torch.no_grad():
            samplers["plain"]()  # warms the model up (quick mode has no warm-up pair: MCMC is slow on a CPU)
            for name in [k for k in samplers if k != "plain"]:
                counts = {"plain": [], name: []}
                timed = time_pairs(
                    _counting(samplers["plain"], hook_calls, counts["plain"]),
                    _counting(samplers[name], hook_calls, counts[name]),
                    device,
                    settings["ar_warmup"],
                    settings["ar_pairs"],
                )
                skip = settings["ar_warmup"]
                call_ratios = [b / a for a, b in zip(counts["plain"][skip:], counts[name][skip:])]
                summary[f"{name}_over_plain_calls_per_answer"] = summarise(call_ratios, None)
                summary[f"{name}_over_plain_time_per_answer"] = summarise(timed["ratios"], None)
                per_call = [r / c for r, c in zip(timed["ratios"], call_ratios)]
                summary[f"{name}_over_plain_time_per_call"] = summarise(per_call, None)
                rows.append({"sampler": name, **timed, "calls": counts[name], "plain_calls": counts["plain"]})
                print(
                    f"{name}: calls per run {counts[name][skip:]} (plain {counts['plain'][skip:]}); s per answer "
                    f"{[round(t / samples, 3) for t in timed['ours_s']]} (plain "
                    f"{[round(t / samples, 3) for t in timed['baseline_s']]})"
                )
    finally:
        hook.remove()
    for key, value in summary.items():
        print(format_summary(key.replace("_over_", " / "), value))
    return {"rows": rows, "summary": summary, "expected_power_calls_ratio": expected}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="MDLM batch 8; AR: 2 answers x 8 tokens in 4 blocks")
    parser.add_argument("--output", default=default_output("decode"))
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--mdlm-path",
        default=str(REPO / "outputs" / "tiny_mdlm"),
        help="trained tiny masked diffusion LM (falls back to a random BERT when missing)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    settings = dict(SETTINGS["quick" if args.quick else "full"])
    device = pick_device(args.device)
    info = print_device(device)
    diffusion = diffusion_part(device, settings, Path(args.mdlm_path))
    ar = ar_part(device, settings)
    summary = {**diffusion["summary"], **ar["summary"], "power_expected_calls_ratio": ar["expected_power_calls_ratio"]}
    rows = [{"part": "diffusion", **r} for r in diffusion["rows"]] + [{"part": "ar", **r} for r in ar["rows"]]
    settings.update(mdlm=diffusion["model"], power_seq_temperature=POWER_T, power_mcmc_steps=POWER_STEPS)
    write_json(args.output, "decode", info, settings, rows, summary)


if __name__ == "__main__":
    main()
