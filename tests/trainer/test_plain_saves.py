# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A saved folder is a plain folder: what users do with folders works on it, and a save never takes what is not its.

A twice-saved folder is copied with `cp F/* dst`, `cp -r`, `rsync -a`, `zip`, `tar` and `git` with
`core.symlinks=false`, the original deleted, and every copy loads (plain PEFT and `load_tempered`) as the second
save exactly, holding no file of the first; `upload_folder` (intercepted before the network) sends each file once.
Also: a model's folder is never emptied by a save, edits are what is loaded and uploaded, permissions are the
umask's, a filesystem without links saves, an earlier hf_seqtemp's versioned folder loads and is converted, and a
failure names its real cause."""

import errno
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import saved_adapters
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from saved_adapters import LORA, _trainer, assert_plain_save
from tiny_models import tiny_causal_lm

from hf_seqtemp import SequenceTemperatureConfig, hub, load_tempered, staging
from hf_seqtemp.manifest import write_manifest

IDS = torch.tensor([[1, 2, 3, 4]])


def _base():
    return tiny_causal_lm(6, seed=3)


def _save(folder, temperature, seed, hub_folder=False):
    trainer = _trainer(folder.parent / f"run-{temperature}-{seed}", temperature, seed=seed)
    trainer.train()
    if hub_folder:  # a folder with a subfolder (`custom_generate/`), as `save_for_hub` writes it
        hub.save_for_hub(trainer, folder)
    else:
        trainer.save_model(str(folder))
    trainer.close()


@pytest.fixture(scope="module")
def twice_saved(tmp_path_factory):
    """A folder saved at T = 0.5 with a subfolder, then at T = 2 without: the second save's files, its logits, and
    the bytes of the first save's files."""
    folder = tmp_path_factory.mktemp("saves") / "adapter"
    _save(folder, 0.5, 0, hub_folder=True)
    first = {name: (folder / name).read_bytes() for name in staging.owned_files(str(folder))}
    _save(folder, 2.0, 1)
    second = sorted(staging.owned_files(str(folder)))
    logits = load_tempered(folder, base_model=_base())(input_ids=IDS).logits.detach()
    return folder, second, logits, first


def _files(folder) -> list[str]:
    found = []
    for parent, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if f != ".git"]
        found += [os.path.relpath(os.path.join(parent, n), folder) for n in names]
    return sorted(found)


def _copies(folder, where):
    """Copies of `folder` by the tools users copy folders with, each into its own folder under `where`."""
    missing = [tool for tool in ("rsync", "zip", "unzip", "tar", "git") if shutil.which(tool) is None]
    if missing and os.environ.get("CI"):
        pytest.fail(f"CI copies saves with {missing}, which are not installed (`.ci/run` installs rsync)")
    if missing:
        pytest.skip(f"needs {missing} (Debian packages; CI installs them)")
    where.mkdir()
    run = lambda command, cwd=None: subprocess.run(command, shell=True, check=True, cwd=cwd, capture_output=True)
    copies = {}
    for name, command in {
        "cp": "mkdir {dst} && cp {src}/* {dst}",
        "cp -r": "mkdir {dst} && cp -r {src}/* {dst}",
        "rsync -a": "rsync -a {src}/ {dst}",
    }.items():
        dst = where / name.replace(" ", "_")
        run(command.format(src=folder, dst=dst))
        copies[name] = dst
    run(f"zip -q -r {where}/a.zip .", cwd=folder)
    run(f"unzip -q {where}/a.zip -d {where}/zip")
    run(f"tar -cf {where}/a.tar -C {folder} .")
    (where / "tar").mkdir()
    run(f"tar -xf {where}/a.tar -C {where}/tar")
    copies.update(zip=where / "zip", tar=where / "tar")
    repository = where / "repository"
    run(f"cp -a {folder} {repository}")
    git = "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main"
    run(f"{git} init -q && {git} add -A && {git} commit -q -m save", cwd=repository)
    run(f"git clone -q -c core.symlinks=false {repository} {where}/git")
    shutil.rmtree(repository)
    copies["git core.symlinks=false"] = where / "git"
    return copies


def test_every_tools_copy_of_a_twice_saved_folder_is_the_second_save_whole(twice_saved, tmp_path):
    """`cp F/*` and `rsync` used to copy links that died with F (`.seqtemp-saves`); git without symlinks turned
    them into text (JSONDecodeError). Now each copy is the second save: its exact logits by plain PEFT and by
    `load_tempered`, and no file of the first save anywhere."""
    source, second, logits, first = twice_saved
    folder = tmp_path / "adapter"
    shutil.copytree(source, folder)
    copies = _copies(folder, tmp_path / "copies")
    shutil.rmtree(folder)
    first_only = {content for name, content in first.items() if name not in second}
    for tool, copy in copies.items():
        assert _files(copy) == second, tool
        assert not any((copy / name).read_bytes() in first_only for name in second), tool
        plain = PeftModel.from_pretrained(_base(), copy).eval()
        torch.testing.assert_close(plain(input_ids=IDS).logits, logits, rtol=0, atol=0, msg=tool)
        model = load_tempered(copy, base_model=_base())
        assert model.seqtemp_config.target_temperature == 2.0, tool
        torch.testing.assert_close(model(input_ids=IDS).logits, logits, rtol=0, atol=0, msg=tool)


class _Uploaded(Exception):
    """Raised where `upload_folder` has listed its files, before anything goes to the network."""


def _intercept_uploads(monkeypatch) -> list[dict[str, bytes]]:
    """Every `HfApi.upload_folder` call lists the files it would send (its own listing and ignore rules), then
    stops: returns the list of `{path_in_repo: content}` of each call."""
    from huggingface_hub import HfApi, RepoUrl, constants

    real, sent = HfApi._prepare_upload_folder_additions, []

    def listed(self, *args, **kwargs):
        operations = real(self, *args, **kwargs)
        paths = [op.path_in_repo for op in operations]
        assert len(paths) == len(set(paths)), f"a file is sent twice: {sorted(paths)}"
        sent.append({op.path_in_repo: Path(op.path_or_fileobj).read_bytes() for op in operations})
        raise _Uploaded

    monkeypatch.setattr(HfApi, "_prepare_upload_folder_additions", listed)
    monkeypatch.setattr(HfApi, "_prepare_folder_deletions", lambda self, **kwargs: [])
    monkeypatch.setattr(
        HfApi, "create_repo", lambda self, repo_id, **kwargs: RepoUrl(f"https://huggingface.co/{repo_id}")
    )
    monkeypatch.setattr(HfApi, "_validate_yaml", lambda self, *args, **kwargs: None)  # the Hub checks the card
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return sent


def test_upload_folder_sends_each_file_of_the_save_once(twice_saved, tmp_path, monkeypatch):
    """`HfApi().upload_folder(folder_path=F)` used to upload both versions (the replaced adapter, card and
    `training_args.json` included), and our `push_to_hub` of a `copytree` copy the weights 4 times."""
    from huggingface_hub import HfApi

    source, second, _, first = twice_saved
    folder = tmp_path / "adapter"
    shutil.copytree(source, folder)
    sent = _intercept_uploads(monkeypatch)
    with pytest.raises(_Uploaded):
        HfApi(token="hf_x").upload_folder(repo_id="me/x", folder_path=folder)
    with pytest.raises(_Uploaded):
        hub.push_to_hub(folder, "me/x", token="hf_x")
    for uploaded in sent:
        assert sorted(uploaded) == second
        first_only = {content for name, content in first.items() if name not in second}
        assert not set(uploaded.values()) & first_only


def test_a_save_into_a_models_folder_never_takes_its_files(tmp_path):
    """`save_model(base_dir)` used to move the base's `model.safetensors` into a hidden version, and the second save
    deleted it. Now a model's files are never moved or deleted: a save that would overwrite one of them (the base's
    card) is refused by name, one that would not leaves them as they were; a run into the folder is refused before
    it trains."""
    base = tmp_path / "base"
    _base().save_pretrained(base)
    kept = {name: (base / name).read_bytes() for name in os.listdir(base)}
    _save(base, 0.5, 0)
    _save(base, 2.0, 1)
    assert {name: (base / name).read_bytes() for name in kept} == kept
    assert load_tempered(base, base_model=_base()).seqtemp_config.target_temperature == 2.0
    card = tmp_path / "with_card"
    _base().save_pretrained(card)
    (card / "README.md").write_text("the base model's card\n")
    trainer = _trainer(tmp_path / "run", 0.5)
    trainer.train()
    with pytest.raises(OSError, match=r"would overwrite files that no hf_seqtemp save wrote there \(README.md\)"):
        trainer.save_model(str(card))
    assert (card / "README.md").read_text() == "the base model's card\n"
    assert sorted(os.listdir(card)) == ["README.md", "config.json", "generation_config.json", "model.safetensors"]
    into_base = _trainer(card, 0.5)
    with pytest.raises(ValueError, match=r"holds a model's files that no hf_seqtemp save wrote \(config.json, "):
        into_base.train()
    assert into_base.state.global_step == 0


def test_edits_are_loaded_and_uploaded_and_replaced_weights_are_refused(twice_saved, tmp_path, monkeypatch):
    """A card edited with `sed -i` (or appended to) and a `seqtemp_config.json` edited by hand used to be ignored by
    `load_tempered` and `push_to_hub`, files added never uploaded, and an appended card made a sound adapter
    "damaged". Now the edits are what is loaded and uploaded (a card that differs is a warning), and a replaced
    `adapter_config.json` is refused by name."""
    source = twice_saved[0]
    folder = tmp_path / "adapter"
    shutil.copytree(source, folder)
    subprocess.run(["sed", "-i", "s/^# /# Edited: /", str(folder / "README.md")], check=True)
    with open(folder / "README.md", "a", encoding="utf-8") as handle:
        handle.write("\nAppended by hand.\n")
    values = json.loads((folder / "seqtemp_config.json").read_text())
    values["eval_t_eff"] = 1.234
    (folder / "seqtemp_config.json").write_text(json.dumps(values))
    (folder / "notes.txt").write_text("mine\n")
    with pytest.warns(UserWarning, match=r"README.md differs from what was saved .*used as it is"):
        model = load_tempered(folder, base_model=_base())
    assert model.seqtemp_config.eval_t_eff == 1.234
    sent = _intercept_uploads(monkeypatch)
    with pytest.warns(UserWarning, match="README.md differs"), pytest.raises(_Uploaded):
        hub.push_to_hub(folder, "me/x", token="hf_x")
    edited = (folder / "README.md").read_text(encoding="utf-8")  # uploaded as edited, its usage naming the repo
    shown = re.search(r'load_tempered\("([^"]+)"\)', edited).group(1)
    card = sent[0]["README.md"].decode()
    assert card.split("---\n", 2)[2] == edited.split("---\n", 2)[2].replace(f'"{shown}"', '"me/x"')
    assert sent[0]["notes.txt"] == b"mine\n"
    adapter = json.loads((folder / "adapter_config.json").read_text())
    adapter["lora_alpha"] = 64
    (folder / "adapter_config.json").write_text(json.dumps(adapter))
    with pytest.raises(ValueError, match=r"is damaged: adapter_config.json differs from what was saved"):
        load_tempered(folder, base_model=_base())
    with pytest.raises(ValueError, match=r"is damaged: adapter_config.json differs"):
        hub.push_to_hub(folder, "me/x", token="hf_x")


def test_a_save_has_the_permissions_of_a_plain_peft_save(tmp_path):
    """Version folders used to be created 0700: another user could not read a save PEFT leaves readable."""
    old = os.umask(0o022)
    try:
        folder = tmp_path / "adapter"
        _save(folder, 0.5, 0, hub_folder=True)
        peft = tmp_path / "peft"
        get_peft_model(_base(), LoraConfig(**LORA)).save_pretrained(peft)
    finally:
        os.umask(old)
    mode = lambda path: stat.S_IMODE(os.stat(path).st_mode)
    for name in os.listdir(peft):  # safetensors writes its files 0600, JSON and the card the umask's 0644
        assert mode(folder / name) == mode(peft / name), name
    for parent, folders, names in os.walk(folder):
        assert all(mode(os.path.join(parent, f)) == mode(peft) == 0o755 for f in folders)
        assert all(mode(os.path.join(parent, n)) == 0o644 for n in names if not n.endswith(".safetensors"))


def test_a_filesystem_without_links_saves_and_loads(tmp_path, monkeypatch):
    """On FAT, SMB or Windows without developer mode every save used to fail (with a "full disk" message) and leave
    the adapter only in the hidden folder."""

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "symlink", no_links)
    folder = tmp_path / "adapter"
    _save(folder, 0.5, 0)
    _save(folder, 2.0, 1)
    assert_plain_save(folder)
    assert load_tempered(folder, base_model=_base()).seqtemp_config.target_temperature == 2.0


def _as_earlier_hf_seqtemp(folder):
    """Rewrites a save into the layout of the hf_seqtemp before plain folders: its files in
    `.seqtemp-saves/v000001` with a manifest, `current` a link to it, the folder's entries links through it."""
    version = folder / ".seqtemp-saves" / "v000001"
    version.mkdir(parents=True)
    config = json.loads((folder / "seqtemp_config.json").read_text())
    config.pop("files_sha256")
    (folder / "seqtemp_config.json").write_text(json.dumps(config))
    for name in os.listdir(folder):
        if name != ".seqtemp-saves":
            shutil.move(folder / name, version / name)
    write_manifest(version)
    os.symlink("v000001", folder / ".seqtemp-saves" / "current")
    for name in os.listdir(version):
        os.symlink(f".seqtemp-saves/current/{name}", folder / name)


def test_a_folder_saved_by_the_earlier_format_loads_and_the_next_save_makes_it_plain(tmp_path):
    folder = tmp_path / "adapter"
    _save(folder, 0.5, 0, hub_folder=True)
    logits = load_tempered(folder, base_model=_base())(input_ids=IDS).logits
    _as_earlier_hf_seqtemp(folder)
    assert os.path.islink(folder / "adapter_model.safetensors")
    torch.testing.assert_close(load_tempered(folder, base_model=_base())(input_ids=IDS).logits, logits)
    clone = tmp_path / "clone"  # what git without symlinks makes of it: the links' targets as text
    shutil.copytree(folder, clone, symlinks=True)
    for name in os.listdir(clone):
        if os.path.islink(clone / name):
            target = os.readlink(clone / name)
            os.remove(clone / name)
            (clone / name).write_text(target)
    with pytest.raises(ValueError, match=r"holds the text '\.seqtemp-saves/current/seqtemp_config.json'.*git"):
        load_tempered(clone, base_model=_base())
    _save(folder, 2.0, 1)
    assert_plain_save(folder)
    assert not os.path.exists(folder / ".seqtemp-saves")
    assert load_tempered(folder, base_model=_base()).seqtemp_config.target_temperature == 2.0


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOENT, r"\[ENOENT\] No such file or directory on '.*' \(a file or folder disappeared"),
        (errno.ENOTEMPTY, r"\[ENOTEMPTY\] Directory not empty on '.*' \(a folder of that name holds files"),
        (errno.EACCES, r"\[EACCES\] Permission denied on '.*' \(no permission to write there\)"),
        (errno.ENOSPC, r"\[ENOSPC\] No space left on device on '.*' \(\d+ MiB free on its disk: the disk is full"),
    ],
)
def test_a_failed_save_names_its_real_cause(tmp_path, code, words):
    """Every failure used to read "a full disk or a file-size limit gives this" (ENOENT/ENOTEMPTY between two
    publishers, EPERM, ENOSYS from `flock`). Now the errno and the path are named; "disk full" only for ENOSPC."""
    folder = tmp_path / "adapter"
    with pytest.raises(OSError) as raised, staging.staged_save(folder) as staged:
        SequenceTemperatureConfig(0.5).save_pretrained(staged)
        raise OSError(code, os.strerror(code), os.path.join(staged, "adapter_model.safetensors"))
    message = str(raised.value)
    assert message.startswith(f"saving to {folder} failed: ") and "is unchanged" in message
    assert re.search(words, message), message
    if code != errno.ENOSPC:
        assert "full" not in message
    assert os.listdir(tmp_path) == ["adapter"] and os.listdir(folder) == []


def test_a_filesystem_without_flock_is_named(tmp_path, monkeypatch):
    from hf_seqtemp import locking

    def unsupported(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(locking.fcntl, "flock", unsupported)
    words = r"cannot lock .*\.adapter\.seqtemp-lock: \[ENOSYS\] .*does not support `flock`"
    with pytest.raises(OSError, match=words), staging.staged_save(tmp_path / "adapter"):
        pass


_PUBLISHER = """
import os, sys
sys.path[:0] = sys.argv[4:]
from saved_adapters import _trainer

folder, rounds, started = sys.argv[1], int(sys.argv[2]), sys.argv[3]
trainers = [_trainer(folder + "-run" + str(i), t, seed=i) for i, t in enumerate((0.5, 2.0))]
for trainer in trainers:
    trainer.train()
open(started, "w").close()
for index in range(rounds):
    trainers[index % 2].save_model(folder)
"""


def test_readers_get_whole_saves_while_another_process_publishes(tmp_path):
    """A real process publishes 24 saves, alternating two adapters, while this one loads and lists the folder: every
    `load_tempered` gets one save whole (its temperature with that save's exact logits), and every entry listed is a
    real file (the versioned folder's readers got two saves in 140 of 8259 reads and 3219 links to nothing)."""
    folder = tmp_path / "adapter"
    here = os.path.dirname(os.path.abspath(__file__))
    expected = {}
    for seed, temperature in enumerate((0.5, 2.0)):
        _save(tmp_path / f"alone-{seed}", temperature, seed)
        model = load_tempered(tmp_path / f"alone-{seed}", base_model=_base())
        expected[temperature] = model(input_ids=IDS).logits.detach()
    _save(folder, 0.5, 0)
    started = tmp_path / "started"
    child = subprocess.Popen(
        [sys.executable, "-c", _PUBLISHER, str(folder), "24", str(started), here, os.path.dirname(here)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    reads, seen = 0, set()
    try:
        while child.poll() is None:
            for name in os.listdir(folder):
                assert os.path.exists(folder / name), f"{name} leads nowhere"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a stale-lock takeover cannot happen here; nothing else is said
                model = load_tempered(folder, base_model=_base())
            temperature = model.seqtemp_config.target_temperature
            torch.testing.assert_close(model(input_ids=IDS).logits, expected[temperature], rtol=0, atol=0)
            reads, seen = reads + 1, seen | {temperature}
    finally:
        child.kill()
        _, errors = child.communicate()
    assert child.returncode == 0 and started.exists(), errors.decode()[-2000:]
    assert reads >= 5 and seen == {0.5, 2.0}
    assert_plain_save(folder)


_PEFT_PUBLISHER = """
import sys, warnings
sys.path[:0] = sys.argv[5:]
import saved_adapters
from saved_adapters import _trainer

folder, rounds, started, alphas = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
trainers = []
for seed, alpha in enumerate(alphas):
    saved_adapters.LORA = {**saved_adapters.LORA, "lora_alpha": int(alpha)}
    trainers.append(_trainer(folder + "-run" + str(seed), 0.5, seed=seed))
    trainers[-1].train()
    trainers[-1].save_model(folder + "-alone" + str(seed))
open(started, "w").close()
warnings.simplefilter("ignore")
for index in range(rounds):
    trainers[index % 2].save_model(folder)
"""


def _plain_peft_reads(tmp_path, alphas: str, rounds: int) -> tuple[int, int]:
    """A process publishes `rounds` saves into one folder, alternating two trained adapters (LoRA alphas `alphas`),
    while this one loads the folder with `PeftModel.from_pretrained` in a loop: `(reads, reads that match neither
    save)`."""
    folder, started = tmp_path / "adapter", tmp_path / "started"
    here = os.path.dirname(os.path.abspath(__file__))
    command = [sys.executable, "-c", _PEFT_PUBLISHER, str(folder), str(rounds), str(started), alphas]
    child = subprocess.Popen(
        [*command, here, os.path.dirname(here)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def logits(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return PeftModel.from_pretrained(_base(), str(path))(input_ids=IDS).logits.detach()

    reads = mixed = 0
    try:
        while not started.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        expected = [logits(f"{folder}-alone{i}") for i in (0, 1)]
        while child.poll() is None:
            try:
                got = logits(folder)
            except (OSError, ValueError):  # before the first save lands
                continue
            reads += 1
            mixed += not any(torch.equal(got, e) for e in expected)
    finally:
        child.kill()
        _, errors = child.communicate()
    assert child.returncode == 0, errors.decode()[-2000:]
    return reads, mixed


def test_a_plain_peft_reader_gets_whole_saves_of_one_run_and_a_changed_config_is_warned(tmp_path):
    """`PeftModel.from_pretrained` reads `adapter_config.json`, builds the model, then reads the weights: a save
    swapped in between its two reads mixes two saves when their configs differ (5.4 % of reads with two LoRA alphas,
    without a word). Saves of one configuration (every save of one run) are read whole, here over 300 saves; a save
    that changes the folder's `adapter_config.json` is warned about, naming what changed and the reader that does
    not mix."""
    reads, mixed = _plain_peft_reads(tmp_path / "same", "4,4", 300)
    assert reads >= 20 and mixed == 0, (reads, mixed)
    first, second = tmp_path / "run-a", tmp_path / "run-b"
    saved_alpha = dict(LORA)
    try:
        trainers = []
        for seed, (path, alpha) in enumerate(((first, 4), (second, 8))):
            saved_adapters.LORA = {**saved_alpha, "lora_alpha": alpha}
            trainers.append(_trainer(path, 0.5, seed=seed))
            trainers[-1].train()
    finally:
        saved_adapters.LORA = saved_alpha
    folder = tmp_path / "shared"
    trainers[0].save_model(str(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainers[0].save_model(str(folder))  # the same configuration again: nothing to say
    with pytest.warns(
        UserWarning, match=r"adapter_config\.json with another one \(lora_alpha 4 -> 8\).*load_tempered"
    ):
        trainers[1].save_model(str(folder))


def test_the_messages_of_a_refused_save_and_of_a_folder_of_two_saves_say_what_happened(tmp_path):
    """A refused save came as an `OSError` inside the failed-write sentence ("saving to F failed: saving to F would
    overwrite ...", its text twice), in `save_model` and at a checkpoint; a folder holding files of two saves (a save
    interrupted while moving in whose staging folder was then deleted, or a copy taken during a save) was called
    "damaged" without naming either. Now the refusal is said once, and the two-saves cause is named."""
    card = tmp_path / "with_card"
    _base().save_pretrained(card)
    (card / "README.md").write_text("the base model's card\n")
    trainer = _trainer(tmp_path / "run", 0.5)
    trainer.train()
    with pytest.raises(FileExistsError) as raised:
        trainer.save_model(str(card))
    message = str(raised.value)
    assert message.count("would overwrite files that no hf_seqtemp save wrote there") == 1
    assert "failed" not in message and "full" not in message
    from hf_seqtemp.trainer.checkpoints import raise_write_error

    with pytest.raises(FileExistsError) as again:
        raise_write_error(raised.value, str(card / "checkpoint-1"), str(card))
    assert again.value is raised.value  # at a checkpoint: the same refusal, not "writing checkpoint ... failed"

    first, second, mixed = tmp_path / "first", tmp_path / "second", tmp_path / "mixed"
    _save(first, 0.5, 0)
    _save(second, 2.0, 1)
    shutil.copytree(first, mixed)  # the first save's config, the second's weights: what an interrupted move leaves
    shutil.copyfile(second / "adapter_model.safetensors", mixed / "adapter_model.safetensors")
    with pytest.raises(ValueError) as raised:
        load_tempered(mixed, base_model=_base())
    message = str(raised.value)
    assert "is damaged: adapter_model.safetensors differs from what was saved" in message
    assert "a save into it was interrupted while its files were moved in" in message
    assert ".mixed.seqtemp-staging-" in message and "copied while a save was being moved into it" in message
