# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a user saved is never lost or mixed: a save is the old folder or the new one, whole, whenever it is stopped or
killed (SIGKILL included), and whatever a reader reads meanwhile; files of the old save that the new one does not
write are gone; a damaged adapter is refused by its manifest, a config by the hash of its weights; a full disk and a
base of another shape are named; a finished adapter is not trained over without `overwrite_output_dir`."""

import os
import re
import shutil
import subprocess
import sys
import warnings

import pytest
import torch
from launching import run_script, wait_for_marker
from saved_adapters import _trainer, assert_plain_save
from tiny_models import tiny_causal_lm

from hf_seqtemp import SeqTempTrainer, SequenceTemperatureConfig, load_tempered, staging
from hf_seqtemp.trainer import hub_mixin


def _logits(folder):
    ids = torch.tensor([[1, 2, 3, 4]])
    return load_tempered(folder, base_model=tiny_causal_lm(6, seed=3)).eval()(input_ids=ids).logits


def _saved_first(folder):
    first = _trainer(folder, 0.5, seed=0)
    first.train()
    first.save_model(str(folder))
    first.close()  # lets the folder go: a trainer holds its `output_dir` until then
    return _logits(folder), (folder / "adapter_model.safetensors").read_bytes()


def test_a_save_interrupted_while_measuring_leaves_the_old_adapter_whole(tmp_path, monkeypatch):
    """The card (the held-out measurement) is written after the weights: a save killed there used to leave the
    T = 2 weights under the T = 0.5 config. Now the old adapter loads exactly as before, at T = 0.5."""
    folder = tmp_path / "adapter"
    logits, weights = _saved_first(folder)
    second = _trainer(tmp_path / "run2", 2.0, seed=1)
    second.train()

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while measuring")

    monkeypatch.setattr(hub_mixin, "write_card", killed)
    with pytest.raises(KeyboardInterrupt):
        second.save_model(str(folder))
    assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 0.5
    assert (folder / "adapter_model.safetensors").read_bytes() == weights
    torch.testing.assert_close(_logits(folder), logits, rtol=0, atol=0)
    assert [e for e in os.listdir(tmp_path) if "seqtemp-staging" in e] == []


_OPERATIONS = ("rename", "replace", "link", "remove", "rmdir", "mkdir", "fsync")


def _stop_when(monkeypatch, when, stop):
    """Patches the file operations of `staging` so that, from the seal on (the end of a save), the first
    operation for which `when(operations)` holds calls `stop()` instead of running; `operations` is the list of
    `(name, last path argument)` of the operations so far, this one included. Returns that list."""
    from hf_seqtemp import staging

    counted, active = [], []
    for name in _OPERATIONS:
        real = getattr(os, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            if active:
                counted.append((_name, str(args[-1])))
                if when(counted):
                    stop()
            return _real(*args, **kwargs)

        monkeypatch.setattr(staging.os, name, counting)
    for name in ("_seal", "_publish"):
        real = getattr(staging, name)

        def activated(*args, _real=real, **kwargs):
            active.append(True)
            try:
                return _real(*args, **kwargs)
            finally:
                active.pop()

        monkeypatch.setattr(staging, name, activated)
    return counted


def _is_commit(operation) -> bool:
    return operation[0] == "replace" and operation[1].endswith(staging.JOURNAL)


# where the killed child stops: at the commit (the journal renamed into the staging folder) and at the first
# operation after it
PHASES = {
    "commit": lambda ops: _is_commit(ops[-1]),
    "after-commit": lambda ops: any(_is_commit(op) for op in ops[:-1]),
}


def _whole(folder, old_logits):
    """The temperature the folder loads at, after checking that it is one whole save: the old one (T = 0.5, its
    exact logits) or the new one (T = 2.0, its manifest and weight hash verified by `load_tempered`)."""
    model = load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))
    temperature = model.seqtemp_config.target_temperature
    if temperature == 0.5:
        torch.testing.assert_close(_logits(folder), old_logits, rtol=0, atol=0)
    else:
        assert temperature == 2.0
    return temperature


def test_a_save_stopped_at_any_file_operation_leaves_the_old_adapter_or_the_new_one_whole(tmp_path, monkeypatch):
    """Every file operation of a save's last part (manifest, version, links, the commit, tidying), stopped in turn:
    the folder loads as the old adapter (T = 0.5, exact logits) before the commit and as the new one after it,
    never a mix, and the next save leaves nothing of the stopped one behind. It used to lose the old adapter."""
    folder = tmp_path / "adapter"
    old_logits, _ = _saved_first(folder)
    second = _trainer(tmp_path / "run2", 2.0, seed=1)
    second.train()

    def killed():
        raise KeyboardInterrupt("killed")

    counted = _stop_when(monkeypatch, lambda ops: False, killed)
    second.save_model(str(folder))  # one clean save over the old one: how many operations it takes
    monkeypatch.undo()
    total = len(counted)
    assert total >= 8
    seen = []
    for stop_at in range(1, total + 1):
        shutil.rmtree(folder)
        _saved_first(folder)
        _stop_when(monkeypatch, lambda ops, k=stop_at: len(ops) == k, killed)
        with pytest.raises(KeyboardInterrupt):
            second.save_model(str(folder))
        monkeypatch.undo()
        seen.append(_whole(folder, old_logits))
    assert seen[0] == 0.5 and seen[-1] == 2.0 and seen == sorted(seen)  # the old save until the commit, then the new
    second.save_model(str(folder))
    assert_plain_save(folder)


_KILLED_SAVE = """
import os, sys, time
sys.path[:0] = sys.argv[5:]
from test_nothing_lost import PHASES, _stop_when, _trainer
from hf_seqtemp.trainer import hub_mixin

folder, run_dir, phase, marker = sys.argv[1:5]
second = _trainer(run_dir, 2.0, seed=1)
second.train()


def park(*args, **kwargs):  # the parent SIGKILLs this process while it waits here
    open(marker, "w").close()
    time.sleep(600)


class Patch:
    def setattr(self, owner, name, value):
        setattr(owner, name, value)


if phase == "measuring":
    hub_mixin.write_card = park
else:
    _stop_when(Patch(), PHASES[phase], park)
second.save_model(folder)
raise SystemExit("the save finished: the parent did not kill it")
"""


# A real kill on each side of the commit and before any file is written; every file operation in between is stopped
# in turn by the in-process test above (a child per operation would cost the suite 9 s each).
@pytest.mark.parametrize("phase", ["measuring", *PHASES])
def test_a_save_sigkilled_over_an_adapter_leaves_the_old_one_or_the_new_one_whole(tmp_path, phase):
    """A real SIGKILL of a process inside `save_model` over the T = 0.5 adapter: while measuring, at the commit and
    just after it. The folder loads as one whole save; the staging folder a kill leaves is removed by the next save,
    which leaves the folder whole at T = 2."""
    import signal

    folder = tmp_path / "adapter"
    old_logits, _ = _saved_first(folder)
    marker = tmp_path / "parked"
    here = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SAVE, str(folder), str(tmp_path / "run2"), phase, str(marker), here,
         os.path.dirname(here)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for_marker(child, marker, "the child never reached the save")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    temperature = _whole(folder, old_logits)
    assert temperature == (2.0 if phase == "after-commit" else 0.5)
    again = _trainer(tmp_path / "run3", 2.0, seed=1)
    again.train()
    again.save_model(str(folder))
    assert _whole(folder, old_logits) == 2.0
    assert_plain_save(folder)


def test_a_reader_gets_one_save_whole_while_saves_publish_under_it(tmp_path, monkeypatch):
    """`load_tempered` reads the config, then the weights: one or two saves published in between (the reader's first
    copy then holds the old config with the new weights) used to give PEFT's "Can't find adapter_config.json" or one
    save's config with another's weights. Now the reader checks what it read against the config's hashes, reads
    again, and gets the newest save whole."""
    from hf_seqtemp import saved

    folder = tmp_path / "adapter"
    second = _trainer(tmp_path / "run2", 2.0, seed=1)
    second.train()
    real_link = os.link
    for saves_in_between in (1, 2):
        shutil.rmtree(folder, ignore_errors=True)
        _saved_first(folder)
        pending = [saves_in_between]

        def link_then_save(source, target, *args, _pending=pending, **kwargs):
            real_link(source, target, *args, **kwargs)
            if str(source).endswith("seqtemp_config.json") and "seqtemp-read-" in str(target) and _pending[0]:
                while _pending[0]:
                    _pending[0] -= 1
                    second.save_model(str(folder))

        monkeypatch.setattr(saved.os, "link", link_then_save)
        model = load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))
        monkeypatch.undo()
        assert pending == [0]  # the saves did land between the reader's two files
        logits = model(input_ids=torch.tensor([[1, 2, 3, 4]])).logits
        assert model.seqtemp_config.target_temperature == 2.0
        torch.testing.assert_close(logits, _logits(folder), rtol=0, atol=0)


def test_a_full_model_save_over_a_lora_save_leaves_no_lora_file(tmp_path):
    """A LoRA save, then a full-model save into the same folder: the old `adapter_config.json` and weights used to
    stay beside the new config, and `load_tempered` loaded the old LoRA under the new temperature."""
    folder = tmp_path / "adapter"
    _saved_first(folder)
    full = _trainer(tmp_path / "run2", 2.0, seed=1)
    full = SeqTempTrainer(
        tiny_causal_lm(6, seed=3), full.args, train_dataset=full.train_dataset
    )  # no `peft_config`: full fine-tuning
    full.train()
    full.save_model(str(folder))
    names = set(os.listdir(folder))
    assert {"model.safetensors", "seqtemp_config.json"} <= names
    assert not names & {"adapter_config.json", "adapter_model.safetensors"}
    assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 2.0
    with pytest.raises(ValueError, match="is a folder without `adapter_config.json`"):
        load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))


def _overwrite_with(path, value: float, count: int = 64):
    """Overwrites `count` float32 values (256 bytes for 64) at the end of a safetensors file with `value`: the file
    stays readable and finite."""
    data = bytearray(path.read_bytes())
    data[-4 * count :] = torch.full((count,), value, dtype=torch.float32).numpy().tobytes()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["cut", "non-finite", "finite"])
def test_a_damaged_final_adapter_is_refused_by_name(tmp_path, damage):
    """Cut short, 20 bytes of NaN, or 256 bytes of float32 0.01 (finite, and used to load without a word): the
    manifest names the file."""
    folder = tmp_path / "adapter"
    _saved_first(folder)
    path = folder / "adapter_model.safetensors"
    data = bytearray(path.read_bytes())
    if damage == "cut":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "non-finite":
        path.write_bytes(bytes(data[:-20] + b"\xff" * 20))
    else:
        _overwrite_with(path, 0.01)
    with pytest.raises(ValueError, match=r"is damaged: adapter_model.safetensors differs from what was saved"):
        load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))


def test_a_config_is_tied_to_the_weights_it_was_saved_with(tmp_path):
    """A copy of the folder with another save's weights put in: refused by the config's hashes; and where the config
    lists no files (an earlier hf_seqtemp's save), by its `weights_sha256`."""
    import json

    folder, other = tmp_path / "adapter", tmp_path / "other"
    _saved_first(folder)
    second = _trainer(tmp_path / "run2", 2.0, seed=1)
    second.train()
    second.save_model(str(other))
    plain = tmp_path / "plain"
    shutil.copytree(folder, plain)
    _logits(plain)  # whole: loads
    shutil.copyfile(other / "adapter_model.safetensors", plain / "adapter_model.safetensors")
    with pytest.raises(ValueError, match="is damaged: adapter_model.safetensors differs from what was saved"):
        load_tempered(plain, base_model=tiny_causal_lm(6, seed=3))
    values = json.loads((plain / "seqtemp_config.json").read_text())
    values["files_sha256"] = None
    (plain / "seqtemp_config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match="mixes two saves: its seqtemp_config.json was written for weights with"):
        load_tempered(plain, base_model=tiny_causal_lm(6, seed=3))


_FULL_DISK = """
import resource, signal, sys
sys.path[:0] = sys.argv[3:]
from test_nothing_lost import _trainer
from toy import as_dataset, sample_sequences
from tiny_models import tiny_causal_lm

held_out = as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 8, 4, seed=5))
second = _trainer(sys.argv[2], 2.0, seed=1, eval_dataset=held_out)
second.train()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
second.save_model(sys.argv[1])
"""


def test_a_full_disk_during_the_final_save_is_named_and_the_old_adapter_stays_whole(tmp_path):
    """A file-size limit (what a full disk looks like to `write`) that the weights fit under and the card's plot does
    not: one `OSError` naming the folder, its free space and that the previous save is unchanged (it used to be
    PIL's own error); the old adapter loads exactly as before."""
    folder = tmp_path / "adapter"
    old_logits, weights = _saved_first(folder)
    child = run_script(_FULL_DISK, folder, tmp_path / "run2")
    assert child.returncode != 0
    last = child.stderr.strip().splitlines()[-1]
    assert re.search(rf"OSError: saving to {re.escape(str(folder))} failed: .*File too large.* MiB free", last), last
    assert "The previous save in" in last and "is unchanged" in last
    assert (folder / "adapter_model.safetensors").read_bytes() == weights
    torch.testing.assert_close(_logits(folder), old_logits, rtol=0, atol=0)


def test_an_adapter_on_a_base_of_another_shape_is_refused_by_name(tmp_path):
    """PEFT's size-mismatch traceback used to follow the fingerprint warning."""
    folder = tmp_path / "adapter"
    _saved_first(folder)
    other = tiny_causal_lm(6, seed=3, hidden=32)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"does not fit this base model: .*size mismatch"):
        load_tempered(folder, base_model=other)


def test_a_finished_adapter_is_not_trained_over_without_overwrite_output_dir(tmp_path):
    folder = tmp_path / "run"
    _saved_first(folder)
    with pytest.raises(ValueError, match="holds a finished adapter .*`overwrite_output_dir` True"):
        _trainer(folder, 2.0, seed=1).train()
    assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 0.5
    again = _trainer(folder, 2.0, seed=1, overwrite_output_dir=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again.train()
    assert not [w for w in caught if "lock" in str(w.message)]  # the refused run left no lock behind
    again.save_model(str(folder))
    assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 2.0
