# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The LM head applied a chunk of positions at a time, so that the `(batch, length, vocab)` logits never exist.

[`~hf_seqtemp.likelihood.AutoregressiveScorer`] swaps the model's head, for one forward pass, for a function that
returns the log-probabilities of the targets ([`HeadAsTokenLogps`]): the model's own forward (DDP's, FSDP's) still
uses the head's weight, and the head is applied inside it by chunks ([`gather_token_logps_from_hidden`]). Without
gradients any head module works; with gradients a plain `torch.nn.Linear` has a chunked backward
([`_LinearHeadTokenLogps`]). A model whose logits are more than the head's output (soft-capping, a scale after the
head) is scored from its full logits ([`plain_output_head`] returns `None` for it).
"""

from __future__ import annotations

import torch

CPU_HEAD_CHUNK_VALUES = 2**26
"""Logit values per chunk on CPU when the LM head itself is applied by chunks (256 MiB in float32): enough positions
that the head's weight, read from memory once per chunk, is read a few times per batch."""
ACCELERATOR_HEAD_CHUNK_VALUES = 2**24
"""The same on other devices (64 MiB in float32): memory is what is scarce there, not bandwidth."""


# config fields of models whose logits are not `head(hidden)` alone (soft-capping, a scale after the head)
POST_HEAD_FIELDS = (
    "final_logit_softcapping",
    "logit_scale",
    "output_multiplier",
    "lm_head_multiplier",
    "logits_scaling",
)


def causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers model under DDP and PEFT wrappers."""
    target = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    return target.get_base_model() if callable(getattr(target, "get_base_model", None)) else target


def plain_output_head(model: torch.nn.Module, with_grad: bool = False) -> torch.nn.Module | None:
    """The LM head of `model` when its logits are `head(hidden_states)` and nothing after (no soft-capping or logit
    scale in its config, no forward hook of the user's on the head) and, `with_grad`, the head is a plain
    `torch.nn.Linear` (a LoRA layer or a
    `modules_to_save` copy of the head has no chunked backward here); else `None`. Then the head can be applied to
    the hidden states a chunk at a time ([`gather_token_logps_from_hidden`]), never holding the `(batch, length,
    vocab)` logits."""
    target = causal_lm(model)
    get = getattr(target, "get_output_embeddings", None)
    head = get() if callable(get) else None
    if not isinstance(head, torch.nn.Module):
        return None
    config = getattr(target, "config", None)
    text = config.get_text_config() if callable(getattr(config, "get_text_config", None)) else config
    if any(getattr(text, name, None) not in (None, 1, 1.0) for name in POST_HEAD_FIELDS):
        return None
    if with_grad and type(head) is not torch.nn.Linear:
        return None
    if _user_hooks(head):  # a forward hook on the head expects logits: it gets them (full logits, not chunked)
        return None
    return head


def _user_hooks(module: torch.nn.Module) -> list:
    """The forward (pre-)hooks on `module` other than torch.distributed's own (FSDP2 registers some)."""
    hooks = [*module._forward_hooks.values(), *module._forward_pre_hooks.values()]
    return [hook for hook in hooks if not getattr(hook, "__module__", "").startswith("torch.distributed")]


class HeadAsTokenLogps:
    """Within the block, `head` returns the log-probabilities of `targets` instead of logits: its call inside the
    model's forward applies the real head a chunk of positions at a time ([`gather_token_logps_from_hidden`]), so
    the forward's output is `(batch, positions, 1)` and the `(batch, positions, vocab)` logits never exist. The head
    is used inside the forward, as DDP and FSDP expect of a parameter. `calls` tells whether the model called its
    head at all (if not, its `.logits` are real logits)."""

    def __init__(self, head: torch.nn.Module | None, targets: torch.Tensor, token_temperature, chunk_size, vocab):
        self.head, self.targets, self.calls = head, targets, 0
        self.options = {"token_temperature": token_temperature, "chunk_size": chunk_size, "vocab_size": vocab}

    def _patch(self):
        self.head.forward = self._token_logps

    def _unpatch(self):
        if self.saved is None:
            del self.head.forward
        else:
            self.head.forward = self.saved

    def __enter__(self):
        if self.head is not None:
            self.saved = self.head.__dict__.get("forward")  # a hook's wrapper (accelerate's offloading) stays
            self._patch()
        return self

    def _token_logps(self, hidden_states, *args, **kwargs):
        self.calls += 1
        kept = self.targets.shape[1]
        if hidden_states.dim() != 3 or hidden_states.shape[1] < kept:
            raise TypeError(f"the LM head was called on a tensor of shape {tuple(hidden_states.shape)}")
        hidden_states = hidden_states[:, hidden_states.shape[1] - kept :]  # a model that ignored `logits_to_keep`
        self._unpatch()  # the chunks call the head's own forward
        try:
            logps = gather_token_logps_from_hidden(hidden_states, self.head, self.targets, **self.options)
        finally:
            self._patch()
        return logps[..., None]

    def __exit__(self, *exc):
        if self.head is not None:
            self._unpatch()
        return False


def _chunk_logps(head, hidden, targets, token_temperature: float) -> torch.Tensor:
    """Without gradients: the chunk's logits are overwritten in place, so one `(chunk, vocab)` float32 buffer is
    all it holds (a log-softmax would hold a second). A plain linear head is multiplied by its weight (no nested
    call of the module inside the model's forward, whose hooks, FSDP's or accelerate's, ran for the outer call);
    any other head module is called."""
    if type(head) is torch.nn.Linear:
        logits = _linear_chunk(hidden, head.weight, head.bias, _compute_dtype(hidden), token_temperature)
    else:
        logits = head(hidden).float()
        if token_temperature != 1.0:
            logits = logits.div_(token_temperature)
    return _target_minus_log_norm_(logits, targets[:, 0])[0]


def _target_minus_log_norm_(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`(logits[target] - logsumexp(logits), logsumexp(logits))` per row, overwriting `logits` (float32)."""
    chosen = logits.gather(-1, targets[:, None]).squeeze(-1)
    top = logits.amax(dim=-1, keepdim=True)
    log_norm = logits.sub_(top).exp_().sum(dim=-1).log_().add_(top.squeeze(-1))
    return chosen - log_norm, log_norm


def _compute_dtype(tensor: torch.Tensor) -> torch.dtype:
    kind = tensor.device.type
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else tensor.dtype


class _LinearHeadTokenLogps(torch.autograd.Function):
    """`log softmax(hidden @ weight.T + bias)[target]` in float32, a chunk of rows at a time, forward and backward:
    the backward recomputes each chunk's logits and returns the gradients of `hidden`, `weight` and `bias` (summed
    in float32), so autograd holds the hidden states, never the logits, and the weight enters the graph once (as
    DDP expects of a parameter)."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, token_temperature, chunk_size):
        dtype = _compute_dtype(hidden)
        out = hidden.new_empty(hidden.shape[0], dtype=torch.float32)
        log_norm = torch.empty_like(out)
        for start in range(0, hidden.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            logits = _linear_chunk(hidden[rows], weight, bias, dtype, token_temperature)
            out[rows], log_norm[rows] = _target_minus_log_norm_(logits, targets[rows])
        ctx.save_for_backward(hidden, weight, bias, targets, log_norm)
        ctx.settings = (dtype, token_temperature, chunk_size)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        hidden, weight, bias, targets, log_norm = ctx.saved_tensors
        dtype, token_temperature, chunk_size = ctx.settings
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_hidden = torch.zeros_like(hidden) if need_hidden else None
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_weight else None
        grad_bias = torch.zeros(bias.shape, dtype=torch.float32, device=bias.device) if need_bias else None
        for start in range(0, hidden.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            logits = _linear_chunk(hidden[rows], weight, bias, dtype, token_temperature)
            # d(logit_target - logsumexp) / d logits = onehot(target) - softmax, times the incoming gradient
            grad_logits = logits.sub_(log_norm[rows, None]).exp_().mul_(-grad_out[rows, None])
            grad_logits.scatter_add_(-1, targets[rows, None], grad_out[rows, None].float())
            if token_temperature != 1.0:
                grad_logits.div_(token_temperature)
            if need_hidden:
                grad_hidden[rows] = (grad_logits.to(dtype) @ weight.to(dtype)).to(hidden.dtype)
            if need_weight:
                grad_weight.addmm_(grad_logits.t(), hidden[rows].float())
            if need_bias:
                grad_bias.add_(grad_logits.sum(dim=0))
        grad_weight = grad_weight.to(weight.dtype) if need_weight else None
        grad_bias = grad_bias.to(bias.dtype) if need_bias else None
        return grad_hidden, grad_weight, grad_bias, None, None, None


def _linear_chunk(hidden, weight, bias, dtype, token_temperature):
    logits = torch.nn.functional.linear(
        hidden.to(dtype), weight.to(dtype), None if bias is None else bias.to(dtype)
    ).float()
    return logits.div_(token_temperature) if token_temperature != 1.0 else logits


def gather_token_logps_from_hidden(
    hidden: torch.Tensor,
    head: torch.nn.Module,
    targets: torch.Tensor,
    token_temperature: float = 1.0,
    chunk_size: int | None = None,
    vocab_size: int | None = None,
) -> torch.Tensor:
    """`log softmax(head(hidden) / T)[target]` in float32, applying the LM head to `chunk_size` positions at a time.

    Only one chunk's logits exist at any moment. Without gradients any head module is applied by chunks; with
    gradients the head must be a plain `torch.nn.Linear`, whose chunks the backward pass recomputes
    ([`_LinearHeadTokenLogps`]): autograd keeps the hidden states, not the logits.

    Args:
        hidden (`torch.Tensor` of shape `(batch, length, width)`): the model's last hidden states.
        head (`torch.nn.Module`): its LM head (see [`plain_output_head`]).
        targets (`torch.LongTensor` of shape `(batch, length)`): token id whose log-probability is taken.
        token_temperature (`float`, *optional*, defaults to `1.0`): divides the logits first.
        chunk_size (`int`, *optional*): positions per chunk; `None` gives chunks of 2^26 logit values on CPU and
            2^24 on accelerators, from `vocab_size`.
        vocab_size (`int`, *optional*): the head's output size, to size the chunks (read from the head's weight
            when not given).

    Returns:
        `torch.FloatTensor` of shape `(batch, length)`.

    Example:
    ```python
    >>> head = torch.nn.Linear(3, 5, bias=False)
    >>> hidden, targets = torch.randn(2, 4, 3), torch.randint(0, 5, (2, 4))
    >>> full = head(hidden).log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)
    >>> torch.allclose(gather_token_logps_from_hidden(hidden, head, targets, chunk_size=3), full, atol=1e-6)
    True
    ```
    """
    batch, length, width = hidden.shape
    if chunk_size is None:
        weight = getattr(head, "weight", None)
        vocab = vocab_size or (weight.shape[0] if isinstance(weight, torch.Tensor) else width)
        budget = CPU_HEAD_CHUNK_VALUES if hidden.device.type == "cpu" else ACCELERATOR_HEAD_CHUNK_VALUES
        chunk_size = max(1, budget // vocab)
    flat, flat_targets = hidden.reshape(-1, width), targets.reshape(-1)
    if _needs_grad(head, hidden):
        if type(head) is not torch.nn.Linear:
            raise TypeError(
                f"the LM head is a {type(head).__name__}, not a `torch.nn.Linear`: with gradients only a plain "
                "linear head is applied by chunks. Score with `chunk_head=False`."
            )
        logps = _LinearHeadTokenLogps.apply(flat, head.weight, head.bias, flat_targets, token_temperature, chunk_size)
        return logps.view(batch, length)
    pieces = [
        _chunk_logps(head, block, target[:, None], token_temperature)
        for block, target in zip(flat.split(chunk_size), flat_targets.split(chunk_size))
    ]
    return torch.cat(pieces).view(batch, length)


def _needs_grad(head: torch.nn.Module, hidden: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (hidden.requires_grad or any(p.requires_grad for p in head.parameters()))
