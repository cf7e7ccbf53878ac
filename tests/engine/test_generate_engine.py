# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., seq_temperature=T, engine=URL)` and `hf-seqtemp generate --vllm_server_base_url` reach the engine
samplers: the same draws as calling them directly, the checks of the server against the local model first, and the
settings the engine cannot apply refused by name."""

from __future__ import annotations

import json

import pytest
import torch
from engine.conftest import EOS, NEW, PROMPTS, T, engine_llama, lora_of

import hf_seqtemp
from hf_seqtemp.config import SequenceTemperatureConfig
from hf_seqtemp.generation import power_sampling, smc
from hf_seqtemp.generation.adapters import register_tempered_adapter
from hf_seqtemp.generation.power_sampling import power_sample
from hf_seqtemp.generation.smc import smc_sample

RUNS = 4


def _rows():
    width = max(len(p) for p in PROMPTS)
    ids = torch.tensor([[0] * (width - len(p)) + list(p) for p in PROMPTS]).repeat_interleave(RUNS, 0)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in PROMPTS]).repeat_interleave(RUNS, 0)
    return ids, mask


def _generate(model, **kwargs):
    ids, mask = _rows()
    return model.generate(
        ids,
        attention_mask=mask,
        max_new_tokens=NEW,
        custom_generate=hf_seqtemp.seqtemp_generate,
        seq_temperature=T,
        generator=torch.Generator().manual_seed(7),
        eos_token_id=EOS,
        pad_token_id=0,
        **kwargs,
    )


@pytest.fixture
def no_transformers_samplers(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("sampled with the transformers loop")

    monkeypatch.setattr(smc, "ModelParticles", refuse)  # one sampler per route: its transformers backends refuse
    monkeypatch.setattr(power_sampling, "ModelRollouts", refuse)


def test_generate_smc_and_mcmc_on_the_engine_draw_what_the_engine_samplers_draw(engine, no_transformers_samplers):
    ids, mask = _rows()
    common = {"max_new_tokens": NEW, "seq_temperature": T, "eos_token_id": EOS, "pad_token_id": 0}
    smc = _generate(engine.model, strategy="smc", engine=engine.base.base_url, num_particles=8, block_size=1)
    direct = smc_sample(engine.base, ids, mask, num_particles=8, block_size=1,
                        generator=torch.Generator().manual_seed(7), **common)  # fmt: skip
    assert torch.equal(smc, direct) and smc.shape == (len(PROMPTS) * RUNS, ids.shape[1] + NEW)
    mh = _generate(engine.model, strategy="mcmc", engine=engine.base.base_url, mcmc_steps=2, block_size=1)
    direct = power_sample(engine.base, ids, mask, mcmc_steps=2, block_size=1,
                                 generator=torch.Generator().manual_seed(7), **common)  # fmt: skip
    assert torch.equal(mh, direct)


def test_generate_smc_with_a_tempered_adapter_proposes_with_the_served_lora(engine, no_transformers_samplers):
    """A tempered adapter loaded on the local model proposes through the LoRA served under the same name; the
    served LoRA is checked against the local one first (a LoRA of other weights is refused)."""
    local = lora_of(engine_llama())  # the served LoRA's weights, PEFT's name "default"
    register_tempered_adapter(local, SequenceTemperatureConfig(target_temperature=T), "default")
    out = _generate(local, strategy="smc", engine=engine.base, proposal_engine=engine.proposer,
                    engine_adapter="lora", num_particles=8, block_size=2, return_dict_in_generate=True)  # fmt: skip
    ids, mask = _rows()
    direct = smc_sample(engine.base, ids, mask, max_new_tokens=NEW, seq_temperature=T, num_particles=8,
                        block_size=2, generator=torch.Generator().manual_seed(7), eos_token_id=EOS,
                        pad_token_id=0, proposal="adapter", adapter_name="lora",
                        proposal_client=engine.proposer)  # fmt: skip
    assert torch.equal(out.sequences, direct)
    other = lora_of(engine_llama(), seed=5)
    register_tempered_adapter(other, SequenceTemperatureConfig(target_temperature=T), "default")
    with pytest.raises(ValueError, match="the adapter 'lora' served at .* differ from the scorer's"):
        _generate(other, strategy="smc", engine=engine.base, proposal_engine=engine.proposer, engine_adapter="lora")


def test_what_the_engine_cannot_apply_is_refused_by_name(engine):
    url = engine.base.base_url
    with pytest.raises(ValueError, match="RepetitionPenaltyLogitsProcessor"):
        _generate(engine.model, strategy="smc", engine=url, repetition_penalty=1.3)
    with pytest.raises(ValueError, match="`alpha_ramp_tokens` is not available on an engine"):
        _generate(engine.model, strategy="smc", engine=url, alpha_ramp_tokens=2)
    with pytest.raises(ValueError, match="`defensive_mixture` is not available on an engine"):
        _generate(engine.model, strategy="smc", engine=url, defensive_mixture=0.5)
    with pytest.raises(ValueError, match="`strategy='glauber'` has no engine version"):
        _generate(engine.model, strategy="glauber", engine=url)
    with pytest.raises(TypeError, match="`engine` must be an engine server's URL or an `EngineClient`"):
        _generate(engine.model, strategy="smc", engine=8000)


def test_the_command_line_samples_on_the_engine(engine, tmp_path, no_transformers_samplers):
    from hf_seqtemp.cli import main

    out = tmp_path / "samples.json"
    args = ["generate", "--model_name_or_path", str(engine.folder), "--prompt", "x y", "--seq_temperature", "0.5",
            "--strategy", "smc", "--num_particles", "8", "--block_size", "2", "--num_generations", "3",
            "--max_completion_length", "3", "--no_chat_template", "--vllm_server_base_url", engine.base.base_url,
            "--output_json", str(out)]  # fmt: skip
    assert main(args) == 0
    (result,) = json.loads(out.read_text())
    assert result["prompt"] == "x y" and len(result["completions"]) == 3
    assert all(set(text.split()) <= {"x", "y", "<s>"} for text in result["completions"])
