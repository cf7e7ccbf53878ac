# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Samplers of the task benchmark: each draws answers for a list of chat prompts in one batch and counts its cost.

A sampler runs on every held-out prompt repeated `n` times, as one batch, and returns the decoded completions and
its cost: `calls`, the sequential forward calls of the run (every answer takes part in each, so this is the latency
per answer in model calls when the batch runs in parallel), and `token_forwards`, the token positions forwarded in
all calls together (the compute; divided by the number of answers it is the compute per answer).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from _tasks import conversation

from hf_seqtemp.costs import ForwardCounter

# exact sampling of the model's own distribution: transformers 5 fills unset fields from the model's config
EXACT = {"do_sample": True, "top_k": 0, "top_p": 1.0, "min_p": None, "repetition_penalty": 1.0}


def encode(tokenizer, questions: list[str], repeats: int, device) -> dict:
    """Chat-templated prompts, each repeated `repeats` times in a row, left-padded."""
    texts = [
        tokenizer.apply_chat_template(conversation(q), tokenize=False, add_generation_prompt=True) for q in questions
    ]
    tokenizer.padding_side = "left"
    batch = tokenizer([t for t in texts for _ in range(repeats)], return_tensors="pt", padding=True)
    return {k: v.to(device) for k, v in batch.items()}


def decode(tokenizer, sequences: torch.Tensor, prompt_length: int) -> list[str]:
    return tokenizer.batch_decode(sequences[:, prompt_length:], skip_special_tokens=True)


def run_sampler(
    sample: Callable,
    model,
    tokenizer,
    questions: list[str],
    n: int,
    max_new_tokens: int,
    seed: int,
    prompts_per_call: int | None = None,
) -> dict:
    """Runs `sample(model, batch, max_new_tokens, seed) -> sequences` on every question × `n` in one batch (or in
    batches of `prompts_per_call` questions, e.g. for SMC with many particles, batch `c` seeded `seed * 1000 + c`)
    and returns `{"completions": [[n texts] per question], "calls", "token_forwards", "seconds"}`; `calls` is the
    mean over the batches (the sequential calls of one batched run)."""
    size = prompts_per_call or len(questions)
    chunks = [questions[i : i + size] for i in range(0, len(questions), size)]
    texts, calls, tokens, seconds = [], [], 0, 0.0
    for index, chunk in enumerate(chunks):
        batch = encode(tokenizer, chunk, n, model.device)
        counter = ForwardCounter(model)
        start = time.perf_counter()
        try:
            with torch.no_grad():
                sequences = sample(model, batch, max_new_tokens, seed if len(chunks) == 1 else seed * 1000 + index)
        finally:
            counter.remove()
        seconds += time.perf_counter() - start
        texts += decode(tokenizer, sequences, batch["input_ids"].shape[1])
        calls.append(counter.calls)
        tokens += counter.tokens
    return {
        "completions": [texts[i * n : (i + 1) * n] for i in range(len(questions))],
        "calls": sum(calls) / len(calls),
        "token_forwards": tokens,
        "seconds": seconds,
        "answers": len(texts),
    }


def ancestral(token_temperature: float = 1.0) -> Callable:
    """Ancestral sampling at token temperature `token_temperature` (1: exact sampling of the model)."""

    def sample(model, batch, max_new_tokens, seed):
        torch.manual_seed(seed)
        return model.generate(**batch, max_new_tokens=max_new_tokens, temperature=token_temperature, **EXACT)

    return sample


def greedy(model, batch, max_new_tokens, seed):
    return model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, top_k=None, top_p=None)


def power(alpha: float, mcmc_steps: int, block_size: int) -> Callable:
    """MH power sampling of p^alpha (`strategy="mcmc"`), `mcmc_steps` steps per block of `block_size` tokens."""

    def sample(model, batch, max_new_tokens, seed):
        from hf_seqtemp import seqtemp_generate

        return model.generate(
            **batch,
            max_new_tokens=max_new_tokens,
            custom_generate=seqtemp_generate,
            seq_temperature=1.0 / alpha,
            strategy="mcmc",
            mcmc_steps=mcmc_steps,
            block_size=block_size,
            generator=torch.Generator().manual_seed(seed),
            **EXACT,
        )

    return sample


def smc_available() -> bool:
    from hf_seqtemp.generation.strategies import STRATEGY_REGISTRY

    return "smc" in STRATEGY_REGISTRY


def smc(alpha: float, num_particles: int, proposal: str = "token", pimh_steps: int = 0) -> Callable:
    """Sequential Monte Carlo power sampling of p^alpha (`strategy="smc"`), `num_particles` particles per answer;
    `proposal="adapter"`: the model's active adapter proposes, the base (adapter off) is p; `pimh_steps=K`: the answer
    of a PIMH chain over K + 1 runs (exact answers; K + 1 times the token-forwards). The sampler keeps, in
    `sample.ess_fractions`, the ESS / N of the final weights of every answer it drew (the answer is one particle
    drawn by them: ESS / N near 1/N means one particle decided it), and with `pimh_steps` the chains' acceptance
    rates in `sample.acceptance`."""

    def sample(model, batch, max_new_tokens, seed):
        from hf_seqtemp import seqtemp_generate
        from hf_seqtemp.data import eos_ids_of
        from hf_seqtemp.generation import smc_sample

        generator = torch.Generator().manual_seed(seed)
        if proposal == "adapter":  # a freshly trained PEFT adapter (no saved config): the function API takes it as is
            eos = sorted(eos_ids_of(model))
            out = smc_sample(
                model, batch["input_ids"], batch["attention_mask"], max_new_tokens=max_new_tokens,
                seq_temperature=1.0 / alpha, num_particles=num_particles, generator=generator, eos_token_id=eos,
                pad_token_id=eos[0] if eos else 0, proposal="adapter", return_dict_in_generate=True,
                pimh_steps=pimh_steps,
            )  # fmt: skip
        else:
            out = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                custom_generate=seqtemp_generate,
                seq_temperature=1.0 / alpha,
                strategy="smc",
                num_particles=num_particles,
                pimh_steps=pimh_steps,
                generator=generator,
                return_dict_in_generate=True,
                **EXACT,
            )
        sample.ess_fractions += (out.ess[:, -1] / num_particles).tolist()
        if out.pimh_acceptance is not None:
            sample.acceptance += out.pimh_acceptance.tolist()
        return out.sequences

    sample.ess_fractions, sample.acceptance = [], []
    return sample


def answer_level(token_temperature: float, num_samples: int, extract: Callable, tokenizer, choose: Callable):
    """An answer-level route: for each answer, `num_samples` completions of the prompt at token temperature
    `token_temperature` (1: exact samples of p), the answer `extract` reads from each, and the completion `choose`
    (`hf_seqtemp.generation.answer_level.majority_vote` or `sharpen_answers`) picks among them. Its cost is that
    of the `num_samples` completions."""

    def sample(model, batch, max_new_tokens, seed):
        wide = {key: value.repeat_interleave(num_samples, dim=0) for key, value in batch.items()}
        sequences = ancestral(token_temperature)(model, wide, max_new_tokens, seed)
        texts = decode(tokenizer, sequences, wide["input_ids"].shape[1])
        generator = torch.Generator().manual_seed(seed)
        chosen = []
        for row in range(batch["input_ids"].shape[0]):
            answers = [extract(text) for text in texts[row * num_samples : (row + 1) * num_samples]]
            chosen.append(row * num_samples + choose(answers, generator))
        return sequences[torch.tensor(chosen, device=sequences.device)]

    return sample
