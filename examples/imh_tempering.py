# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Local token temperature vs IMH global tempering on a tiny masked diffusion LM, measured by pass@k.

For every remasking policy (random, confidence, entropy, margin) the script decodes `--num_samples` completions per
problem with (a) the local tempered sampler at token temperature 1/alpha, what LLaDA/Dream do, and (b) IMH global
tempering targeting p(x)^alpha (Fang et al., Alg. 1), for alpha in {1, 2, 4}, and prints pass@1, pass@8, the mean
number of distinct answers and model calls / evaluated sequences per committed token.

The model is the tiny MDLM written by `examples/train_tiny_mdlm.py` (`save_pretrained` of a `BertForMaskedLM`-like
model and a tokenizer with a mask token). The task is read from `<model_dir>/task.json`:

    {"max_new_tokens": 4, "problems": [{"prompt": "3 + 4 =", "answers": ["7"]}, ...]}

A completion is correct when, decoded without special tokens and with spaces removed, it equals one of the answers
(also spaces removed). Run: `python examples/imh_tempering.py --model_dir outputs/tiny_mdlm` (under 10 minutes on
2 CPU cores with the defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

from hf_seqtemp.evaluation import evaluate_sampler
from hf_seqtemp.generation import diffusion_generate
from hf_seqtemp.models.base import DiffusionLM


class _MaskedLM(DiffusionLM):
    """Minimal adapter used when `hf_seqtemp.models.diffusion.MaskedLMAdapter` is not available."""

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        position_ids = (attention_mask.long().cumsum(1) - 1).clamp(min=0)
        return self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits


def load(model_dir: str):
    if not os.path.isdir(model_dir):
        sys.exit(
            f"No trained model at {model_dir!r}. Train one first with `python examples/train_tiny_mdlm.py` "
            "(it saves a BertForMaskedLM-like model, its tokenizer and task.json there), or pass --model_dir."
        )
    task_file = os.path.join(model_dir, "task.json")
    if not os.path.isfile(task_file):
        sys.exit(f"{task_file!r} is missing: it must list the problems, see this script's docstring for the format.")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    try:
        from hf_seqtemp.models.diffusion import MaskedLMAdapter

        adapter = MaskedLMAdapter(model, tokenizer.mask_token_id)
    except ImportError:
        adapter = _MaskedLM(model, tokenizer.mask_token_id)
    with open(task_file) as handle:
        return adapter, tokenizer, json.load(handle)


def make_sampler(adapter, tokenizer, max_new_tokens, policy, alpha, imh, seed, stats):
    generator = torch.Generator().manual_seed(seed)

    def sample(problem, num_samples):
        prompt = tokenizer(problem["prompt"], return_tensors="pt")
        ids = prompt["input_ids"].repeat(num_samples, 1)
        out = diffusion_generate(
            adapter,
            ids,
            max_new_tokens=max_new_tokens,
            policy=policy,
            generator=generator,
            seq_temperature=1.0 / alpha if imh else None,
            token_temperature=1.0 if imh else 1.0 / alpha,
            num_proposals=8,
            return_dict_in_generate=True,
        )
        stats["calls"] += out.num_model_calls
        stats["states"] += out.num_evaluated_states
        stats["tokens"] += max_new_tokens
        if out.acceptance_rate is not None:
            stats["acceptance"].append(out.acceptance_rate.mean().item())
        texts = tokenizer.batch_decode(out.sequences[:, ids.shape[1] :], skip_special_tokens=True)
        return [text.replace(" ", "") for text in texts]

    return sample


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default="outputs/tiny_mdlm")
    parser.add_argument("--num_samples", type=int, default=16, help="n samples per problem (>= 8 for pass@8)")
    parser.add_argument("--max_problems", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    adapter, tokenizer, task = load(args.model_dir)
    problems = task["problems"][: args.max_problems]
    max_new_tokens = int(task.get("max_new_tokens", 4))

    def is_correct(problem, answer):
        return answer in {a.replace(" ", "") for a in problem["answers"]}

    print(f"{len(problems)} problems, n={args.num_samples} samples each, {max_new_tokens} new tokens\n")
    header = f"{'policy':<10} {'sampler':<16} {'pass@1':>7} {'pass@8':>7} {'distinct':>8} {'calls/tok':>9} "
    print(header + f"{'seqs/tok':>8} {'accept':>7}")
    start = time.time()
    for policy in ("random", "confidence", "entropy", "margin"):
        for imh in (False, True):
            for alpha in (1, 2, 4):
                stats = {"calls": 0, "states": 0, "tokens": 0, "acceptance": []}
                sampler = make_sampler(adapter, tokenizer, max_new_tokens, policy, alpha, imh, args.seed, stats)
                result = evaluate_sampler(sampler, problems, is_correct, args.num_samples, ks=(1, 8))
                name = f"IMH alpha={alpha}" if imh else f"local tau=1/{alpha}"
                accept = sum(stats["acceptance"]) / len(stats["acceptance"]) if stats["acceptance"] else float("nan")
                print(
                    f"{policy:<10} {name:<16} {result['pass@1']:>7.3f} {result['pass@8']:>7.3f} "
                    f"{result['distinct_answers']:>8.2f} {stats['calls'] / stats['tokens']:>9.2f} "
                    f"{stats['states'] / stats['tokens']:>8.1f} {accept:>7.3f}"
                )
    print("\ncalls/tok: sequential model calls per committed token (equal for IMH and local decoding);")
    print("seqs/tok: sequences evaluated per committed token (IMH evaluates its proposals in the same call).")
    print(f"total time {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
