# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Quick start: temper the embedded SmolLM2-135M-Instruct to sequence temperature T = 0.5 and measure it.

1. start from prompts only: 24 training prompts and 8 held-out prompts that training never sees;
2. train a LoRA adapter with the likelihood-ratio loss (L_p + λ·NLL): the trainer samples `num_generations`
   completions of every prompt from the model itself (p is the distribution being tempered, per prompt), starts
   the adapter at the myopic solution (the final norm scaled by 1/T, which divides every logit by T) and learns the
   sequence-level correction;
3. measure, on completions of the held-out prompts, the within-prompt T_eff, Kendall τ and NLL of the base model,
   the myopic baseline (token temperature T) and the adapter, print them with a plain-language verdict, and write
   the folder `push_to_hub` would upload (adapter, `seqtemp_config.json`, model card, log p vs log q plot);
4. load the adapter back with `load_tempered`.

Run with `make demo` (or `python examples/quickstart.py --help`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from datasets import Dataset
from peft import LoraConfig

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_default_model, load_tempered, save_for_hub
from hf_seqtemp.hub import ROW_NAMES, measure_held_out
from hf_seqtemp.measure import format_table, temperature_report

SYSTEM = "Answer briefly."
PROMPTS = [
    "Name a colour.",
    "Name an animal.",
    "Give me a number between 1 and 100.",
    "Name a fruit.",
    "Say hello in another language.",
    "Name a country in Europe.",
    "Write one word that rhymes with cat.",
    "Name a famous scientist.",
    "Give a one-word mood.",
    "Name a musical instrument.",
    "Name a city.",
    "Suggest a name for a dog.",
    "Name a vegetable.",
    "Name a sport.",
    "Pick a day of the week.",
    "Name a planet.",
    "Give an adjective for the sea.",
    "Name a tool.",
    "Name a drink.",
    "Name a flower.",
    "Name a board game.",
    "Name a programming language.",
    "Describe the sky in three words.",
    "Name a bird.",
    "Name something cold.",
    "Name a job.",
    "Name a piece of furniture.",
    "Give a synonym for happy.",
    "Name a river.",
    "Name a month.",
    "Name a shape.",
    "Name a metal.",
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--temperature", type=float, default=0.5, help="target sequence temperature T")
    parser.add_argument("--num_generations", type=int, default=8, help="completions sampled per prompt")
    parser.add_argument("--max_completion_length", type=int, default=10, help="longest sampled completion")
    parser.add_argument("--held_out_prompts", type=int, default=8, help="prompts kept out of training")
    parser.add_argument("--max_steps", type=int, default=40, help="optimisation steps")
    parser.add_argument("--batch_size", type=int, default=16, help="sequences per step (whole prompt groups)")
    parser.add_argument("--learning_rate", type=float, default=2e-4, help="LoRA learning rate")
    parser.add_argument("--nll_weight", type=float, default=0.1, help="λ for the NLL term against drift")
    parser.add_argument(
        "--no_token_temperature_init",
        action="store_true",
        help="start the adapter at the base model instead of at token temperature T",
    )
    parser.add_argument("--lora_r", type=int, default=16, help="LoRA rank")
    parser.add_argument("--output_dir", default="outputs/quickstart", help="where the adapter is saved")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def verdict(reports: dict, temperature: float) -> list[str]:
    """Plain-language reading of the within-prompt table, computed from it."""
    adapter, myopic = reports["tempered"], reports["myopic"]
    error, myopic_error = abs(adapter["t_eff"] / temperature - 1), abs(myopic["t_eff"] / temperature - 1)
    met = error <= 0.10 and adapter["kendall_tau"] >= 0.9
    lines = [
        (
            f"How to read it: a model tempered exactly at T has T_eff = {temperature:g} and Kendall τ = 1 (it keeps the "
            "base model's ranking of each prompt's completions); the base model has T_eff = 1."
        ),
        f"Target (T_eff within ±10 % of {temperature:g} and τ ≥ 0.9 on unseen prompts): "
        + ("met." if met else f"not met (T_eff off by {100 * error:.1f} %, τ {adapter['kendall_tau']:.3f})."),
        (
            f"Against the myopic baseline (token temperature {temperature:g}): T_eff off by {100 * error:.1f} % vs "
            f"{100 * myopic_error:.1f} % ({'closer' if error < myopic_error else 'not closer'}), τ "
            f"{adapter['kendall_tau']:.3f} vs {myopic['kendall_tau']:.3f} "
            f"({'better' if adapter['kendall_tau'] > myopic['kendall_tau'] else 'not better'}), NLL/token "
            f"{adapter['nll_per_token']:.3f} vs {myopic['nll_per_token']:.3f}."
        ),
    ]
    tuned = reports.get("tuned_myopic")
    if tuned is not None:  # the best token temperature: its T_eff is T, so the comparison is on τ and NLL
        lines.append(
            f"Against the tuned myopic baseline (token temperature {tuned['token_temperature']:.3g}, whose T_eff is "
            f"{tuned['t_eff']:.3f}): τ {adapter['kendall_tau']:.3f} vs {tuned['kendall_tau']:.3f} "
            f"({'better' if adapter['kendall_tau'] > tuned['kendall_tau'] else 'not better'}), NLL/token "
            f"{adapter['nll_per_token']:.3f} vs {tuned['nll_per_token']:.3f}."
        )
    return lines


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    start = time.time()
    model, tokenizer = load_default_model()

    # 1. prompts only, as conversations; the held-out prompts are never trained on
    conversations = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}] for p in PROMPTS]
    held_out = Dataset.from_dict({"prompt": conversations[: args.held_out_prompts]})
    train = Dataset.from_dict({"prompt": conversations[args.held_out_prompts :]})

    # 2. train the adapter; the trainer samples `num_generations` completions per prompt from p
    config = SeqTempConfig(
        output_dir=args.output_dir,
        target_temperature=args.temperature,
        loss_type="ratio",
        nll_weight=args.nll_weight,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=32,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        logging_steps=10,
        save_strategy="no",
        seed=args.seed,
        use_cpu=not torch.cuda.is_available(),
        init_from_token_temperature=not args.no_token_temperature_init,
    )
    lora = LoraConfig(
        r=args.lora_r, lora_alpha=2 * args.lora_r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    trainer = SeqTempTrainer(
        model, config, train_dataset=train, eval_dataset=held_out, processing_class=tokenizer, peft_config=lora
    )
    sample = trainer.train_dataset[0]
    completion = tokenizer.decode(sample["input_ids"][sample["completion_mask"].index(1) :])
    print(
        f"sampled {len(trainer.train_dataset)} train / {len(trainer.eval_dataset)} held-out completions "
        f"({args.num_generations} per prompt), e.g. {completion!r}"
    )
    print(
        "training: the logged temp/t_eff and temp/kendall_tau are within-prompt figures on the training batches; "
        "the table after training is measured on the held-out prompts"
    )
    trainer.train()

    # 3. measure on the held-out prompts' completions, within prompts, and write the Hub folder
    reports, logps = measure_held_out(trainer.model, trainer.eval_dataset, args.temperature, tokenizer=tokenizer)
    prompts = len(set(logps["groups"]))
    print(
        f"\nHeld-out: {len(logps['groups'])} completions of {prompts} prompts never seen in training; T_eff and τ "
        f"within prompts. Target T = {args.temperature:g}."
    )
    print(format_table({ROW_NAMES[name]: report for name, report in reports.items()}))
    print("\n".join(verdict(reports, args.temperature)))
    pooled = {
        name: temperature_report(logps["base"], logps[name], logps["lengths"]) for name in ("myopic", "tempered")
    }
    print(
        "(pooled over prompts instead, which mixes their normalisers: myopic T_eff "
        f"{pooled['myopic']['t_eff']:.4f} / τ {pooled['myopic']['kendall_tau']:.4f}, adapter "
        f"{pooled['tempered']['t_eff']:.4f} / τ {pooled['tempered']['kendall_tau']:.4f})"
    )
    adapter_dir, hub_dir = f"{args.output_dir}/adapter", f"{args.output_dir}/hub"
    trainer.save_model(adapter_dir)
    save_for_hub(trainer, hub_dir, held_out_dataset=trainer.eval_dataset)

    # 4. reload with `load_tempered` and check it is the trained model
    reloaded = load_tempered(adapter_dir)
    probe = torch.tensor([trainer.eval_dataset[0]["input_ids"]])
    with torch.no_grad():
        gap = (reloaded(input_ids=probe).logits - trainer.model(input_ids=probe).logits).abs().max().item()
    print(f"\nadapter: {adapter_dir} (reloaded with load_tempered, max |Δ logit| = {gap:.2e})")
    print(f"Hub folder: {hub_dir} (model card README.md, plot {Path(hub_dir, 'seqtemp_loglik.png')})")
    print(f"wall time: {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
