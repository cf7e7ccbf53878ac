# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The base distribution of the training-free strategies when logits processors are given.

Rule for every training-free sampler of a causal LM (`strategy="mcmc"`, `"glauber"`, SMC): the processors a call
carries are *part of the target*. The base distribution becomes the processed autoregressive distribution

    p̃(x_t | x_<t) = softmax(processors(x_<t, logits_t)),

and the target is `π(answer) ∝ Π_t p̃(x_t | x_<t)^(1/T)`, used the same way in proposals and acceptance ratios.
The processors are evaluated on each prefix (prompt included, at the width `generate` would give them), so
position-dependent ones (`min_new_tokens`, `no_repeat_ngram_size`, `forced_eos_token_id`,
`begin_suppress_tokens`, ...) and banned tokens (`suppress_tokens`, `bad_words_ids`) shape the target exactly as
they shape plain sampling. A processor must therefore be a function of `(prefix, logits)`: processors that keep a
state across decoding steps or need the batch in a particular layout are refused ([`REFUSED_PROCESSORS`]).
Per-row processors that `generate` builds (the repetition penalty's prompt padding, `prefix_allowed_tokens_fn`'s
batch index) are re-indexed to the rows they are applied to.
"""

from __future__ import annotations

import copy

import torch
from transformers.generation import logits_process as lp

_REFUSED_NAMES = {
    "UnbatchedClassifierFreeGuidanceLogitsProcessor": "it runs its own model with a cache that follows one "
    "left-to-right decoding pass",
    "ClassifierFreeGuidanceLogitsProcessor": "it needs the batch doubled into conditional and unconditional halves",
    "SynthIDTextWatermarkLogitsProcessor": "it keeps a state across decoding steps",
    "EncoderRepetitionPenaltyLogitsProcessor": "it belongs to encoder-decoder models",
    "EncoderNoRepeatNGramLogitsProcessor": "it belongs to encoder-decoder models",
    "WhisperTimeStampLogitsProcessor": "it belongs to Whisper's decoding",
    "WhisperNoSpeechDetection": "it belongs to Whisper's decoding",
    "AlternatingCodebooksLogitsProcessor": "it belongs to Bark's decoding",
    "BarkEosPrioritizerLogitsProcessor": "it belongs to Bark's decoding",
    "DiaClassifierFreeGuidanceLogitsProcessor": "it belongs to Dia's decoding",
    "DiaEOSChannelFilterLogitsProcessor": "it belongs to Dia's decoding",
    "DiaEOSDelayPatternLogitsProcessor": "it belongs to Dia's decoding",
}
REFUSED_PROCESSORS = {getattr(lp, n): why for n, why in _REFUSED_NAMES.items() if hasattr(lp, n)}
"""Processor class → why the training-free strategies cannot include it in their target."""

TOKEN_WARPERS = tuple(
    getattr(lp, name)
    for name in (
        "TemperatureLogitsWarper",
        "TopKLogitsWarper",
        "TopPLogitsWarper",
        "MinPLogitsWarper",
        "TopHLogitsWarper",
        "TypicalLogitsWarper",
        "EpsilonLogitsWarper",
        "EtaLogitsWarper",
    )
    if hasattr(lp, name)
)
"""Token-level reshaping that a sequence temperature replaces: `generate(..., seq_temperature=T)` drops them."""


class ProcessedConditionals:
    """The processed conditionals `p̃(. | prefix) = softmax(processors(prefix, logits))` of a list of processors.

    Args:
        processors (`list` of [`~transformers.LogitsProcessor`]): applied in order, as `generate` applies them.

    Raises:
        ValueError: naming every processor of [`REFUSED_PROCESSORS`] in the list and why it cannot be included.

    Example:
    ```python
    >>> from transformers.generation.logits_process import SuppressTokensLogitsProcessor
    >>> conditionals = ProcessedConditionals([SuppressTokensLogitsProcessor([1])])
    >>> conditionals.log_softmax(torch.tensor([[0, 2]]), torch.zeros(1, 3)).exp().tolist()
    [[0.5, 0.0, 0.5]]
    ```
    """

    def __init__(self, processors):
        self.processors = list(processors)
        refused = [f"{type(p).__name__} ({REFUSED_PROCESSORS[type(p)]})" for p in self.processors if _refused(p)]
        if refused:
            raise ValueError(
                f"The training-free strategies include every logits processor in their target, evaluated on "
                f"arbitrary prefixes, and cannot include: {', '.join(refused)}. Drop it from the `generate` call "
                "(and from the model's `generation_config`), or sample a trained adapter (`strategy='adapter'`)."
            )

    def __bool__(self) -> bool:
        return bool(self.processors)

    def __repr__(self) -> str:
        return f"ProcessedConditionals([{', '.join(type(p).__name__ for p in self.processors)}])"

    def scores(self, prefix_ids: torch.Tensor, logits: torch.Tensor, rows: torch.Tensor | None = None):
        """Processed float32 scores `(n, vocab)` of the next token after each row of `prefix_ids` `(n, width)`.

        `rows` (`(n,)`) maps each row to its row in the batch the processors were built for (default: the same).
        """
        scores = logits.float().clone()
        for processor in self.processors:
            scores = _for_rows(processor, rows)(prefix_ids, scores)
        return scores

    def log_softmax(self, prefix_ids: torch.Tensor, logits: torch.Tensor, rows: torch.Tensor | None = None):
        """`log p̃(. | prefix)`, float32 `(n, vocab)` (`-inf` on tokens the processors ban)."""
        return self.scores(prefix_ids, logits, rows).log_softmax(dim=-1)


def _refused(processor) -> bool:
    return any(isinstance(processor, cls) for cls in REFUSED_PROCESSORS)


def _for_rows(processor, rows: torch.Tensor | None):
    """`processor` applied to the rows `rows` of the batch it was built for: per-row state re-indexed."""
    if rows is None:
        return processor
    if isinstance(processor, lp.RepetitionPenaltyLogitsProcessor) and isinstance(
        processor.prompt_ignore_length, torch.Tensor
    ):
        view = copy.copy(processor)
        view.prompt_ignore_length = processor.prompt_ignore_length.to(rows.device)[rows]
        return view
    if isinstance(processor, lp.PrefixConstrainedLogitsProcessor):
        view, allowed = copy.copy(processor), processor._prefix_allowed_tokens_fn
        view._prefix_allowed_tokens_fn = lambda batch_id, ids: allowed(int(rows[batch_id]), ids)
        return view
    return processor


def processed_conditionals(processors) -> ProcessedConditionals | None:
    """[`ProcessedConditionals`] of `processors`, or `None` when there are none (the samplers' exact p path)."""
    processors = list(processors or [])
    return ProcessedConditionals(processors) if processors else None


def processed_token_logps(
    logits: torch.Tensor,
    input_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    conditionals: ProcessedConditionals,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """`log p̃(x_t | x_<t)` at every completion position of `input_ids` `(batch, length)`, 0 elsewhere.

    Args:
        logits (`torch.Tensor` of shape `(batch, length, vocab)`): the model's logits (position `t` predicts
            `t + 1`).
        input_ids (`torch.LongTensor` of shape `(batch, length)`): the sequences.
        completion_mask (`torch.BoolTensor` of shape `(batch, length)`): the positions scored.
        conditionals ([`ProcessedConditionals`]): the processors.
        rows (`torch.LongTensor` of shape `(batch,)`, *optional*): each row's row in the processors' batch.

    Returns:
        `torch.FloatTensor` of shape `(batch, length)` (`-inf` where a token is banned by the processors).
    """
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    for t in completion_mask.any(dim=0).nonzero().flatten().tolist():
        log_probs = conditionals.log_softmax(input_ids[:, :t], logits[:, t - 1], rows)
        out[:, t] = log_probs.gather(1, input_ids[:, t : t + 1]).squeeze(1)
    return out.masked_fill(~completion_mask.bool(), 0.0)
