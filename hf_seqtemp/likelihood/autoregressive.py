# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Exact sequence log-likelihoods of autoregressive (causal) language models."""

from __future__ import annotations

import inspect

import torch

from ..checks import check_int
from ..models.validation import SUPPORTED, check_model_kind
from .base import SequenceScorer
from .chunked_head import HeadAsTokenLogps, causal_lm, plain_output_head
from .shared_prompt import SharedPrompts, can_share_prompts, drops_position_ids, prompt_learning


def position_ids_from_attention_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids that start at 0 on each row's first real token, so left padding does not shift positions."""
    return (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)


CPU_CHUNK_VALUES = 2**20
"""Logit values per float32 chunk on CPU (4 MiB): a block that stays in cache is several times faster there."""
ACCELERATOR_CHUNK_VALUES = 2**26
"""Logit values per float32 chunk on other devices (256 MiB): fewer, larger kernels."""


def default_chunk_size(vocab_size: int, device: torch.device) -> int:
    """Rows (positions) per float32 log-softmax chunk when `chunk_size=None`: a fixed number of logit values."""
    budget = CPU_CHUNK_VALUES if device.type == "cpu" else ACCELERATOR_CHUNK_VALUES
    return max(1, budget // vocab_size)


def gather_token_logps(
    logits: torch.Tensor, targets: torch.Tensor, token_temperature: float = 1.0, chunk_size: int | None = None
) -> torch.Tensor:
    """`log softmax(logits / T)[target]` in float32, converting at most `chunk_size` positions at a time.

    The batch and length dimensions are flattened (a view for contiguous logits) and cut into chunks of
    `chunk_size` positions; each chunk is converted to float32, log-softmaxed and gathered, so scoring without
    gradients never holds a float32 copy of the whole logits tensor (with gradients, autograd keeps each chunk's
    log-softmax for the backward pass, as it would for one full-size log-softmax).

    Args:
        logits (`torch.Tensor` of shape `(batch, length, vocab)`): logits in any floating dtype.
        targets (`torch.LongTensor` of shape `(batch, length)`): token id whose log-probability is taken.
        token_temperature (`float`, *optional*, defaults to `1.0`): divides the logits first.
        chunk_size (`int`, *optional*): positions (over the whole batch) converted to float32 at once, which bounds
            the float32 copy of the logits to `chunk_size × vocab`. `None` picks 2^20 logit values per chunk on
            CPU (a cache-sized block) and 2^26 on accelerators.

    Returns:
        `torch.FloatTensor` of shape `(batch, length)`.

    Example:
    ```python
    >>> logits = torch.zeros(1, 2, 4)
    >>> gather_token_logps(logits, torch.tensor([[0, 3]])).exp().tolist()
    [[0.25, 0.25]]
    ```
    """
    batch, length, vocab = logits.shape
    if chunk_size is None:
        chunk_size = default_chunk_size(vocab, logits.device)
    pieces = []
    # `split` gives one autograd node for all chunks, whose backward concatenates the chunks' gradients once
    # (slicing chunk by chunk would build a full-size zero gradient per chunk)
    for block, target in zip(logits.reshape(-1, vocab).split(chunk_size), targets.reshape(-1, 1).split(chunk_size)):
        block = block.float()
        if token_temperature != 1.0:
            block = block / token_temperature
        pieces.append(block.log_softmax(dim=-1).gather(-1, target).squeeze(-1))
    return torch.cat(pieces).view(batch, length)


def _accepts_position_ids(model: torch.nn.Module) -> bool:
    """Whether the causal LM under `model` takes `position_ids`: a DDP or PEFT wrapper's `forward(*args, **kwargs)`
    passes them on, and without them a left-padded row of a model with absolute positions (GPT-2) is scored at
    shifted positions."""
    target = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    target = target.get_base_model() if callable(getattr(target, "get_base_model", None)) else target
    try:
        return "position_ids" in inspect.signature(target.forward).parameters
    except (TypeError, ValueError):
        return False


def cache_kwargs(model: torch.nn.Module, cache) -> dict:
    """The keyword arguments that pass a KV cache (`None` at the first step) to the causal LM under `model`:
    `cache=` from transformers 5.24 on (where `past_key_values=` is deprecated), `past_key_values=` before."""
    target = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    target = target.get_base_model() if callable(getattr(target, "get_base_model", None)) else target
    try:
        name = "cache" if "cache" in inspect.signature(target.forward).parameters else "past_key_values"
    except (TypeError, ValueError):
        name = "past_key_values"
    return {name: cache, "use_cache": True}


def output_cache(output):
    """The KV cache a forward pass returned (`output.cache` from transformers 5.24 on, `past_key_values` before)."""
    cache = output.get("cache") if hasattr(output, "get") else None
    return cache if cache is not None else output.past_key_values


def _accepts_logits_to_keep(model: torch.nn.Module) -> bool:
    """Whether the causal LM under `model` (DDP and PEFT wrappers pass keyword arguments through) takes
    `logits_to_keep`, transformers' option to apply the LM head to some positions only."""
    target = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    target = target.get_base_model() if callable(getattr(target, "get_base_model", None)) else target
    try:
        return "logits_to_keep" in inspect.signature(target.forward).parameters
    except (TypeError, ValueError):
        return False


def _first_scored_logit(completion_mask: torch.Tensor) -> int:
    """The first position whose logits are needed: the one before the batch's earliest scored token (position i
    predicts token i + 1), or 0 when nothing is scored."""
    scored = completion_mask.any(dim=0).nonzero()
    return max(int(scored[0]) - 1, 0) if len(scored) else 0


def _logits_of(outputs, model: torch.nn.Module, input_ids: torch.Tensor, kept: int | None = None) -> torch.Tensor:
    """The `(batch, kept, vocab)` logits of a forward pass (`kept` last positions, default all), or a `TypeError`
    saying what the model returned."""
    logits = getattr(outputs, "logits", None)
    kept = input_ids.shape[1] if kept is None else kept
    if isinstance(logits, torch.Tensor) and logits.dim() == 3 and logits.shape[0] == input_ids.shape[0]:
        if logits.shape[1] == kept:
            return logits
        if logits.shape[1] >= input_ids.shape[1]:  # a model that ignored `logits_to_keep`, or that put virtual
            return logits[:, logits.shape[1] - kept :]  # tokens before the input (PEFT's prompt tuning)
    got = f"`.logits` of shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor) else "no `.logits`"
    raise TypeError(
        f"`model` ({type(model).__name__}) returned {type(outputs).__name__} with {got}; the autoregressive scorer "
        f"needs next-token logits of shape (batch, length, vocab) = {tuple(input_ids.shape)} + (vocab,). {SUPPORTED}: "
        "load a causal LM with `AutoModelForCausalLM.from_pretrained(...)`."
    )


class AutoregressiveScorer(SequenceScorer):
    """[`SequenceScorer`] that computes exact sequence log-likelihoods of a causal LM from one forward pass.

    The score of a row is `sum_i log p(x_i | x_<i)` over its completion positions, each conditional a float32
    log-softmax of the model's logits (divided by `token_temperature` for the myopic baseline of Section 3.4).
    Position ids are derived from the attention mask, so a left-padded row scores exactly like the same row
    without padding.

    Args:
        token_temperature (`float`, *optional*, defaults to `1.0`):
            Token temperature applied to every step's logits. `1.0` scores the model itself.
        chunk_size (`int`, *optional*):
            Positions (over the whole batch) converted to float32 at once in the log-softmax, bounding the extra
            memory to `chunk_size × vocab` float32 values. `None` picks 2^20 values per chunk on CPU and 2^26 on
            accelerators (see [`gather_token_logps`]).
        chunk_head (`bool`, *optional*, defaults to `True`):
            Apply the LM head itself a chunk at a time to the last hidden states, so that the `(batch, length,
            vocab)` logits never exist, with or without gradients ([`~hf_seqtemp.likelihood.chunked_head.gather_token_logps_from_hidden`]); models whose
            logits are not the head's output alone (soft-capping, a logit scale: [`~hf_seqtemp.likelihood.chunked_head.plain_output_head`]) are scored
            from their full logits. `False` always scores the full logits.

    Example:
    ```python
    >>> import torch
    >>> from hf_seqtemp import AutoregressiveScorer
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> scorer = AutoregressiveScorer()
    >>> scorer(tiny_causal_lm(), torch.tensor([[1, 2, 3], [4, 5, 6]])).shape
    torch.Size([2])
    ```
    """

    def __init__(self, token_temperature: float = 1.0, chunk_size: int | None = None, chunk_head: bool = True):
        super().__init__(token_temperature)
        self.chunk_size = check_int(chunk_size, "chunk_size", allow_none=True, fix="None picks it automatically.")
        if not isinstance(chunk_head, bool):
            raise TypeError(f"`chunk_head` must be True or False, got {chunk_head!r}.")
        self.chunk_head = chunk_head

    def token_logps(
        self,
        model: torch.nn.Module,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        completion_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-position conditionals `log p(x_i | x_<i)`, aligned with `input_ids`.

        Returns:
            A tuple `(token_logps, completion_mask)`, both of shape `(batch, length)`: float32 log-probabilities
            (0 wherever the position is not scored) and the boolean mask of scored positions.
        """
        if getattr(getattr(causal_lm(model), "config", None), "is_encoder_decoder", False):
            check_model_kind(causal_lm(model), allow_diffusion=False)  # T5 and the like: refused by name
        input_ids, attention_mask, completion_mask = self._check_inputs(input_ids, attention_mask, completion_mask)
        if completion_mask[:, 0].any():
            raise ValueError(
                "`completion_mask` marks position 0 for scoring, but a causal LM has no conditional for the first "
                "token: start the completion at position 1 or later (prepend a BOS token)."
            )
        if drops_position_ids(model):
            shift = (attention_mask.long().cumsum(-1) == 0).sum(-1, keepdim=True)  # each row's left padding
            if bool(shift.any()):
                # PEFT's prompt tuning drops position ids: its positions would count the padding. Scored
                # right-padded, each row has the positions it has alone (causal attention: the padding after it is
                # never seen), then put back in place.
                width = torch.arange(input_ids.shape[1], device=input_ids.device)
                there, back = (width + shift) % input_ids.shape[1], (width - shift) % input_ids.shape[1]
                rolled = [t.gather(1, there) for t in (input_ids, attention_mask, completion_mask)]
                logps, mask = self.token_logps(model, *rolled)
                return logps.gather(1, back), mask.gather(1, back)
        # the completions of one prompt share one forward pass of it (`shared_prompt.py`) where the model allows
        shared = SharedPrompts.of(input_ids, attention_mask, completion_mask) if can_share_prompts(model) else None
        ids = shared.rest_ids if shared is not None else input_ids
        if shared is not None:
            kwargs, start = shared.forward_kwargs(model, _accepts_position_ids(model), cache_kwargs), 0
        else:
            kwargs, start = self._one_pass_kwargs(model, input_ids, attention_mask, completion_mask)
        with_grad = torch.is_grad_enabled() and any(p.requires_grad for p in model.parameters())
        # a prompt-learning adapter's virtual tokens shift the head's positions: it is scored from its full logits
        head = plain_output_head(model, with_grad) if self.chunk_head and not prompt_learning(model) else None
        # position i predicts token i + 1; the last position's target is a dummy, dropped below. Using the whole
        # (contiguous) logits tensor instead of `logits[:, :-1]` keeps the flattening in `gather_token_logps` a view.
        next_ids = torch.cat([ids[:, start + 1 :], ids[:, :1]], dim=1)
        vocab = getattr(getattr(causal_lm(model), "config", None), "vocab_size", None)
        with HeadAsTokenLogps(head, next_ids, self.token_temperature, self.chunk_size, vocab) as chunked:
            outputs = model(input_ids=ids, **kwargs)
        logits = _logits_of(outputs, model, ids, ids.shape[1] - start)
        if chunked.calls:  # the head gave the targets' log-probabilities, a chunk of positions at a time
            logps = logits[..., 0].float()
        else:
            logps = gather_token_logps(logits, next_ids, self.token_temperature, self.chunk_size)
        if shared is not None:
            logps = shared.place(logps, tuple(input_ids.shape))
        else:
            logps = torch.cat([logps.new_zeros(logps.shape[0], start + 1), logps[:, :-1]], dim=1)
        return logps.masked_fill(~completion_mask, 0.0), completion_mask

    @staticmethod
    def _one_pass_kwargs(model, input_ids, attention_mask, completion_mask) -> tuple[dict, int]:
        """The keyword arguments of one forward pass of the whole batch, and the first position whose logits it
        keeps."""
        kwargs = {"attention_mask": attention_mask}
        if _accepts_position_ids(model) and not drops_position_ids(model):  # (its rows come without left padding)
            kwargs["position_ids"] = position_ids_from_attention_mask(attention_mask)
        # the LM head runs only from the position before the batch's first scored token on (the prompt's logits
        # are never used), as TRL's trainers do: less time, and far less memory with gradients on
        keeps = _accepts_logits_to_keep(model) and not prompt_learning(model)  # virtual tokens shift its indices
        start = _first_scored_logit(completion_mask) if keeps else 0
        if start > 0:  # as index positions, not a count: the kept hidden states are then a contiguous copy, which
            # the head multiplies in one matrix product (a strided slice of them takes a batched product, slower)
            kwargs["logits_to_keep"] = torch.arange(start, input_ids.shape[1], device=input_ids.device)
        return kwargs, start

    def score(self, model, input_ids, attention_mask, completion_mask):
        token_logps, _ = self.token_logps(model, input_ids, attention_mask, completion_mask)
        return token_logps.sum(dim=1)
