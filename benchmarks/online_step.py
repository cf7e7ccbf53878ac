# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""One online optimisation step of `SeqTempTrainer` (prompt-only data) against `trl.GRPOTrainer`, side by side.

Both trainers do the same work per step: take `prompts` prompts, sample `num_generations` completions of at most
`max_completion_length` tokens each (ancestral sampling: token temperature 1, no top-k / top-p, stop at EOS), score
them, compute a loss, backpropagate and update the same LoRA adapter with AdamW. GRPO gets a constant reward (its
advantages are then 0, but it still runs its full forward, loss and backward); `SeqTempTrainer` trains the ratio
loss towards T = 0.5 from the reference p (the adapter disabled). Same model (a deep copy each), `LoraConfig`,
prompts, chat template, batch (`per_device_train_batch_size = prompts × num_generations`), learning rate and seed.
Equal numerical settings: both train in float32 without gradient checkpointing (`bf16=False`,
`gradient_checkpointing=False` on both configs; TRL's `GRPOConfig` defaults to `bf16=True` and
`gradient_checkpointing=True`, and on a CPU without native bf16 the autocast makes a Linear several times slower, so
the defaults would handicap GRPO); the JSON states these settings (`settings.equal_settings`). GRPO samples fresh
completions every step (`steps_per_generation = 1`; `beta = 0`, so it runs no reference forward); so does
`SeqTempTrainer` when its config has `sample_every_steps`, and it reads the reference log p of its fresh
completions from the sampler's own logits (exact at token temperature 1), so its step is sampling plus one forward
and backward of the policy, as GRPO's. Without it, `SeqTempTrainer` samples every prompt's completions once, up front, while it
is built (and scores them under the reference there), so the same work is then: each side's build time spread over
the steps of one pass over the prompts, plus its step; the printout says which case was measured and also gives
the ratio of the steps alone (not the same work, reported without a target).

Each trainer runs its own, unmodified `train()` loop, in its own thread; a callback hands the turn over at the end
of every optimisation step, so the two alternate step by step (GRPO, ours, GRPO, ours, ...) and never run at once. A
step's time is one full iteration of the loop: from receiving the turn (the previous step's logging and the next
batch included) to the end of the optimiser step. The first `warmup` steps of each (including everything `train()`
sets up) are not counted; then `pairs` timed pairs give the paired ratios `ours / GRPO`; the last pair measures the
peak tensor memory of one step of each (`hf_seqtemp.costs.PeakMeter`, started when the turn is received and read at the
end of the step). Targets: time <= 0.85 (the reference costs no forward pass; GRPO's loss and its
reward / advantage bookkeeping are its own overhead) and memory <= 1.0.

Usage:
    python benchmarks/online_step.py [--quick] [--output outputs/bench/online_step.json] [--device cpu]
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
from transformers import TrainerCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import lora_config, parse_timing_args, pick_device, print_device, timing_parser, write_json

from hf_seqtemp.costs import MEMORY_METHOD, PeakMeter, format_summary, summarise, sync

SETTINGS = {
    "quick": {"prompts": 2, "num_generations": 4, "max_completion_length": 16, "warmup": 1, "pairs": 3},
    "full": {"prompts": 4, "num_generations": 8, "max_completion_length": 64, "warmup": 2, "pairs": 8},
}
PROMPTS = [
    "Tell me a long story about a dragon who learns to sing.",
    "Describe, step by step, how to bake bread at home.",
    "Write a letter to a friend about your summer holiday.",
    "Explain in detail how a bicycle works.",
    "Tell me a long story about a lighthouse keeper and a storm.",
    "Describe a busy market in the morning, with every sound and smell.",
    "Write a short essay about why people keep gardens.",
    "Explain how rain forms, for a curious child.",
]
TARGET = {"time": 0.85, "memory": 1.0}
EQUAL_SETTINGS = {"bf16": False, "fp16": False, "gradient_checkpointing": False}
"""Both configs: float32 training, no gradient checkpointing (GRPOConfig's own defaults are bf16 and checkpointing)."""
SIDES = ("grpo", "seqtemp")


def prompt_dataset(num: int, conversational: bool):
    """`num` prompts (cycling through `PROMPTS`), as TRL's prompt-only format: plain strings or user messages."""
    from datasets import Dataset

    texts = [PROMPTS[i % len(PROMPTS)] for i in range(num)]
    prompts = [[{"role": "user", "content": t}] for t in texts] if conversational else texts
    return Dataset.from_dict({"prompt": prompts})


def _shared_args(settings: dict, device, max_steps: int) -> dict:
    """Training arguments both configs get, so that the only difference is the trainer."""
    return {
        "per_device_train_batch_size": settings["prompts"] * settings["num_generations"],
        "gradient_accumulation_steps": 1,
        "num_generations": settings["num_generations"],
        "max_completion_length": settings["max_completion_length"],
        "per_device_eval_batch_size": settings["prompts"] * settings["num_generations"],
        "learning_rate": 1e-4,
        "max_steps": max_steps,
        "lr_scheduler_type": "constant",
        "logging_steps": 10**6,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": device.type == "cpu",
        "seed": 0,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
        **EQUAL_SETTINGS,
    }


def constant_reward(completions, **kwargs) -> list[float]:
    """GRPO's reward: 0 for every completion, so it trains nothing but still does all of a step's work."""
    return [0.0] * len(completions)


def build_grpo(model, tokenizer, dataset, settings: dict, device, max_steps: int, out_dir: str):
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=out_dir,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        beta=0.0,
        steps_per_generation=1,
        **_shared_args(settings, device, max_steps),
    )
    return GRPOTrainer(
        model=model,
        reward_funcs=constant_reward,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(),
    )


def samples_every_step() -> bool:
    """Whether `SeqTempTrainer` can draw fresh samples during training (`sample_every_steps`), as GRPO does;
    otherwise it samples every prompt's completions once, up front, when it is built."""
    from hf_seqtemp.trainer import SeqTempConfig

    return "sample_every_steps" in {f.name for f in dataclasses.fields(SeqTempConfig)}


def build_seqtemp(model, tokenizer, dataset, settings: dict, device, max_steps: int, out_dir: str):
    from hf_seqtemp.trainer import SeqTempConfig, SeqTempTrainer

    fresh = {"sample_every_steps": 1} if samples_every_step() else {}
    args = SeqTempConfig(
        output_dir=out_dir,
        target_temperature=0.5,
        loss_type="ratio",
        **fresh,
        **_shared_args(settings, device, max_steps),
    )
    return SeqTempTrainer(model, args, train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config())


class Alternation:
    """Turns in a fixed order (`grpo, seqtemp, grpo, seqtemp, ...`); a side waits until it holds the turn."""

    def __init__(self, sides: tuple[str, ...], rounds: int):
        self.order = [side for _ in range(rounds) for side in sides]
        self.position = 0
        self.error: BaseException | None = None
        self._cond = threading.Condition()

    def wait_turn(self, side: str) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.error is not None or self.order[self.position] == side)
            if self.error is not None:
                raise RuntimeError(f"{side}: stopped because the other side failed") from self.error

    def pass_turn(self) -> None:
        with self._cond:
            self.position = min(self.position + 1, len(self.order) - 1)
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        with self._cond:
            if self.error is None:  # the first failure is the cause; the other side then stops with a RuntimeError
                self.error = error
            self._cond.notify_all()


class StepClock(TrainerCallback):
    """Times (or measures the peak tensor memory of) each optimisation step of one side, then passes the turn."""

    def __init__(self, side: str, alternation: Alternation, kinds: list[str], device: torch.device):
        self.side, self.alternation, self.kinds, self.device = side, alternation, kinds, device
        self.step, self.seconds, self.peak_mib, self._start, self._meter = 0, [], [], 0.0, PeakMeter(device)

    def begin(self) -> None:
        """Waits for this side's turn, then starts the clock (or the memory measurement) of the next step."""
        self.alternation.wait_turn(self.side)
        if self.kinds[self.step] == "memory":
            self._meter.start()
        sync(self.device)
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        sync(self.device)
        seconds = time.perf_counter() - self._start
        kind = self.kinds[self.step]
        if kind == "time":
            self.seconds.append(seconds)
        elif kind == "memory":
            self.peak_mib.append(self._meter.stop())
        self.step += 1
        self.alternation.pass_turn()
        if self.step < len(self.kinds):
            self.begin()


def alternate(trainers: dict, kinds: list[str], device: torch.device) -> dict[str, StepClock]:
    """Runs every trainer's `train()` in its own thread, one optimisation step at a time, in turn."""
    alternation = Alternation(tuple(trainers), len(kinds))
    clocks = {side: StepClock(side, alternation, kinds, device) for side in trainers}
    for side, trainer in trainers.items():
        trainer.add_callback(clocks[side])

    def run(side):
        try:
            clocks[side].begin()
            trainers[side].train()
        except Exception as error:  # noqa: BLE001 (the other thread must not wait forever; re-raised by the caller)
            alternation.fail(error)

    threads = [threading.Thread(target=run, args=(side,), name=side) for side in trainers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if alternation.error is not None:
        raise RuntimeError("a trainer failed (the cause is chained below)") from alternation.error
    return clocks


def build_both(base, tokenizer, settings: dict, device, kinds: list[str], conversational: bool, out_dir: str):
    """Both trainers on the same prompts (one pass: `prompts` per step for `len(kinds)` steps) and their build time."""
    dataset = prompt_dataset(settings["prompts"] * len(kinds), conversational)
    builders = {"grpo": build_grpo, "seqtemp": build_seqtemp}
    trainers, setup_s = {}, {}
    for side in SIDES:
        torch.manual_seed(0)
        model = copy.deepcopy(base)
        start = time.perf_counter()
        trainers[side] = builders[side](model, tokenizer, dataset, settings, device, len(kinds), f"{out_dir}/{side}")
        setup_s[side] = time.perf_counter() - start
    return trainers, setup_s


def measure(settings: dict, device, dtype, conversational: bool) -> dict:
    """Steps of both trainers in turn; the paired ratios `seqtemp / grpo` of seconds per step and of peak memory.

    When `SeqTempTrainer` samples up front (no `sample_every_steps`), its sampling and reference scoring happen
    while it is built, so each side's build time is spread over the steps of the one pass over the prompts:
    the ratio of pair i is `(seqtemp_i + build_seqtemp / steps) / (grpo_i + build_grpo / steps)`.
    """
    from hf_seqtemp.models import load_default_model

    base, tokenizer = load_default_model(dtype=dtype, device=device)
    kinds = ["warmup"] * settings["warmup"] + ["time"] * settings["pairs"] + ["memory"]
    with tempfile.TemporaryDirectory() as out_dir:
        trainers, setup_s = build_both(base, tokenizer, settings, device, kinds, conversational, out_dir)
        del base
        clocks = alternate(trainers, kinds, device)
    fresh = samples_every_step()
    share = {side: 0.0 if fresh else setup_s[side] / len(kinds) for side in SIDES}
    pairs = list(zip(clocks["grpo"].seconds, clocks["seqtemp"].seconds))
    time_ratios = [(b + share["seqtemp"]) / (a + share["grpo"]) for a, b in pairs]
    memory_ratios = [b / a for a, b in zip(clocks["grpo"].peak_mib, clocks["seqtemp"].peak_mib)]
    result = {
        "sampling": "every step" if fresh else "up front",
        "setup_s": setup_s,
        "seconds": {side: clocks[side].seconds for side in SIDES},
        "peak_mib": {side: clocks[side].peak_mib for side in SIDES},
        "time": summarise(time_ratios, TARGET["time"]),
        "memory": summarise(memory_ratios, TARGET["memory"]),
    }
    if not fresh:  # what a step alone costs, without the sampling done at build time: not the same work
        result["step_only"] = summarise([b / a for a, b in pairs], None)
    return result


def main():
    parser = timing_parser(__doc__, "online_step", "2 prompts x 4 completions of <= 16 tokens, 3 pairs")
    parser.add_argument("--plain-prompts", action="store_true", help="plain-text prompts instead of chat messages")
    parser.add_argument("--pairs", type=int, default=None, help="timed pairs (default: 3 quick, 8 full)")
    args = parse_timing_args(parser)
    settings = dict(SETTINGS["quick" if args.quick else "full"])
    settings["pairs"] = args.pairs or settings["pairs"]
    device, dtype = pick_device(args.device), getattr(torch, args.dtype)
    info = print_device(device)
    print(
        f"model: SmolLM2-135M-Instruct ({args.dtype}), LoRA r=8 on q,k,v,o; {settings['prompts']} prompts x "
        f"{settings['num_generations']} completions of <= {settings['max_completion_length']} tokens per step; "
        f"{settings['warmup']} warm-up + {settings['pairs']} timed pairs + 1 memory pair"
    )
    result = measure(settings, device, dtype, conversational=not args.plain_prompts)
    print(
        f"SeqTempTrainer samples {result['sampling']}; build s: "
        + ", ".join(f"{side} {result['setup_s'][side]:.2f}" for side in SIDES)
    )
    print(f"{'side':<8} | {'s/step (each timed step)':<32} | peak MiB of a step")
    for side in SIDES:
        steps = " ".join(f"{s:.2f}" for s in result["seconds"][side])
        print(f"{side:<8} | {steps:<32} | {result['peak_mib'][side][0]:.1f}")
    label = "per step" if result["sampling"] == "every step" else "per step incl. build / steps"
    print(format_summary(f"seqtemp / grpo: seconds {label}", result["time"]))
    print(format_summary("seqtemp / grpo: peak tensor memory of a step", result["memory"]))
    summary = {"seqtemp_over_grpo_time": result["time"], "seqtemp_over_grpo_memory": result["memory"]}
    if "step_only" in result:
        print(format_summary("seqtemp / grpo: seconds of the step alone", result["step_only"]))
        summary["seqtemp_over_grpo_step_only_time"] = result["step_only"]
    settings.update(
        equal_settings={
            **EQUAL_SETTINGS,
            "model_dtype": args.dtype,
            "grpo_beta": 0.0,
            "grpo_steps_per_generation": 1,
            "seqtemp_sample_every_steps": 1,
        },
        dtype=args.dtype,
        conversational=not args.plain_prompts,
        memory_method=MEMORY_METHOD[device.type],
        seqtemp_sampling=result["sampling"],
        setup_s=result["setup_s"],
    )
    rows = [{"side": side, "seconds": result["seconds"][side], "peak_mib": result["peak_mib"][side]} for side in SIDES]
    write_json(args.output, "online_step", info, settings, rows, summary)


if __name__ == "__main__":
    main()
