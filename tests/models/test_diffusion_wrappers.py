# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Diffusion adapters: padding absent, shift convention, block visibility, family/mask-id detection and its errors."""

from types import SimpleNamespace

import pytest
import torch
from tiny_models import tiny_masked_lm, tiny_modernbert

from hf_seqtemp.models.base import DiffusionLM
from hf_seqtemp.models.diffusion import (
    BlockDiffusionWrapper,
    LLaDAWrapper,
    MaskedLMWrapper,
    ShiftedLogitsWrapper,
    wrap_diffusion_model,
)

torch.set_num_threads(1)  # 2 shared cores: intra-op threads only oversubscribe them
MASK = 5


class _IdLogits(torch.nn.Module):
    """logits[i] = one-hot(input_ids[i]) + 0.1 * position: makes reading positions and shifts visible."""

    def __init__(self, config=None, takes_mask=True):
        super().__init__()
        self.config = config
        self.takes_mask = takes_mask

    def forward(self, input_ids, **kwargs):
        if "attention_mask" in kwargs and not self.takes_mask:
            raise TypeError("unexpected attention_mask")
        positions = torch.arange(input_ids.shape[1], dtype=torch.float)[None, :, None]
        return torch.nn.functional.one_hot(input_ids, 6).float() + 0.1 * positions


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_left_and_right_padding_are_absent(family):
    model = tiny_masked_lm() if family == "bert" else tiny_modernbert()
    adapter = MaskedLMWrapper(model, MASK)
    row = torch.tensor([[1, MASK, 3]])
    with torch.no_grad():
        plain = adapter(row)
        padded = adapter(
            torch.tensor([[0, 0, 1, MASK, 3], [1, MASK, 3, 4, 4]]), torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0]])
        )
    torch.testing.assert_close(padded[0, 2:], plain[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(padded[1, :3], plain[0], atol=1e-5, rtol=0)


def test_shifted_logits_read_previous_real_token():
    adapter = ShiftedLogitsWrapper(_IdLogits(), MASK)
    out = adapter(torch.tensor([[0, 2, 3, 4]]), torch.tensor([[0, 1, 1, 1]]))
    # after compaction the real tokens [2, 3, 4] sit at 0..2; position of token 3 reads the output of token 2, etc.
    assert out[0, 2].argmax() == 2 and out[0, 3].argmax() == 3
    # the first real token reads its own output (documented convention)
    assert out[0, 1].argmax() == 2


def test_block_adapter_hides_later_blocks_exactly():
    """Logits of the current block equal those of the prefix truncated at the end of the block."""
    base = tiny_masked_lm()
    adapter = BlockDiffusionWrapper(base, MASK, 2)
    full = torch.tensor([[1, 2, 3, MASK, MASK, MASK], [4, MASK, MASK, MASK, MASK, MASK]])
    with torch.no_grad():
        out = adapter(full)
        cut0 = base(input_ids=full[:1, :4]).logits[0]
        cut1 = base(input_ids=full[1:, :2]).logits[0]
        bidirectional = MaskedLMWrapper(base, MASK)(full)
    torch.testing.assert_close(out[0, :4], cut0, atol=1e-5, rtol=0)
    torch.testing.assert_close(out[1, :2], cut1, atol=1e-5, rtol=0)
    assert not torch.allclose(bidirectional[0, :4], cut0, atol=1e-3)  # the later masks *are* seen without blocks


def test_llada_adapter_calls_with_input_ids_only():
    adapter = LLaDAWrapper(_IdLogits(takes_mask=False), mask_token_id=MASK)
    assert adapter(torch.tensor([[1, 2]])).argmax(-1).tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="takes no `attention_mask`"):
        LLaDAWrapper(torch.nn.Identity(), mask_token_id=MASK)(torch.tensor([[1, 2]]), torch.tensor([[1, 0]]))
    with pytest.raises(ValueError, match="`mask_token_id` is required for LLaDAWrapper"):
        LLaDAWrapper(_IdLogits(), mask_token_id=None)


def test_wrap_detects_family_and_mask_id():
    bert = tiny_masked_lm()
    wrapped = wrap_diffusion_model(bert, tokenizer=SimpleNamespace(mask_token_id=MASK))
    assert type(wrapped) is MaskedLMWrapper and wrapped.mask_token_id == MASK and wrapped.family == "masked_diffusion"
    assert wrap_diffusion_model(wrapped) is wrapped
    dream = wrap_diffusion_model(_IdLogits(SimpleNamespace(model_type="dream", mask_token_id=4)))
    assert type(dream) is ShiftedLogitsWrapper and dream.mask_token_id == 4
    llada = wrap_diffusion_model(_IdLogits(SimpleNamespace(model_type="llada", mask_token_id=3)))
    assert type(llada) is LLaDAWrapper and llada.mask_token_id == 3
    bd3 = wrap_diffusion_model(_IdLogits(SimpleNamespace(model_type="bd3lm", block_size=4)), mask_token_id=5)
    assert type(bd3) is BlockDiffusionWrapper and bd3.block_size == 4 and bd3.family == "block_diffusion"
    blocked = wrap_diffusion_model(bert, mask_token_id=MASK, block_size=2)
    assert isinstance(blocked, DiffusionLM) and blocked.block_size == 2 and not blocked.shift_logits
    shifted = wrap_diffusion_model(bert, mask_token_id=MASK, shift_logits=True)
    assert type(shifted) is ShiftedLogitsWrapper


@pytest.mark.parametrize(
    "model, kwargs, match",
    [
        (tiny_masked_lm(), {}, "`mask_token_id` could not be found"),
        (
            _IdLogits(SimpleNamespace(model_type="dream", mask_token_id=4)),
            {"tokenizer": SimpleNamespace(mask_token_id=3)},
            "`mask_token_id` is ambiguous",
        ),
        (_IdLogits(SimpleNamespace(model_type="mystery")), {"mask_token_id": 5}, "`shift_logits` is needed"),
        (tiny_masked_lm(), {"mask_token_id": 5, "family": "block_diffusion"}, "`block_size` is needed"),
        (tiny_masked_lm(), {"mask_token_id": 5, "family": "autoregressive"}, "`family` must be"),
        (_IdLogits(SimpleNamespace(model_type="diffusion_gemma")), {"mask_token_id": 5}, "DiffusionGemma"),
        (tiny_masked_lm(), {"mask_token_id": 5, "block_size": 0}, "`block_size` must be an integer ≥ 1, got 0"),
    ],
)
def test_wrap_errors(model, kwargs, match):
    with pytest.raises(ValueError, match=match):
        wrap_diffusion_model(model, **kwargs)


def test_unreadable_model_output():
    class Weird(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return {"scores": input_ids}

    with pytest.raises(TypeError, match="expected a tensor or an output with `.logits`"):
        MaskedLMWrapper(Weird(), MASK)(torch.tensor([[1]]))


def test_the_former_adapter_names_still_import():
    import hf_seqtemp
    import hf_seqtemp.models

    for family in ("MaskedLM", "LLaDA", "ShiftedLogits", "BlockDiffusion"):
        wrapper = getattr(hf_seqtemp.models, f"{family}Wrapper")
        assert getattr(hf_seqtemp.models, f"{family}Adapter") is wrapper
        assert getattr(hf_seqtemp, f"{family}Adapter") is getattr(hf_seqtemp, f"{family}Wrapper") is wrapper
