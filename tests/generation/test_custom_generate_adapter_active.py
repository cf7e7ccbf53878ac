# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The Hub folder's `custom_generate` on a model whose tempered adapter is active: it samples the base p^(1/T)
(adapter off, LoRA and `modules_to_save` copy alike) or refuses with the reason; it never tempers q again."""

import itertools

import pytest
import torch
from distribution_checks import cell_counts, chi_square_pvalue
from peft import LoraConfig, PeftModel, get_peft_model
from tiny_models import tiny_llama

from hf_seqtemp import SequenceTemperatureConfig, load_tempered
from hf_seqtemp.generation import write_custom_generate
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.peft_compat import check_transformers_loads_adapter, transformers_peft_mismatch
from hf_seqtemp.trainer.token_temperature_init import fold_token_temperature, with_trainable_final_norm

PROMPT = torch.tensor([[1, 2, 3]])
VOCAB, NEW, SAMPLES, T = 4, 3, 3000, 0.5
COMPLETIONS = torch.tensor(list(itertools.product(range(VOCAB), repeat=NEW)))


def _base():
    return tiny_llama(vocab_size=VOCAB, seed=2, head_scale=3.0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A Hub folder: LoRA (random, non-zero) + the final norm folded to 1/T (a `modules_to_save` copy), its
    `seqtemp_config.json` and `custom_generate/`."""
    folder = tmp_path_factory.mktemp("hub")
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"])
    model = get_peft_model(_base(), with_trainable_final_norm(lora, _base()))
    fold_token_temperature(model, T)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.5)
    model.save_pretrained(folder)
    SequenceTemperatureConfig(target_temperature=T).save_pretrained(folder)
    write_custom_generate(folder)
    return folder


@torch.no_grad()
def _tempered(model):
    """Exact p^(1/T) over the 64 completions of `PROMPT` under `model`."""
    states = torch.cat([PROMPT.expand(len(COMPLETIONS), -1), COMPLETIONS], dim=1)
    cmask = torch.zeros_like(states, dtype=torch.bool)
    cmask[:, PROMPT.shape[1] :] = True
    return (AutoregressiveScorer()(model, states, completion_mask=cmask).double() / T).softmax(0)


def _counts(model, folder, **kwargs):
    out = model.generate(
        PROMPT.expand(SAMPLES, -1),
        max_new_tokens=NEW,
        pad_token_id=0,
        custom_generate=str(folder),
        trust_remote_code=True,
        seq_temperature=T,
        strategy="mcmc",
        mcmc_steps=8,
        block_size=1,
        generator=torch.Generator().manual_seed(0),
        **kwargs,
    )
    return cell_counts(out[:, PROMPT.shape[1] :], COMPLETIONS)


@pytest.mark.parametrize("loader", ["peft", "transformers"])
def test_the_hub_custom_generate_samples_the_base_or_refuses(folder, loader):
    """Chi-square over 64 cells, 3000 samples. Loaded with `load_tempered`, the adapter is known: it is switched off
    and the base p^(1/T) is sampled (q^(1/T) is rejected: the test has power). Carried without hf_seqtemp knowing
    it (PEFT's `from_pretrained`, transformers' `load_adapter`), it is refused, since power sampling would temper q,
    not p; `allow_active_adapters=True` tempers the adapted model as it is (q^(1/T)), and inside the user's own
    "adapter off" the base p^(1/T) is sampled."""
    base_target = _tempered(_base())
    twice = _tempered(PeftModel.from_pretrained(_base(), str(folder)).eval())
    known = load_tempered(folder, base_model=_base())
    counts = _counts(known, folder)
    assert chi_square_pvalue(counts, base_target)[1] > 1e-3
    assert chi_square_pvalue(counts, twice)[1] < 1e-6
    assert known.active_adapter == "t0_5"  # the adapter is back on after the call
    if loader == "peft":
        model = PeftModel.from_pretrained(_base(), str(folder)).eval()
    elif transformers_peft_mismatch():  # a known break of transformers' own integration (e.g. 5.24 with peft 0.21)
        with pytest.raises(ImportError, match=r"transformers \S+ loads PEFT adapters only with peft>="):
            check_transformers_loads_adapter(str(folder))
        return
    else:
        model = _base()
        model.load_adapter(str(folder))
    with pytest.raises(ValueError, match=r"active PEFT adapter\(s\) \['default'\].*tempered twice"):
        _counts(model, folder)
    assert chi_square_pvalue(_counts(model, folder, allow_active_adapters=True), twice)[1] > 1e-3
    with model.disable_adapter() if loader == "peft" else _disabled(model):
        counts = _counts(model, folder)
    assert chi_square_pvalue(counts, base_target)[1] > 1e-3


class _disabled:
    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.model.disable_adapters()

    def __exit__(self, *exc):
        self.model.enable_adapters()
