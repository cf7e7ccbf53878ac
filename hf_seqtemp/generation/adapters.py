# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Finding, switching and rescaling the sequence-temperature LoRA adapters of a model at generation time.

`load_tempered` returns a `PeftModel`; `PeftModel.generate` forwards to the *inner* transformers model, which is the
`model` a `custom_generate` callable receives. [`register_tempered_adapter`] therefore records each adapter's
[`SequenceTemperatureConfig`] on the inner model (and on the wrapper), where [`tempered_adapters`] finds it from
either side.
"""

from __future__ import annotations

import contextlib
import itertools
import math
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
            measured `eval_t_eff` and optionally `scale_calibration`).
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


def _tuner_layers(model) -> list:
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [module for module in model.modules() if isinstance(module, BaseTunerLayer)]


@contextlib.contextmanager
def active_adapter(model, adapter_name: str | None) -> Iterator[None]:
    """Makes `adapter_name` the only active adapter (`None`: all adapters off, i.e. the base model `p`), then restores
    the previous active adapters, enabled flags and `requires_grad` flags."""
    layers = _tuner_layers(model)
    saved = [(layer, list(layer.active_adapters), layer.disable_adapters) for layer in layers]
    grads = [(p, p.requires_grad) for layer in layers for p in layer.parameters()]
    try:
        for layer in layers:
            if adapter_name is None:
                layer.enable_adapters(False)
            else:
                layer.enable_adapters(True)
                layer.set_adapter(adapter_name)
        yield
    finally:
        for layer, names, disabled in saved:
            layer.set_adapter(names)
            layer.enable_adapters(not disabled)
        for param, flag in grads:
            param.requires_grad_(flag)


def calibration_points(config: Any) -> list[tuple[float, float]]:
    """`(lora_scale, measured T_eff)` pairs of one adapter, sorted by scale.

    Scale 0 is the base model, whose effective temperature is 1 by definition; scale 1 is the adapter as trained,
    with `config.eval_t_eff` measured on held-out data; `config.scale_calibration` (optional, a `{scale: t_eff}`
    dict or a list of pairs) adds measurements at other scales.
    """
    points = {0.0: 1.0}
    if getattr(config, "eval_t_eff", None) is not None:
        points[1.0] = float(config.eval_t_eff)
    extra = getattr(config, "scale_calibration", None) or {}
    for scale, t_eff in extra.items() if isinstance(extra, dict) else extra:
        points[float(scale)] = float(t_eff)
    return sorted(points.items())


def interpolate_scale(points: list[tuple[float, float]], seq_temperature: float) -> float | None:
    """LoRA scale reaching `seq_temperature`, by linear interpolation of scale against `log T_eff`; `None` when no
    measured segment brackets it (no extrapolation).

    Example:
    ```python
    >>> round(interpolate_scale([(0.0, 1.0), (1.0, 0.25)], 0.5), 6)  # halfway in log T
    0.5
    ```
    """
    target = math.log(seq_temperature)
    for (s0, t0), (s1, t1) in itertools.pairwise(points):
        lo, hi = sorted((math.log(t0), math.log(t1)))
        if lo <= target <= hi and hi > lo:
            return s0 + (s1 - s0) * (target - math.log(t0)) / (math.log(t1) - math.log(t0))
    return None
