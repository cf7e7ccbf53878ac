# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Start a tempered adapter at the myopic baseline: token temperature T folded into the final norm.

For a decoder whose logits are `W · norm(h)` with a linear head and no bias after the final norm, scaling the
norm's affine parameters by 1/T divides every logit by T: the model becomes exactly the token-temperature-T
baseline of Section 3.4. A norm with an offset parameterisation, `x · (1 + w)` (Gemma 3), is folded as
`w' = (1 + w) / T - 1`. A model whose logits pass through a soft-capping `c · tanh(z / c)` after the head (Gemma 2)
has no exact fold, and is refused. Training that scale as a PEFT `modules_to_save` copy (next to LoRA) starts the sequence
temperature fit from the myopic solution instead of from T = 1; the saved folder stays a standard PEFT adapter.
"""

from __future__ import annotations

import copy

import torch

_FINAL_NORM_NAMES = ("norm", "final_layernorm", "final_layer_norm", "ln_f")


def final_norm_name(model: torch.nn.Module) -> str:
    """Dotted name of the decoder's final norm (e.g. `model.norm`), the last module before the LM head."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    for name in _FINAL_NORM_NAMES:
        module = getattr(decoder, name, None)
        if isinstance(module, torch.nn.Module):
            for full_name, candidate in model.named_modules():
                if candidate is module:
                    return full_name
    raise ValueError(
        f"`init_from_token_temperature=True` needs a decoder with a final norm named one of {_FINAL_NORM_NAMES}; "
        f"{type(model).__name__} has none. Set `init_from_token_temperature=False`."
    )


def with_trainable_final_norm(peft_config, model: torch.nn.Module):
    """A copy of `peft_config` whose `modules_to_save` also holds the final norm."""
    peft_config = copy.deepcopy(peft_config)
    name = final_norm_name(model)
    peft_config.modules_to_save = sorted(set(peft_config.modules_to_save or []) | {name})
    return peft_config


@torch.no_grad()
def fold_token_temperature(peft_model, temperature: float) -> None:
    """Scales the trainable copy of the final norm by `1 / temperature`, after checking that this divides the logits.

    Raises:
        ValueError: when the scaled model's logits are not the base logits divided by `temperature` (a norm with
            an offset parameterisation such as Gemma's `1 + weight`, or a bias after the norm).
    """
    base = peft_model.get_base_model()
    name = final_norm_name(base)
    wrapper = base.get_submodule(name)
    trainable = wrapper.modules_to_save[peft_model.active_adapter]
    probe = torch.arange(min(8, base.config.vocab_size), device=base.device)[None]
    with peft_model.disable_adapter():
        expected = peft_model(input_ids=probe).logits.float() / temperature
    capped = getattr(getattr(base.config, "get_text_config", lambda: base.config)(), "final_logit_softcapping", None)
    if capped:  # tanh(z / c) * c: no scale of the norm divides it by T, however close a probe looks
        raise ValueError(
            f"`init_from_token_temperature=True` cannot start {type(base).__name__} at token temperature exactly: its "
            f"logits are soft-capped after the head (`final_logit_softcapping={capped}`), which no scale of the "
            "norm divides by T. Set `init_from_token_temperature=False`."
        )
    saved = {key: value.clone() for key, value in trainable.state_dict().items()}
    # LoRA starts at zero (B = 0), so with the scaled norm the adapter model is exactly the myopic baseline
    for fold in (_scale, _scale_offset):
        trainable.load_state_dict(saved)
        fold(trainable, temperature)
        got = peft_model(input_ids=probe).logits.float()
        if torch.allclose(got, expected, rtol=1e-4, atol=1e-4 * expected.abs().max().item()):
            return
    trainable.load_state_dict(saved)
    raise ValueError(
        f"scaling `{name}` by 1/T (as `w / T` or, for an offset norm, `(1 + w) / T - 1`) does not divide the logits "
        f"of {type(base).__name__} by T (a bias after the norm, or a LoRA initialised away from zero); set "
        "`init_from_token_temperature=False`."
    )


def _scale(norm: torch.nn.Module, temperature: float) -> None:
    for parameter in norm.parameters():
        parameter.mul_(1.0 / temperature)


def _scale_offset(norm: torch.nn.Module, temperature: float) -> None:
    """`x · (1 + w)` becomes `x · (1 + w) / T`: `w' = (1 + w) / T - 1`."""
    for parameter in norm.parameters():
        parameter.add_(1.0).mul_(1.0 / temperature).sub_(1.0)
