# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The card's usage example runs as written (through the chat template for a chat model, with the real repo id),
and its plot is taken within prompts, as its T_eff figures are."""

import re

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig
from tiny_models import save_word_base, word_tokenizer
from transformers import AutoModelForCausalLM

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, SequenceTemperatureConfig
from hf_seqtemp.card import plot_log_likelihoods, render_model_card, within_prompt_points
from hf_seqtemp.metrics.core import effective_temperature

CHAT = "{% for m in messages %}{{ m['content'] }} {% endfor %}{% if add_generation_prompt %}b {% endif %}"


def _tokenizer(chat: bool):
    return word_tokenizer(CHAT if chat else None)


def _trainer(tmp_path, chat: bool, output_dir: str, **config) -> SeqTempTrainer:
    """One step of training on the tiny model saved to `tmp_path / "base"` with its word tokenizer (a chat template
    when `chat`), ready to save a card."""
    save_word_base(tmp_path / "base", CHAT if chat else None)
    args = SeqTempConfig(
        output_dir=output_dir, use_cpu=True, max_steps=1, save_strategy="no", per_device_train_batch_size=8, **config
    )
    return SeqTempTrainer(
        AutoModelForCausalLM.from_pretrained(tmp_path / "base"),
        args,
        train_dataset=Dataset.from_dict({"text": ["a b c d", "b c d a"] * 4}),
        processing_class=_tokenizer(chat),
        peft_config=LoraConfig(r=2, target_modules=["q_proj"]),
    )


@pytest.mark.parametrize("chat", [True, False])
def test_the_cards_usage_example_runs_and_uses_the_real_repo_id(chat, tmp_path, capsys):
    # the Hub repository is known, though nothing is pushed
    trainer = _trainer(tmp_path, chat, str(tmp_path / "run"), report_to="none", hub_model_id="me/real-repo")
    trainer.save_model(str(tmp_path / "saved"))
    card = (tmp_path / "saved" / "README.md").read_text(encoding="utf-8")
    assert 'load_tempered("me/real-repo")' in card and "<user>/<repo>" not in card
    assert ("apply_chat_template" in card) == chat
    code = re.search(r"## Usage\n\n```python\n(.*?)```", card, re.DOTALL).group(1)
    code = code.replace("me/real-repo", str(tmp_path / "saved")).replace("max_new_tokens=32", "max_new_tokens=3")
    exec(code, {})  # noqa: S102 (the example as printed, against the local folder)
    printed = capsys.readouterr().out.strip().splitlines()[-1].split()
    # the chat example prints the completion alone (3 tokens at most); the text one the prompt's known word too
    assert 1 <= len(printed) <= (3 if chat else 4) and set(printed) <= {"a", "b", "c", "d"}


def test_render_model_card_uses_the_chat_template_when_asked():
    config = SequenceTemperatureConfig(0.5, base_model_id="my/base")
    card = render_model_card(config, repo_id="me/tempered", chat_template=True)
    assert "tokenizer.apply_chat_template(messages, add_generation_prompt=True" in card
    assert 'tokenizer("Name a colour."' not in card


def test_the_plot_is_within_prompts_with_a_panel_per_model(tmp_path):
    generator = torch.Generator().manual_seed(0)
    groups = [g for g in range(4) for _ in range(6)]
    offsets = torch.tensor([0.0, -20.0, -40.0, -60.0]).repeat_interleave(6)  # very different normalisers
    base = offsets + torch.randn(24, generator=generator, dtype=torch.float64)
    logps = {"base": base, "myopic": 1.6 * base, "tempered": 2.0 * base + offsets, "groups": groups}
    codes, x, y = within_prompt_points(logps, "tempered")
    for g in range(4):
        assert abs(x[codes == g].mean()) < 1e-12 * 60 and abs(y[codes == g].mean()) < 1e-12 * 120
    # centred within prompts, the tempered points lie on slope 1/T exactly; pooled, the offsets would bend them
    torch.testing.assert_close(y, 2.0 * x, rtol=1e-12, atol=1e-12 * 60)
    reports = {
        name: {"t_eff": effective_temperature(base, logps[name], groups=groups), "kendall_tau": 1.0}
        for name in ("myopic", "tempered")
    }
    path = plot_log_likelihoods(logps, reports, 0.5, str(tmp_path / "plot.png"))
    from PIL import Image

    width, height = Image.open(path).size
    assert width > 2 * height * 0.95  # two panels side by side: the two models' lines never overlap


def test_without_a_repo_id_the_cards_example_runs_offline_from_the_folder_as_written(tmp_path, capsys, monkeypatch):
    """No Hub repository named: the card's example loads the folder it was written to, model and tokenizer (the
    folder ships one), and runs as printed, offline, from the folder the save was made in."""
    monkeypatch.chdir(tmp_path)
    trainer = _trainer(tmp_path, True, "run")
    trainer.save_model("out/adapter")
    card = (tmp_path / "out" / "adapter" / "README.md").read_text(encoding="utf-8")
    assert "<user>/<repo>" not in card and "pip install hf-seqtemp" not in card
    code = re.search(r"## Usage\n\n```python\n(.*?)```", card, re.DOTALL).group(1)
    assert 'load_tempered("out/adapter")' in code and 'AutoTokenizer.from_pretrained("out/adapter")' in code
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    exec(code, {})  # noqa: S102 (as printed)
    assert set(capsys.readouterr().out.strip().splitlines()[-1].split()) <= {"a", "b", "c", "d"}


def test_the_card_documents_every_generate_option():
    """Every option `seqtemp_generate` adds to `generate` has a row in the card's options table."""
    import inspect

    import hf_seqtemp

    card = render_model_card(SequenceTemperatureConfig(0.5, base_model_id="my/base"), repo_id="me/tempered")
    rows = set(re.findall(r"^\| `(\w+)` \|", card.split("### `generate` options")[1], flags=re.MULTILINE))
    names = list(inspect.signature(hf_seqtemp.seqtemp_generate).parameters)
    ours = names[names.index("seq_temperature") : names.index("model_kwargs")]
    ours.remove("seqtemp_streamer")  # not an option: the call's `streamer`, handed over by hf_seqtemp's entry points
    assert set(ours) - rows == set() and {"num_particles", "proposal", "resampling"} <= rows


def test_the_peft_recipe_of_the_card_names_the_base_to_load():
    from hf_seqtemp.models.default import DEFAULT_MODEL_ID

    embedded = render_model_card(SequenceTemperatureConfig(0.5, base_model_id=DEFAULT_MODEL_ID), repo_id="me/t")
    assert 'hf_seqtemp.load_default_model()`, then `PeftModel.from_pretrained(base, "me/t")`' in embedded
    assert "Not `AutoPeftModelForCausalLM.from_pretrained`" in embedded
    other = render_model_card(SequenceTemperatureConfig(0.5, base_model_id="my/base"), repo_id="me/t")
    assert 'PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained("my/base"), "me/t")' in other


@pytest.mark.slow
def test_plain_peft_as_the_card_says_gives_the_log_probs_of_load_tempered_offline(tmp_path, monkeypatch):
    """A folder for the embedded model loads with `PeftModel` on `load_default_model()`'s base, as its card says,
    to the logits of `load_tempered`, with the Hub off (AutoPeftModel would go to the Hub checkpoint instead)."""
    from peft import PeftModel, get_peft_model

    import hf_seqtemp
    from hf_seqtemp import hub, load_tempered
    from hf_seqtemp.fingerprint import base_fingerprint
    from hf_seqtemp.models.default import DEFAULT_MODEL_ID

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base, tokenizer = hf_seqtemp.load_default_model()
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
    model.seqtemp_config = SequenceTemperatureConfig(0.5, base_model_id=DEFAULT_MODEL_ID)
    model.seqtemp_config.base_model_fingerprint = base_fingerprint(model.get_base_model())
    hub.save_for_hub(model, tmp_path / "folder", tokenizer=tokenizer)
    card = (tmp_path / "folder" / "README.md").read_text(encoding="utf-8")
    assert f'PeftModel.from_pretrained(base, "{tmp_path / "folder"}")' in card
    ids = tokenizer("Name a colour. Blue", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = load_tempered(tmp_path / "folder")(input_ids=ids).logits
        fresh_base, _ = hf_seqtemp.load_default_model()
        plain = PeftModel.from_pretrained(fresh_base, str(tmp_path / "folder")).eval()
        assert torch.allclose(plain(input_ids=ids).logits, expected, atol=1e-5)
        with plain.disable_adapter():  # and the adapter does something
            assert not torch.allclose(plain(input_ids=ids).logits, expected, atol=1e-3)


def test_fourteen_prompts_get_distinct_saturated_styles_and_the_audit_line_is_labelled(tmp_path, monkeypatch):
    """14 prompts (the demo's held-out set) get 14 distinct (colour, marker) pairs from the saturated `tab10`
    colours; the card plot draws each prompt in its own style; audit.png names its dashed line in a legend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_rgb
    from matplotlib.figure import Figure

    from hf_seqtemp.audit.output import plot_audit, prompt_style

    styles = [prompt_style(i) for i in range(14)]
    assert len(set(styles)) == 14
    for colour, _ in styles:  # no pale shade: some channel below 0.5 (tab20's light halves have none)
        assert min(to_rgb(colour)) < 0.5, colour
    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, path, *a, **k: figures.append(self))
    groups = [g for g in range(14) for _ in range(3)]
    base = torch.arange(42, dtype=torch.float64) % 5
    logps = {"base": base, "myopic": 1.5 * base, "tempered": 2.0 * base, "groups": groups}
    reports = {n: {"t_eff": 0.5, "kendall_tau": 1.0} for n in ("myopic", "tempered")}
    plot_log_likelihoods(logps, reports, 0.5, str(tmp_path / "card.png"))
    drawn = [
        (tuple(c.get_facecolor()[0][:3]), c.get_paths()[0].vertices.shape[0]) for c in figures[0].axes[0].collections
    ]
    assert len(drawn) == 14 and len(set(drawn)) == 14  # one collection per prompt, each its own colour or marker
    sequences = [{"prompt": g, "ref_logp": float(b), "policy_logp": float(b)} for g, b in zip(groups, base)]
    result = {
        "rows": [{"setting": {"top_p": 0.9}, "summary": {"t_eff": 1.0, "kendall_tau": 1.0}, "sequences": sequences}]
    }
    plot_audit(result, tmp_path / "audit.png")
    legend = figures[1].axes[0].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["log q = log p (p itself)"]


def _training_free_line(card: str) -> str:
    return re.search(r"`(model\.generate\(\*\*inputs, custom_generate=[^`]*)`", card).group(1)


def test_the_cards_training_free_line_works_on_the_folder_it_is_in(tmp_path, monkeypatch):
    """The card's `model.generate(..., custom_generate=...)` line runs as printed on a base model: for a
    `save_model` folder (no `custom_generate/`) through `hf_seqtemp.seqtemp_generate`, for a `save_for_hub` folder
    through the folder's own `custom_generate/` (what the Hub repository carries)."""
    import hf_seqtemp

    monkeypatch.chdir(tmp_path)
    trainer = _trainer(tmp_path, False, "run")
    trainer.save_model("saved")
    trainer.save_for_hub("hub")
    inputs = _tokenizer(False)("a b", return_tensors="pt")
    for folder, through in (
        ("saved", "custom_generate=hf_seqtemp.seqtemp_generate"),
        ("hub", 'custom_generate="hub"'),
    ):
        line = _training_free_line((tmp_path / folder / "README.md").read_text(encoding="utf-8"))
        assert through in line and (tmp_path / folder / "custom_generate").is_dir() == (folder == "hub"), folder
        model = AutoModelForCausalLM.from_pretrained(tmp_path / "base")
        scope = {"model": model, "inputs": dict(inputs), "hf_seqtemp": hf_seqtemp}
        out = eval(line.replace("**inputs", "**inputs, max_new_tokens=3"), scope)  # the line as printed
        assert out.shape[0] == 1 and inputs["input_ids"].shape[1] < out.shape[1] <= inputs["input_ids"].shape[1] + 3
