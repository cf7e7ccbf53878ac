# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The default-run smoke test on the embedded SmolLM2: a prompt-only dataset, text or conversational, trains end to
end (completions sampled from the reference, scored once, grouped per prompt, within-prompt figures logged)."""

import pytest
import torch
from configs import quiet_config
from datasets import Dataset
from peft import LoraConfig

from hf_seqtemp import SeqTempTrainer, load_default_model


@pytest.mark.parametrize("conversational", [False, True])
def test_prompt_only_dataset_trains_on_the_embedded_model(tmp_path, conversational):
    torch.manual_seed(0)
    model, tokenizer = load_default_model()
    prompts = ["Name a colour.", "Name a fruit."]
    if conversational:
        prompts = [[{"role": "user", "content": p}] for p in prompts]
    args = quiet_config(
        output_dir=str(tmp_path),
        target_temperature=0.5,
        num_generations=2,
        max_completion_length=3,
        per_device_train_batch_size=4,
        max_steps=1,
        logging_steps=1,
    )
    trainer = SeqTempTrainer(
        model,
        args,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=tokenizer,
        peft_config=LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM"),
    )
    data = trainer.train_dataset
    assert len(data) == 4 and len(set(data["group_id"])) == 2  # 2 completions sampled per prompt, 2 groups
    first = tokenizer.decode(data[0]["input_ids"])
    assert ("<|im_start|>user" in first) == conversational  # chat template for conversational prompts only (TRL)
    with torch.no_grad(), trainer.model.disable_adapter():  # the stored reference is p of the stored tokens
        row = data[0]
        ids = torch.tensor([row["input_ids"]])
        logps = trainer.model(input_ids=ids).logits[0, :-1].float().log_softmax(-1)
        token = logps.gather(-1, ids[0, 1:, None]).squeeze(-1)
        expected = token[torch.tensor(row["completion_mask"][1:], dtype=torch.bool)].sum().item()
    assert row["ref_logps"] == pytest.approx(expected, abs=1e-3)
    trainer.train()
    logged = next(e for e in trainer.state.log_history if "groups/pairs" in e)
    assert logged["groups/pairs"] == 2 and logged["temp/prompts"] == 2
