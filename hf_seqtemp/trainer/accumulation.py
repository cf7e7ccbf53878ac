# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Gradient accumulation as one big batch for token means (transformers' `num_items_in_batch`)."""

from __future__ import annotations

import torch


class TokenAccumulationMixin:
    """Counts the completion tokens of an optimisation step's accumulated micro-batches ([`SeqTempTrainer`] scales
    each micro-batch's token means by them, as transformers divides a token sum by `num_items_in_batch`)."""

    def _get_num_items_in_batch(self, batch_samples: list, device: torch.device):
        """The completion tokens of the gradient-accumulation steps of one optimisation step, over every process:
        what a token mean divides by to equal the token mean of one big batch (transformers counts `labels`)."""
        if not batch_samples or any("completion_mask" not in batch for batch in batch_samples):
            return None
        count = sum(batch["completion_mask"].bool().sum() for batch in batch_samples).to(device)
        if self.accelerator.num_processes > 1:
            count = self.accelerator.gather(count.reshape(1)).sum()
        return count

    def _token_scale(self, completion_mask: torch.Tensor, num_items_in_batch) -> float | torch.Tensor:
        """`tokens of this step (all processes) × accumulation steps / tokens of all the steps`: a token mean of
        this step times it, divided by the steps as `Trainer` does, adds up to the token mean of the whole batch."""
        steps = getattr(self, "current_gradient_accumulation_steps", 1) or 1
        if num_items_in_batch is None or steps == 1:
            return 1.0
        tokens = completion_mask.bool().sum().to(torch.float32)
        return tokens * steps / torch.as_tensor(num_items_in_batch, dtype=torch.float32, device=tokens.device)
