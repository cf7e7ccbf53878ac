# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Monte-Carlo sequence likelihoods of masked-diffusion LMs over random unmasking orders (Eq. 10, 23)."""

from __future__ import annotations

import math

import torch

from ..checks import check_int
from ..models.layout import block_index, real_token_log_softmax
from .base import SequenceScorer


def check_diffusion_inputs(model, input_ids, attention_mask, completion_mask) -> None:
    """Checks what every diffusion scorer needs: a `DiffusionLM` wrapper with a mask id, and no mask token among the
    real tokens."""
    mask_token_id = getattr(model, "mask_token_id", None)
    if mask_token_id is None:
        raise TypeError(
            f"`model` must be a DiffusionLM wrapper with a `mask_token_id`, got {type(model).__name__}. "
            "Wrap it first: `hf_seqtemp.models.diffusion.wrap_diffusion_model(model, tokenizer)`."
        )
    real = attention_mask.bool()
    if ((input_ids == mask_token_id) & real).any():
        raise ValueError(
            f"`input_ids` contains the mask token {mask_token_id} at a non-padding position; a sequence to score must "
            "be fully unmasked."
        )
    if getattr(model, "shift_logits", False):
        first = real.int().argmax(dim=1)
        rows = torch.arange(input_ids.shape[0], device=input_ids.device)
        if (completion_mask[rows, first] & real.any(dim=1)).any():
            raise ValueError(
                "`completion_mask` marks the first real token of a row, but a shifted-logits (Dream-style) model has "
                "no prediction for it: start the completion after a prompt or BOS token."
            )


def sample_orders(
    attention_mask: torch.Tensor,
    completion_mask: torch.Tensor,
    num_orders: int,
    block_size: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draws uniformly random unmasking orders of the completion positions, as reveal steps.

    Args:
        attention_mask (`torch.Tensor` of shape `(batch, length)`): 1 for real tokens.
        completion_mask (`torch.BoolTensor` of shape `(batch, length)`): positions to unmask.
        num_orders (`int`): orders per row, k.
        block_size (`int`, *optional*): if given, only block-respecting orders (blocks of `block_size` real tokens
            are unmasked one after the other, uniformly at random within each block).
        generator (`torch.Generator`, *optional*): CPU generator for reproducibility.

    Returns:
        `torch.LongTensor` of shape `(batch, num_orders, length)`: the step (0-based) at which each completion position
        is unmasked, `-1` at prompt and padding positions.

    Example:
    ```python
    >>> orders = sample_orders(torch.ones(1, 4), torch.tensor([[0, 1, 1, 1]]).bool(), 2)
    >>> sorted(orders[0, 0].tolist())
    [-1, 0, 1, 2]
    ```
    """
    batch, length = completion_mask.shape
    where = generator.device if generator is not None else completion_mask.device  # drawn where the generator lives
    keys = torch.rand(batch, num_orders, length, generator=generator, device=where).to(completion_mask.device)
    if block_size is not None:
        keys = keys + block_index(attention_mask, block_size)[:, None, :]
    comp = completion_mask[:, None, :].expand_as(keys)
    keys = torch.where(comp, keys, torch.full_like(keys, math.inf))
    ranks = keys.argsort(dim=-1).argsort(dim=-1)
    return torch.where(comp, ranks, torch.full_like(ranks, -1))


def _check_orders(orders: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    batch, length = completion_mask.shape
    if (
        not isinstance(orders, torch.Tensor)
        or orders.dim() != 3
        or orders.shape[0] != batch
        or orders.shape[2] != length
    ):
        raise ValueError(
            f"`orders` must be a tensor of shape (batch={batch}, k, length={length}) of reveal steps, got "
            f"{getattr(orders, 'shape', type(orders).__name__)}. Use `sample_orders` to build one."
        )
    orders = orders.to(completion_mask.device).long()
    comp = completion_mask[:, None, :].expand_as(orders)
    big = torch.full_like(orders, length + 1)
    got = torch.where(comp, orders, big).sort(dim=-1).values
    steps = torch.arange(length, device=orders.device).expand_as(orders)
    want = torch.where(steps < comp.sum(-1, keepdim=True), steps, big)
    if not torch.equal(got, want):
        raise ValueError(
            "`orders` must give each row's m completion positions the steps 0..m-1, each exactly once; got a row "
            "that does not. Use `sample_orders` to build valid orders."
        )
    return torch.where(comp, orders, torch.full_like(orders, -1))


def monte_carlo_log_likelihood(order_logps: torch.Tensor) -> torch.Tensor:
    """The `k`-sample Monte-Carlo log-likelihood `log p~(x) = log (1/k) sum_i p(x; pi_i)` (Eq. 23).

    Biased for finite `k` (Remark 4.5), consistent as `k -> infinity`; computed with `logsumexp` in float32.

    Args:
        order_logps (`torch.FloatTensor` of shape `(batch, k)`): `log p(x; pi_i)` for `k` sampled orders.

    Returns:
        `torch.FloatTensor` of shape `(batch,)`.

    Example:
    ```python
    >>> monte_carlo_log_likelihood(torch.log(torch.tensor([[0.2, 0.4]]))).exp()
    tensor([0.3000])
    ```
    """
    if order_logps.dim() != 2 or order_logps.shape[1] == 0:
        raise ValueError(f"`order_logps` must have shape (batch, k) with k >= 1, got {tuple(order_logps.shape)}.")
    return torch.logsumexp(order_logps.float(), dim=1) - math.log(order_logps.shape[1])


def order_step_logps(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_mask: torch.Tensor,
    orders: torch.Tensor,
    token_temperature: float = 1.0,
    max_batch: int = 64,
) -> torch.Tensor:
    """The sequential conditionals of Eq. 2 along each given order, one per reveal step.

    `[b, j, s] = log p(x_{π_s} | x_{π_<s}, prompt)`: the log-probability of the token revealed at step `s` of order
    `j`, given the state before that step (the completion positions revealed at steps `< s` visible, the others
    masked). Every partial state (a row, an order, a step) is one masked copy of the row; all states of the batch
    are stacked and run `max_batch` at a time, so a batch costs `ceil(sum_rows k * m_row / max_batch)` forward calls.

    Args:
        model ([`~hf_seqtemp.models.base.DiffusionLM`]): wrapper with `mask_token_id`.
        input_ids, attention_mask, completion_mask (`torch.Tensor` of shape `(batch, length)`): the batch.
        orders (`torch.LongTensor` of shape `(batch, k, length)`): reveal steps, see [`sample_orders`].
        token_temperature (`float`, *optional*, defaults to `1.0`): logits / T at every step.
        max_batch (`int`, *optional*, defaults to `64`): partial states per forward call.

    Returns:
        `torch.FloatTensor` of shape `(batch, k, length)`, 0 at steps `s >= m_b` (row b has `m_b` completion
        positions), differentiable with respect to the model's parameters.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import MaskedLMWrapper, tiny_masked_lm
    >>> model = MaskedLMWrapper(tiny_masked_lm(), mask_token_id=5)
    >>> ids, completion = torch.tensor([[1, 2, 3]]), torch.tensor([[False, True, True]])
    >>> orders = sample_orders(torch.ones_like(ids), completion, 2)
    >>> order_step_logps(model, ids, torch.ones_like(ids), completion, orders)[0, :, 2].tolist()
    [0.0, 0.0]
    ```
    """
    batch, k, length = orders.shape
    m = completion_mask.sum(dim=1)
    step = torch.arange(length, device=input_ids.device)
    valid = step[None, None, :] < m[:, None, None]  # (batch, k, step)
    rows, order_idx, steps = valid.expand(batch, k, length).nonzero(as_tuple=True)
    values = []
    for start in range(0, rows.numel(), max_batch):
        b, j, t = (
            rows[start : start + max_batch],
            order_idx[start : start + max_batch],
            steps[start : start + max_batch],
        )
        ranks = orders[b, j]
        ids = input_ids[b]
        states = torch.where(ranks >= t[:, None], torch.full_like(ids, model.mask_token_id), ids)
        logits = model(states, attention_mask[b])
        target_pos = (ranks == t[:, None]).int().argmax(dim=1)
        here = torch.arange(b.numel(), device=ids.device)
        step_logits = logits[here, target_pos].float() / token_temperature
        step_logps = real_token_log_softmax(step_logits, model.mask_token_id)
        values.append(step_logps.gather(-1, ids[here, target_pos][:, None]).squeeze(-1))
    flat = torch.zeros(batch * k * length, device=input_ids.device)
    if values:
        flat = flat.index_copy(0, (rows * k + order_idx) * length + steps, torch.cat(values))
    return flat.view(batch, k, length)


def order_logps(*args, **kwargs) -> torch.Tensor:
    """`log p(x; π)` of Eq. 2 for each given order: the sum of [`order_step_logps`] (same arguments) over the steps.

    Returns:
        `torch.FloatTensor` of shape `(batch, k)`, differentiable with respect to the model's parameters.
    """
    return order_step_logps(*args, **kwargs).sum(dim=2)


class MaskedDiffusionScorer(SequenceScorer):
    """[`SequenceScorer`] that estimates `log p(x)` of a masked-diffusion LM from k random unmasking orders (Eq. 23).

    For a uniformly random order π of the completion positions (Cor. 4.4), `p(x; π)` is the product of the
    sequential conditionals `p(x_{π_t} | x_{π_<t}, prompt)` (Eq. 2). With `estimator="mc"` the score is
    `log (1/k) Σ_j p(x; π_j)` = `logsumexp_j log p(x; π_j) - log k`, a consistent estimator of `log p(x)` that is
    biased low for finite k (Remark 4.5). With `estimator="elbo"` it is `(1/k) Σ_j log p(x; π_j)`, the order ELBO of
    Eq. 4 (a lower bound on `log p(x)` in expectation). Prompt positions stay visible and padding stays absent
    throughout; only completion positions are ever masked and scored. Conditionals are renormalised over the real
    tokens ([`real_token_log_softmax`]), the token support of the decoder.

    Args:
        num_orders (`int`, *optional*, defaults to `4`): k, orders sampled per row and call.
        estimator (`str`, *optional*, defaults to `"mc"`): `"mc"` (Eq. 23) or `"elbo"`.
        seed (`int`, *optional*): seeds a private generator, so a fresh scorer draws the same orders. The orders of
            the last call are kept in `last_orders`; pass them back with [`~MaskedDiffusionScorer.score_orders`].
        token_temperature (`float`, *optional*, defaults to `1.0`): myopic baseline, logits / T at every step.
        max_batch (`int`, *optional*, defaults to `64`): partial states per forward call.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import MaskedLMWrapper, tiny_masked_lm
    >>> scorer = MaskedDiffusionScorer(num_orders=2, seed=0)
    >>> scorer(MaskedLMWrapper(tiny_masked_lm(), mask_token_id=5), torch.tensor([[1, 2, 3], [4, 0, 1]])).shape
    torch.Size([2])
    ```
    """

    def __init__(
        self,
        num_orders: int = 4,
        estimator: str = "mc",
        seed: int | None = None,
        token_temperature: float = 1.0,
        max_batch: int = 64,
    ):
        super().__init__(token_temperature)
        self.num_orders = check_int(num_orders, "num_orders")
        if estimator not in ("mc", "elbo"):
            raise ValueError(f"`estimator` must be 'mc' or 'elbo', got {estimator!r}.")
        self.estimator = estimator
        self.max_batch = check_int(max_batch, "max_batch")
        self.seed = seed
        self.generator = torch.Generator(device="cpu").manual_seed(seed) if seed is not None else None
        self.last_orders: torch.Tensor | None = None

    _block_size: int | None = None  # set by the block-respecting MC estimator

    def score(self, model, input_ids, attention_mask, completion_mask):
        orders = sample_orders(attention_mask, completion_mask, self.num_orders, self._block_size, self.generator)
        return self.score_orders(model, input_ids, attention_mask, completion_mask, orders)

    def order_logps(self, model, input_ids, attention_mask=None, completion_mask=None, orders=None) -> torch.Tensor:
        """`log p(x; π)` per row and order, shape `(batch, k)`; samples k orders when `orders` is `None`."""
        input_ids, attention_mask, completion_mask = self._check_inputs(input_ids, attention_mask, completion_mask)
        check_diffusion_inputs(model, input_ids, attention_mask, completion_mask)
        if orders is None:
            orders = sample_orders(attention_mask, completion_mask, self.num_orders, self._block_size, self.generator)
        orders = _check_orders(orders, completion_mask)
        self.last_orders = orders
        return order_logps(
            model, input_ids, attention_mask, completion_mask, orders, self.token_temperature, self.max_batch
        )

    def score_orders(self, model, input_ids, attention_mask=None, completion_mask=None, orders=None) -> torch.Tensor:
        """Like calling the scorer, with explicit `orders` of shape `(batch, k, length)` (see [`sample_orders`])."""
        logps = self.order_logps(model, input_ids, attention_mask, completion_mask, orders)
        if self.estimator == "elbo":
            return logps.mean(dim=1)
        return monte_carlo_log_likelihood(logps)
