# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Quick start: temper the embedded SmolLM2-135M-Instruct to sequence temperature T = 0.5 and measure it.

1. sample a dataset of completions from the model itself (p is the distribution being tempered);
2. train a LoRA adapter with the likelihood-ratio loss (L_p + λ·NLL), started at the myopic solution (the final
   norm scaled by 1/T, which divides every logit by T) so that training learns the sequence-level correction;
3. save the adapter with its `seqtemp_config.json`, and write the folder `push_to_hub` would upload, whose model
   card holds T_eff, Kendall τ and NLL on the held-out split for the base model, the myopic baseline (token
   temperature 0.5) and the trained adapter (printed too);
4. load the adapter back with `load_tempered`.

Run with `make demo` (or `python examples/quickstart.py --help`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from peft import LoraConfig

from hf_seqtemp import (
    SeqTempConfig,
    SeqTempTrainer,
    load_default_model,
    load_tempered,
    sample_dataset,
    save_for_hub,
)

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
    parser.add_argument("--samples_per_prompt", type=int, default=8, help="completions sampled per prompt")
    parser.add_argument("--max_new_tokens", type=int, default=10, help="longest sampled completion")
    parser.add_argument("--max_steps", type=int, default=40, help="optimisation steps")
    parser.add_argument("--batch_size", type=int, default=16, help="sequences per step")
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


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    start = time.time()
    model, tokenizer = load_default_model()

    # 1. self-sampled data, split by example into train / held-out
    data = sample_dataset(
        model,
        tokenizer,
        PROMPTS,
        num_samples=args.samples_per_prompt,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        system_prompt="Answer briefly.",
    )
    split = data.train_test_split(test_size=0.25, seed=args.seed)
    train, held_out = split["train"], split["test"]
    print(
        f"sampled {len(data)} completions ({len(train)} train / {len(held_out)} held-out), "
        f"e.g. {data[0]['prompt']!r} -> {data[0]['completion']!r}"
    )

    # 2. train the adapter
    config = SeqTempConfig(
        output_dir=args.output_dir,
        target_temperature=args.temperature,
        loss_type="ratio",
        nll_weight=args.nll_weight,
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
    trainer.train()
    trainer.evaluate()

    # 3. save the adapter; write the folder `push_to_hub` would upload, with its card measured on the held-out
    #    split: base model, myopic baseline (token temperature T) and the adapter
    adapter_dir, hub_dir = f"{args.output_dir}/adapter", f"{args.output_dir}/hub"
    trainer.save_model(adapter_dir)
    measured = save_for_hub(trainer, hub_dir, held_out_dataset=held_out)
    card = Path(hub_dir, "README.md").read_text(encoding="utf-8")
    table = card[card.index("## Held-out evaluation") : card.index("Metrics (paper Section 5.1)")].strip()
    print(f"\nTarget sequence temperature T = {args.temperature:g}.\n{table}")

    # 4. reload with `load_tempered` and check it is the trained model
    reloaded = load_tempered(adapter_dir)
    probe = torch.tensor([held_out[0]["input_ids"]])
    with torch.no_grad():
        gap = (reloaded(input_ids=probe).logits - trainer.model(input_ids=probe).logits).abs().max().item()
    print(
        f"\nadapter: {adapter_dir} (seqtemp_config.json T = {reloaded.seqtemp_config.target_temperature:g}); "
        f"hub folder with card and plot: {hub_dir} (measured T_eff = {measured.eval_t_eff:.4f}); "
        f"reloaded max |Δ logit| = {gap:.2e}"
    )
    print(f"wall time: {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
