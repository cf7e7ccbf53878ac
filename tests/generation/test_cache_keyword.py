# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The samplers pass the KV cache under the name the model takes: `cache=` from transformers 5.24 on (where
`past_key_values=` warns a FutureWarning), `past_key_values=` before; and they warn nothing of their own."""

import warnings
from dataclasses import dataclass

import pytest
import torch
from tiny_models import tiny_llama
from transformers.utils import ModelOutput

from hf_seqtemp.generation import power_sample
from hf_seqtemp.generation.smc import smc_sample
from hf_seqtemp.likelihood.autoregressive import cache_kwargs, output_cache

PROMPTS = torch.tensor([[0, 1], [2, 1], [0, 2]])
MASK = torch.tensor([[0, 1], [1, 1], [0, 1]])


@dataclass
class _NewOutput(ModelOutput):
    logits: torch.Tensor | None = None
    cache: object = None


class _NewStyleLM(torch.nn.Module):
    """A causal LM with transformers 5.24's interface: `cache=` in, `output.cache` out, no `past_key_values`."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.config, self.generation_config = inner, inner.config, inner.generation_config

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None, use_cache=None):
        # the installed transformers' own name underneath (`past_key_values` before 5.24)
        out = self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         **cache_kwargs(self.inner, cache))  # fmt: skip
        return _NewOutput(logits=out.logits, cache=output_cache(out))


def _draws(model, sampler):
    kwargs = {"max_new_tokens": 3, "generator": torch.Generator().manual_seed(0), "eos_token_id": 3, "pad_token_id": 0}
    if sampler == "smc":
        return smc_sample(model, PROMPTS.repeat(20, 1), MASK.repeat(20, 1), num_particles=4, **kwargs)
    return power_sample(model, PROMPTS.repeat(20, 1), MASK.repeat(20, 1), mcmc_steps=2, **kwargs)


@pytest.mark.parametrize("sampler", ["smc", "mcmc"])
def test_a_model_that_takes_cache_gets_cache_and_draws_the_same(sampler):
    inner = tiny_llama(vocab_size=4, seed=0, head_scale=3.0)
    assert "cache" in cache_kwargs(_NewStyleLM(inner), None)
    assert torch.equal(_draws(_NewStyleLM(inner), sampler), _draws(inner, sampler))


@pytest.mark.parametrize("sampler", ["smc", "mcmc"])
def test_the_samplers_warn_no_future_warning(sampler):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _draws(tiny_llama(vocab_size=4, seed=0), sampler)
    future = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert future == [], future
