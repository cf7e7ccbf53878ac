# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Run under `torchrun --nproc_per_node 2`: ratio loss, per-device batch 1, no NLL term.

Alone, a batch of one sequence has no pair and no gradient; across two ranks the gathered h forms a pair, so
the parameters must move, identically on both ranks. Each rank writes `rank<r>.json` into the output folder.
"""

import json
import os
import sys

import torch
import torch.distributed as dist

from hf_seqtemp import SeqTempConfig, SeqTempTrainer

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from conditional_toy import PROMPTS, as_prompted_dataset, completion_logps, draw, enumerate_completions
from launching import leave
from tiny_models import conditional_lm


def main(output_dir: str) -> None:
    torch.set_num_threads(1)
    model = conditional_lm(4)
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    # two prompts, 4 completions each: a global batch (one per rank) is 2 completions of ONE prompt
    ids, groups = enumerate_completions(4, 3, PROMPTS[:2])
    picked = draw(completion_logps(model, ids, 2), groups, 4, seed=3)  # distinct samples of p(·|c)
    data = as_prompted_dataset(ids[picked], prompt_length=2)
    args = SeqTempConfig(
        output_dir=output_dir,
        target_temperature=0.5,
        nll_weight=0.0,
        max_steps=3,
        per_device_train_batch_size=1,
        num_generations=2,  # a prompt's pair of completions is split over the two ranks
        learning_rate=1e-2,
        save_strategy="no",
        use_cpu=True,
        ddp_backend="gloo",
        disable_tqdm=True,
        report_to="none",
        logging_steps=1,
    )
    trainer = SeqTempTrainer(model, args, train_dataset=data)
    trainer.train()
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    checksum = after.double().sum().item()
    record = json.dumps(
        {
            "rank": dist.get_rank(),
            "world": dist.get_world_size(),
            "max_change": (after - before).abs().max().item(),
            "checksum": checksum,
            "ratio_losses": [e["loss/ratio"] for e in trainer.state.log_history if "loss/ratio" in e],
            "pairs": [e["groups/pairs"] for e in trainer.state.log_history if "groups/pairs" in e],
        }
    )
    with open(f"{output_dir}/rank{dist.get_rank()}.json", "w") as handle:
        handle.write(record)
        handle.flush()
        os.fsync(handle.fileno())
    dist.barrier()
    # no interpreter teardown: the DDP reducer's destructor can deadlock with the gloo worker thread
    leave(0)


if __name__ == "__main__":
    main(sys.argv[1])
