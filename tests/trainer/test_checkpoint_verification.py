# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""A checkpoint is verified before a run resumes from it: weights readable and finite, optimizer and scheduler state
present, written by as many processes and with the same LoRA shape and target temperature as this run. An unusable
one is refused by name; `resume_from_checkpoint=True` falls back to the last complete one with a warning."""

import errno
import json
import os
import re
import shutil

import pytest
import torch
from peft import LoraConfig
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.trainer.checkpoints import checkpoint_problem, resolve_resume


def _trainer(output_dir, temperature=0.5, r=2, **overrides):
    torch.manual_seed(0)
    lora = LoraConfig(r=r, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    data = as_dataset(sample_sequences(tiny_causal_lm(6, seed=3), 16, 4, seed=2))
    values = {"output_dir": str(output_dir), "target_temperature": temperature, "max_steps": 2, "seed": 0}
    values.update(per_device_train_batch_size=8, learning_rate=1e-2, save_strategy="steps", save_steps=1)
    values.update(use_cpu=True, disable_tqdm=True, report_to=[], **overrides)
    return SeqTempTrainer(tiny_causal_lm(6, seed=3), SeqTempConfig(**values), train_dataset=data, peft_config=lora)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished run with checkpoint-1 and checkpoint-2 (copied afresh for each test)."""
    folder = tmp_path_factory.mktemp("run") / "out"
    _trainer(folder).train()
    return folder


@pytest.fixture
def out(run, tmp_path):
    copy = tmp_path / "out"
    shutil.copytree(run, copy)
    for name in ("seqtemp_config.json", "adapter_model.safetensors"):  # keep the checkpoints, not a finished save
        if (copy / name).exists():
            (copy / name).unlink()
    return copy


def _damage(path, how):
    data = bytearray(path.read_bytes())
    if how == "cut":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:  # 20 bytes of the tensor data overwritten with 0xFF: NaN in float32
        data[-20:] = b"\xff" * 20
        path.write_bytes(bytes(data))


def _overwrite_finite(path, count: int = 64):
    """256 bytes (64 float32 values) at the end of the tensor data set to 0.01: readable and finite."""
    data = bytearray(path.read_bytes())
    data[-4 * count :] = torch.full((count,), 0.01, dtype=torch.float32).numpy().tobytes()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("cut", r"adapter_model.safetensors has \d+ bytes where its manifest records \d+"),
        ("overwritten", "adapter_model.safetensors differs from what was saved"),
        ("finite", "adapter_model.safetensors differs from what was saved"),
        ("empty optimizer", r"optimizer.pt has 0 bytes where its manifest records \d+"),
        ("optimizer", r"optimizer.pt is missing \(listed in its manifest\)"),
        ("scheduler", r"scheduler.pt is missing \(listed in its manifest\)"),
    ],
)
def test_an_unusable_checkpoint_is_named_refused_by_path_and_skipped_by_true(out, damage, words):
    """Its manifest names what differs: 256 bytes overwritten with finite values and a 0-byte optimizer state used
    to be resumed from without a word."""
    last = out / "checkpoint-2"
    if damage == "finite":
        _overwrite_finite(last / "adapter_model.safetensors")
    elif damage == "empty optimizer":
        (last / "optimizer.pt").write_bytes(b"")
    elif damage in ("cut", "overwritten"):
        _damage(last / "adapter_model.safetensors", damage)
    else:
        (last / f"{damage}.pt").unlink()
    assert re.search(words, checkpoint_problem(str(last)))
    assert checkpoint_problem(str(out / "checkpoint-1")) is None
    with pytest.raises(ValueError, match=rf"cannot be resumed: {words}.*checkpoint-1"):
        resolve_resume(str(last), str(out))
    with pytest.warns(UserWarning, match=rf"Skipping checkpoint\(s\) .*checkpoint-2 \({words}"):
        assert resolve_resume(True, str(out)) == str(out / "checkpoint-1")


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("cut", "adapter_model.safetensors cannot be read"),
        ("overwritten", "adapter_model.safetensors holds non-finite values"),
        ("empty optimizer", r"optimizer.pt empty \(0 bytes"),
        ("scheduler", "scheduler.pt missing"),
    ],
)
def test_a_checkpoint_without_a_manifest_is_checked_by_its_structure_and_said_to_be_unverified(out, damage, words):
    """A checkpoint of an hf_seqtemp before manifests (or killed just before its manifest): structural checks, and
    a warning when it is resumed from."""
    for folder in (out / "checkpoint-1", out / "checkpoint-2"):
        (folder / "seqtemp_manifest.json").unlink()
    last = out / "checkpoint-2"
    if damage == "empty optimizer":
        (last / "optimizer.pt").write_bytes(b"")
    elif damage == "scheduler":
        (last / "scheduler.pt").unlink()
    else:
        _damage(last / "adapter_model.safetensors", damage)
    assert re.search(words, checkpoint_problem(str(last)))
    with pytest.warns(UserWarning) as caught:
        assert resolve_resume(True, str(out)) == str(out / "checkpoint-1")
    messages = " ".join(str(w.message) for w in caught)
    assert re.search(rf"Skipping checkpoint\(s\) .*checkpoint-2 \({words}", messages)
    assert "checkpoint-1 has no seqtemp_manifest.json" in messages and "not for their content" in messages


def test_a_damaged_last_checkpoint_resumes_from_the_one_before(out):
    """End to end: the run resumes from checkpoint-1 (global step 1) and finishes its 2 steps."""
    _damage(out / "checkpoint-2" / "adapter_model.safetensors", "overwritten")
    trainer = _trainer(out)
    with pytest.warns(UserWarning, match="resuming from the last complete one"):
        trainer.train(resume_from_checkpoint=True)
    assert trainer.state.global_step == 2
    weights = [p for p in trainer.model.parameters() if p.requires_grad]
    assert all(torch.isfinite(p).all() for p in weights)


def test_resume_with_another_lora_rank_or_process_count_or_temperature_is_refused(out):
    with pytest.raises(ValueError, match=r"LoRA adapter with r=2 and this run's has r=4: resume with `lora_r` 2"):
        _trainer(out, r=4).train(resume_from_checkpoint=True)
    state = out / "checkpoint-2" / "seqtemp_state_0.json"
    shutil.copy(state, out / "checkpoint-2" / "seqtemp_state_1.json")
    with pytest.raises(ValueError, match=r"written by 2 process\(es\) and this run has 1"):
        _trainer(out).train(resume_from_checkpoint=True)
    os.remove(out / "checkpoint-2" / "seqtemp_state_1.json")
    (out / "checkpoint-2" / "seqtemp_config.json").unlink()
    with pytest.raises(ValueError, match=r"seqtemp_config.json is missing \(listed in its manifest\)"):
        _trainer(out, temperature=2.0).train(resume_from_checkpoint=str(out / "checkpoint-2"))
    (out / "checkpoint-2" / "seqtemp_manifest.json").unlink()  # an older checkpoint: training_args.json says it
    assert json.loads((out / "checkpoint-2" / "training_args.json").read_text())["target_temperature"] == 0.5
    with pytest.raises(ValueError, match=r"`target_temperature` 0.5, but this run has `target_temperature` 2.0"):
        _trainer(out, temperature=2.0).train(resume_from_checkpoint=True)


def test_a_checkpoint_that_no_longer_says_its_temperature_is_not_resumed_at_another(out):
    """Both `seqtemp_config.json` and `training_args.json` deleted from a T = 0.5 checkpoint: it used to resume at
    T = 2.0 without a word. With its manifest, the missing files are named; without it, the objective check says
    it cannot check."""
    last = out / "checkpoint-2"
    for name in ("seqtemp_config.json", "training_args.json"):
        (last / name).unlink()
    with pytest.raises(ValueError, match=r"cannot be resumed: (seqtemp_config|training_args).json is missing"):
        _trainer(out, temperature=2.0).train(resume_from_checkpoint=str(last))
    (last / "seqtemp_manifest.json").unlink()
    unverified = pytest.warns(UserWarning, match="has no seqtemp_manifest.json")
    with unverified, pytest.raises(ValueError, match=r"says nothing of what it was trained with .*`target_tempera"):
        _trainer(out, temperature=2.0).train(resume_from_checkpoint=str(last))


def test_a_folder_of_partial_checkpoints_says_one_way_forward(out):
    """Only a partial checkpoint: `resume_from_checkpoint=True` used to say "start afresh", and starting afresh said
    "already holds checkpoints ... or resume True". Both now say the same: nothing to resume, `overwrite_output_dir`
    deletes them."""
    shutil.rmtree(out / "checkpoint-1")
    (out / "checkpoint-2" / "trainer_state.json").unlink()
    with pytest.raises(
        ValueError, match="holds only unusable checkpoints .*nothing to resume.*`overwrite_output_dir`"
    ):
        _trainer(out).train(resume_from_checkpoint=True)
    with pytest.raises(ValueError, match=r"none of them usable .*`overwrite_output_dir` True to delete") as refused:
        _trainer(out).train()
    assert "resume_from_checkpoint` True" not in str(refused.value)
    trainer = _trainer(out, overwrite_output_dir=True)
    with pytest.warns(UserWarning, match="deleting 1 checkpoint"):
        trainer.train()
    assert trainer.state.global_step == 2 and checkpoint_problem(str(out / "checkpoint-2")) is None


def test_a_full_disk_while_checkpointing_is_named_and_the_run_resumes_from_the_last_complete_one(
    tmp_path, monkeypatch
):
    """torch's own words for a full disk are `basic_ios::clear` or `unexpected pos`: the error names the checkpoint,
    the free space and the fix, and `resume_from_checkpoint=True` then picks the last complete checkpoint."""
    out, real_save, calls = tmp_path / "out", torch.save, []

    def disk_full_at_the_second_checkpoint(obj, path, *args, **kwargs):
        if "checkpoint-2" in str(path):
            raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 1024 vs 968")
        calls.append(str(path))
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", disk_full_at_the_second_checkpoint)
    with pytest.raises(OSError, match=r"writing checkpoint .*checkpoint-2 failed: .*unexpected pos.* MiB free") as e:
        _trainer(out).train()
    assert "checkpoint-1" in str(e.value) and "`save_total_limit`" in str(e.value)
    monkeypatch.undo()
    with pytest.warns(UserWarning, match=r"checkpoint-2 \(a partial checkpoint"):
        assert resolve_resume(True, str(out)) == str(out / "checkpoint-1")


def _fill_the_disk_at_the_first_checkpoint(monkeypatch) -> None:
    """`torch.save` into `checkpoint-1` fails as a full disk does (ENOSPC); every other save works."""
    real_save = torch.save

    def disk_full_at_the_first_checkpoint(obj, path, *args, **kwargs):
        if "checkpoint-1" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", disk_full_at_the_first_checkpoint)


def test_a_full_disk_at_the_first_checkpoint_advises_what_then_works(tmp_path, monkeypatch):
    """With no complete checkpoint yet, the error used to advise resuming with `True`, which then refused ("nothing to
    resume"). Now it advises starting again with `overwrite_output_dir`, which does."""
    out = tmp_path / "out"
    _fill_the_disk_at_the_first_checkpoint(monkeypatch)
    with pytest.raises(OSError, match=r"checkpoint-1 failed: \[ENOSPC\] .* MiB free") as raised:
        _trainer(out).train()
    assert "resume_from_checkpoint` True" not in str(raised.value)
    assert "start the run again with `overwrite_output_dir` True" in str(raised.value)
    monkeypatch.undo()
    trainer = _trainer(out, overwrite_output_dir=True)
    with pytest.warns(UserWarning, match="deleting 1 checkpoint"):
        trainer.train()
    assert trainer.state.global_step == 2


_LIMITED = """
import resource, signal, sys
sys.path[:0] = sys.argv[2:]
from transformers import TrainerCallback
from test_checkpoint_verification import _trainer


class FileSizeLimitAfterTheFirstCheckpoint(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 2:  # checkpoint-1 is whole; every file of checkpoint-2 is cut at 1 KiB
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead of killing
            resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


trainer = _trainer(sys.argv[1])
trainer.add_callback(FileSizeLimitAfterTheFirstCheckpoint())
trainer.train()
"""


def test_a_real_file_size_limit_while_checkpointing_is_named_and_the_run_resumes(tmp_path):
    """The test above with the operating system's own failure: a process whose file-size limit (RLIMIT_FSIZE, what a
    full disk looks like to `write`) drops to 1 KiB after checkpoint-1 fails writing checkpoint-2 with one error
    naming the checkpoint, the free space and the fix; a new process resumes from checkpoint-1 and finishes."""

    from launching import run_script

    out = tmp_path / "out"
    child = run_script(_LIMITED, out)
    assert child.returncode != 0
    last = child.stderr.strip().splitlines()[-1]
    assert re.search(r"OSError: writing checkpoint \S*checkpoint-2 failed: .* MiB free .*checkpoint-1", last), last
    with pytest.warns(UserWarning, match=r"checkpoint-2 \(a partial checkpoint"):
        assert resolve_resume(True, str(out)) == str(out / "checkpoint-1")
    trainer = _trainer(out)
    with pytest.warns(UserWarning, match=r"Skipping checkpoint\(s\) .*checkpoint-2"):
        trainer.train(resume_from_checkpoint=True)
    assert trainer.state.global_step == 2


def test_a_checkpoint_cut_by_a_full_disk_is_said_to_be_still_there(tmp_path, monkeypatch):
    """The error used to say the partial folder "is deleted" while it was still on disk: now it names it, says it is
    there and which run deletes it."""
    out = tmp_path / "out"
    _fill_the_disk_at_the_first_checkpoint(monkeypatch)
    with pytest.raises(OSError) as raised:
        _trainer(out).train()
    message = str(raised.value)
    assert "is deleted" not in message and os.path.isdir(out / "checkpoint-1")
    assert f"the partial folder {out / 'checkpoint-1'} is still there; that run deletes it" in message
