# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""How [`SeqTempTrainer`] treats each model family: one small strategy object per family, no `if family` chains.

A family decides how a model is scored (with grad, and as the reference), what its anti-drift term is, where a PEFT
adapter goes, which reference columns are stored, and what the trainer may do with it (sample completions of
prompt-only data, start at token temperature T, measure the myopic baseline for the card). The trainer only reads
these answers; it never asks which family it holds.
"""

from __future__ import annotations

import torch

from ..likelihood import AutoregressiveScorer
from ..likelihood.block_diffusion import BlockDiffusionScorer
from ..likelihood.elbo import diffusion_elbo_loss
from ..likelihood.masked_diffusion import (
    MaskedDiffusionScorer,
    check_diffusion_inputs,
    monte_carlo_log_likelihood,
    order_step_logps,
    sample_orders,
)
from ..losses import DIFFUSION_LOSSES, LOSSES, token_nll
from ..models.base import DiffusionLM
from ..peft_compat import peft_deprecations_silenced
from .token_temperature_init import fold_token_temperature, with_trainable_final_norm


def attach_adapter(module: torch.nn.Module, peft_config, token_temperature: float | None = None):
    """`get_peft_model(module, peft_config)`, started at token temperature `token_temperature` when given (the final
    norm scaled by 1/T, [`fold_token_temperature`]), with the base model's name recorded for `AutoPeftModel` (PEFT
    leaves it empty for a model built from a config)."""
    from peft import get_peft_model

    if token_temperature is not None:
        peft_config = with_trainable_final_norm(peft_config, module)
    with peft_deprecations_silenced():
        peft_model = get_peft_model(module, peft_config)
    if token_temperature is not None:
        fold_token_temperature(peft_model, token_temperature)
    name = getattr(getattr(module, "config", None), "_name_or_path", None)
    for adapter_config in peft_model.peft_config.values():
        if not adapter_config.base_model_name_or_path and name:
            adapter_config.base_model_name_or_path = name
    return peft_model


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
    # drawn on the CPU from each example's own seed (the same orders on any device), then moved: one copy each way
    device = batch["completion_mask"].device
    attention, completion = batch["attention_mask"].cpu(), batch["completion_mask"].bool().cpu()
    orders = torch.full((*completion.shape[:1], num_orders, completion.shape[1]), -1, dtype=torch.long, device="cpu")
    for row, example_id in enumerate(batch["example_id"].tolist()):
        real = attention[row].bool().nonzero(as_tuple=True)[0]
        generator = torch.Generator(device="cpu").manual_seed(order_seed(seed, example_id))
        drawn = sample_orders(
            torch.ones(1, real.numel(), dtype=torch.long, device="cpu"),
            completion[row, real][None],
            num_orders,
            block_size,
            generator,
        )
        orders[row, :, real] = drawn[0]
    return orders.to(device)


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
    objectives = LOSSES
    losses = tuple(LOSSES)
    reference_column = "ref_token_logps"
    samples_completions = True  # prompt-only data gets completions sampled from the reference
    supports_token_temperature_init = True  # `init_from_token_temperature`: a decoder's final norm scaled by 1/T

    def __init__(self, scorer=None):
        self.scorer = scorer if scorer is not None else AutoregressiveScorer()

    @property
    def measures_held_out(self) -> bool:
        """Whether the card can score this family's base model, myopic baseline and tempered model (token
        temperature needs the exact autoregressive scorer)."""
        return isinstance(self.scorer, AutoregressiveScorer)

    def with_adapter(self, model, peft_config, token_temperature: float | None = None):
        """`model` with a PEFT adapter ([`attach_adapter`])."""
        return attach_adapter(model, peft_config, token_temperature)

    def extra_reference_columns(self, example_ids: list[int]) -> dict[str, list]:
        """Columns stored with the reference log-probabilities besides `ref_logps` (none: the reference is exact)."""
        return {}

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

    def reference_rows(self, values: torch.Tensor, batch) -> list[list[float]]:
        """The per-token reference values of each row, as stored in the `ref_token_logps` column."""
        lengths = batch["attention_mask"].sum(1).tolist()
        return [values[row, :n].float().cpu().tolist() for row, n in enumerate(lengths)]

    def stored_reference(self, batch) -> torch.Tensor | None:
        """The stored per-token reference values of a collated batch, `(batch, length)`, or `None`."""
        return batch.get(self.reference_column)


class DiffusionFamily:
    """Masked- or block-diffusion scoring (Section 4) for L_p (exact block DP, Prop. 4.6) or L_k (Eq. 23-24).

    The trained model q_T is scored with `num_orders` fresh random orders per step (`method="mc"`) or exactly by
    the block DP (`method="exact"`, block diffusion only). The reference p uses `ref_num_orders` orders drawn from
    [`order_seed`]`(seed, example_id)`, so its precomputed values are reproducible. The anti-drift term is the
    model's own diffusion objective L_diff (Eq. 4, [`diffusion_elbo_loss`]). Objectives over the unmasking steps
    (`loss_type="ssts"`) use [`SteppedDiffusionFamily`] instead ([`family_for`] picks it).

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

    objectives = DIFFUSION_LOSSES
    losses = tuple(DIFFUSION_LOSSES)
    reference_column = "ref_step_logps"
    measures_held_out = False  # the myopic baseline of the card is token temperature on a causal LM
    samples_completions = False  # completions are sampled from causal LMs only
    supports_token_temperature_init = False

    def __init__(self, family, block_size=None, method=None, num_orders=4, ref_num_orders=None, seed=0):
        if family not in ("masked_diffusion", "block_diffusion"):
            raise ValueError(f"`family` must be 'masked_diffusion' or 'block_diffusion', got {family!r}.")
        if family == "block_diffusion" and block_size is None:
            raise ValueError("a block-diffusion model needs a `block_size`; its wrapper has none.")
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

    def with_adapter(self, model, peft_config, token_temperature: float | None = None):
        """`model` with a PEFT adapter on the model inside its wrapper, which is what is saved and reloaded."""
        model.model = attach_adapter(model.model, peft_config, token_temperature)
        return model

    def extra_reference_columns(self, example_ids: list[int]) -> dict[str, list]:
        """`ref_order_seed`: the seed of each example's reference orders ([`order_seed`]), for the k-order estimate."""
        return {"ref_order_seed": [order_seed(self.seed, i) for i in example_ids]} if self.method == "mc" else {}

    def score(self, model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Sequence log q̃(x) with grad (exact or k-order estimate); no per-token values."""
        logps = self.scorer(model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"])
        return logps, {"completion_mask": batch["completion_mask"].bool()}

    def hyperparameters(self) -> dict:
        """What is saved in `SequenceTemperatureConfig.training_hyperparameters` about the likelihood."""
        values = {"likelihood_method": self.method, "block_size": self.block_size}
        if self.method == "mc":
            values.update(
                num_orders=self.scorer.num_orders,
                ref_num_orders=self.ref_num_orders,
                ref_order_seed=self.seed,
            )
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
        orders = _per_example_orders(batch, self.ref_num_orders, self.block_size, self.seed)
        return self.ref_scorer.score_orders(model, ids, attention, completion, orders), None

    def reference_rows(self, values: torch.Tensor, batch) -> list[list[float]]:
        """Per-step values `(batch, k, steps)` stored per example as one flat list of length k·m, order-major."""
        lengths = batch["completion_mask"].bool().sum(1).tolist()
        return [values[row, :, :m].reshape(-1).float().cpu().tolist() for row, m in enumerate(lengths)]

    def stored_reference(self, batch) -> torch.Tensor | None:
        """The stored per-step reference values of a collated batch, `(batch, k, max m)`, or `None`."""
        flat = batch.get(self.reference_column)
        if flat is None:
            return None
        lengths = batch["completion_mask"].bool().sum(1).tolist()
        k = self.ref_num_orders
        values = flat.new_zeros(len(lengths), k, max(lengths))
        for row, m in enumerate(lengths):
            values[row, :, :m] = flat[row, : k * m].view(k, m)
        return values


class SteppedDiffusionFamily(DiffusionFamily):
    """Diffusion scoring for objectives over the unmasking steps (`loss_type="ssts"`, Eq. 18 / 28).

    Each example is scored along its k orders drawn from [`order_seed`]`(seed, example_id)` (block-respecting for
    block diffusion), by the trained model (with grad, at every step) and by the reference (once, stored in the
    `ref_step_logps` column as k·m values): `[b, j, s] = log q(x_{Δ_s} | x_{π_{s-1}})` along order j. Both sides use
    the *same* orders, because the importance weight of a step refers to the state that step conditions on. The
    sequence log-likelihoods (for the logged T_eff, τ and the `ref_logps` column) are the k-order estimates of
    Eq. 23 along those orders, from the same model calls.

    Args:
        family, block_size, num_orders, seed: as for [`DiffusionFamily`]; k = `num_orders` for both sides.
        method (`str`, *optional*): `None` or `"mc"`; the exact block DP has no per-step values.
        ref_num_orders (`int`, *optional*): `None` or equal to `num_orders`.

    Example:
    ```python
    >>> SteppedDiffusionFamily("masked_diffusion", num_orders=2).ref_num_orders
    2
    ```
    """

    def __init__(self, family, block_size=None, method=None, num_orders=4, ref_num_orders=None, seed=0):
        if method == "exact":
            raise ValueError(
                "`likelihood_method='exact'` cannot be used with loss_type='ssts': its importance weights need the "
                "per-step conditionals along sampled orders, which the block DP does not give. Use "
                "`likelihood_method=None` or 'mc'."
            )
        if ref_num_orders is not None and ref_num_orders != num_orders:
            raise ValueError(
                f"`ref_num_orders`={ref_num_orders} differs from `num_orders`={num_orders}, but loss_type='ssts' "
                "scores the trained model along the reference's own orders. Leave `ref_num_orders=None`."
            )
        super().__init__(family, block_size, "mc", num_orders, num_orders, seed)

    def _step_logps(self, model, batch) -> tuple[torch.Tensor, torch.Tensor]:
        ids, attention, completion = batch["input_ids"], batch["attention_mask"], batch["completion_mask"].bool()
        check_diffusion_inputs(model, ids, attention, completion)
        orders = _per_example_orders(batch, self.ref_num_orders, self.block_size, self.seed)
        steps = order_step_logps(model, ids, attention, completion, orders)[..., : int(completion.sum(1).max())]
        sequence = monte_carlo_log_likelihood(steps.sum(-1))
        return sequence, steps

    def score(self, model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """k-order estimate of log q(x) and the per-step conditionals `(batch, k, steps)`, both with grad."""
        sequence, steps = self._step_logps(model, batch)
        return sequence, {"token_logps": steps, "completion_mask": batch["completion_mask"].bool()}

    @torch.no_grad()
    def reference(self, model, batch) -> tuple[torch.Tensor, torch.Tensor]:
        """k-order estimate of log p(x) and the reference's per-step conditionals along the seeded orders."""
        return self._step_logps(model, batch)


def family_for(model, args, scorer=None) -> CausalLMFamily | DiffusionFamily:
    """The family strategy of a (possibly PEFT-wrapped) model: a [`DiffusionLM`] wrapper is diffusion.

    Raises:
        ValueError: when a `scorer` is given for a diffusion model (its scorers follow `args`).
    """
    if isinstance(model, DiffusionLM):
        if scorer is not None:
            raise ValueError(
                "`scorer` is only used for causal LMs; a diffusion model is scored as `args.likelihood_method`, "
                "`args.num_orders` and `args.ref_num_orders` say. Pass `scorer=None`."
            )
        objective = DIFFUSION_LOSSES.get(args.loss_type)
        # an objective that needs reference values per step is trained on the model's values per step
        stepped = objective is not None and objective.needs_ref_token_logps
        return (SteppedDiffusionFamily if stepped else DiffusionFamily)(
            model.family, model.block_size, args.likelihood_method, args.num_orders, args.ref_num_orders, args.seed
        )
    return CausalLMFamily(scorer)
