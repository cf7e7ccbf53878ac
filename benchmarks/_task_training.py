# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The trained rows of the task benchmark, from the same training prompts and the same LoRA:

- ours: prompt-only `SeqTempTrainer` (`loss_type="ratio"`, L_p + λ·NLL) towards sequence temperature T;
- distill: prompt-only `SeqTempTrainer` with SMC distillation (`loss_type="smc_distill"`, adapter proposal);
- the RL peer: TRL's `RLOOTrainer` with reward r(x) = log p_base(x | c) (the package's scorer, base model) and KL
  weight β = 1/(α − 1) = T/(1 − T) against p, whose optimum is q ∝ p · exp(r/β) = p^α = p^(1/T). RLOO is the closer
  of TRL's two to KL-regularised RL: it subtracts β·KL(q_old ‖ p) from the sequence reward and uses the
  leave-one-out mean as baseline with no scaling by the group's std (`normalize_advantages=False`), which is the
  REINFORCE gradient of E_q[r] − β KL(q ‖ p); GRPO puts a k3 KL estimate in the per-token loss instead and
  divides advantages by the group's std unless told not to. The peer trains for the same wall-clock time as ours
  (its build included), stopped by a callback.
"""

from __future__ import annotations

import time

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import TrainerCallback

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model
from hf_seqtemp.likelihood import AutoregressiveScorer


def lora_config(rank: int) -> LoraConfig:
    return LoraConfig(
        r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def _shared_args(settings: dict, device, output_dir: str) -> dict:
    """Arguments both trainers get: fp32, no gradient checkpointing, same batch, generations, lengths, rate."""
    return {
        "output_dir": output_dir,
        "num_generations": settings["num_generations"],
        "max_completion_length": settings["max_new_tokens"],
        "per_device_train_batch_size": settings["train_batch"],
        "gradient_accumulation_steps": 1,
        "learning_rate": settings["learning_rate"],
        "lr_scheduler_type": "constant",
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "seed": settings["train_seed"],
        "use_cpu": device.type == "cpu",
        "bf16": False,
        "activation_checkpointing": False,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }


def _train_prompt_only(temperature, prompts, tokenizer, settings, device, workdir, name, **loss_args):
    """Prompt-only `SeqTempTrainer` towards `temperature` with the loss in `loss_args`, fresh samples (or particles)
    every step; returns `(model, training seconds, logged figures)`."""
    model, _ = load_default_model(device=device)
    torch.manual_seed(settings["train_seed"])
    start = time.perf_counter()
    config = SeqTempConfig(
        target_temperature=temperature,
        max_steps=settings["max_steps"],
        init_from_token_temperature=True,
        sample_every_steps=1,
        **loss_args,
        **_shared_args(settings, device, f"{workdir}/{name}_T{temperature:g}"),
    )
    dataset = Dataset.from_dict({"prompt": prompts})
    trainer = SeqTempTrainer(
        model, config, train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(settings["lora_r"])
    )
    trainer.train()
    seconds = time.perf_counter() - start
    logged = [
        {k: e[k] for k in ("step", "loss", "temp/t_eff", "temp/kendall_tau", "ess/fraction") if k in e}
        for e in trainer.state.log_history
        if "loss" in e
    ]
    return trainer.model.eval(), seconds, logged


def train_ours(temperature: float, prompts: list, tokenizer, settings: dict, device, workdir: str):
    """Prompt-only `SeqTempTrainer` (ratio loss + λ·NLL) at `temperature`; returns `(model, training seconds, logged
    figures)`."""
    return _train_prompt_only(temperature, prompts, tokenizer, settings, device, workdir, "ours", loss_type="ratio",
                              nll_weight=settings["nll_weight"])  # fmt: skip


def train_distill(temperature: float, prompts: list, tokenizer, settings: dict, device, workdir: str):
    """Prompt-only `SeqTempTrainer` with SMC distillation (`loss_type="smc_distill"`, the adapter being trained as
    the particles' proposal, new particles every step, `num_generations` per prompt); returns what `train_ours`
    returns."""
    return _train_prompt_only(temperature, prompts, tokenizer, settings, device, workdir, "distill",
                              loss_type="smc_distill", smc_proposal="adapter")  # fmt: skip


class _Budget(TrainerCallback):
    """Stops training at the step end nearest to `seconds` after `start`: after a step, when running one more step
    (as long as the last one) would overshoot the budget by more than it would leave unused."""

    def __init__(self, start: float, seconds: float):
        self.start, self.seconds, self.last = start, seconds, start

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        step, self.last = now - self.last, now
        if now - self.start + step / 2 >= self.seconds:
            control.should_training_stop = True
        return control


def log_p_reward(base_model, tokenizer):
    """RLOO reward function: log p_base(completion | prompt), the completion's exact tokens scored by the package's
    `AutoregressiveScorer` on the base model (EOS included when the completion has one)."""
    scorer = AutoregressiveScorer()

    def reward(prompts, completions, completion_ids, **kwargs) -> list[float]:
        rows, masks = [], []
        for prompt, ids in zip(prompts, completion_ids):
            text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
            prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            rows.append(prompt_ids + list(ids))
            masks.append([False] * len(prompt_ids) + [True] * len(ids))
        width = max(len(r) for r in rows)
        pad = tokenizer.pad_token_id
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=base_model.device)
        attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=base_model.device)
        mask = torch.tensor([m + [False] * (width - len(m)) for m in masks], device=base_model.device)
        with torch.no_grad():
            return scorer(base_model, ids, attention, mask).tolist()

    reward.__name__ = "log_p_base"
    return reward


def train_rloo(temperature: float, prompts: list, tokenizer, settings: dict, device, workdir: str, budget: float):
    """TRL `RLOOTrainer` towards p^(1/T) for `budget` seconds; returns `(model, seconds, steps, logged figures)`."""
    from trl import RLOOConfig, RLOOTrainer

    alpha = 1.0 / temperature
    model, _ = load_default_model(device=device)
    base, _ = load_default_model(device=device)
    base.eval()
    torch.manual_seed(settings["train_seed"])
    start = time.perf_counter()
    config = RLOOConfig(
        beta=1.0 / (alpha - 1.0),
        normalize_advantages=False,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        sample_every_steps=1,
        num_iterations=1,
        max_steps=10**6,
        **_shared_args(settings, device, f"{workdir}/rloo_T{temperature:g}"),
    )
    trainer = RLOOTrainer(
        model=model,
        reward_funcs=log_p_reward(base, tokenizer),
        args=config,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=tokenizer,
        peft_config=lora_config(settings["lora_r"]),
        callbacks=[_Budget(start, budget)],
    )
    trainer.train()
    seconds = time.perf_counter() - start
    keys = ("step", "loss", "reward", "kl")
    logged = [{k: e[k] for k in keys if k in e} for e in trainer.state.log_history if "loss" in e]
    return trainer.model.eval(), seconds, trainer.state.global_step, logged
