# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The completions a prompt-only dataset is trained on are exact samples of p(·|c), answers ending at EOS."""

import itertools

import torch
from distribution_checks import chi_square_pvalue
from tiny_models import BOS, tiny_causal_lm

from hf_seqtemp.data import sample_completions

EOS = 3


@torch.no_grad()
def _answer_probs(model, prompt: list[int], max_new_tokens: int) -> dict[tuple, float]:
    """Exact probability of every answer: token strings ending at the first EOS, or cut at `max_new_tokens`."""
    probs = {}
    for tail in itertools.product(range(4), repeat=max_new_tokens):
        answer = tail[: tail.index(EOS) + 1] if EOS in tail else tail
        if answer in probs:
            continue
        ids = torch.tensor([prompt + list(answer)])
        logps = model(input_ids=ids).logits[0, :-1].double().log_softmax(-1)
        token = logps.gather(-1, ids[0, 1:, None]).squeeze(-1)[len(prompt) - 1 :]
        probs[answer] = token.sum().exp().item()
    return probs


def test_sampled_completions_follow_p_over_variable_length_answers():
    model = tiny_causal_lm(4, seed=2)
    model.generation_config.eos_token_id = EOS
    torch.manual_seed(0)
    for prompt in ([BOS, 1], [BOS, 2, 0]):  # prompts of different lengths share one left-padded batch
        exact = _answer_probs(model, prompt, 3)
        assert abs(sum(exact.values()) - 1) < 1e-9
        drawn = sample_completions(model, [prompt] * 1500 + [[BOS]] * 10, 3, {EOS}, pad_token_id=0, batch_size=64)
        answers = list(exact)
        counts = torch.zeros(len(answers))
        for completion in drawn[:1500]:
            counts[answers.index(tuple(completion))] += 1
        _, p_value, _ = chi_square_pvalue(counts, torch.tensor([exact[a] for a in answers]))
        assert p_value > 1e-3, (prompt, p_value)
