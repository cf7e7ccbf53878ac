# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., seq_temperature=T)` behaves as a transformers user expects: a merged adapter does not keep its
routing, options on a `GenerationConfig` are honoured, a streamer gets the prompt, the answer and `end()`,
`num_return_sequences` needs no `do_sample=True`, and `output_scores` is refused where it has no meaning."""

import pytest
import torch
from peft import LoraConfig, get_peft_model
from tiny_models import tiny_llama
from transformers import GenerationConfig

from hf_seqtemp import SequenceTemperatureConfig
from hf_seqtemp.generation.adapters import register_tempered_adapter
from hf_seqtemp.generation.custom_generate import enable_seq_temperature_generate

PROMPT = torch.tensor([[0, 1]])


def _tempered(temperature=0.5):
    """A LoRA adapter registered as trained for `temperature`, as `load_tempered` leaves it."""
    torch.manual_seed(1)
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    model = get_peft_model(tiny_llama(vocab_size=4, seed=0, head_scale=3.0, eos_token_id=3), config).eval()
    register_tempered_adapter(model, SequenceTemperatureConfig(target_temperature=temperature), "default")
    enable_seq_temperature_generate(model)
    return model


class _Recorder:
    """A streamer that records what it is given (transformers' `BaseStreamer` interface)."""

    def __init__(self):
        self.puts, self.ended = [], False

    def put(self, value):
        self.puts.append(value.clone())

    def end(self):
        self.ended = True


def test_a_merged_adapter_does_not_keep_its_routing():
    """After `merge_and_unload()`, `generate(seq_temperature=2.0)` and `seq_temperature=1.0` used to sample the
    merged T = 0.5 model without a word (the registry and the patched `generate` survive the merge)."""
    merged = _tempered(0.5).merge_and_unload()
    for temperature in (2.0, 1.0, 0.5):
        with pytest.raises(
            ValueError, match=r"adapter\(s\) \['default'\] \(T = \[0.5\]\) are no longer in this model"
        ):
            merged.generate(PROMPT, max_new_tokens=3, seq_temperature=temperature, pad_token_id=0)
    assert merged.generate(PROMPT, max_new_tokens=3, do_sample=False, pad_token_id=0).shape == (1, 5)


def test_options_on_a_generation_config_are_honoured():
    """`GenerationConfig(seq_temperature=0.5, strategy="mcmc")` used to be ignored (only keywords worked)."""
    from hf_seqtemp.generation import PowerSamplingOutput

    model = _tempered(0.5)
    config = GenerationConfig(
        seq_temperature=0.5, strategy="mcmc", mcmc_steps=2, max_new_tokens=3, return_dict_in_generate=True,
        pad_token_id=0,
    )  # fmt: skip
    out = model.generate(PROMPT, generation_config=config)
    assert isinstance(out, PowerSamplingOutput) and out.acceptance_rate is not None


@pytest.mark.parametrize("strategy", ["adapter", "mcmc", "smc"])
def test_a_streamer_gets_the_prompt_the_answer_and_end(strategy):
    """A streamer used to get the prompt only and never `end()` (a `TextIteratorStreamer` then blocks until its
    timeout). As with transformers' own `generate`: the prompt first, then the answer's tokens, then `end()`."""
    model, streamer = _tempered(0.5), _Recorder()
    out = model.generate(
        PROMPT, max_new_tokens=3, seq_temperature=0.5, strategy=strategy, streamer=streamer, pad_token_id=0,
        generator=torch.Generator().manual_seed(0) if strategy != "adapter" else None,
    )  # fmt: skip
    assert streamer.ended and torch.equal(streamer.puts[0].flatten(), PROMPT.flatten())
    streamed = torch.cat([p.flatten() for p in streamer.puts[1:]])
    assert torch.equal(streamed, out[0, 2:][: len(streamed)]) and len(streamed) >= 1


def test_several_answers_per_prompt_need_no_do_sample():
    """`num_return_sequences=3` with `seq_temperature` used to need an explicit `do_sample=True`."""
    model = _tempered(0.5)
    out = model.generate(PROMPT, max_new_tokens=3, seq_temperature=0.5, num_return_sequences=3, pad_token_id=0)
    assert out.shape == (3, 5)
    with pytest.raises(ValueError, match="`do_sample=False` cannot be combined with `seq_temperature`"):
        model.generate(PROMPT, max_new_tokens=3, seq_temperature=0.5, do_sample=False, pad_token_id=0)


@pytest.mark.parametrize("strategy", ["mcmc", "smc"])
def test_output_scores_are_refused_where_answers_are_drawn_whole(strategy):
    """`output_scores` used to be dropped without a word under `mcmc` / `smc`."""
    model = _tempered(0.5)
    with pytest.raises(
        ValueError, match=rf"`output_scores` / `output_logits` have no meaning for `strategy='{strategy}'`"
    ):
        model.generate(
            PROMPT, max_new_tokens=3, seq_temperature=0.5, strategy=strategy, output_scores=True,
            return_dict_in_generate=True, pad_token_id=0,
        )  # fmt: skip
    out = model.generate(
        PROMPT, max_new_tokens=3, seq_temperature=0.5, strategy="adapter", output_scores=True,
        return_dict_in_generate=True, pad_token_id=0,
    )  # fmt: skip
    assert len(out.scores) >= 1  # token by token, scores mean what they mean in `generate`
