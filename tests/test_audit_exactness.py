# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The decoding audit's log q is the probability of a completion under the processed distribution that `generate`
samples: checked against an independent brute-force oracle (every answer enumerated, each processor written from
its definition) and by a χ² test of `generate`'s samples, on several prompts, with two EOS ids."""

from __future__ import annotations

import itertools
import math
import sys

import pytest
import torch
from distribution_checks import chi_square_pvalue
from tiny_models import BOS, tiny_causal_lm

from hf_seqtemp.audit import audit_decoding, decoding_config, sample_completions_with, score_completions
from hf_seqtemp.likelihood import AutoregressiveScorer

VOCAB, EOS_IDS, NEW_TOKENS = 5, (3, 4), 3
PROMPTS = ([BOS, 1], [BOS, 2, 1, 2])


@pytest.fixture(scope="module")
def model():
    lm = tiny_causal_lm(VOCAB, seed=2).eval()
    lm.generation_config.eos_token_id = list(EOS_IDS)
    return lm


# ---------------------------------------------------------------------------------------------------- the oracle
def _process(prefix: list[int], logits: torch.Tensor, s: dict) -> torch.Tensor:
    """log q(·|prefix) from raw logits, each processor from its definition, in `generate`'s order."""
    logits = logits.double().clone()
    if s.get("repetition_penalty", 1.0) != 1.0:
        for token in set(prefix):
            value = logits[token]
            logits[token] = value * s["repetition_penalty"] if value < 0 else value / s["repetition_penalty"]
    n = s.get("no_repeat_ngram_size", 0)
    if n:
        tail = tuple(prefix[len(prefix) - n + 1 :])
        for start in range(len(prefix) - n + 1):
            if tuple(prefix[start : start + n - 1]) == tail:
                logits[prefix[start + n - 1]] = -math.inf
    logits = logits / s.get("temperature", 1.0)
    probs = logits.softmax(-1)
    keep = torch.isfinite(logits)
    if s.get("top_k"):
        keep &= logits >= logits.topk(s["top_k"]).values[-1]
    if "top_p" in s:  # keep a token when the mass strictly above it is below top_p
        above = torch.tensor([probs[probs > p].sum() for p in probs])
        keep &= above < s["top_p"]
    if "min_p" in s:
        keep &= probs >= s["min_p"] * probs.max()
    if "typical_p" in s:  # the smallest set, by closeness of −log p to the entropy, that holds `typical_p`
        log_probs = logits.log_softmax(-1)
        entropy = -(probs[keep] * log_probs[keep]).sum()
        order = sorted(keep.nonzero().flatten().tolist(), key=lambda v: abs(-log_probs[v] - entropy).item())
        chosen, total = [], 0.0
        for v in order:
            if total >= s["typical_p"]:
                break
            chosen.append(v)
            total += probs[v].item()
        keep &= torch.isin(torch.arange(len(logits)), torch.tensor(chosen))
    if "epsilon_cutoff" in s:
        keep &= (probs >= s["epsilon_cutoff"]) | (probs == probs.max())
    return torch.where(keep, logits, torch.tensor(-math.inf, dtype=torch.float64)).log_softmax(-1)


def _answers() -> list[tuple]:
    """Every answer: tokens up to the first EOS id, or `NEW_TOKENS` tokens without one."""
    out = set()
    for tail in itertools.product(range(VOCAB), repeat=NEW_TOKENS):
        end = next((i for i, t in enumerate(tail) if t in EOS_IDS), NEW_TOKENS - 1)
        out.add(tail[: end + 1])
    return sorted(out)


@torch.no_grad()
def oracle(model, prompt: list[int], setting: dict) -> dict[tuple, tuple[float, float]]:
    """`answer -> (log q, log p)`, one prefix at a time (no batching, no cache), in float64."""
    out = {}
    for answer in _answers():
        log_q = log_p = 0.0
        for step, token in enumerate(answer):
            prefix = prompt + list(answer[:step])
            logits = model(input_ids=torch.tensor([prefix])).logits[0, -1]
            log_q += _process(prefix, logits, setting)[token].item()
            log_p += logits.double().log_softmax(-1)[token].item()
        out[answer] = (log_q, log_p)
    return out


SETTINGS = [
    {"temperature": 0.6},
    {"top_k": 2},
    {"top_p": 0.7},
    {"min_p": 0.3},
    {"typical_p": 0.6},
    {"epsilon_cutoff": 0.15},
    {"repetition_penalty": 1.8},
    {"no_repeat_ngram_size": 2},
    {"temperature": 0.7, "top_p": 0.8, "repetition_penalty": 1.5},
]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: ",".join(s))
def test_log_q_is_the_enumerated_processed_probability_and_generate_samples_it(model, setting):
    config = decoding_config(model, setting, NEW_TOKENS)
    answers = _answers()
    for index, prompt in enumerate(PROMPTS):
        exact = oracle(model, prompt, setting)
        probs = torch.tensor([math.exp(exact[a][0]) for a in answers], dtype=torch.float64)
        assert abs(probs.sum().item() - 1) < 1e-9
        scored = score_completions(model, prompt, [list(a) for a in answers], config, EOS_IDS)
        expected_q = torch.tensor([exact[a][0] for a in answers], dtype=torch.float64)
        finite = torch.isfinite(expected_q)
        assert torch.equal(torch.isfinite(scored.policy_logps), finite), setting
        assert torch.allclose(scored.policy_logps[finite], expected_q[finite], rtol=0, atol=1e-5), setting
        assert torch.allclose(
            scored.ref_logps, torch.tensor([exact[a][1] for a in answers], dtype=torch.float64), rtol=0, atol=1e-5
        )
        torch.manual_seed(100 + index)
        drawn = sample_completions_with(model, prompt, 1500, config, batch_size=1500)
        counts = torch.zeros(len(answers))
        for completion in drawn:
            counts[answers.index(tuple(completion))] += 1
        _, p_value, _ = chi_square_pvalue(counts, probs)
        assert p_value > 1e-3, (setting, prompt, p_value)


def test_log_p_is_the_scorers(model):
    answers = [list(a) for a in _answers()]
    for prompt in PROMPTS:
        scored = score_completions(model, prompt, answers, decoding_config(model, {"top_p": 0.7}, NEW_TOKENS))
        width = len(prompt) + max(map(len, answers))
        ids = torch.zeros(len(answers), width, dtype=torch.long)
        attention, completion_mask = torch.zeros_like(ids), torch.zeros_like(ids, dtype=torch.bool)
        for row, answer in enumerate(answers):
            ids[row, : len(prompt) + len(answer)] = torch.tensor(prompt + answer)
            attention[row, : len(prompt) + len(answer)] = 1
            completion_mask[row, len(prompt) : len(prompt) + len(answer)] = True
        with torch.no_grad():
            scorer = AutoregressiveScorer()(model, ids, attention, completion_mask)
        assert torch.allclose(scored.ref_logps.float(), scorer, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("setting", [{"top_p": 0.9}, {"top_k": 3}, {"min_p": 0.1}], ids=lambda s: ",".join(s))
def test_truncation_alone_moves_log_q_by_minus_the_summed_log_kept_mass(model, setting):
    """q = p / S_t on every kept token: log q − log p = −Σ_t log S_t (the ratio bias of a truncated sampler)."""
    answers = [list(a) for a in _answers()]
    for prompt in PROMPTS:
        scored = score_completions(model, prompt, answers, decoding_config(model, setting, NEW_TOKENS))
        kept = torch.isfinite(scored.policy_logps)
        assert kept.sum() >= 3 and (scored.log_kept_mass[kept] < -1e-3).any()
        gap = scored.policy_logps[kept] - scored.ref_logps[kept]
        assert torch.allclose(gap, -scored.log_kept_mass[kept], rtol=0, atol=1e-5)


def test_temperature_one_alone_is_p_itself_within_prompts():
    lm = tiny_causal_lm(8, seed=3).eval()  # no EOS: 8^4 answers, so most of 12 samples are distinct
    lm.generation_config.top_k, lm.generation_config.temperature = 2, 0.5  # the model's own defaults are not applied
    audit = audit_decoding(lm, None, [[BOS, 1], [BOS, 2, 5], [BOS, 7, 7, 3]], {"temperature": 1.0}, 12, 4)
    assert audit["processors"] == []
    q = torch.tensor([s["policy_logp"] for s in audit["sequences"]])
    p = torch.tensor([s["ref_logp"] for s in audit["sequences"]])
    assert torch.equal(q, p)
    summary = audit["summary"]
    assert summary["t_eff"] == pytest.approx(1.0, rel=1e-9) and summary["kendall_tau"] == 1.0
    assert abs(summary["mean_log_kept_mass"]) < 1e-5 and summary["distinct_fraction"] > 0.5
    assert all(row["kendall_tau"] == 1.0 for row in audit["per_prompt"])


def test_a_sharpening_setting_reads_below_one_and_keeps_less_mass():
    lm = tiny_causal_lm(8, seed=3).eval()
    audit = audit_decoding(lm, None, [[BOS, 1], [BOS, 2, 5]], {"temperature": 0.5}, 24, 4, seed=1)
    assert 0.3 < audit["summary"]["t_eff"] < 0.7  # token temperature 0.5: sequence T_eff near, not at, 0.5
    top_p = audit_decoding(lm, None, [[BOS, 1], [BOS, 2, 5]], {"top_p": 0.6}, 24, 4, seed=1)
    assert top_p["summary"]["mean_log_kept_mass"] < -0.5


def test_one_builder_makes_the_neutral_config_of_the_samplers_of_p_and_of_the_audit():
    """`exact_generation_config` (the samplers of p) and `decoding_config` (the audit) both come from
    `neutral_generation_config`, the only place either module fills a `GenerationConfig`; with no setting they
    agree on every field but the ones pinned only where the model's config sets them."""
    import ast
    from pathlib import Path

    from hf_seqtemp.data import ancestral
    from hf_seqtemp.data.ancestral import NEUTRAL_WHEN_INHERITED, exact_generation_config

    builders = []
    for module in (ancestral, sys.modules[decoding_config.__module__]):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        for function in [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]:
            for call in [node for node in ast.walk(function) if isinstance(node, ast.Call)]:
                if getattr(call.func, "id", None) == "GenerationConfig" and (call.keywords or call.args):
                    builders.append(function.name)
    assert builders == ["neutral_generation_config"]
    model = tiny_causal_lm(VOCAB, seed=0)
    audit = decoding_config(model, None, 5, eos_token_id=[3], pad_token_id=0).to_dict()
    exact = exact_generation_config(5, [3], pad_token_id=0).to_dict()
    differing = {key for key in set(audit) | set(exact) if audit.get(key) != exact.get(key)}
    # `min_length` is pinned only where `min_new_tokens` (which overrides it) is not
    assert differing <= set(NEUTRAL_WHEN_INHERITED) | {"min_length", "transformers_version"}
