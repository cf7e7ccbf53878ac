# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., seq_temperature=T)` routing: adapters, interpolation, errors, Hub template."""

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from generation_toys import TinyMaskedLM, tiny_bert, tiny_llama
from peft import LoraConfig, get_peft_model
from peft.helpers import rescale_adapter_scale

from hf_seqtemp.generation import (
    generate_tempered,
    register_tempered_adapter,
    seqtemp_generate,
    tempered_adapters,
    write_custom_generate,
)
from hf_seqtemp.generation.adapters import calibration_points, interpolate_scale

PROMPT = torch.tensor([[1, 2, 3]])


def _config(t, t_eff=None, family="causal_lm"):
    return SimpleNamespace(target_temperature=t, eval_t_eff=t_eff, model_family=family)


@pytest.fixture
def two_adapters():
    lora = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "init_lora_weights": False}
    torch.manual_seed(3)
    model = get_peft_model(tiny_llama(vocab_size=16, seed=2, head_scale=4.0), LoraConfig(**lora), adapter_name="cold")
    model.add_adapter("hot", LoraConfig(**lora))
    register_tempered_adapter(model, _config(0.5, t_eff=0.6), "cold")
    register_tempered_adapter(model, _config(2.0, t_eff=1.7), "hot")
    model.set_adapter("hot")
    return model.eval()


def _sample(model, **kwargs):
    torch.manual_seed(11)
    return model.generate(PROMPT, max_new_tokens=12, pad_token_id=0, **kwargs)


def test_adapter_strategy_samples_the_matching_adapter(two_adapters):
    assert sorted(tempered_adapters(two_adapters)) == ["cold", "hot"]
    routed = _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5, top_k=1)
    assert two_adapters.active_adapter == "hot"  # restored afterwards
    two_adapters.set_adapter("cold")
    # top_k=1 must have been replaced by top_k=0 / top_p=1: plain sampling from the "cold" adapter
    direct = _sample(two_adapters, do_sample=True, top_k=0, top_p=1.0)
    two_adapters.set_adapter("hot")
    hot = _sample(two_adapters, do_sample=True, top_k=0, top_p=1.0)
    assert torch.equal(routed, direct) and not torch.equal(routed, hot)
    greedy = _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=2.0)
    assert torch.equal(greedy, hot)


def test_unit_temperature_samples_the_base_model(two_adapters):
    routed = _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=1.0)
    with two_adapters.disable_adapter():
        base = _sample(two_adapters, do_sample=True, top_k=0, top_p=1.0)
    assert torch.equal(routed, base)


def test_interpolation_rescales_the_bracketing_adapter(two_adapters):
    points = calibration_points(tempered_adapters(two_adapters)["cold"])
    scale = interpolate_scale(points, 0.8)
    assert math.isclose(scale, math.log(0.8) / math.log(0.6), rel_tol=1e-9)
    routed = _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.8, strategy="interpolate")
    two_adapters.set_adapter("cold")
    with rescale_adapter_scale(two_adapters, scale):
        direct = _sample(two_adapters, do_sample=True, top_k=0, top_p=1.0)
    assert torch.equal(routed, direct)
    assert interpolate_scale([(0.0, 1.0), (1.0, 1.7), (2.0, 2.5)], 2.0) == pytest.approx(
        1 + math.log(2.0 / 1.7) / math.log(2.5 / 1.7)
    )


def test_routing_errors(two_adapters):
    with pytest.raises(ValueError, match=r"available temperatures: \[0.5, 2.0\]"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.7)
    with pytest.raises(ValueError, match="outside every adapter's measured T_eff range"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.1, strategy="interpolate")
    with pytest.raises(ValueError, match=r"`strategy` must be one of \['auto', 'adapter'"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5, strategy="beam")
    with pytest.raises(ValueError, match="`seq_temperature` must be a finite float > 0, got 0.0"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.0)
    with pytest.raises(ValueError, match="`seq_temperature` must be a finite float > 0, got nan"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=float("nan"))
    with pytest.raises(ValueError, match="`strategy='imh'` needs a diffusion model"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5, strategy="imh")
    with pytest.raises(ValueError, match="`strategy='mcmc'` needs `seq_temperature`"):
        _sample(two_adapters, custom_generate=seqtemp_generate, strategy="mcmc")
    register_tempered_adapter(two_adapters, _config(0.5, family="masked_diffusion"), "cold")
    with pytest.raises(ValueError, match="Unsupported model family 'masked_diffusion'"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5)


def test_model_without_adapters_errors_and_defaults_to_mcmc():
    model = tiny_llama(vocab_size=8)
    with pytest.raises(ValueError, match="`strategy='adapter'` needs a model with sequence-temperature adapters"):
        _sample(model, custom_generate=seqtemp_generate, seq_temperature=0.5, strategy="adapter")
    out = _sample(model, custom_generate=seqtemp_generate, seq_temperature=0.5, return_dict_in_generate=True)
    assert out.sequences.shape == (1, 15) and out.acceptance_rate.shape == (1,)  # auto -> mcmc
    with pytest.raises(ValueError, match="Unsupported model family for `seq_temperature`: Linear"):
        seqtemp_generate(torch.nn.Linear(1, 1), PROMPT, [], [], SimpleNamespace(), seq_temperature=0.5)


def test_generate_tempered_routes_diffusion_models_to_imh():
    masked = TinyMaskedLM(tiny_bert(), mask_token_id=4)
    out = generate_tempered(
        masked,
        torch.tensor([[1, 2]]),
        seq_temperature=0.5,
        max_new_tokens=3,
        generator=torch.Generator().manual_seed(0),
        return_dict_in_generate=True,
    )
    assert out.acceptance_rate is not None and out.num_model_calls == 3


def test_hub_custom_generate_folder(tmp_path):
    model = tiny_llama(vocab_size=8)
    model.save_pretrained(tmp_path)
    folder = write_custom_generate(tmp_path)
    source = Path(folder, "generate.py").read_text()
    assert "from hf_seqtemp.generation.routing import seqtemp_generate" in source
    assert Path(folder, "requirements.txt").read_text().strip() == "hf-seqtemp"
    torch.manual_seed(0)
    hub = model.generate(
        PROMPT,
        max_new_tokens=4,
        custom_generate=str(tmp_path),
        trust_remote_code=True,
        seq_temperature=0.5,
        strategy="mcmc",
        generator=torch.Generator().manual_seed(1),
    )
    torch.manual_seed(0)
    local = model.generate(
        PROMPT,
        max_new_tokens=4,
        custom_generate=seqtemp_generate,
        seq_temperature=0.5,
        strategy="mcmc",
        generator=torch.Generator().manual_seed(1),
    )
    assert torch.equal(hub, local)
    with pytest.raises(ValueError, match="`folder` must be an existing model folder"):
        write_custom_generate(tmp_path / "missing")
