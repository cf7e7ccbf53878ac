# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A block-diffusion model answering several prompts: L_p (exact block DP) tempers every prompt's distribution."""

import itertools

import torch
from configs import quiet_config
from datasets import Dataset
from tiny_models import tiny_bert

from hf_seqtemp import SeqTempTrainer
from hf_seqtemp.likelihood.block_diffusion import BlockDiffusionScorer
from hf_seqtemp.models.diffusion import BlockDiffusionWrapper

MASK, VOCAB, LENGTH, BLOCK = 4, 4, 3, 2  # real tokens 0-3 and the mask; a 1-token prompt + 3 completion tokens
PROMPTS = (0, 1, 2)
TAILS = list(itertools.product(range(VOCAB), repeat=LENGTH))
SEQUENCES = torch.tensor([[c, *tail] for c in PROMPTS for tail in TAILS])
GROUPS = torch.tensor([c for c in PROMPTS for _ in TAILS])
COMPLETION = torch.tensor([[False] + [True] * LENGTH] * len(SEQUENCES))


@torch.no_grad()
def exact_logps(adapter) -> torch.Tensor:
    """Exact log p(x | c) of every completion of every prompt, by the block DP."""
    return BlockDiffusionScorer(BLOCK)(adapter.eval(), SEQUENCES, None, COMPLETION).double()


def per_prompt_kl(ref: torch.Tensor, model: torch.Tensor, temperature: float) -> list[float]:
    out = []
    for c in PROMPTS:
        log_pt = ref[GROUPS == c] / temperature
        log_pt = log_pt - torch.logsumexp(log_pt, 0)
        log_q = model[GROUPS == c] - torch.logsumexp(model[GROUPS == c], 0)
        out.append((log_pt.exp() * (log_pt - log_q)).sum().item())
    return out


def test_block_diffusion_l_p_tempers_every_prompt(tmp_path):
    model = BlockDiffusionWrapper(tiny_bert(VOCAB + 1, seed=0, init=0.5), MASK, BLOCK)
    ref = exact_logps(model)
    generator = torch.Generator().manual_seed(0)
    rows = []
    for c in PROMPTS:  # 128 exact samples of p(·|c) per prompt
        members = (GROUPS == c).nonzero().flatten()
        probs = (ref[members] - torch.logsumexp(ref[members], 0)).exp().float()
        rows.append(members[torch.multinomial(probs, 128, replacement=True, generator=generator)])
    picked = torch.cat(rows)
    data = Dataset.from_dict(
        {"input_ids": SEQUENCES[picked].tolist(), "completion_mask": COMPLETION[picked].int().tolist()}
    )
    start = per_prompt_kl(ref, ref, 0.5)
    args = quiet_config(
        output_dir=str(tmp_path),
        target_temperature=0.5,
        likelihood_method="exact",
        nll_weight=0.05,
        learning_rate=3e-3,
        max_steps=120,
        per_device_train_batch_size=48,
        num_generations=16,
        lr_scheduler_type="constant",
        logging_steps=120,
        seed=0,
    )
    trainer = SeqTempTrainer(model, args, train_dataset=data)
    trainer.train()
    end = per_prompt_kl(ref, exact_logps(model), 0.5)
    assert min(start) > 0.05, start
    assert all(e < s / 3 for s, e in zip(start, end)), (start, end)
