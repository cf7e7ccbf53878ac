# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""SMC distillation's loss against its definition: with a prompt's every answer as a "particle" weighted by its
exact tempered mass, the loss is (up to a constant) the sum over prompts of KL(p_T(·|c) ‖ q(·|c)), whatever each
prompt's normaliser; pooled over prompts it is not."""

from types import SimpleNamespace

import pytest
import torch

from hf_seqtemp.losses import LOSSES, LossInputs, particle_weights, weighted_sequence_nll
from hf_seqtemp.losses.distill_objectives import particle_log_weights

PROMPTS, ANSWERS = 3, 5


def _toy(seed=0):
    generator = torch.Generator().manual_seed(seed)
    # p(x|c): three prompts of different entropy; log-weights carry a different arbitrary constant per prompt
    # (SMC's log Z estimate), which within-prompt normalisation must remove
    scale = torch.tensor([0.5, 2.0, 4.0])[:, None]
    log_p = (scale * torch.randn(PROMPTS, ANSWERS, generator=generator, dtype=torch.float64)).log_softmax(-1)
    offsets = torch.tensor([0.0, -7.0, 3.0], dtype=torch.float64)[:, None]
    return log_p, offsets


@pytest.mark.parametrize("temperature", [0.25, 0.5, 2.0])
def test_the_gradient_is_that_of_the_per_prompt_forward_kl(temperature):
    log_p, offsets = _toy()
    log_pt = (log_p / temperature).log_softmax(-1)
    logits = torch.randn(PROMPTS, ANSWERS, dtype=torch.float64, requires_grad=True)
    groups = torch.arange(PROMPTS).repeat_interleave(ANSWERS)
    log_w = (log_p / temperature + offsets).flatten()
    weights = particle_weights(log_w, groups)
    loss = weighted_sequence_nll(logits.log_softmax(-1).flatten(), weights, torch.ones(PROMPTS * ANSWERS))
    (grad,) = torch.autograd.grad(loss, logits)
    log_q = logits.log_softmax(-1)
    kl = (log_pt.exp() * (log_pt - log_q)).sum()  # Σ_c KL(p_T(·|c) ‖ q(·|c))
    (expected,) = torch.autograd.grad(kl * ANSWERS / (PROMPTS * ANSWERS), logits)
    torch.testing.assert_close(grad, expected)
    # the minimiser of the loss over free per-prompt answers is p_T(·|c), each prompt's own
    optimum = log_pt.detach().clone().requires_grad_(True)
    (at_optimum,) = torch.autograd.grad(
        weighted_sequence_nll(optimum.log_softmax(-1).flatten(), weights, torch.ones(PROMPTS * ANSWERS)), optimum
    )
    assert at_optimum.abs().max() < 1e-12
    # pooled over prompts, the per-prompt normalisers weigh the prompts: another gradient
    pooled = weighted_sequence_nll(logits.log_softmax(-1).flatten(), particle_weights(log_w), torch.ones(15))
    (pooled_grad,) = torch.autograd.grad(pooled, logits)
    assert (pooled_grad - expected).abs().max() > 1e-2


def test_the_weights_have_mean_one_within_each_prompt_and_carry_no_gradient():
    log_w = torch.tensor([0.0, 1.0, 2.0, -50.0, -49.0], requires_grad=True)
    groups = torch.tensor([0, 0, 0, 1, 1])
    weights = particle_weights(log_w, groups)
    assert not weights.requires_grad
    torch.testing.assert_close(weights[:3].mean(), torch.tensor(1.0))
    torch.testing.assert_close(weights[3:], torch.tensor([2 / (1 + torch.e), 2 * torch.e / (1 + torch.e)]))
    # pooled, the second prompt's particles weigh nothing: its normaliser is e^-50 of the first's
    assert particle_weights(log_w)[3:].max() < 1e-20


def test_the_objective_uses_the_particles_weights_and_importance_weights_for_samples_of_p():
    """Training rows carry SMC log-weights; evaluation rows are samples of p, weighted by p^(1/T - 1)."""
    objective = LOSSES["smc_distill"]
    assert objective.needs_groups and objective.draws_particles
    args = SimpleNamespace(target_temperature=0.5, nll_weight=0.0)
    policy = torch.log(torch.tensor([0.5, 0.25, 0.125, 0.5]))
    ref = torch.log(torch.tensor([0.4, 0.1, 0.3, 0.2]))
    mask = torch.ones(4, 2, dtype=torch.bool)
    groups = torch.tensor([0, 0, 1, 1])
    stored = LossInputs(policy, ref, None, mask, groups=groups, log_weights=torch.tensor([0.0, 0.0, 1.0, 0.0]))
    weights = torch.tensor([1.0, 1.0, 2 * torch.e / (1 + torch.e), 2 / (1 + torch.e)])
    out = objective.compute(stored, args)
    torch.testing.assert_close(out.loss, -(weights * policy).sum() / 8)
    assert out.metrics["ess/fraction"] < 1.0
    inputs = LossInputs(policy, ref, None, mask, groups=groups)
    torch.testing.assert_close(particle_log_weights(inputs, 0.5), ref)  # (1/T - 1) log p = log p at T = 0.5
    p_weights = torch.cat([particle_weights(ref[:2]), particle_weights(ref[2:])])
    torch.testing.assert_close(objective.compute(inputs, args).loss, -(p_weights * policy).sum() / 8)


def test_a_positive_nll_weight_adds_the_unweighted_nll():
    objective = LOSSES["smc_distill"]
    policy_tokens = torch.log(torch.tensor([[0.5, 0.5], [0.25, 1.0]]))
    inputs = LossInputs(
        policy_tokens.sum(1),
        torch.zeros(2),
        policy_tokens,
        torch.ones(2, 2, dtype=torch.bool),
        groups=torch.tensor([0, 0]),
        log_weights=torch.zeros(2),
    )
    without = objective.compute(inputs, SimpleNamespace(target_temperature=0.5, nll_weight=0.0)).loss
    with_nll = objective.compute(inputs, SimpleNamespace(target_temperature=0.5, nll_weight=0.5))
    torch.testing.assert_close(with_nll.loss - without, 0.5 * -policy_tokens.mean())
    assert "loss/nll" in with_nll.metrics
