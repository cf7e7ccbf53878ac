# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Run under `torchrun --nproc_per_node 2 this.py OUT STEPS`: three checks that two processes compute what one does.

1. fresh samples: per-device batch 1, `num_generations=2`, `sample_every_steps=1`, so every step's group is two
   completions drawn on the two ranks; each rank records what it drew and the step's grad norm. The prompt-only
   pre-sampling is also run divided across ranks and alone, with the number of chunks each rank drew.
2. split groups: a batch of two prompt groups held 3 + 2 by the ranks (group 0 split 2 + 1, rows of different
   lengths) gives the loss and the averaged gradient of one process holding all five rows (ratio and SSTS).
3. evaluation of a 7-row eval set at 2 rows per device (the last global batch padded by a duplicate): the logged
   T_eff, τ and NLL per token against the one-process figures of the same model.
4. SMC distillation with the adapter proposal, each prompt's 4 particles split 2 + 2 across the ranks: the rows,
   weights, losses and final adapter, which the test compares with one process holding whole prompts.
Each rank writes `rank<r>.json` into OUT.
"""

import json
import os
import sys
from types import SimpleNamespace

import torch
import torch.distributed as dist
from datasets import Dataset

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.data import GROUP_ID, prepare_dataset
from hf_seqtemp.groups import group_codes
from hf_seqtemp.metrics.core import effective_temperature, kendall_tau
from hf_seqtemp.trainer import prompt_only

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from conditional_toy import word_tokenizer
from launching import leave, whole_batch_loss
from tiny_models import conditional_lm

SMC_STEPS = 6


class Recording(SeqTempTrainer):
    """Keeps the rows each training step of this rank scored."""

    seen: list

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if model.training:
            record = [self.state.global_step, inputs["input_ids"].tolist(), inputs[GROUP_ID].tolist()]
            if "smc_log_weight" in inputs:
                record.append(inputs["smc_log_weight"].tolist())
            self.seen.append(record)
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


def _args(output_dir: str, **overrides) -> SeqTempConfig:
    values = {
        "output_dir": output_dir,
        "target_temperature": 0.5,
        "nll_weight": 0.1,
        "learning_rate": 1e-2,
        "save_strategy": "no",
        "use_cpu": True,
        "ddp_backend": "gloo",
        "disable_tqdm": True,
        "report_to": "none",
        "seed": 0,
        **overrides,
    }
    return SeqTempConfig(**values)


def fresh_samples(output_dir: str, steps: int) -> dict:
    args = _args(
        output_dir,
        nll_weight=0.0,
        max_steps=steps,
        per_device_train_batch_size=1,
        num_generations=2,
        max_completion_length=3,
        sample_every_steps=1,
        logging_steps=1,
        max_grad_norm=1e9,  # logged, not clipped
    )
    prompts = Dataset.from_dict({"prompt": ["x", "y", "z"]})
    trainer = Recording(conditional_lm(4), args, train_dataset=prompts, processing_class=word_tokenizer())
    trainer.seen = []
    trainer.train()
    norms = {e["step"]: e["grad_norm"] for e in trainer.state.log_history if "grad_norm" in e}
    # prompt-only pre-sampling: divided across the ranks, it must draw what one process draws
    chunks = []
    original = prompt_only.sample_completions
    prompt_only.sample_completions = lambda *a, **k: chunks.append(len(a[1])) or original(*a, **k)
    tokenized = prepare_dataset(prompts, word_tokenizer(), "text", 16, "train_dataset")
    # (plain arguments: a second TrainingArguments would reset the accelerator state of the trainer's)
    pre = SimpleNamespace(
        sampling_batch_tokens=4 * (max(map(len, tokenized["prompt_ids"])) + 3),  # chunks of 4 rows
        seed=0,
        num_generations=5,
        max_completion_length=3,
        per_device_eval_batch_size=4,
        max_length=None,
    )
    divided = prompt_only.complete_prompts(
        trainer.model, tokenized, pre, word_tokenizer(), "train", trainer.accelerator
    )
    mine = list(chunks)
    alone = prompt_only.complete_prompts(trainer.model, tokenized, pre, word_tokenizer(), "train")
    prompt_only.sample_completions = original
    return {
        "seen": trainer.seen,
        "grad_norms": norms,
        "divided_equals_alone": divided.to_list() == alone.to_list(),
        "divided_chunk_sizes": mine,
    }


def smc_distill_run(output_dir: str, steps: int, per_device: int, resume: str | None = None, **overrides) -> dict:
    """SMC distillation with the trained LoRA adapter as proposal, 4 particles per prompt and a global batch of one
    prompt: on two ranks of `per_device=2` each prompt's particles are split 2 + 2. Returns the rows (and their
    weights) each step scored on this rank, the logged losses and the final adapter; `resume`: a checkpoint to
    resume from."""
    from peft import LoraConfig

    args = _args(
        output_dir,
        loss_type="smc_distill",
        smc_proposal="adapter",
        target_temperature=0.25,
        max_steps=steps,
        per_device_train_batch_size=per_device,
        num_generations=4,
        max_completion_length=3,
        sample_every_steps=1,
        logging_steps=1,
        **overrides,
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0)
    prompts = Dataset.from_dict({"prompt": ["x", "y", "z"]})
    trainer = Recording(
        conditional_lm(4), args, train_dataset=prompts, processing_class=word_tokenizer(), peft_config=lora
    )
    trainer.seen = []
    trainer.train(resume_from_checkpoint=resume)
    adapter = {name: p.detach().flatten().tolist() for name, p in trainer.model.named_parameters() if p.requires_grad}
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {"seen": trainer.seen, "adapter": adapter, "losses": losses}


def _split_group_rows() -> Dataset:
    """Five rows of two prompts, completions of 3 or 2 tokens: group 0 is rows 0-2, group 1 rows 3-4."""
    rows = [[0, 1, 2, 0, 3], [0, 1, 1, 1], [0, 1, 3, 3, 0], [0, 2, 0, 0, 1], [0, 2, 3, 1]]
    return Dataset.from_dict(
        {
            "input_ids": rows,
            "completion_mask": [[0, 0] + [1] * (len(r) - 2) for r in rows],
            "prompt_id": [0, 0, 0, 1, 1],
        }
    )


def _one_process(trainer, batch) -> tuple[float, torch.Tensor]:
    """The objective on the whole batch in this process alone: no gathering, no gradient scale."""
    model = trainer.model
    model.zero_grad()
    loss = whole_batch_loss(trainer, model, batch)
    loss.backward()
    return loss.item(), torch.cat([p.grad.flatten() for p in model.parameters()]).clone()


def split_groups(output_dir: str, loss_type: str) -> dict:
    rank, world = dist.get_rank(), dist.get_world_size()
    args = _args(output_dir, loss_type=loss_type, per_device_train_batch_size=2, num_generations=2)
    trainer = SeqTempTrainer(conditional_lm(4), args, train_dataset=_split_group_rows())
    rows = [trainer.train_dataset[i] for i in range(5)]
    loss_alone, grad_alone = _one_process(trainer, trainer.data_collator(rows))
    local = trainer.data_collator([rows[0], rows[1], rows[3]] if rank == 0 else [rows[2], rows[4]])
    trainer.model.zero_grad()
    loss = trainer.compute_loss(trainer.model, local)
    loss.backward()
    grad = torch.cat([p.grad.flatten() for p in trainer.model.parameters()])
    dist.all_reduce(grad)  # what data parallelism does: the mean of the ranks' gradients
    grad /= world
    return {
        "loss": loss.item(),
        "loss_alone": loss_alone,
        "grad_error": (grad - grad_alone).abs().max().item(),
        "grad_scale": grad_alone.abs().max().item(),
    }


def evaluation(output_dir: str) -> dict:
    rows = [[0, 1, 2, 0, 3], [0, 1, 1, 1, 2], [0, 1, 3, 3, 0], [0, 2, 0, 0, 1], [0, 2, 3, 1, 1]]
    rows += [[0, 3, 1, 2, 2], [0, 3, 0, 1, 3]]
    data = Dataset.from_dict({"input_ids": rows, "completion_mask": [[0, 0, 1, 1, 1]] * 7})
    args = _args(output_dir, per_device_train_batch_size=2, num_generations=2, per_device_eval_batch_size=2)
    trainer = SeqTempTrainer(conditional_lm(4), args, train_dataset=data, eval_dataset=data)
    with torch.no_grad():  # q != p, the same perturbation on every rank
        generator = torch.Generator().manual_seed(7)
        for p in trainer.model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=generator))
    metrics = trainer.evaluate()
    batch = trainer.data_collator([trainer.eval_dataset[i] for i in range(7)])
    trainer.model.eval()
    with torch.no_grad():
        policy, extra = trainer.family.score(trainer.model, batch)
    ref, groups = batch["ref_logps"].double(), group_codes(batch[GROUP_ID], 7)
    return {
        "logged": [metrics[f"eval_{k}"] for k in ("temp/t_eff", "temp/kendall_tau", "nll/policy_per_token")],
        "alone": [
            effective_temperature(ref, policy.double(), groups=groups),
            kendall_tau(ref, policy.double(), groups=groups),
            (-policy.double().sum() / extra["completion_mask"].sum()).item(),
        ],
    }


def main(output_dir: str, steps: int) -> None:
    torch.set_num_threads(1)
    record = {"rank": int(os.environ["RANK"]), "output_dir": output_dir, "fresh": fresh_samples(output_dir, steps)}
    record["split"] = {loss: split_groups(output_dir, loss) for loss in ("ssts", "ratio")}
    record["eval"] = evaluation(output_dir)
    # with a checkpoint at the end, which one process must refuse to resume (tests/trainer/test_distributed_exactness)
    record["smc_distill"] = smc_distill_run(
        f"{output_dir}/smc", SMC_STEPS, per_device=2, save_strategy="steps", save_steps=SMC_STEPS
    )
    with open(f"{output_dir}/rank{record['rank']}.json", "w") as handle:
        handle.write(json.dumps(record))
        handle.flush()
        os.fsync(handle.fileno())
    dist.barrier()
    leave(0)  # no interpreter teardown: the DDP reducer's destructor can deadlock with the gloo worker thread


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
