# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Every PEFT adapter type the scorer accepts scores what PEFT's own forward gives, on a left-padded batch whose
rows share prompts: LoRA, LoHa, LoKr and IA3 (the shared-prompt path), prefix tuning, prompt tuning and p-tuning
(prompt learning: its virtual tokens enter every forward pass, so the prompt is never shared, the logits are not cut
by position and the head is not chunked). The truth is PEFT's forward of each row alone, without padding.

Prefix tuning used to be scored on the shared-prompt path without its virtual keys and values (up to 4.9 nats off on
the real model); prompt tuning and p-tuning were cut at the wrong positions (`logits_to_keep` counts the virtual
tokens), 0.1-0.2 nats off here."""

import pytest
import torch
from peft import (
    IA3Config,
    LoHaConfig,
    LoKrConfig,
    LoraConfig,
    PrefixTuningConfig,
    PromptEncoderConfig,
    PromptTuningConfig,
    TaskType,
    get_peft_model,
)
from tiny_models import tiny_causal_lm

from hf_seqtemp import AutoregressiveScorer
from hf_seqtemp.likelihood.shared_prompt import can_share_prompts

VOCAB = 8
# (prompt, completion): the first two share their prompt, the rows have three lengths
ROWS = [([0, 3, 4], [5, 6]), ([0, 3, 4], [2, 1, 1, 2]), ([7, 3], [5, 6, 2])]
ATTENTION = ["q_proj", "v_proj"]
ADAPTERS = {
    "lora": lambda: LoraConfig(r=2, lora_alpha=4, target_modules=ATTENTION, init_lora_weights=False),
    "loha": lambda: LoHaConfig(r=2, target_modules=ATTENTION, init_weights=False),
    "lokr": lambda: LoKrConfig(r=2, target_modules=ATTENTION, init_weights=False),
    "ia3": lambda: IA3Config(target_modules=["k_proj", "v_proj", "down_proj"], feedforward_modules=["down_proj"]),
    "prefix_tuning": lambda: PrefixTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=3),
    "prompt_tuning": lambda: PromptTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=3),
    "p_tuning": lambda: PromptEncoderConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=3, encoder_hidden_size=8),
}
PROMPT_LEARNING = {"prefix_tuning", "prompt_tuning", "p_tuning"}


def _batch():
    length = max(len(p) + len(c) for p, c in ROWS) + 1  # every row left-padded, by 1 to 3 positions
    ids = torch.zeros(len(ROWS), length, dtype=torch.long)
    mask, completion = torch.zeros_like(ids), torch.zeros_like(ids, dtype=torch.bool)
    for i, (prompt, answer) in enumerate(ROWS):
        row = prompt + answer
        ids[i, length - len(row) :] = torch.tensor(row)
        mask[i, length - len(row) :] = 1
        completion[i, length - len(answer) :] = True
    return ids, mask, completion


def _peft_alone(model, prompt, answer) -> float:
    """PEFT's own forward of one row without padding: the sum of its completion's log-probabilities."""
    row = torch.tensor([prompt + answer])
    logps = model(input_ids=row).logits[0, -row.shape[1] :].float().log_softmax(-1)
    return sum(logps[t - 1, row[0, t]].item() for t in range(len(prompt), row.shape[1]))


@pytest.mark.parametrize("kind", list(ADAPTERS))
def test_every_peft_adapter_type_scores_what_peft_forward_gives(kind):
    torch.manual_seed(0)
    model = get_peft_model(tiny_causal_lm(VOCAB, seed=3), ADAPTERS[kind]()).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "ia3_" in name or "prompt_encoder" in name:
                parameter.add_(torch.randn_like(parameter) * 0.5)  # away from the identity, so that it matters
        truth = torch.tensor([_peft_alone(model, prompt, answer) for prompt, answer in ROWS])
        with model.disable_adapter():
            without = torch.tensor([_peft_alone(model, prompt, answer) for prompt, answer in ROWS])
        got = AutoregressiveScorer()(model, *_batch()).cpu()
    assert can_share_prompts(model) == (kind not in PROMPT_LEARNING)
    assert (truth - without).abs().max() > 1e-2  # the adapter changes the scores: the comparison can fail
    torch.testing.assert_close(got, truth, atol=2e-5, rtol=0)
