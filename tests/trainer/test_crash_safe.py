# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Crash-safe runs: a run SIGKILLed between or during checkpoint writes and resumed ends with the adapter of the
uninterrupted run, bit for bit (Python API and `hf-seqtemp train`, with and without fresh samples); one seed gives
one adapter; a partial checkpoint is skipped or refused by name; a checkpoint is not resumed with another target
temperature or loss, and an earlier run's checkpoints are not overwritten without saying so.

The killed runs are subprocesses (`killed_run.py`) that SIGKILL themselves; the uninterrupted and resumed runs run
here, all on one thread, so that every run does the same float operations in the same order."""

import os
import shutil
import signal
import subprocess
import sys

import killed_run
import pytest
import torch
from killed_run import make_workspace, run_api, run_cli
from safetensors.torch import load_file

RUNS = {"api": run_api, "cli": run_cli}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("crash")
    make_workspace(str(root))
    return str(root)


@pytest.fixture(scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def uninterrupted(workspace, tmp_path_factory, one_thread):
    """`(mode, samples) -> (adapter weights, output_dir)` of the uninterrupted 6-step run (checkpoints 3 and 6)."""
    runs = {}

    def run(mode: str, samples: str, loss_type: str = "ratio"):
        if (mode, samples, loss_type) not in runs:
            out = str(tmp_path_factory.mktemp(f"full-{mode}-{samples}-{loss_type}"))
            adapter = RUNS[mode](workspace, out, samples, loss_type=loss_type)
            runs[mode, samples, loss_type] = (load_file(adapter), out)
        return runs[mode, samples, loss_type]

    return run


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _killed(workspace: str, out: str, mode: str, samples: str, kill: str, loss_type: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, killed_run.__file__, workspace, out, mode, samples, kill, loss_type]
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]


KILLS = [
    ("api", "fresh", "after:4", "ratio"),
    ("api", "fixed", "saving:6", "ratio"),
    ("cli", "fresh", "saving:6", "ratio"),
    ("cli", "fixed", "after:4", "ratio"),
    ("api", "fixed", "after:4", "trunc_r"),  # the loss's memory (rolling quantiles per prompt) is in the checkpoint
    # SMC particles (their rows and weights) are in the pool the checkpoint keeps; a prompt's draw is seeded by the
    # generation and the prompt, so the particles of the generations after the kill are those of the uninterrupted run
    ("api", "fresh", "after:4", "smc_distill+adapter"),
    pytest.param("cli", "fresh", "saving:6", "smc_distill", marks=pytest.mark.slow),
    pytest.param("api", "fresh", "saving:6", "ratio", marks=pytest.mark.slow),
    pytest.param("api", "fixed", "after:4", "ratio", marks=pytest.mark.slow),
    pytest.param("cli", "fresh", "after:4", "ratio", marks=pytest.mark.slow),
    pytest.param("cli", "fixed", "saving:6", "ratio", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("mode", "samples", "kill", "loss_type"), KILLS)
def test_a_killed_run_resumes_to_the_adapter_of_the_uninterrupted_run(
    workspace, uninterrupted, tmp_path, capsys, mode, samples, kill, loss_type
):
    """Killed after step 4 (checkpoint-3 complete) or inside checkpoint-6 (adapter and optimizer written, no
    trainer_state.json), then resumed: the final adapter equals the uninterrupted run's, bit for bit, and
    checkpoint-3 is read, never rewritten. `fresh`: the pool of fresh samples (sample_every_steps=2, 2 batches
    per epoch) comes back from the checkpoint with its random stream."""
    out = str(tmp_path / "run")
    _killed(workspace, out, mode, samples, kill, loss_type)
    complete = os.path.join(out, "checkpoint-3")
    stamp = os.stat(os.path.join(complete, "adapter_model.safetensors")).st_mtime_ns
    if kill.startswith("saving"):
        partial = os.path.join(out, "checkpoint-6")
        assert os.path.isfile(os.path.join(partial, "adapter_model.safetensors"))
        assert not os.path.exists(os.path.join(partial, "trainer_state.json"))
        refused = (ValueError, SystemExit)  # the CLI prints the error and exits with status 2
        with pytest.raises(refused) as error:
            RUNS[mode](workspace, out, samples, partial, loss_type=loss_type)
        message = str(error.value) if error.type is ValueError else capsys.readouterr().err
        assert "checkpoint-6" in message and "partial" in message and complete in message, message
        with pytest.warns(UserWarning, match=r"checkpoint-6.*last complete one, .*checkpoint-3"):
            adapter = RUNS[mode](workspace, out, samples, True, loss_type=loss_type)
    else:
        adapter = RUNS[mode](workspace, out, samples, True if mode == "api" else complete, loss_type=loss_type)
    assert os.stat(os.path.join(complete, "adapter_model.safetensors")).st_mtime_ns == stamp
    assert _same(load_file(adapter), uninterrupted(mode, samples, loss_type)[0])


@pytest.mark.parametrize("mode", ["api", "cli"])
@pytest.mark.parametrize("samples", ["fixed", "fresh"])
def test_one_seed_gives_one_adapter(workspace, uninterrupted, tmp_path, mode, samples):
    """The LoRA weights are drawn after the trainer seeds: whatever the global RNG did before, one seed, one adapter."""
    torch.manual_seed(12345)
    adapter = RUNS[mode](workspace, str(tmp_path / "again"), samples)
    assert _same(load_file(adapter), uninterrupted(mode, samples)[0])


def test_resuming_with_another_target_temperature_or_loss_is_an_error(workspace, uninterrupted):
    _, out = uninterrupted("api", "fixed")  # trained at T = 0.5 with the ratio loss
    with pytest.raises(
        ValueError,
        match=r"checkpoint-6 was trained with `target_temperature` 0.5, but this run has `target_temperature` 2.0",
    ):
        run_api(workspace, out, "fixed", True, target_temperature=2.0)
    with pytest.raises(ValueError, match=r"`loss_type` 'ratio', but this run has `loss_type` 'ssts'"):
        run_api(workspace, out, "fixed", True, loss_type="ssts")


@pytest.mark.parametrize("mode", ["api", "cli"])
def test_an_earlier_runs_checkpoints_are_not_overwritten_without_saying_so(
    workspace, uninterrupted, tmp_path, capsys, mode
):
    full, earlier = uninterrupted(mode, "fixed")
    out = str(tmp_path / "run")
    shutil.copytree(earlier, out)
    with pytest.raises((ValueError, SystemExit)) as error:
        RUNS[mode](workspace, out, "fixed")
    message = str(error.value) if error.type is ValueError else capsys.readouterr().err
    flag = "--" if mode == "cli" else ""
    assert out in message and "checkpoint-3, checkpoint-6" in message, message
    assert f"`{flag}resume_from_checkpoint`" in message and f"`{flag}overwrite_output_dir`" in message, message
    # a new run is the likely case (the README's steps write one folder after another): another folder comes first
    assert message.index(f"another `{flag}output_dir`") < message.index(f"`{flag}resume_from_checkpoint`"), message
    with pytest.warns(UserWarning, match="deleting 2 checkpoint"):
        adapter = RUNS[mode](workspace, out, "fixed", overwrite_output_dir=True)
    assert _same(load_file(adapter), full)  # afresh, with the same seed
