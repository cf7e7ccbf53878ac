# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Finding and switching the sequence-temperature adapters of a model at generation time.

`load_tempered` returns a `PeftModel`; `PeftModel.generate` forwards to the *inner* transformers model, which is the
`model` a `custom_generate` callable receives. [`register_tempered_adapter`] therefore records each adapter's
[`SequenceTemperatureConfig`] on the inner model (and on the wrapper), where [`tempered_adapters`] finds it from
either side.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_REGISTRY_ATTRIBUTE = "_seqtemp_adapters"


def _inner_model(model):
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if callable(get_base_model) else model


def register_tempered_adapter(model, config: Any, adapter_name: str = "default") -> None:
    """Records that adapter `adapter_name` of `model` was trained for `config.target_temperature`.

    Args:
        model: a `PeftModel` (or its inner transformers model) holding the adapter.
        config ([`SequenceTemperatureConfig`]): the adapter's config (`target_temperature`, `model_family`,
            measured `eval_t_eff`).
        adapter_name (`str`, *optional*, defaults to `"default"`): the PEFT adapter name.

    Example:
    ```python
    >>> from types import SimpleNamespace
    >>> import torch
    >>> holder = torch.nn.Linear(1, 1)
    >>> register_tempered_adapter(holder, SimpleNamespace(target_temperature=0.5), "cold")
    >>> list(tempered_adapters(holder))
    ['cold']
    ```
    """
    for target in {id(model): model, id(_inner_model(model)): _inner_model(model)}.values():
        registry = dict(getattr(target, _REGISTRY_ATTRIBUTE, None) or {})
        registry[adapter_name] = config
        setattr(target, _REGISTRY_ATTRIBUTE, registry)


def tempered_adapters(model) -> dict[str, Any]:
    """Adapter name → config for every sequence-temperature adapter known on `model` or its inner model.

    Also accepts a bare `seqtemp_config` attribute (as `load_tempered` attaches it): a single config is mapped to
    the active adapter, a dict is taken as `{adapter_name: config}`.
    """
    found: dict[str, Any] = {}
    for target in (model, _inner_model(model)):
        found.update(getattr(target, _REGISTRY_ATTRIBUTE, None) or {})
        config = getattr(target, "seqtemp_config", None)
        if isinstance(config, dict):
            found.update(config)
        elif config is not None:
            active = getattr(target, "active_adapter", None)
            name = active if isinstance(active, str) else "default"
            found.setdefault(name, config)
    return found


def _peft_modules(model) -> list:
    """Every module through which a PEFT adapter changes the forward pass: LoRA (and other tuner) layers and the
    `modules_to_save` / trainable-token copies (e.g. the folded 1/T final norm of `init_from_token_temperature`)."""
    from peft.tuners.tuners_utils import BaseTunerLayer
    from peft.utils.other import AuxiliaryTrainingWrapper

    return [module for module in model.modules() if isinstance(module, (BaseTunerLayer, AuxiliaryTrainingWrapper))]


def adapter_names_present(model) -> set[str]:
    """Names of the PEFT adapters whose weights `model` (or its inner model) still holds, in LoRA (or other tuner)
    layers or `modules_to_save` copies; empty after `merge_and_unload()`."""
    names: set[str] = set()
    for target in {id(model): model, id(_inner_model(model)): _inner_model(model)}.values():
        for module in _peft_modules(target):
            for attribute in (*getattr(module, "adapter_layer_names", ()), "modules_to_save"):
                layers = getattr(module, attribute, None)
                if hasattr(layers, "keys"):
                    names.update(layers.keys())
    return names


def active_peft_adapters(model) -> list[str]:
    """Names of the PEFT adapters that change `model`'s forward pass now (enabled modules only: nothing inside
    `with model.disable_adapter():`), LoRA layers and `modules_to_save` copies alike."""
    names: set[str] = set()
    for module in _peft_modules(model):
        if not module.disable_adapters:
            names.update(module.active_adapters)
    return sorted(names)


def _holds_adapter(module, adapter_name: str) -> bool:
    from peft.tuners.tuners_utils import BaseTunerLayer

    if isinstance(module, BaseTunerLayer):
        return adapter_name in module._get_available_adapters()
    return adapter_name in module._adapters


def _switch(module, adapter_name: str | None) -> None:
    """The one definition of "adapter off" (`None`) and "adapter `adapter_name` on" for a single PEFT module.

    Off: the module is disabled, so it computes the base module's output. On: the module is enabled with
    `adapter_name` as its only active adapter when it holds that adapter, and disabled otherwise (an adapter that
    did not touch this module leaves it at the base output, whatever other adapters hold there).
    """
    if adapter_name is None or not _holds_adapter(module, adapter_name):
        module.enable_adapters(False)
    else:
        module.enable_adapters(True)
        module.set_adapter(adapter_name)


@contextlib.contextmanager
def active_adapter(model, adapter_name: str | None) -> Iterator[None]:
    """Makes `adapter_name` the only active adapter (`None`: every adapter off, i.e. the base model `p`) in every
    PEFT module of `model`, LoRA layers and `modules_to_save` copies alike, then restores each module's active
    adapters, enabled flag and `requires_grad` flags.

    Works on a `PeftModel` and on the inner transformers model a `custom_generate` callable receives. Inside the
    context the model computes exactly what `PeftModel.set_adapter(adapter_name)` (or `disable_adapter()` for
    `None`) would make it compute.

    Example:
    ```python
    >>> import torch
    >>> from peft import LoraConfig, get_peft_model
    >>> from hf_seqtemp.models import tiny_causal_lm
    >>> base = tiny_causal_lm(hidden_size=8)
    >>> ids = torch.tensor([[1, 2, 3]])
    >>> reference = base(input_ids=ids).logits
    >>> model = get_peft_model(base, LoraConfig(target_modules=["q_proj"], modules_to_save=["model.norm"]))
    >>> with torch.no_grad():
    ...     _ = model.base_model.model.model.norm.modules_to_save["default"].weight.mul_(2.0)
    >>> torch.allclose(model(input_ids=ids).logits, reference)  # the adapter's norm copy doubles the logits
    False
    >>> with active_adapter(model, None):
    ...     torch.allclose(model(input_ids=ids).logits, reference)
    True
    ```
    """
    modules = _peft_modules(model)
    saved = [(module, list(module.active_adapters), module.disable_adapters) for module in modules]
    grads = [(p, p.requires_grad) for module in modules for p in module.parameters()]
    try:
        for module in modules:
            _switch(module, adapter_name)
        yield
    finally:
        for module, names, disabled in saved:
            module.set_adapter(names)
            module.enable_adapters(not disabled)
        for param, flag in grads:
            param.requires_grad_(flag)
