# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Local token temperature vs IMH global tempering on a tiny masked diffusion LM, measured by pass@k.

For every remasking policy (random, confidence, entropy, margin) the script decodes `--num_samples` completions per
held-out problem with (a) the local tempered sampler at token temperature 1/alpha, what LLaDA/Dream do, and (b) IMH
global tempering targeting p(x)^alpha (Fang et al., Alg. 1), for alpha in {1, 2, 4}, and prints pass@1, pass@8, the
mean number of distinct completions per problem and the model calls / evaluated sequences per committed token.

The model is the tiny MDLM written by `examples/train_tiny_mdlm.py` (a `BertForMaskedLM` and an
`ArithmeticTokenizer`, both saved with `save_pretrained`). The problems are the held-out 2-digit additions of that
script: `ArithmeticTask("+", 2).split(num_test, seed)` with the same `num_test` (read from
`training_summary.json`) and seed, so the model never trained on them. A completion (3 answer tokens, decoded
*with* special tokens, so a stray `[PAD]` makes it wrong) is checked with `hf_seqtemp.tasks.check_answer`.

Reading the table: addition has exactly one correct answer per problem, so `distinct` here measures diversity
(every completion beyond the first distinct one is a wrong answer), not the number of distinct correct answers that
makes pass@k informative on tasks with several right answers.

Run: `python examples/imh_tempering.py` (under 10 minutes on 2 CPU cores with the defaults; on a machine whose cores
are busy with other processes, `--threads 1` is faster). Measured on 2 CPU cores shared with other jobs (load
average 3-6): 160 s wall time with `--threads 1`; 18 minutes with `--threads 2` on the same overloaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
from transformers import BertForMaskedLM

from hf_seqtemp.evaluation import evaluate_sampler
from hf_seqtemp.generation import diffusion_generate
from hf_seqtemp.models import MaskedLMWrapper
from hf_seqtemp.tasks import ArithmeticTask, ArithmeticTokenizer, check_answer

POLICIES = ("random", "confidence", "entropy", "margin")
ALPHAS = (1, 2, 4)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default="outputs/tiny_mdlm")
    parser.add_argument("--num_samples", type=int, default=16, help="n samples per problem (>= 8 for pass@8)")
    parser.add_argument("--max_problems", type=int, default=200, help="first held-out problems to decode")
    parser.add_argument("--num_proposals", type=int, default=8, help="IMH proposals per step")
    parser.add_argument("--split_seed", type=int, default=0, help="seed of the train/held-out split (training's)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--threads", type=int, default=2)
    return parser.parse_args()


def load(model_dir: str) -> tuple[MaskedLMWrapper, ArithmeticTokenizer, int]:
    """The adapter-wrapped model, its tokenizer and the number of held-out problems used in training."""
    if not os.path.isdir(model_dir):
        sys.exit(f"No trained model at {model_dir!r}. Train one with `python examples/train_tiny_mdlm.py`.")
    tokenizer = ArithmeticTokenizer.from_pretrained(model_dir)
    model = BertForMaskedLM.from_pretrained(model_dir).eval()
    model.set_attn_implementation("eager")  # faster than sdpa for 10-token sequences on CPU
    summary_file = os.path.join(model_dir, "training_summary.json")
    num_test = 1000  # the default of train_tiny_mdlm.py
    if os.path.isfile(summary_file):
        with open(summary_file, encoding="utf-8") as handle:
            num_test = int(json.load(handle).get("num_held_out", num_test))
    return MaskedLMWrapper(model, tokenizer.mask_token_id), tokenizer, num_test


def make_sampler(adapter, tokenizer, max_new_tokens, policy, alpha, imh, args, stats):
    """`sample(prompt, n) -> n completion strings` for one (policy, sampler, alpha) cell; accumulates costs."""
    generator = torch.Generator().manual_seed(args.seed)

    def sample(prompt: str, num_samples: int) -> list[str]:
        ids = torch.tensor([tokenizer(prompt)["input_ids"]]).repeat(num_samples, 1)
        out = diffusion_generate(
            adapter,
            ids,
            max_new_tokens=max_new_tokens,
            policy=policy,
            generator=generator,
            seq_temperature=1.0 / alpha if imh else None,
            token_temperature=1.0 if imh else 1.0 / alpha,
            num_proposals=args.num_proposals,
            return_dict_in_generate=True,
        )
        stats["calls"] += out.num_model_calls
        stats["states"] += out.num_evaluated_states / num_samples
        stats["tokens"] += max_new_tokens
        if out.acceptance_rate is not None:
            stats["acceptance"].append(out.acceptance_rate.mean().item())
        completions = out.sequences[:, ids.shape[1] :].tolist()
        return ["".join(tokenizer.convert_ids_to_tokens(row)) for row in completions]

    return sample


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    adapter, tokenizer, num_test = load(args.model_dir)
    task = ArithmeticTask("+", num_digits=2)
    _, test_pairs = task.split(num_test, seed=args.split_seed)
    problems = [task.prompt(int(a), int(b)) for a, b in test_pairs[: args.max_problems].tolist()]
    print(
        f"{len(problems)} held-out problems (of {num_test}, split seed {args.split_seed}), n={args.num_samples} "
        f"samples each, {task.completion_length} new tokens, {args.threads} thread(s)\n"
    )
    print(
        f"{'policy':<10} {'sampler':<16} {'pass@1':>7} {'pass@8':>7} {'distinct':>8} {'calls/tok':>9} "
        f"{'seqs/tok':>8} {'accept':>7}"
    )
    start = time.perf_counter()
    for policy in POLICIES:
        for imh in (False, True):
            for alpha in ALPHAS:
                stats = {"calls": 0, "states": 0.0, "tokens": 0, "acceptance": []}
                sampler = make_sampler(adapter, tokenizer, task.completion_length, policy, alpha, imh, args, stats)
                result = evaluate_sampler(sampler, problems, check_answer, args.num_samples, ks=(1, 8))
                name = f"IMH alpha={alpha}" if imh else f"local tau=1/{alpha}"
                accept = sum(stats["acceptance"]) / len(stats["acceptance"]) if stats["acceptance"] else float("nan")
                print(
                    f"{policy:<10} {name:<16} {result['pass@1']:>7.3f} {result['pass@8']:>7.3f} "
                    f"{result['distinct_answers']:>8.2f} {stats['calls'] / stats['tokens']:>9.2f} "
                    f"{stats['states'] / stats['tokens']:>8.2f} {accept:>7.3f}",
                    flush=True,
                )
    print("\ndistinct: mean number of different completions per problem (exactly one is correct, so > 1 = errors).")
    print("calls/tok: sequential model calls per committed token (equal for IMH and local decoding);")
    print("seqs/tok: sequences the model ran on per committed token and per sample (IMH batches its proposals);")
    print("accept: mean IMH acceptance rate over the steps that ran a chain.")
    print(f"decoding wall time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
