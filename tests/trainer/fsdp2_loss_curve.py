# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""LoRA trained with the trainer's loss under torch's FSDP2 (`fully_shard`, gloo): `torchrun --nproc_per_node 2
this.py OUT`, each rank holding its half of the same 8-sequence global batch every step. The decoder layers and the
whole PEFT model are sharded; the loss is `SeqTempTrainer.compute_loss` (every rank's sequences gathered, gradient
through the local ones scaled by the world size) and FSDP2 averages the gradients of the shards. Before sharding,
each rank also trains a copy alone on all 8 sequences (the objective on the whole batch, as one process). Rank 0
writes both loss curves to `OUT/curve.json`.
"""

import copy
import json
import os
import sys

import torch
import torch.distributed as dist
from peft import LoraConfig
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

from hf_seqtemp import SeqTempTrainer

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from configs import quiet_config
from launching import leave, whole_batch_loss
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

STEPS = 6


def _train(model, loss_of, batch) -> list[float]:
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    curve = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = loss_of(model, batch)
        loss.backward()
        optimizer.step()
        curve.append(loss.item())
    return curve


def _one_process_loss(trainer):
    """The objective on the whole batch in this process alone: no gathering, no gradient scale."""

    def loss_of(model, batch):
        return whole_batch_loss(trainer, model, batch)

    return loss_of


def main(output_dir: str) -> None:
    torch.set_num_threads(1)
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 8, 3, seed=5))
    args = quiet_config(
        output_dir=output_dir,
        target_temperature=0.5,
        loss_type="ssts",  # self-normalised over the whole group of 8, which the ranks hold 4 + 4
        nll_weight=0.1,
        per_device_train_batch_size=4,
        report_to="none",
        ddp_backend="gloo",
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0, init_lora_weights=False)
    trainer = SeqTempTrainer(model, args, train_dataset=data, peft_config=lora)
    rows = [trainer.train_dataset[i] for i in range(8)]  # with their precomputed reference columns
    alone = _train(copy.deepcopy(trainer.model).train(), _one_process_loss(trainer), trainer.data_collator(rows))
    model = trainer.model.train()
    for module in list(model.modules()):
        if type(module).__name__.endswith("DecoderLayer"):
            fully_shard(module)
    fully_shard(model)
    sharded = any(isinstance(p, DTensor) and p.to_local().numel() < p.numel() for p in model.parameters())
    rank = dist.get_rank()
    curve = _train(model, trainer.compute_loss, trainer.data_collator(rows[rank * 4 : (rank + 1) * 4]))
    if rank == 0:
        with open(f"{output_dir}/curve.json", "w") as handle:
            json.dump({"loss": curve, "alone": alone, "world": dist.get_world_size(), "sharded": sharded}, handle)
            handle.flush()
            os.fsync(handle.fileno())
    dist.barrier()
    leave(0)  # no interpreter teardown (gloo worker threads)


if __name__ == "__main__":
    main(sys.argv[1])
