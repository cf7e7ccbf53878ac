# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""LoRA trained with the trainer's loss under torch's FSDP2 (`fully_shard`, gloo): `python this.py OUT 8` alone, or
`torchrun --nproc_per_node 2 this.py OUT 4`, each rank holding its half of the same 8-sequence global batch every
step. The decoder layers and the whole PEFT model are sharded; the loss is `SeqTempTrainer.compute_loss` (every
rank's sequences gathered, gradient through the local ones scaled by the world size) and FSDP2 averages the
gradients of the shards. Rank 0 writes the loss curve to `OUT/curve.json`.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from peft import LoraConfig

from hf_seqtemp import SeqTempConfig, SeqTempTrainer

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from launching import leave
from tiny_models import tiny_causal_lm
from toy import as_dataset, sample_sequences

STEPS = 6


def main(output_dir: str, per_device_batch: int) -> None:
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    model = tiny_causal_lm(4, seed=0)
    data = as_dataset(sample_sequences(model, 8, 3, seed=5))
    args = SeqTempConfig(
        output_dir=output_dir,
        target_temperature=0.5,
        loss_type="ssts",  # self-normalised over the whole group of 8, which the ranks hold 4 + 4
        nll_weight=0.1,
        per_device_train_batch_size=per_device_batch,
        save_strategy="no",
        use_cpu=True,
        report_to="none",
        disable_tqdm=True,
        ddp_backend="gloo" if world > 1 else None,
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0, init_lora_weights=False)
    trainer = SeqTempTrainer(model, args, train_dataset=data, peft_config=lora)
    model = trainer.model.train()
    if world > 1:
        from torch.distributed.fsdp import FSDPModule, fully_shard

        for module in list(model.modules()):
            if type(module).__name__.endswith("DecoderLayer"):
                fully_shard(module)
        fully_shard(model)
        assert isinstance(model, FSDPModule)
    rank = dist.get_rank() if world > 1 else 0
    rows = [trainer.train_dataset[i] for i in range(8)]  # with their precomputed reference columns
    batch = trainer.data_collator(rows[rank * per_device_batch : (rank + 1) * per_device_batch])
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    sharded = any(getattr(p, "to_local", None) and p.to_local().numel() < p.numel() for p in model.parameters())
    curve = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = trainer.compute_loss(model, batch)
        loss.backward()
        optimizer.step()
        curve.append(loss.item())
    if rank == 0:
        with open(f"{output_dir}/curve.json", "w") as handle:
            json.dump({"loss": curve, "world": world, "sharded": sharded}, handle)
            handle.flush()
            os.fsync(handle.fileno())
    if world > 1:
        dist.barrier()
    leave(0)  # no interpreter teardown (gloo worker threads)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
