# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Turning a model's dropout off (`SeqTempConfig.disable_dropout`, TRL's name and default)."""

from __future__ import annotations

import torch


def disable_dropout(model: torch.nn.Module) -> None:
    """Sets every dropout probability of `model` to 0: its `torch.nn.Dropout` modules (as TRL's
    `disable_dropout_in_model` does), and the float dropout rates that modules and configs keep for
    `torch.nn.functional.dropout` (OPT's layers, the attention dropout of many models)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        for name, value in list(vars(module).items()):
            if ("dropout" in name or name.endswith("pdrop")) and isinstance(value, float):
                setattr(module, name, 0.0)
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "to_dict"):
            for name, value in config.to_dict().items():
                if ("dropout" in name or name.endswith("pdrop")) and isinstance(value, float) and value > 0:
                    setattr(config, name, 0.0)
