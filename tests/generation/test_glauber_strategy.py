# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., custom_generate=seqtemp_generate, strategy="glauber")`: ancestral draft + Glauber sweeps."""

import itertools

import pytest
import torch
from tiny_models import tiny_llama

from hf_seqtemp.generation import GlauberGenerateOutput, glauber_refine, seqtemp_generate
from hf_seqtemp.likelihood import AutoregressiveScorer

PROMPT = torch.tensor([[1, 2]])
NEW = 3


def _generate(model, prompt, **kwargs):
    return model.generate(prompt, max_new_tokens=NEW, pad_token_id=0, custom_generate=seqtemp_generate, **kwargs)


def _mode_of_p(model, prompt):
    """Brute force over all |V|^NEW completions: the most likely one under p (sequence log-likelihood)."""
    vocab = model.config.vocab_size
    tails = torch.tensor(list(itertools.product(range(vocab), repeat=NEW)))
    states = torch.cat([prompt.expand(len(tails), -1), tails], dim=1)
    cmask = torch.zeros_like(states, dtype=torch.bool)
    cmask[:, prompt.shape[1] :] = True
    with torch.no_grad():
        logps = AutoregressiveScorer()(model, states, completion_mask=cmask).double()
    return states[logps.argmax()], (logps / 0.05).softmax(0).max().item()


def test_glauber_strategy_keeps_the_prompt_and_returns_its_extras():
    model = tiny_llama(vocab_size=8, seed=1)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    out = _generate(
        model,
        prompt,
        seq_temperature=0.5,
        strategy="glauber",
        glauber_rounds=3,
        num_candidates=2,
        generator=torch.Generator().manual_seed(0),
        return_dict_in_generate=True,
    )
    assert isinstance(out, GlauberGenerateOutput)
    assert out.sequences.shape == (2, 3 + NEW) and torch.equal(out.sequences[:, :3], prompt)
    assert torch.equal(out.draft_sequences[:, :3], prompt)
    assert out.acceptance_rate.shape == (3,) and ((out.acceptance_rate >= 0) & (out.acceptance_rate <= 1)).all()
    cmask = torch.zeros_like(out.sequences, dtype=torch.bool)
    cmask[:, 3:] = True
    with torch.no_grad():
        torch.testing.assert_close(
            out.sequence_logps, AutoregressiveScorer()(model, out.sequences, completion_mask=cmask)
        )
    # the default call returns a tensor; zero rounds return exactly the draft of a run with the same seed
    plain = _generate(model, PROMPT, seq_temperature=0.5, strategy="glauber")
    assert isinstance(plain, torch.Tensor) and plain.shape == (1, 2 + NEW) and torch.equal(plain[:, :2], PROMPT)
    zero = _generate(
        model,
        prompt,
        seq_temperature=0.5,
        strategy="glauber",
        glauber_rounds=0,
        generator=torch.Generator().manual_seed(0),
    )
    assert torch.equal(zero, out.draft_sequences)


def test_cold_glauber_concentrates_on_the_mode_of_p_more_than_the_draft():
    """At T = 0.05 the target puts > 95% on the mode of p; the chain gets there through single-site moves proposed
    from p's own (flat, |V| = 4) conditionals, so it needs a dozen sweeps: 4 sweeps reach the mode in ~45% of chains,
    12 in ~90% (this seed). The draft is a sample of p and hits the mode ~4% of the time."""
    model = tiny_llama(vocab_size=4, seed=0, head_scale=3.0)
    mode, target_mass = _mode_of_p(model, PROMPT)
    assert target_mass > 0.95  # p^(1/0.05) sits on the mode: the test can tell a concentrated sampler
    n = 200
    out = _generate(
        model,
        PROMPT.repeat(n, 1),
        seq_temperature=0.05,
        strategy="glauber",
        glauber_rounds=12,
        generator=torch.Generator().manual_seed(0),
        return_dict_in_generate=True,
    )
    draft_hits = (out.draft_sequences == mode).all(dim=1).float().mean().item()
    refined_hits = (out.sequences == mode).all(dim=1).float().mean().item()
    assert draft_hits < 0.2  # the draft samples p itself, which is not concentrated
    assert refined_hits > 0.75 and refined_hits > draft_hits + 0.5


def test_glauber_strategy_errors():
    model = tiny_llama(vocab_size=8, seed=1)
    with pytest.raises(ValueError, match="`glauber_rounds` must be an integer ≥ 0, got -1"):
        _generate(model, PROMPT, seq_temperature=0.5, strategy="glauber", glauber_rounds=-1)
    with pytest.raises(ValueError, match="`num_candidates` must be an integer ≥ 1 or None"):
        _generate(model, PROMPT, seq_temperature=0.5, strategy="glauber", num_candidates=0)
    with pytest.raises(ValueError, match="`strategy='glauber'` needs `seq_temperature`"):
        _generate(model, PROMPT, strategy="glauber")


def test_a_site_update_that_cannot_fit_in_memory_is_refused_in_bytes_before_any_allocation():
    """SmolLM2's 49152-token vocabulary, one prompt: `num_candidates=None` would score 49152 sequences per site
    (1 row × |V| is under any row limit) and allocate ~50 GB of logits; the guard counts bytes, names the parameter,
    the estimate and the fix, and the fix it names runs."""
    big = tiny_llama(vocab_size=49_152, seed=1, hidden_size=8, intermediate_size=8)
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(
        ValueError,
        match=r"`num_candidates=None` .* 1 × 49152 sequences of 5 tokens.* needs about "
        r"[0-9.]+ GB, more than 50% of the .* GB available on cpu\. Pass `num_candidates=8`",
    ):
        _generate(big, PROMPT, seq_temperature=0.5, strategy="glauber", generator=generator)
    with pytest.raises(ValueError, match=r"`num_candidates=None` .* needs about [0-9.]+ GB"):
        glauber_refine(big, torch.tensor([[1, 2, 3, 4, 5]]), seq_temperature=0.5, num_rounds=1)
    out = _generate(big, PROMPT, seq_temperature=0.5, strategy="glauber", num_candidates=8, generator=generator)
    assert out.shape == (1, 2 + NEW) and torch.equal(out[:, :2], PROMPT)


@pytest.mark.slow
def test_glauber_strategy_on_the_embedded_model():
    from hf_seqtemp import load_default_model

    model, tokenizer = load_default_model()
    inputs = tokenizer(["Name a colour:"], return_tensors="pt")
    torch.set_num_threads(2)
    try:
        out = model.generate(
            **inputs,
            max_new_tokens=3,
            pad_token_id=tokenizer.pad_token_id,
            custom_generate=seqtemp_generate,
            seq_temperature=0.5,
            strategy="glauber",
            num_candidates=4,
            glauber_rounds=1,
            generator=torch.Generator().manual_seed(0),
            return_dict_in_generate=True,
        )
    finally:
        torch.set_num_threads(1)
    length = inputs["input_ids"].shape[1]
    assert out.sequences.shape == (1, length + 3) and torch.equal(out.sequences[:, :length], inputs["input_ids"])
    assert out.acceptance_rate.shape == (1,) and 0.0 <= float(out.acceptance_rate[0]) <= 1.0
    cmask = torch.zeros_like(out.sequences, dtype=torch.bool)
    cmask[:, length:] = True
    with torch.no_grad():
        expected = AutoregressiveScorer()(model, out.sequences, completion_mask=cmask)
    torch.testing.assert_close(out.sequence_logps, expected, rtol=1e-4, atol=1e-3)
