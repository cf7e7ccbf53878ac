# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from accelerate.utils import DistributedType
from launching import free_port, run_ranks

from hf_seqtemp.trainer.distributed import check_launch

SCRIPT = Path(__file__).with_name("fsdp2_loss_curve.py")


def test_fsdp2_with_lora_on_two_ranks_matches_the_one_process_loss_curve(tmp_path):
    """torch's `fully_shard` (FSDP2, gloo) on the decoder layers and the PEFT model, LoRA trained with the trainer's
    SSTS loss: each rank holds 4 of the one group of 8 sequences. The curve equals the one-process curve of the
    same global batch to 1e-4 relative (measured: 2e-6). With SSTS normalised within each rank's share, as before,
    the curves part at the first step."""
    torchrun = Path(sys.executable).with_name("torchrun")
    run_ranks([str(torchrun), "--nproc_per_node", "2", "--master_port", free_port(), str(SCRIPT), str(tmp_path)], 300)
    result = json.loads((tmp_path / "curve.json").read_text())
    assert result["world"] == 2 and result["sharded"]  # the LoRA weights really are shards
    assert len(result["loss"]) == 6
    assert result["loss"] == pytest.approx(result["alone"], rel=1e-4), result


@pytest.mark.parametrize("processes", [1, 2])
def test_a_launch_whose_accelerator_does_not_see_the_other_processes_is_refused(monkeypatch, processes):
    """accelerate's FSDP launch on a machine without GPUs starts WORLD_SIZE=2 processes whose accelerator reports
    `DistributedType.NO` (1 process, or 2 with `ddp_backend="gloo"`, measured with accelerate 1.15): they would train
    alone, or split the reference scoring without gathering it. Data parallelism over the same processes is fine."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    alone = SimpleNamespace(num_processes=processes, distributed_type=DistributedType.NO)
    with pytest.raises(RuntimeError, match=r"WORLD_SIZE=2 .* distributed type .*NO.*--multi_gpu"):
        check_launch(alone)
    check_launch(SimpleNamespace(num_processes=2, distributed_type=DistributedType.MULTI_CPU))
