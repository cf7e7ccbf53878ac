# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""How [`SeqTempTrainer`] scores each model family: one small strategy object per family, no `if family` chains."""

from __future__ import annotations

import torch

from ..likelihood import AutoregressiveScorer
from ..likelihood.block_diffusion import BlockDiffusionScorer
from ..likelihood.masked_diffusion import MaskedDiffusionScorer, sample_orders
from ..losses import token_nll
from ..losses.elbo import diffusion_elbo_loss
from ..models.base import DiffusionLM


def order_seed(seed: int, example_id: int) -> int:
    """Seed of the reference orders of one example: `(seed · 1000003 + example_id) mod 2^63`.

    Example:
    ```python
    >>> order_seed(42, 7)
    42000133
    ```
    """
    return (int(seed) * 1_000_003 + int(example_id)) % (1 << 63)


def _per_example_orders(batch, num_orders: int, block_size: int | None, seed: int) -> torch.Tensor:
    """Reveal orders drawn per example from `order_seed(seed, example_id)` over its real tokens only, so the draw
    does not depend on batching or padding; shape `(batch, num_orders, length)`, -1 off the completion."""
    attention, completion = batch["attention_mask"], batch["completion_mask"].bool()
    orders = torch.full((*completion.shape[:1], num_orders, completion.shape[1]), -1, dtype=torch.long)
    for row, example_id in enumerate(batch["example_id"].tolist()):
        real = attention[row].bool().nonzero(as_tuple=True)[0].cpu()
        generator = torch.Generator().manual_seed(order_seed(seed, example_id))
        drawn = sample_orders(
            torch.ones(1, real.numel(), dtype=torch.long), completion[row, real][None].cpu(), num_orders, block_size,
            generator,
        )
        orders[row, :, real] = drawn[0]
    return orders.to(completion.device)


class CausalLMFamily:
    """Exact autoregressive scoring; the anti-drift term is the token NLL.

    Args:
        scorer ([`AutoregressiveScorer`], *optional*): defaults to the exact one.

    Example:
    ```python
    >>> CausalLMFamily().name
    'causal_lm'
    ```
    """

    name = "causal_lm"
    losses = ("ratio", "ssts", "c_div", "trunc_r", "lambda_pr")

    def __init__(self, scorer=None):
        self.scorer = scorer if scorer is not None else AutoregressiveScorer()

    def score(self, model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Sequence log q(x) with grad, and the per-token values the token losses need."""
        token_logps, mask = self.scorer.token_logps(
            model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
        )
        return token_logps.sum(1), {"token_logps": token_logps, "completion_mask": mask}

    def anti_drift_loss(self, model, batch, extra: dict[str, torch.Tensor]) -> torch.Tensor:
        return token_nll(extra["token_logps"], extra["completion_mask"])

    def hyperparameters(self) -> dict:
        return {}

    @torch.no_grad()
    def reference(self, model, batch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Reference log p(x) per sequence and per token."""
        token_logps, _ = self.scorer.token_logps(
            model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
        )
        return token_logps.sum(1), token_logps


class DiffusionFamily:
    """Masked- or block-diffusion scoring (Section 4) for L_p (exact block DP, Prop. 4.6) or L_k (Eq. 23-24).

    The trained model q_T is scored with `num_orders` fresh random orders per step (`method="mc"`) or exactly by
    the block DP (`method="exact"`, block diffusion only). The reference p uses `ref_num_orders` orders drawn from
    [`order_seed`]`(seed, example_id)`, so its precomputed values are reproducible. The anti-drift term is the
    model's own diffusion objective L_diff (Eq. 4, [`diffusion_elbo_loss`]).

    Args:
        family (`str`): `"masked_diffusion"` or `"block_diffusion"`.
        block_size (`int`, *optional*): B, required for block diffusion.
        method (`str`, *optional*): `"exact"` or `"mc"`; defaults to `"exact"` for block diffusion, `"mc"` for
            masked diffusion (whose exact likelihood sums over all L! orders).
        num_orders (`int`, *optional*, defaults to 4): k for the trained model.
        ref_num_orders (`int`, *optional*): k for the reference; defaults to `num_orders`.
        seed (`int`, *optional*, defaults to 0): seeds the reference orders.

    Example:
    ```python
    >>> DiffusionFamily("block_diffusion", block_size=2).method
    'exact'
    ```
    """

    losses = ("ratio",)

    def __init__(self, family, block_size=None, method=None, num_orders=4, ref_num_orders=None, seed=0):
        if family not in ("masked_diffusion", "block_diffusion"):
            raise ValueError(f"`family` must be 'masked_diffusion' or 'block_diffusion', got {family!r}.")
        if family == "block_diffusion" and block_size is None:
            raise ValueError("a block-diffusion model needs a `block_size`; its adapter has none.")
        method = method or ("exact" if family == "block_diffusion" else "mc")
        if method == "exact" and family == "masked_diffusion":
            raise ValueError(
                "`likelihood_method='exact'` is only available for block diffusion (the block DP); a masked-diffusion "
                "model's exact likelihood sums over all L! orders. Use `likelihood_method='mc'`."
            )
        self.name, self.method, self.seed = family, method, seed
        self.block_size = block_size if family == "block_diffusion" else None
        ref_num_orders = ref_num_orders if ref_num_orders is not None else num_orders
        if self.block_size is not None:
            self.scorer = BlockDiffusionScorer(self.block_size, method, num_orders=num_orders)
            self.ref_scorer = BlockDiffusionScorer(self.block_size, method, num_orders=ref_num_orders)
        else:
            self.scorer = MaskedDiffusionScorer(num_orders)
            self.ref_scorer = MaskedDiffusionScorer(ref_num_orders)
        self.ref_num_orders = ref_num_orders

    def score(self, model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Sequence log q̃(x) with grad (exact or k-order estimate); no per-token values."""
        logps = self.scorer(model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"])
        return logps, {"completion_mask": batch["completion_mask"].bool()}

    def hyperparameters(self) -> dict:
        """What is saved in `SequenceTemperatureConfig.training_hyperparameters` about the likelihood."""
        values = {"likelihood_method": self.method, "block_size": self.block_size}
        if self.method == "mc":
            values.update(num_orders=self.scorer.mc.num_orders if self.block_size else self.scorer.num_orders,
                          ref_num_orders=self.ref_num_orders, ref_order_seed=self.seed)
        return values

    def anti_drift_loss(self, model, batch, extra: dict[str, torch.Tensor]) -> torch.Tensor:
        return diffusion_elbo_loss(
            model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"], self.block_size
        )

    @torch.no_grad()
    def reference(self, model, batch) -> tuple[torch.Tensor, None]:
        """Reference log p(x): exact, or the k-order estimate over the example's seeded orders."""
        ids, attention, completion = batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
        if self.method == "exact":
            return self.ref_scorer(model, ids, attention, completion), None
        mc = self.ref_scorer.mc if isinstance(self.ref_scorer, BlockDiffusionScorer) else self.ref_scorer
        orders = _per_example_orders(batch, self.ref_num_orders, self.block_size, self.seed)
        return mc.score_orders(model, ids, attention, completion, orders), None


def family_for(model, args, scorer=None) -> CausalLMFamily | DiffusionFamily:
    """The family strategy of a (possibly PEFT-wrapped) model: a [`DiffusionLM`] adapter is diffusion.

    Raises:
        ValueError: when a `scorer` is given for a diffusion model (its scorers follow `args`).
    """
    if isinstance(model, DiffusionLM):
        if scorer is not None:
            raise ValueError(
                "`scorer` is only used for causal LMs; a diffusion model is scored as `args.likelihood_method`, "
                "`args.num_orders` and `args.ref_num_orders` say. Pass `scorer=None`."
            )
        return DiffusionFamily(
            model.family, model.block_size, args.likelihood_method, args.num_orders, args.ref_num_orders, args.seed
        )
    return CausalLMFamily(scorer)
