# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What a user saved is never lost or mixed: a save interrupted over an existing adapter leaves the old adapter whole
(or no `seqtemp_config.json`, refused by name), never the new weights under the old temperature; two runs cannot
share an output folder (the lock names the holder; a dead holder's lock is taken over); a finished adapter is not
trained over without `overwrite_output_dir`."""

import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, SequenceTemperatureConfig, load_tempered
from hf_seqtemp.trainer import hub_mixin
from hf_seqtemp.trainer.output_dir import LOCK_NAME

LORA = {"r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"], "init_lora_weights": False}


def _trainer(output_dir, temperature, seed=0, **overrides):
    torch.manual_seed(seed)
    model = tiny_causal_lm(6, seed=3)
    data = as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 16, 4, seed=2))
    values = {"output_dir": str(output_dir), "target_temperature": temperature, "max_steps": 2, "seed": seed}
    values.update(per_device_train_batch_size=8, learning_rate=1e-2, save_strategy="no", use_cpu=True)
    values.update(disable_tqdm=True, report_to=[], **overrides)
    return SeqTempTrainer(model, SeqTempConfig(**values), train_dataset=data, peft_config=LoraConfig(**LORA))


def _logits(folder):
    ids = torch.tensor([[1, 2, 3, 4]])
    return load_tempered(folder, base_model=tiny_causal_lm(6, seed=3)).eval()(input_ids=ids).logits


def _saved_first(folder):
    first = _trainer(folder, 0.5, seed=0)
    first.train()
    first.save_model(str(folder))
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
    assert [name for name in os.listdir(folder) if name.startswith(".partial")] == []


def test_a_save_interrupted_while_moving_files_leaves_no_config_and_is_refused(tmp_path, monkeypatch):
    """Killed between moving the new weights in and writing the new config: no `seqtemp_config.json`, and
    `load_tempered` says why instead of loading the new weights as the old temperature."""
    folder = tmp_path / "adapter"
    _saved_first(folder)
    second = _trainer(tmp_path / "run2", 2.0, seed=1)
    second.train()
    from hf_seqtemp import staging

    moved, real_replace = [], os.replace

    def replace_then_die(source, target):
        if moved:
            raise KeyboardInterrupt("killed while moving files")
        moved.append(target)
        real_replace(source, target)

    monkeypatch.setattr(staging.os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        second.save_model(str(folder))
    monkeypatch.undo()
    assert not (folder / "seqtemp_config.json").exists()
    with pytest.raises(FileNotFoundError, match="killed while moving its files"):
        load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))
    second.save_model(str(folder))  # saving again repairs it: the T = 2 adapter, whole
    assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 2.0


_KILLED_SAVE = """
import os, sys, time
sys.path[:0] = sys.argv[5:]
from test_nothing_lost import _trainer
from hf_seqtemp import staging
from hf_seqtemp.trainer import hub_mixin

folder, run_dir, phase, marker = sys.argv[1:5]
second = _trainer(run_dir, 2.0, seed=1)
second.train()


def park(*args, **kwargs):  # the parent SIGKILLs this process while it waits here
    open(marker, "w").close()
    time.sleep(600)


if phase == "measuring":
    hub_mixin.write_card = park
else:
    moved, real_replace = [], os.replace

    def replace_then_park(source, target):
        if moved:
            park()
        moved.append(target)
        real_replace(source, target)

    staging.os.replace = replace_then_park
second.save_model(folder)
raise SystemExit("the save finished: the parent did not kill it")
"""


@pytest.mark.parametrize("phase", ["measuring", "moving"])
def test_a_save_sigkilled_over_an_adapter_leaves_the_old_one_whole_or_no_config(tmp_path, phase):
    """The two tests above with a real SIGKILL of a process inside `save_model`, over the T = 0.5 adapter: killed
    while measuring, the old adapter loads exactly as before (the staging folder is left behind, and the next save
    removes it); killed between moves, there is no `seqtemp_config.json` and `load_tempered` refuses it by name."""
    import signal
    import time

    folder = tmp_path / "adapter"
    logits, weights = _saved_first(folder)
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
        deadline = time.monotonic() + 300
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child never reached the save"
            time.sleep(0.2)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    leftovers = [name for name in os.listdir(folder) if name.startswith(".partial")]
    assert len(leftovers) == 1  # a real kill leaves the staging folder behind
    if phase == "measuring":
        assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 0.5
        assert (folder / "adapter_model.safetensors").read_bytes() == weights
        torch.testing.assert_close(_logits(folder), logits, rtol=0, atol=0)
    else:
        assert not (folder / "seqtemp_config.json").exists()
        with pytest.raises(FileNotFoundError, match="killed while moving its files"):
            load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))
    again = _trainer(tmp_path / "run3", 2.0, seed=1)
    again.train()
    again.save_model(str(folder))  # saving again repairs the folder and removes what the killed save left
    assert SequenceTemperatureConfig.from_pretrained(folder).target_temperature == 2.0
    assert [name for name in os.listdir(folder) if name.startswith(".partial")] == []


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_two_runs_cannot_share_an_output_dir_and_a_dead_holders_lock_is_taken_over(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"host": os.uname().nodename, "pid": holder.pid, "started": "2026-11-25 03:00:00"}
        (folder / LOCK_NAME).write_text(json.dumps(lock))
        trainer = _trainer(folder, 0.5)
        with pytest.raises(RuntimeError, match=rf"in use by another run \(process {holder.pid} on"):
            trainer.train()
        assert trainer.state.global_step == 0  # refused before any step
    finally:
        holder.kill()
        holder.wait()
    (folder / LOCK_NAME).write_text(json.dumps({**lock, "pid": _dead_pid()}))
    with pytest.warns(UserWarning, match="Taking over the stale lock"):
        trainer.train()
    assert trainer.state.global_step == 2
    assert not (folder / LOCK_NAME).exists()  # released at the end of the run


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


@pytest.mark.parametrize("damage", ["cut", "overwritten"])
def test_a_damaged_final_adapter_is_refused_by_name(tmp_path, damage):
    """20 bytes overwritten in the weights used to load silently, with non-finite logits."""
    folder = tmp_path / "adapter"
    _saved_first(folder)
    path = folder / "adapter_model.safetensors"
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[: len(data) // 2]) if damage == "cut" else bytes(data[:-20] + b"\xff" * 20))
    words = "cannot be read" if damage == "cut" else "holds non-finite values"
    with pytest.raises(ValueError, match=rf"adapter_model.safetensors {words}"):
        load_tempered(folder, base_model=tiny_causal_lm(6, seed=3))
