# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Loading a tempered adapter back onto its base model."""

from __future__ import annotations

import contextlib
import os

import torch

from .config import CONFIG_NAME, SequenceTemperatureConfig, looks_like_local_path, resolve_hub_file
from .fingerprint import warn_if_base_differs
from .generation.adapters import register_tempered_adapter
from .generation.call_kwargs import reading_own_generation_config
from .generation.custom_generate import enable_seq_temperature_generate
from .manifest import file_sha256
from .models.default import DEFAULT_MODEL_ID, load_default_model
from .peft_compat import peft_deprecations_silenced
from .saved import check_files, legacy_version, recorded_files, whole_save


def adapter_name_for(temperature: float) -> str:
    """PEFT adapter name for a temperature: PEFT forbids '.' in names, so 0.25 becomes `t0_25`.

    Example:
    ```python
    >>> adapter_name_for(0.25)
    't0_25'
    ```
    """
    return "t" + f"{temperature:g}".replace(".", "_").replace("-", "m").replace("+", "")


SAFE_WEIGHTS = "adapter_model.safetensors"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
_CONVERT = (
    'python -c "import torch, safetensors.torch as st; '
    "st.save_file(torch.load('{folder}/{name}', weights_only=True), '{folder}/adapter_model.safetensors')\""
)


def check_adapter_weights(path: str) -> None:
    """Refuses an adapter file that cannot be read (cut short, overwritten) or holds non-finite values, naming it:
    PEFT would load the damage silently and the model would answer with NaN logits."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({error}): the file is damaged; save or download it again.") from None
    bad = sorted(
        name for name, tensor in tensors.items() if tensor.is_floating_point() and not tensor.isfinite().all()
    )
    if bad:
        raise ValueError(
            f"{path} holds non-finite values (in {bad[0]}{f' and {len(bad) - 1} more' if len(bad) > 1 else ''}): "
            "the file is damaged, or training diverged; save or download it again, or resume from a checkpoint."
        )


def adapter_folder(path: str | os.PathLike) -> str:
    """The local folder PEFT may read for the adapter at `path`: only once it holds `adapter_model.safetensors`.

    A local folder without it is refused before PEFT sees it (PEFT would fall back to a pickled
    `adapter_model.bin`, which runs code when unpickled); a Hub repo id is read through `hf_hub_download` of the
    safetensors file and `adapter_config.json` alone, and their snapshot folder is returned.

    Raises:
        ValueError: the folder holds pickled weights only (the message gives the conversion command).
        FileNotFoundError: no folder, no repository, or no adapter weights at all.
    """
    path = str(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, SAFE_WEIGHTS)):
            return path
        pickles = sorted(name for name in os.listdir(path) if name.endswith(PICKLE_SUFFIXES))
        if pickles:
            raise ValueError(
                f"{path}: adapter weights {pickles} are pickles, which hf_seqtemp never opens (unpickling runs "
                f"code). Convert them to safetensors if you trust the file: "
                f"{_CONVERT.format(folder=path, name=pickles[0])}"
            )
        raise FileNotFoundError(f"not found: no adapter weights ({SAFE_WEIGHTS}) in {path}.")
    weights = resolve_hub_file(path, SAFE_WEIGHTS)
    resolve_hub_file(path, "adapter_config.json")
    return os.path.dirname(weights)


def _resolve_base(config: SequenceTemperatureConfig, base_model, dtype):
    if base_model is not None and not isinstance(base_model, (str, os.PathLike)):
        return base_model
    base_id = str(base_model) if base_model is not None else config.base_model_id
    if base_id is None:
        raise ValueError("the adapter's seqtemp_config.json names no base model: pass `base_model=` explicitly.")
    if base_id == DEFAULT_MODEL_ID:
        return load_default_model(dtype=dtype)[0]
    if looks_like_local_path(base_id) and not os.path.isdir(base_id):
        raise FileNotFoundError(f"not found: the base model folder {base_id!r} (pass `base_model=` to load another).")
    from transformers import AutoModelForCausalLM

    if config.model_family != "causal_lm":
        raise ValueError(
            f"the adapter is for a {config.model_family} model: load the base model yourself and pass it as "
            "`base_model=`."
        )
    from .offline import named_when_offline

    with named_when_offline(base_id, "base model"):
        return AutoModelForCausalLM.from_pretrained(base_id, dtype=dtype)


def load_tempered(
    path: str | os.PathLike,
    base_model=None,
    adapter_name: str | None = None,
    dtype: torch.dtype = torch.float32,
):
    """Loads a tempered adapter onto its base model and attaches its [`SequenceTemperatureConfig`].

    The folder is a standard PEFT adapter folder plus `seqtemp_config.json`; only safetensors and JSON are read
    (pickled `.bin` / `.pt` / `.pkl` weights are refused before PEFT sees them, with the command that converts them).
    The base model's weights are compared with the fingerprint recorded in `seqtemp_config.json`
    ([`~hf_seqtemp.fingerprint.base_fingerprint`]): on another base (other weights, another dtype) a
    [`~hf_seqtemp.fingerprint.BaseModelMismatchWarning`] gives the size of the difference; on the same base
    nothing is said.
    What is loaded is one whole save ([`~hf_seqtemp.saved.whole_save`]): a save being published into the folder is
    waited for (or, when its process was killed, finished), and the adapter's files are checked against the SHA-256
    its `seqtemp_config.json` records (weights or `adapter_config.json` replaced, cut or damaged: refused by name; a
    card or tokenizer edited by hand: a warning); a base of another shape than the adapter's is named, not left to
    PEFT's size-mismatch traceback.
    Calling it again with another folder and the returned model as `base_model` loads a second adapter next to the
    first (named after its temperature), which `generate(seq_temperature=...)` can then choose between.

    Args:
        path (`str`): local folder or Hub repo id written by `SeqTempTrainer.save_model` / `push_to_hub`.
        base_model (`str` or `PreTrainedModel` or `PeftModel`, *optional*): the base model or its id; resolved from
            the config when omitted (the embedded default model is loaded offline).
        adapter_name (`str`, *optional*): PEFT adapter name; defaults to [`adapter_name_for`] the temperature.
        dtype (`torch.dtype`, *optional*, defaults to `torch.float32`): dtype of a base model loaded here.

    Returns:
        `peft.PeftModel` in eval mode, with `model.seqtemp_config` (the active adapter's config), every loaded
        adapter registered for `generate(seq_temperature=...)` routing, and `generate` accepting `seq_temperature`.

    Example:
    ```python
    >>> from hf_seqtemp import load_tempered
    >>> model = load_tempered("outputs/quickstart/adapter")  # doctest: +SKIP
    >>> model.seqtemp_config.target_temperature  # doctest: +SKIP
    0.5
    ```
    """
    from peft import PeftModel

    with _adapter_save(path) as (config, folder):
        name = adapter_name or adapter_name_for(config.target_temperature)
        source = f"the adapter {str(path)!r}"
        if isinstance(base_model, PeftModel):
            if name in base_model.peft_config:
                raise ValueError(f"an adapter named {name!r} is already loaded: pass another `adapter_name`.")
            warn_if_base_differs(config, base_model, source)
            with _shape_checked(path, config):
                base_model.load_adapter(folder, adapter_name=name)
            base_model.set_adapter(name)
            model = base_model
        else:
            base = _resolve_base(config, base_model, dtype)
            warn_if_base_differs(config, base, source)
            with peft_deprecations_silenced(), _shape_checked(path, config):
                model = PeftModel.from_pretrained(base, folder, adapter_name=name)
    register_tempered_adapter(model, config, name)
    enable_seq_temperature_generate(model)
    inner = model.get_base_model()
    if not getattr(inner.generate, "_reads_own_generation_config", False):  # once, however many adapters
        reading_own_generation_config(inner)
    model.seqtemp_config = config
    model.seqtemp_source = str(path)  # where it came from: `save_for_hub` takes the tokenizer and plot from there
    return model.eval()


ADAPTER_FILES = ("adapter_config.json", SAFE_WEIGHTS)


@contextlib.contextmanager
def _adapter_save(path):
    """The config of the save at `path` and a folder PEFT reads its adapter from, both of one whole save: for a
    local folder a private, checked copy ([`~hf_seqtemp.saved.whole_save`]); for a Hub id its download."""
    path = str(path) if isinstance(path, os.PathLike) else path
    if not os.path.isdir(path):
        config = SequenceTemperatureConfig.from_pretrained(path)
        folder = adapter_folder(path)
        recorded = recorded_files(folder)
        if recorded is not None:
            check_files(folder, recorded, path, names=set(ADAPTER_FILES))
        yield _checked(path, config, folder), folder
        return
    _check_adapter_folder(path)
    with whole_save(path, ADAPTER_FILES, shown=path) as private:
        try:
            config = SequenceTemperatureConfig.from_pretrained(private)
        except ValueError as error:  # named by the user's file, not the private copy's
            original = os.path.join(legacy_version(path) or path, CONFIG_NAME)
            raise ValueError(str(error).replace(os.path.join(private, CONFIG_NAME), original)) from None
        yield _checked(path, config, adapter_folder(private)), private


def _check_adapter_folder(path: str) -> None:
    """A local folder without an adapter is named (with the subfolder that holds one), pickles are refused."""
    source = legacy_version(path) or path
    if not os.path.isfile(os.path.join(source, "adapter_config.json")):
        inside = sorted(e for e in os.listdir(path) if os.path.isfile(os.path.join(path, e, "adapter_config.json")))
        hint = f"; the adapter is in its subfolder {inside[0]!r}: pass that folder" if inside else ""
        raise ValueError(f"`path` {str(path)!r} is a folder without `adapter_config.json`{hint}.")
    if not os.path.lexists(os.path.join(path, CONFIG_NAME)):
        raise FileNotFoundError(plain_peft_message(str(path)))
    adapter_folder(source)  # pickles only, or no weights: named before anything is read


def plain_peft_message(path: str) -> str:
    """Why a PEFT adapter folder without `seqtemp_config.json` is not loaded here, and how to use it."""
    return (
        f"`path` {path!r} is a plain PEFT adapter (adapter_config.json and weights) without a "
        f"SequenceTemperatureConfig ({CONFIG_NAME}): nothing says which sequence temperature it samples at, so "
        "`load_tempered` cannot route `generate(seq_temperature=...)` to it. Load it with PEFT: "
        f"`PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(BASE), {path!r})`. To use it here, measure "
        "the temperature it reaches against its base (`hf_seqtemp.measure.measure_held_out(peft_model, "
        "held_out_samples_of_the_base, target_temperature=T)` reports its T_eff), then attach it: "
        f"`SequenceTemperatureConfig(target_temperature=T, base_model_id=BASE).save_pretrained({path!r})` and call "
        "`load_tempered` again. (A folder saved by `SeqTempTrainer.save_model` whose save was killed before "
        f"{CONFIG_NAME} was written: save the model again.)"
    )


def _checked(path: str, config: SequenceTemperatureConfig, folder: str) -> SequenceTemperatureConfig:
    """Refuses weights that cannot be read or are not finite, and weights of another save than the config's."""
    check_adapter_weights(os.path.join(folder, SAFE_WEIGHTS))
    if config.weights_sha256 is not None:
        found = file_sha256(os.path.join(folder, SAFE_WEIGHTS))
        if found != config.weights_sha256:
            raise ValueError(
                f"the adapter {str(path)!r} mixes two saves: its {CONFIG_NAME} was written for weights with SHA-256 "
                f"{config.weights_sha256[:16]}…, but {SAFE_WEIGHTS} beside it has {found[:16]}… (one file was "
                "replaced without the other). Save the model again, or download it again."
            )
    return config


@contextlib.contextmanager
def _shape_checked(path, config: SequenceTemperatureConfig):
    """Turns PEFT's size-mismatch error (an adapter loaded onto a base of another shape) into one that says so."""
    try:
        yield
    except RuntimeError as error:
        if "size mismatch" not in str(error):
            raise
        first = next((line.strip() for line in str(error).splitlines() if "size mismatch" in line), str(error))
        raise ValueError(
            f"the adapter {str(path)!r} does not fit this base model: its weights have other shapes than the base's "
            f"layers ({first}). It was trained on {config.base_model_id or 'another base model'}: load it onto "
            "that model (`base_model=`)."
        ) from None
