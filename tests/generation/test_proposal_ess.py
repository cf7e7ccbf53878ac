# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`proposal_ess` against exact per-prompt values on the enumerable toy of `test_smc.py` (three prompts, two
left-padded, 40 answers each): for a proposal law `r` enumerated over the answers, the log-weight
`alpha log p - log r` has an exact variance under `r`, and `ESS / N` tends to `(E_r w)^2 / E_r w^2`. Both are
checked per prompt for the token-temperature proposal and for a random LoRA adapter proposal; the prompts' values
differ, so a figure pooled over prompts (one normaliser for the batch) is caught."""

import pytest
import torch
from generation.test_smc import EOS, NEW, PAD, PROMPT_MASK, PROMPTS, T, _answer_logp, _oracle
from generation.test_smc_adapter import _adapted

from hf_seqtemp.generation.proposal_ess import proposal_ess
from hf_seqtemp.likelihood import AutoregressiveScorer

ALPHA, SAMPLES = 1 / T, 6000


@torch.no_grad()
def _exact(model, proposal):
    """Per prompt: (Var_r[log w], (E_r w)^2 / E_r w^2) by enumeration, `r` the proposal's answer law."""
    with model.disable_adapter():
        answers, _ = _oracle(model)
    figures = []
    for b, cells in enumerate(answers):
        with model.disable_adapter():
            logp = _answer_logp(model, cells, PROMPT_MASK[b])
            if proposal == "token":
                logr = _answer_logp(model, cells, PROMPT_MASK[b], scorer=AutoregressiveScorer(token_temperature=T))
        if proposal == "adapter":
            logr = _answer_logp(model, cells, PROMPT_MASK[b])
        r, logw = logr.exp(), ALPHA * logp - logr
        assert abs(r.sum().item() - 1) < 1e-6
        mean = (r * logw).sum()
        variance = (r * (logw - mean) ** 2).sum()
        ratio = (r * logw.exp()).sum() ** 2 / (r * (2 * logw).exp()).sum()
        figures.append((variance.item(), ratio.item()))
    return figures


@pytest.mark.parametrize("proposal", ["token", "adapter"])
def test_proposal_ess_matches_the_exact_per_prompt_values(proposal):
    model = _adapted()
    out = proposal_ess(
        model,
        PROMPTS,
        PROMPT_MASK,
        max_new_tokens=NEW,
        seq_temperature=T,
        num_samples=SAMPLES,
        proposal=proposal,
        generator=torch.Generator().manual_seed(0),
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    exact = _exact(model, proposal)
    for b, (variance, ratio) in enumerate(exact):
        assert out.log_weight_variance[b].item() == pytest.approx(variance, rel=0.08), (b, exact)
        assert out.ess_fraction[b].item() == pytest.approx(ratio, rel=0.08), (b, exact)
    assert torch.allclose(out.log_weights.logsumexp(1), torch.zeros(len(PROMPTS)), atol=1e-4)
    # the prompts differ (a pooled figure is wrong for some prompt): the test has power per prompt
    variances = [v for v, _ in exact]
    assert max(variances) > 1.3 * min(variances), exact


def test_the_two_proposals_are_told_apart_and_errors():
    """The adapter's figures are not the token proposal's (a wrongly routed proposal is caught), and bad values
    are refused by name."""
    model = _adapted()
    token, adapter = _exact(model, "token"), _exact(model, "adapter")
    apart = [max(abs(x - y) / max(x, y) for x, y in zip(t, a)) for t, a in zip(token, adapter)]
    assert min(apart) > 0.2, (token, adapter)  # far beyond the 8 % tolerance above, on every prompt
    with pytest.raises(ValueError, match="`proposal` must be one of"):
        proposal_ess(model, PROMPTS, PROMPT_MASK, proposal="tokens")
    with pytest.raises(ValueError, match="`num_samples` must be at least 2"):
        proposal_ess(model, PROMPTS, PROMPT_MASK, num_samples=1)
