# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`generate(..., seq_temperature=T)` routing: which distribution each route samples, errors, Hub template.

The adapters are what the trainer ships with `init_from_token_temperature=True`: LoRA on the attention plus a
`modules_to_save` copy of the final norm scaled by 1/T, saved to a folder and loaded back with `load_tempered`.
Every route is checked against an oracle that involves no switching: the adapter alone on a fresh base model
(`PeftModel.from_pretrained`), or the fresh base model itself.
"""

import itertools
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from distribution_checks import cell_counts, chi_square_pvalue
from peft import LoraConfig, PeftModel, get_peft_model
from tiny_models import TinyMaskedLM, tiny_bert, tiny_llama
from transformers import GenerationConfig

from hf_seqtemp import SequenceTemperatureConfig, load_tempered
from hf_seqtemp.generation import (
    STRATEGY_REGISTRY,
    generate_tempered,
    register_tempered_adapter,
    seqtemp_generate,
    tempered_adapters,
    write_custom_generate,
)
from hf_seqtemp.likelihood import AutoregressiveScorer
from hf_seqtemp.trainer.token_temperature_init import fold_token_temperature, with_trainable_final_norm

PROMPT = torch.tensor([[1, 2, 3]])
VOCAB, NEW, SAMPLES = 4, 3, 3000
COMPLETIONS = torch.tensor(list(itertools.product(range(VOCAB), repeat=NEW)))


def _base():
    return tiny_llama(vocab_size=VOCAB, seed=2, head_scale=3.0)


def _save_tempered_adapter(folder, temperature, seed):
    """LoRA (random, non-zero) + the final norm folded to 1/T, saved as `load_tempered` expects."""
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"])
    model = get_peft_model(_base(), with_trainable_final_norm(lora, _base()))
    fold_token_temperature(model, temperature)
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.5)
    model.save_pretrained(folder)
    SequenceTemperatureConfig(target_temperature=temperature).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    return {0.5: _save_tempered_adapter(root / "cold", 0.5, 0), 2.0: _save_tempered_adapter(root / "hot", 2.0, 1)}


def _oracle(folders, temperature):
    """The model `seq_temperature=T` must sample: the fresh base for T = 1, else adapter T alone on a fresh base."""
    if temperature == 1.0:
        return _base()
    return PeftModel.from_pretrained(_base(), str(folders[temperature])).eval()


def _first_step_logps(model, prompts, **kwargs):
    out = model.generate(
        prompts,
        max_new_tokens=1,
        pad_token_id=0,
        output_logits=True,
        return_dict_in_generate=True,
        custom_generate=seqtemp_generate,
        **kwargs,
    )
    return out.logits[0].float().log_softmax(-1)


@torch.no_grad()
def _exact_completion_probs(model, prompt):
    states = torch.cat([prompt.expand(len(COMPLETIONS), -1), COMPLETIONS], dim=1)
    cmask = torch.zeros_like(states, dtype=torch.bool)
    cmask[:, prompt.shape[1] :] = True
    return AutoregressiveScorer()(model, states, completion_mask=cmask).double().exp()


def _completion_counts(model, prompt, **kwargs):
    torch.manual_seed(0)
    out = model.generate(
        prompt.expand(SAMPLES, -1),
        max_new_tokens=NEW,
        pad_token_id=0,
        custom_generate=seqtemp_generate,
        **kwargs,
    )
    return cell_counts(out[:, prompt.shape[1] :], COMPLETIONS)


@pytest.mark.parametrize("loaded", [(0.5,), (0.5, 2.0)], ids=["one_adapter", "two_adapters"])
def test_each_temperature_samples_its_own_model(folders, loaded):
    """`seq_temperature=1` samples the base model p and `seq_temperature=T_i` adapter i, LoRA and folded norm both:
    first-step log-probs equal the oracle's to 1e-5 on two prompts, and completion frequencies (64 cells, 3000
    samples) pass a chi-square test against the oracle's enumerated distribution."""
    model = load_tempered(folders[loaded[0]], base_model=_base())
    for temperature in loaded[1:]:
        model = load_tempered(folders[temperature], base_model=model)
    assert sorted(tempered_adapters(model)) == sorted("t" + f"{t:g}".replace(".", "_") for t in loaded)
    prompts = torch.tensor([[1, 2, 3], [3, 1, 2]])
    for temperature in (1.0, *loaded):
        oracle = _oracle(folders, temperature)
        with torch.no_grad():
            expected = oracle(input_ids=prompts).logits[:, -1].float().log_softmax(-1)
        got = _first_step_logps(model, prompts, seq_temperature=temperature, top_k=1)
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
        counts = _completion_counts(model, PROMPT, seq_temperature=temperature)
        _, p_value, _ = chi_square_pvalue(counts, _exact_completion_probs(oracle, PROMPT))
        assert p_value > 1e-3, (temperature, p_value)
        if temperature == 1.0:  # the training-free routes temper the base model p, adapters off
            counts = _completion_counts(model, PROMPT, seq_temperature=1.0, strategy="mcmc")
            assert chi_square_pvalue(counts, _exact_completion_probs(oracle, PROMPT))[1] > 1e-3
    assert model.active_adapter == "t" + f"{loaded[-1]:g}".replace(".", "_")  # restored after every call
    # the test has power: the samples at T = 0.5 are rejected against p, and p's samples against adapter 0.5
    with torch.no_grad():
        base_probs = _exact_completion_probs(_base(), PROMPT)
        cold_probs = _exact_completion_probs(_oracle(folders, 0.5), PROMPT)
    assert chi_square_pvalue(_completion_counts(model, PROMPT, seq_temperature=0.5), base_probs)[1] < 1e-6
    assert chi_square_pvalue(_completion_counts(model, PROMPT, seq_temperature=1.0), cold_probs)[1] < 1e-6


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


def test_routing_errors(two_adapters):
    with pytest.raises(ValueError, match=r"available temperatures: \[0.5, 2.0\]"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.7)
    with pytest.raises(
        ValueError, match=r"`strategy` must be one of \['auto', 'adapter', 'mcmc', 'glauber', 'imh', 'smc'\]"
    ):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.8, strategy="interpolate")
    with pytest.raises(ValueError, match=r"`strategy` must be one of \['auto', 'adapter'"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5, strategy="beam")
    with pytest.raises(ValueError, match="`seq_temperature` must be a finite float > 0, got 0.0"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.0)
    with pytest.raises(ValueError, match="`seq_temperature` must be a finite float > 0, got nan"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=float("nan"))
    with pytest.raises(ValueError, match="`strategy='imh'` needs a diffusion model"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5, strategy="imh")
    with pytest.raises(ValueError, match="`num_beams=2` cannot be combined with `seq_temperature`"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5, num_beams=2)
    with pytest.raises(ValueError, match="`strategy='mcmc'` needs `seq_temperature`"):
        _sample(two_adapters, custom_generate=seqtemp_generate, strategy="mcmc")
    register_tempered_adapter(two_adapters, _config(0.5, family="masked_diffusion"), "cold")
    with pytest.raises(ValueError, match="Unsupported model family 'masked_diffusion'"):
        _sample(two_adapters, custom_generate=seqtemp_generate, seq_temperature=0.5)


def test_model_without_adapters_errors_and_defaults_to_smc():
    model = tiny_llama(vocab_size=8)
    with pytest.raises(ValueError, match="`strategy='adapter'` needs a model with sequence-temperature adapters"):
        _sample(model, custom_generate=seqtemp_generate, seq_temperature=0.5, strategy="adapter")
    auto, smc = (
        _sample(
            model,
            custom_generate=seqtemp_generate,
            seq_temperature=0.5,
            generator=torch.Generator().manual_seed(4),
            **extra,
        )
        for extra in ({}, {"strategy": "smc"})
    )
    assert torch.equal(auto, smc)  # without adapters, "auto" is SMC (plain sampling's calls; MH takes 5-6x)
    with pytest.raises(ValueError, match="Unsupported model family for `seq_temperature`: Linear"):
        seqtemp_generate(torch.nn.Linear(1, 1), PROMPT, [], [], GenerationConfig(), seq_temperature=0.5)
    with pytest.raises(
        TypeError, match=r"call `model.generate\(\*\*inputs, custom_generate=hf_seqtemp.seqtemp_generate"
    ):
        seqtemp_generate(model, PROMPT, seq_temperature=0.5)  # called directly instead of through `generate`


def test_a_registered_strategy_is_selected_by_name(monkeypatch):
    """Strategies are looked up in the registry: a new entry is reachable from `generate` without touching routing,
    and receives the prepared call (prompt, token budget, temperature, options)."""
    seen = []

    def greedy_of_the_base_model(call):
        seen.append((call.seq_temperature, call.max_new_tokens, call.options["mcmc_steps"]))
        return torch.cat([call.input_ids, call.input_ids.new_zeros(call.input_ids.shape[0], call.max_new_tokens)], 1)

    monkeypatch.setitem(STRATEGY_REGISTRY, "zeros", greedy_of_the_base_model)
    out = _sample(tiny_llama(vocab_size=8), custom_generate=seqtemp_generate, seq_temperature=0.25, strategy="zeros")
    assert seen == [(0.25, 12, 4)] and out[0, PROMPT.shape[1] :].tolist() == [0] * 12
    monkeypatch.undo()  # unregistered again: the name is refused
    with pytest.raises(
        ValueError, match=r"`strategy` must be one of \['auto', 'adapter', 'mcmc', 'glauber', 'imh', 'smc'\]"
    ):
        _sample(tiny_llama(vocab_size=8), custom_generate=seqtemp_generate, seq_temperature=0.25, strategy="zeros")


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


def test_custom_generate_names_no_bare_package_and_says_where_hf_seqtemp_comes_from(tmp_path, monkeypatch):
    """transformers reads `custom_generate/requirements.txt` and a file's imports outside try blocks as packages to
    `pip install`: neither names hf_seqtemp, which is not on PyPI (anyone could register the name). Without the
    package, `generate` says where it comes from; a stale requirements file of an earlier save is removed."""
    import importlib.util
    import sys

    from transformers.dynamic_module_utils import check_python_requirements, get_imports

    Path(tmp_path, "custom_generate").mkdir()
    Path(tmp_path, "custom_generate", "requirements.txt").write_text("hf-seqtemp\n")
    folder = write_custom_generate(tmp_path)
    assert os.listdir(folder) == ["generate.py"]
    assert not [name for name in get_imports(os.path.join(folder, "generate.py")) if "seqtemp" in name]
    check_python_requirements(str(tmp_path), requirements_file="custom_generate/requirements.txt")  # nothing asked
    monkeypatch.setitem(sys.modules, "hf_seqtemp.generation.call_kwargs", None)  # as if not installed
    spec = importlib.util.spec_from_file_location("hub_generate", os.path.join(folder, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ImportError, match=r"not on PyPI .*install it from (its source repository|a checkout)"):
        module.generate(tiny_llama(vocab_size=8), PROMPT)


def test_hub_custom_generate_folder(tmp_path):
    model = tiny_llama(vocab_size=8)
    model.save_pretrained(tmp_path)
    folder = write_custom_generate(tmp_path)
    source = Path(folder, "generate.py").read_text()
    assert "from hf_seqtemp.generation.routing import seqtemp_generate" in source
    assert not Path(folder, "requirements.txt").exists()  # a bare "hf-seqtemp" anyone could register on PyPI
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


@pytest.mark.parametrize("strategy", ["mcmc", "glauber", "smc"])
def test_a_stopping_criterion_the_strategy_cannot_honour_is_refused_by_name(strategy):
    """A custom `StoppingCriteria` used to be dropped silently (12 tokens where it asked for 3); the strategies end
    answers at EOS or `max_new_tokens` only, so it is refused, naming it. Without one the call runs."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    from hf_seqtemp.generation import seqtemp_generate

    class StopAtFive(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return torch.full((input_ids.shape[0],), input_ids.shape[1] >= 5, dtype=torch.bool)

    model = tiny_llama(vocab_size=6, seed=0)
    kwargs = {"max_new_tokens": 8, "custom_generate": seqtemp_generate, "seq_temperature": 0.5, "pad_token_id": 0}
    with pytest.raises(ValueError, match=rf"`strategy='{strategy}'`.*stopping criteria \['StopAtFive'\]"):
        model.generate(
            torch.tensor([[1, 2]]), strategy=strategy, stopping_criteria=StoppingCriteriaList([StopAtFive()]), **kwargs
        )
    assert model.generate(torch.tensor([[1, 2]]), strategy=strategy, **kwargs).shape == (1, 10)


def _word_tokenizer(vocab_size):
    """One letter per token id ("a" = 0, "b" = 1, ...), at least "a"-"f" (transformers' stop-string matching
    tokenizes "abcdef" to learn how tokens render)."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    letters = "abcdefghijklmnop"[: max(6, vocab_size)]
    backend = Tokenizer(models.BPE({c: i for i, c in enumerate(letters)}, [], unk_token="a"))
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=backend)


def _stopped_equals_cut(full, stopped, stop_id, eos_id, prompt_length):
    """Each row of `stopped` is the row of `full` cut after its first `stop_id` answer token (or its EOS), then
    padding (0); returns that and the number of rows cut at `stop_id`."""
    width = full.shape[1]
    stopped = torch.nn.functional.pad(stopped, (0, width - stopped.shape[1]))
    cuts = 0
    for row_full, row_stopped in zip(full, stopped):
        hits = torch.isin(row_full[prompt_length:], torch.tensor([stop_id, eos_id])).nonzero()
        end = prompt_length + int(hits[0]) + 1 if len(hits) else width
        cuts += end < width and int(row_full[end - 1]) == stop_id
        if not (torch.equal(row_stopped[:end], row_full[:end]) and not row_stopped[end:].any()):
            return False, cuts
    return True, cuts


def test_stop_strings_are_honoured_token_by_token_and_refused_by_the_whole_answer_strategies(folders):
    """transformers drops `tokenizer=` for a callable `custom_generate` ("could not locate a tokenizer"). A model from
    `load_tempered` and the Hub folder's `custom_generate` see the call first and turn `stop_strings` into a
    `StopStringCriteria`: `strategy="adapter"` stops each answer at the string exactly where cutting the unstopped
    answer (same RNG) would; "mcmc", "smc" and "glauber" (whole answers of p^(1/T)) refuse it by name; without the
    tokenizer the error says to pass it. The model's own `generation_config.stop_strings` is moved and restored."""
    from transformers import GenerationConfig

    from hf_seqtemp.generation.custom_generate import GENERATE_PY

    model = load_tempered(folders[0.5], base_model=_base())
    tokenizer = _word_tokenizer(VOCAB)
    prompts = PROMPT.expand(64, -1)
    kwargs = {"max_new_tokens": 6, "seq_temperature": 0.5, "pad_token_id": 0, "eos_token_id": 3}
    torch.manual_seed(5)
    full = model.generate(prompts, strategy="adapter", **kwargs)
    torch.manual_seed(5)
    stopped = model.generate(prompts, strategy="adapter", stop_strings=["c"], tokenizer=tokenizer, **kwargs)
    same, cuts = _stopped_equals_cut(full, stopped, 2, 3, PROMPT.shape[1])
    assert same and 10 < cuts < 54  # the test has power: many rows stop at "c", others at EOS or the length
    # the same through a passed generation config, and through the model's own (restored afterwards)
    torch.manual_seed(5)
    config = GenerationConfig(stop_strings=["c"], max_new_tokens=6, pad_token_id=0, eos_token_id=3)
    from_config = model.generate(prompts, strategy="adapter", generation_config=config, seq_temperature=0.5,
                                 tokenizer=tokenizer)  # fmt: skip
    assert torch.equal(from_config, stopped) and config.stop_strings == ["c"]
    inner = model.get_base_model()
    inner.generation_config.stop_strings = ["c"]
    torch.manual_seed(5)
    assert torch.equal(model.generate(prompts, strategy="adapter", tokenizer=tokenizer, **kwargs), stopped)
    assert inner.generation_config.stop_strings == ["c"]
    inner.generation_config.stop_strings = None
    for strategy in ("mcmc", "smc", "glauber"):
        with pytest.raises(ValueError, match=rf"`strategy='{strategy}'`.*\['StopStringCriteria'\]"):
            model.generate(PROMPT, strategy=strategy, stop_strings=["c"], tokenizer=tokenizer, **kwargs)
    with pytest.raises(ValueError, match=r"`stop_strings=\['c'\]` needs the model's tokenizer.*pass `tokenizer=`"):
        model.generate(PROMPT, strategy="adapter", stop_strings=["c"], **kwargs)
    assert "stop_strings_as_criteria(model, kwargs)" in GENERATE_PY  # the Hub folder's entry point converts too


def test_stop_strings_through_the_hub_folder(tmp_path):
    """The Hub folder's `custom_generate/generate.py` gets the call's `tokenizer` (transformers hands a string
    `custom_generate` every argument): under `strategy="mcmc"` stop strings are refused by name, not with
    transformers' tokenizer error; the direct callable path still ends in transformers' own error."""
    import hf_seqtemp

    model = tiny_llama(vocab_size=6, seed=0)
    model.save_pretrained(tmp_path)
    write_custom_generate(tmp_path)
    kwargs = {"max_new_tokens": 4, "seq_temperature": 0.5, "strategy": "mcmc", "pad_token_id": 0}
    with pytest.raises(ValueError, match=r"`strategy='mcmc'`.*\['StopStringCriteria'\]"):
        model.generate(torch.tensor([[1, 2]]), custom_generate=str(tmp_path), trust_remote_code=True,
                       stop_strings=["c"], tokenizer=_word_tokenizer(6), **kwargs)  # fmt: skip
    assert model.generate(torch.tensor([[1, 2]]), custom_generate=str(tmp_path), trust_remote_code=True,
                          **kwargs).shape == (1, 6)  # fmt: skip
    for extra in ({}, {"tokenizer": _word_tokenizer(6)}):
        with pytest.raises(ValueError, match=r"stop strings|stop_strings"):
            model.generate(torch.tensor([[1, 2]]), custom_generate=hf_seqtemp.seqtemp_generate, stop_strings=["x"],
                           **extra, **kwargs)  # fmt: skip
