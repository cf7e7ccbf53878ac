# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The one interface every sequence-likelihood estimator shares."""

from __future__ import annotations

import torch

from ..checks import check_temperature


def default_completion_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Scores every non-pad token except the first one of each row (left or right padding).

    Args:
        attention_mask (`torch.Tensor` of shape `(batch, length)`): 1 for real tokens, 0 for padding.

    Returns:
        `torch.Tensor` of shape `(batch, length)` and dtype `bool`.

    Example:
    ```python
    >>> default_completion_mask(torch.tensor([[0, 1, 1, 1], [1, 1, 0, 0]])).int().tolist()
    [[0, 0, 1, 1], [0, 1, 0, 0]]
    ```
    """
    mask = attention_mask.bool().clone()
    has_tokens = mask.any(dim=1)
    first = mask.int().argmax(dim=1)
    rows = torch.arange(mask.shape[0], device=mask.device)[has_tokens]
    mask[rows, first[has_tokens]] = False
    return mask


class SequenceScorer:
    """Base class of every sequence-likelihood estimator.

    A scorer answers one question: the log-probability of the completions in a padded batch under a model, one
    float32 number per sequence. Subclasses implement [`~SequenceScorer.score`]; the trainer, the metrics and the
    samplers only ever call a scorer through this interface.

    Args:
        token_temperature (`float`, *optional*, defaults to `1.0`):
            Divides every conditional's logits by this value before the log-softmax: the *myopic* (token-level)
            temperature baseline of Section 3.4 of the paper. `1.0` scores the model itself.
    """

    def __init__(self, token_temperature: float = 1.0):
        self.token_temperature = check_temperature(token_temperature, "token_temperature")

    def __call__(
        self,
        model: torch.nn.Module,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        completion_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Scores a batch.

        Args:
            model (`torch.nn.Module`): the model to score under.
            input_ids (`torch.LongTensor` of shape `(batch, length)`): token ids, padded on either side.
            attention_mask (`torch.Tensor` of shape `(batch, length)`, *optional*):
                1 for real tokens, 0 for padding. Defaults to all ones.
            completion_mask (`torch.Tensor` of shape `(batch, length)`, *optional*):
                1 for the positions whose tokens are scored (the completion); prompt and padding positions must
                be 0. Defaults to every non-pad token but the first.

        Returns:
            `torch.FloatTensor` of shape `(batch,)`: float32 sums of log-probabilities over completion positions.
        """
        input_ids, attention_mask, completion_mask = self._check_inputs(input_ids, attention_mask, completion_mask)
        return self.score(model, input_ids, attention_mask, completion_mask)

    def score(
        self,
        model: torch.nn.Module,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        completion_mask: torch.Tensor,
    ) -> torch.Tensor:
        raise NotImplementedError

    @staticmethod
    def _check_inputs(input_ids, attention_mask, completion_mask):
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
            raise ValueError(
                "`input_ids` must be a 2-D tensor of shape (batch, length), got "
                f"{getattr(input_ids, 'shape', type(input_ids).__name__)}."
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"`attention_mask` must have the shape of `input_ids` {tuple(input_ids.shape)}, "
                f"got {tuple(attention_mask.shape)}."
            )
        if completion_mask is None:
            completion_mask = default_completion_mask(attention_mask)
        if completion_mask.shape != input_ids.shape:
            raise ValueError(
                f"`completion_mask` must have the shape of `input_ids` {tuple(input_ids.shape)}, "
                f"got {tuple(completion_mask.shape)}."
            )
        completion_mask = completion_mask.bool()
        if (completion_mask & ~attention_mask.bool()).any():
            raise ValueError("`completion_mask` marks padding positions (attention_mask == 0) for scoring.")
        return input_ids, attention_mask, completion_mask
