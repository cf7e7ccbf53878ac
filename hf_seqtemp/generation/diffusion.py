# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Diffusion decoding = position policy × token sampler.

Each step the position policy ([`select_positions`]) picks *where* to unmask inside the current block, and the token
sampler picks *what* to put there: either the local tempered categorical that LLaDA/Dream use
(`softmax(logits / token_temperature)`), or IMH global tempering (Alg. 1 of Fang et al.) targeting the one-step
conditional of `p(x)^alpha`, `alpha = 1 / seq_temperature` (Eq. 8-10).

IMH cost: the initial state and the `num_proposals` proposals are evaluated in ONE batched forward call (duplicates
once), and the accepted candidate's logits are the next step's logits. The last step of a block has no masked
position left to look ahead to, so Δ̂ = 0, every proposal is accepted and no call is made. Decoding `n` tokens
therefore takes the same `n` sequential model calls as confidence decoding; only the batch is wider.

The decoder and the scorers share the block layout ([`block_index`]: blocks counted from each row's first real
token) and the token support ([`real_token_log_softmax`]: the mask token is never sampled, so every conditional is
renormalised over the real tokens). With `policy="random"`, `tokens_per_step=1` and the local sampler at token
temperature 1, the decoder therefore samples exactly the distribution whose `log p(x)` [`BlockDiffusionScorer`]
computes, for any prompt length and padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.generation.logits_process import TemperatureLogitsWarper
from transformers.utils import ModelOutput

from ..checks import check_generator_device, check_int, check_temperature
from ..models.base import DiffusionLM
from ..models.layout import block_index, real_token_log_softmax
from .imh import imh_chain, lookahead_correction
from .logits_process import PowerLogitsWarper
from .policies import select_positions, validate_policy


@dataclass
class DiffusionGenerateOutput(ModelOutput):
    """Output of [`diffusion_generate`] with `return_dict_in_generate=True`.

    Args:
        sequences (`torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`): prompts and completions.
        acceptance_rate (`torch.FloatTensor` of shape `(batch,)`, *optional*): fraction of IMH proposals accepted
            over the steps that ran a chain (`None` for the local sampler).
        num_model_calls (`int`): sequential (batched) model evaluations made.
        num_evaluated_states (`int`): total sequences the model was run on, duplicates counted once.
    """

    sequences: torch.LongTensor | None = None
    acceptance_rate: torch.FloatTensor | None = None
    num_model_calls: int | None = None
    num_evaluated_states: int | None = None


def _validate(model, input_ids, max_new_tokens, block_length, tokens_per_step, num_proposals, max_batch):
    if not isinstance(model, DiffusionLM):
        raise TypeError(
            f"`diffusion_model` must be a `hf_seqtemp.models.DiffusionLM` wrapper, got {type(model).__name__}. "
            "Wrap the model first, e.g. `MaskedLMWrapper(model, mask_token_id)`."
        )
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError(f"`input_ids` must be a 2-D tensor (batch, length), got {getattr(input_ids, 'shape', None)}.")
    check_int(max_new_tokens, "max_new_tokens")
    check_int(block_length, "block_length", allow_none=True)
    model_block = getattr(model, "block_size", None)
    if block_length is not None and model_block is not None and block_length != model_block:
        raise ValueError(
            f"`block_length` is {block_length} but the block-diffusion model uses block_size={model_block}: decoding "
            f"in other blocks samples a distribution the model does not define. Pass `block_length={model_block}` "
            "or leave it unset."
        )
    block_length = block_length if block_length is not None else model_block
    check_int(tokens_per_step, "tokens_per_step")
    check_int(num_proposals, "num_proposals")
    check_int(max_batch, "max_batch", allow_none=True)
    return block_length


def _forward(model: DiffusionLM, ids: torch.Tensor, attn: torch.Tensor, max_batch: int | None) -> torch.Tensor:
    step = ids.shape[0] if max_batch is None else max_batch
    pieces = [model(ids[i : i + step], attention_mask=attn[i : i + step]) for i in range(0, ids.shape[0], step)]
    return torch.cat(pieces, dim=0).float()


class _Decoder:
    """State of one decoding run; `diffusion_generate` is its public face."""

    def __init__(self, model, alpha, token_temperature, num_proposals, max_batch, do_sample, generator):
        self.model, self.alpha, self.num_proposals = model, alpha, num_proposals
        self.max_batch, self.do_sample, self.generator = max_batch, do_sample, generator
        self.local_warper = TemperatureLogitsWarper(float(token_temperature))
        self.proposal_warper = PowerLogitsWarper(alpha) if alpha is not None else None
        self.calls = 0
        self.states = 0
        self.accepted = None
        self.proposed = 0

    def log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """`log q(x_j = u | s)` in float32 over the real tokens (the scorers' token support)."""
        return real_token_log_softmax(logits, self.model.mask_token_id)

    def forward(self, ids: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.states += ids.shape[0]
        return _forward(self.model, ids, attn, self.max_batch)

    def local_step(self, x, log_probs, positions, valid):
        rows = torch.arange(x.shape[0], device=x.device)[:, None]
        selected = log_probs[rows, positions]  # (batch, k, vocab)
        if self.do_sample:
            scores = self.local_warper(None, selected.reshape(-1, selected.shape[-1]))
            tokens = torch.multinomial(scores.softmax(-1), 1, generator=self.generator).view(positions.shape)
        else:
            tokens = selected.argmax(dim=-1)
        x[rows, positions] = torch.where(valid, tokens, x[rows, positions])
        return x

    def imh_step(self, x, attn, log_probs, positions, valid, remaining):
        """Commits the IMH-chosen tokens at the `valid` `positions`; returns the new state and its logits (or `None`)."""
        batch, k = positions.shape
        rows = torch.arange(batch, device=x.device)
        selected = log_probs[rows[:, None], positions].reshape(batch * k, -1)
        proposal = self.proposal_warper(None, selected).softmax(dim=-1)
        draws = torch.multinomial(proposal, self.num_proposals + 1, replacement=True, generator=self.generator)
        draws = draws.view(batch, k, -1).transpose(1, 2)  # (batch, 1 + N, k); column 0 is the initial state
        # slots past a row's last candidate keep their token, so they neither move nor split duplicates
        draws = torch.where(valid[:, None, :], draws, x[rows[:, None], positions][:, None, :])
        if not remaining.any():
            # nothing left to look ahead to: Δ̂ = 0, the chain accepts every proposal and ends on the last one
            x[rows[:, None], positions] = draws[:, -1]
            return x, None
        key = torch.cat([rows[:, None, None].expand(-1, draws.shape[1], 1), draws], dim=-1).reshape(-1, k + 1)
        unique, inverse = torch.unique(key, dim=0, return_inverse=True)
        owner = unique[:, 0]
        states = x[owner].clone()
        states[torch.arange(len(unique), device=x.device)[:, None], positions[owner]] = unique[:, 1:]
        cand_logits = self.forward(states, attn[owner])
        if self.alpha == 1.0:
            # exact: every inner sum of Eq. 8 is a total probability; skips float round-off rejections
            delta = cand_logits.new_zeros(len(unique))
        else:
            delta = lookahead_correction(self.log_probs(cand_logits), remaining[owner], self.alpha)
        inverse = inverse.view(batch, -1)
        chosen, accepted = imh_chain(delta[inverse], self.generator)
        self.accepted = accepted if self.accepted is None else self.accepted + accepted
        self.proposed += self.num_proposals
        x[rows[:, None], positions] = draws[rows, chosen]
        return x, cand_logits[inverse[rows, chosen]]

    def decode(self, x, attn, completion, block_length, tokens_per_step, policy):
        """Unmasks the `completion` positions of `x`, block by block in the layout of [`block_index`].

        Each row works on its *current block*, the block of its first mask token, exactly as the block-diffusion
        wrapper and the scorers define it; rows with different prompt lengths are in different blocks at the same
        step. A step commits `min(tokens_per_step, masked positions left in the row's current block)` positions.
        """
        mask_id = self.model.mask_token_id
        block = block_index(attn, block_length)
        beyond = block.new_full((), x.shape[1])
        rows = torch.arange(x.shape[0], device=x.device)
        logits = None
        while True:
            masked = (x == mask_id) & completion
            if not masked.any():
                return x
            current = torch.where(masked, block, beyond).min(dim=1, keepdim=True).values
            candidates = masked & (block == current)
            left = candidates.sum(dim=1)
            k = min(tokens_per_step, int(left.max()))
            if logits is None:
                logits = self.forward(x, attn)
            log_probs = self.log_probs(logits)
            positions = select_positions(policy, log_probs.exp(), candidates, k, self.generator)
            valid = torch.arange(k, device=x.device)[None, :] < left[:, None]  # candidates come first in topk
            if self.alpha is None:
                x, logits = self.local_step(x, log_probs, positions, valid), None
            else:
                remaining = candidates.clone()
                remaining[rows[:, None], positions] = False
                x, logits = self.imh_step(x, attn, log_probs, positions, valid, remaining)


@torch.no_grad()
def diffusion_generate(
    diffusion_model: DiffusionLM,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    max_new_tokens: int = 16,
    seq_temperature: float | None = None,
    policy: str = "confidence",
    token_temperature: float = 1.0,
    block_length: int | None = None,
    tokens_per_step: int = 1,
    num_proposals: int = 8,
    max_batch: int | None = None,
    do_sample: bool = True,
    generator: torch.Generator | None = None,
    return_dict_in_generate: bool = False,
) -> DiffusionGenerateOutput | torch.LongTensor:
    """Generates `max_new_tokens` tokens after each prompt with a masked/block diffusion LM.

    Decoding = position policy × token sampler. `policy` chooses where to unmask; the token sampler is the local
    tempered categorical `softmax(logits / token_temperature)` when `seq_temperature` is `None` (what LLaDA and
    Dream do), and IMH global tempering targeting `p(x)^(1 / seq_temperature)` otherwise (Alg. 1 of Fang et al.,
    lookahead over the still-masked positions of the current block). With `tokens_per_step > 1` the IMH
    proposal is the product of the per-position proposals and the chain moves all chosen positions jointly.

    Args:
        diffusion_model ([`DiffusionLM`]): the model's wrapper; put it in `eval()` mode (dropout breaks logit reuse).
        input_ids (`torch.LongTensor` of shape `(batch, prompt_length)`): prompts, left-padded.
        attention_mask (`torch.Tensor` of shape `(batch, prompt_length)`, *optional*): 0 on padding.
        max_new_tokens (`int`, *optional*, defaults to `16`): completion length.
        seq_temperature (`float`, *optional*): sequence temperature `T`; IMH with `alpha = 1 / T` when set.
        policy (`str`, *optional*, defaults to `"confidence"`): `"random"`, `"confidence"`, `"entropy"`,
            `"margin"` or `"left_to_right"`.
        token_temperature (`float`, *optional*, defaults to `1.0`): local temperature of the baseline sampler.
        block_length (`int`, *optional*): semi-autoregressive block length. Blocks are runs of `block_length` real
            tokens counted from the first real token of each row, prompt included ([`block_index`], the layout of
            the scorers and of [`BlockDiffusionWrapper`]), so with a prompt of `P` tokens the first block decoded
            holds `block_length - P % block_length` completion positions. Defaults to the model's `block_size` (one
            block for a masked-diffusion model); another value than a block-diffusion model's is an error.
        tokens_per_step (`int`, *optional*, defaults to `1`): positions committed per step.
        num_proposals (`int`, *optional*, defaults to `8`): IMH proposals `N` per step.
        max_batch (`int`, *optional*): split the batched IMH evaluation into chunks of at most this many rows.
        do_sample (`bool`, *optional*, defaults to `True`): `False` takes the argmax (local sampler only).
        generator (`torch.Generator`, *optional*): makes the run reproducible.
        return_dict_in_generate (`bool`, *optional*, defaults to `False`): return a [`DiffusionGenerateOutput`].

    Returns:
        `torch.LongTensor` of shape `(batch, prompt_length + max_new_tokens)`, or a [`DiffusionGenerateOutput`].

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp.models import DiffusionLM, tiny_masked_lm
    >>> class Wrapper(DiffusionLM):
    ...     def forward(self, input_ids, attention_mask=None):
    ...         return self.model(input_ids=input_ids, attention_mask=attention_mask).logits
    >>> wrapper = Wrapper(tiny_masked_lm(), mask_token_id=5)
    >>> out = diffusion_generate(wrapper, torch.tensor([[1, 2]]), max_new_tokens=3, seq_temperature=0.5,
    ...                          generator=torch.Generator().manual_seed(0),
    ...                          return_dict_in_generate=True)
    >>> out.sequences.shape, out.num_model_calls
    (torch.Size([1, 5]), 3)
    ```
    """
    block_length = _validate(
        diffusion_model, input_ids, max_new_tokens, block_length, tokens_per_step, num_proposals, max_batch
    )
    validate_policy(policy)
    token_temperature = check_temperature(token_temperature, "token_temperature")
    alpha = None
    if seq_temperature is not None:
        alpha = 1.0 / check_temperature(seq_temperature, "seq_temperature")
        if token_temperature != 1.0:
            raise ValueError(
                f"`token_temperature` must be 1.0 when `seq_temperature` is set, got {token_temperature}: the IMH "
                "proposal is already tempered with alpha = 1 / seq_temperature."
            )
        if not do_sample:
            raise ValueError("`do_sample=False` cannot be combined with `seq_temperature`: IMH samples by design.")
    check_generator_device(generator, input_ids.device)
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    batch, prompt_length = input_ids.shape
    completion = input_ids.new_full((batch, max_new_tokens), diffusion_model.mask_token_id)
    x = torch.cat([input_ids, completion], dim=1)
    attn = torch.cat([attention_mask, attention_mask.new_ones(batch, max_new_tokens)], dim=1)
    decoder = _Decoder(diffusion_model, alpha, token_temperature, num_proposals, max_batch, do_sample, generator)
    completion_mask = torch.zeros_like(x, dtype=torch.bool)
    completion_mask[:, prompt_length:] = True
    x = decoder.decode(x, attn, completion_mask, block_length, tokens_per_step, policy)
    if not return_dict_in_generate:
        return x
    acceptance = None
    if alpha is not None:
        acceptance = (
            decoder.accepted.float() / decoder.proposed
            if decoder.accepted is not None
            else torch.ones(batch, device=x.device)
        )
    return DiffusionGenerateOutput(
        sequences=x,
        acceptance_rate=acceptance,
        num_model_calls=decoder.calls,
        num_evaluated_states=decoder.states,
    )
