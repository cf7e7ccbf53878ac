# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Trains a tiny model for a few steps and writes rank 0's loss curve: `python this.py OUT BATCH` alone, or under
`accelerate launch --num_processes 2 this.py OUT BATCH/2`. Every step uses the whole 8-sequence dataset as the
global batch, so both runs optimise the same objective whatever the sampler's order."""

import json
import os
import sys

import torch

from hf_seqtemp import SeqTempConfig, SeqTempTrainer

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from launching import leave
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences


def main(output_dir: str, per_device_batch: int, loss_type: str) -> None:
    torch.set_num_threads(1)
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 8, 3, seed=5))
    args = SeqTempConfig(
        output_dir=output_dir,
        target_temperature=0.5,
        loss_type=loss_type,
        nll_weight=0.1,
        max_steps=6,
        per_device_train_batch_size=per_device_batch,
        learning_rate=5e-3,
        lr_scheduler_type="constant",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        report_to="none",
        logging_steps=1,
        max_grad_norm=0,
        ddp_backend="gloo" if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None,
    )
    trainer = SeqTempTrainer(model, args, train_dataset=data)
    trainer.train()
    if trainer.is_world_process_zero():
        curve = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        with open(f"{output_dir}/curve.json", "w") as handle:
            zero = trainer.deepspeed.zero_optimization_stage() if trainer.is_deepspeed_enabled else None
            record = {"loss": curve, "world": trainer.accelerator.num_processes, "zero_stage": zero}
            json.dump({**record, "distributed_type": str(trainer.accelerator.distributed_type)}, handle)
            handle.flush()
            os.fsync(handle.fileno())
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
    # no interpreter teardown: the DDP reducer's destructor can deadlock with the gloo worker thread
    leave(0)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
