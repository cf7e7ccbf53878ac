# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
import json
import sys
from pathlib import Path

import pytest
from launching import free_port, run_ranks


def test_two_processes_with_batch_one_train_the_ratio_loss_through_cross_rank_pairs(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    script = Path(__file__).with_name("distributed_ratio.py")
    run_ranks([str(torchrun), "--nproc_per_node", "2", "--master_port", free_port(), str(script), str(tmp_path)])
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert sorted(r["rank"] for r in ranks) == [0, 1] and all(r["world"] == 2 for r in ranks)
    # a pair exists only across ranks, so any change proves the gathered pairing gives a gradient ...
    assert all(r["max_change"] > 1e-4 for r in ranks), ranks
    # ... and DDP keeps both replicas identical
    assert ranks[0]["checksum"] == pytest.approx(ranks[1]["checksum"], rel=1e-9)
    losses = next(r["ratio_losses"] for r in ranks if r["ratio_losses"])
    assert len(losses) == 3 and all(v > 0 for v in losses)
    assert ranks[0]["pairs"] == [1.0, 1.0, 1.0]  # each step: one within-prompt pair, formed across the two ranks
