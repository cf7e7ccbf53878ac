# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Shipping a tempered adapter: the folder uploaded to the Hub (adapter, config, card, plot) and the upload itself."""

from __future__ import annotations

import contextlib
import copy
import os
import string
from importlib import resources
from typing import Any

import torch

from .config import SequenceTemperatureConfig
from .generation.custom_generate import write_custom_generate
from .likelihood import AutoregressiveScorer
from .measure import score_dataset, temperature_report

CARD_NAME = "README.md"
PLOT_NAME = "seqtemp_loglik.png"
ROW_NAMES = {
    "base": "base model",
    "myopic": "myopic baseline (token temperature T)",
    "tempered": "tempered (this adapter)",
}


def _is_peft_model(model) -> bool:
    try:
        from peft import PeftModel
    except ImportError:
        return False
    return isinstance(model, PeftModel)


# ---------------------------------------------------------------------------------------------------- measuring
def measure_held_out(
    model,
    held_out_dataset,
    target_temperature: float,
    base_model=None,
    tokenizer=None,
    scorer=None,
    batch_size: int = 16,
    max_length: int = 4096,
) -> tuple[dict[str, dict[str, float]], dict[str, torch.Tensor]]:
    """Scores held-out sequences under the base model, the myopic baseline and the tempered model.

    The base model is `model` with its adapter disabled (a `PeftModel`) or `base_model` (full fine-tuning). The
    myopic baseline is the base model with every next-token distribution tempered (`token_temperature=T`).

    Args:
        model: the tempered model (`PeftModel` or a fully fine-tuned model).
        held_out_dataset ([`~datasets.Dataset`]): sequences never trained on (see [`score_dataset`] for layouts).
        target_temperature (`float`): T, also the token temperature of the myopic baseline.
        base_model (*optional*): the base model; required when `model` is not a `PeftModel`.
        tokenizer (*optional*): needed for text datasets.
        scorer ([`AutoregressiveScorer`], *optional*): the exact AR scorer by default.
        batch_size (`int`, *optional*, defaults to 16), max_length (`int`, *optional*, defaults to 4096): as in
            [`score_dataset`].

    Returns:
        `(reports, logps)`: `reports[name]` is [`temperature_report`] against the base model for `name` in
        `("base", "myopic", "tempered")`; `logps` holds the per-sequence log-likelihoods and `"lengths"`.

    Example:
    ```python
    >>> reports, logps = measure_held_out(peft_model, held_out, 0.5)  # doctest: +SKIP
    >>> reports["tempered"]["t_eff"]  # doctest: +SKIP
    ```
    """
    scorer = scorer if scorer is not None else AutoregressiveScorer()
    if not isinstance(scorer, AutoregressiveScorer):
        raise TypeError(
            f"`scorer` must be an AutoregressiveScorer (the myopic baseline is token temperature on an "
            f"autoregressive model), got {type(scorer).__name__}."
        )
    if _is_peft_model(model):
        base_context = model.disable_adapter()
        base = model
    elif base_model is not None and not isinstance(base_model, (str, os.PathLike)):
        base_context, base = contextlib.nullcontext(), base_model
    else:
        raise ValueError(
            "`base_model` must be the base model object when the tempered model is not a PeftModel (full "
            f"fine-tuning), got {base_model!r}: pass the model before training."
        )
    kwargs = {"tokenizer": tokenizer, "batch_size": batch_size, "max_length": max_length}
    myopic_scorer = AutoregressiveScorer(token_temperature=target_temperature)
    with base_context:
        base_logps, lengths = score_dataset(base, held_out_dataset, scorer, desc="Scoring base", **kwargs)
        myopic_logps, _ = score_dataset(base, held_out_dataset, myopic_scorer, desc="Scoring myopic", **kwargs)
    tempered_logps, _ = score_dataset(model, held_out_dataset, scorer, desc="Scoring tempered", **kwargs)
    logps = {"base": base_logps, "myopic": myopic_logps, "tempered": tempered_logps, "lengths": lengths}
    reports = {name: temperature_report(base_logps, logps[name], lengths) for name in ROW_NAMES}
    return reports, logps


def plot_log_likelihoods(
    logps: dict[str, torch.Tensor], reports: dict[str, dict[str, float]], target_temperature: float, path: str
) -> str:
    """Scatter plot of log p (base) against log q over held-out sequences, with the fitted slope 1/T_eff.

    T_eff (Eq. 17) is the least-squares slope of centred log p on centred log q, so the fitted line goes through
    the centroid with slope 1/T_eff in the (log p, log q) plane; the dashed line has the target slope 1/T.

    Example:
    ```python
    >>> plot_log_likelihoods(logps, reports, 0.5, "seqtemp_loglik.png")  # doctest: +SKIP
    ```
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = logps["base"].double()
    figure, axes = plt.subplots(figsize=(5.5, 4.5), dpi=100)
    span = torch.linspace(base.min().item(), base.max().item(), 2, dtype=torch.float64)
    styles = {"myopic": ("tab:orange", "myopic (token T)"), "tempered": ("tab:blue", "tempered adapter")}
    for name, (colour, label) in styles.items():
        values = logps[name].double()
        t_eff = reports[name]["t_eff"]
        axes.scatter(base, values, s=12, alpha=0.6, color=colour, label=f"{label}: T_eff = {t_eff:.3f}")
        line = values.mean() + (span - base.mean()) / t_eff
        axes.plot(span, line, color=colour, linewidth=1.5)
    target = logps["tempered"].double().mean() + (span - base.mean()) / target_temperature
    axes.plot(
        span,
        target,
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"target slope 1/T = {1 / target_temperature:.3g}",
    )
    axes.set_xlabel("log p(x)  (base model)")
    axes.set_ylabel("log q(x)")
    axes.set_title(f"Held-out sequences ({base.numel()}), target T = {target_temperature:g}")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


# ---------------------------------------------------------------------------------------------------- the card
def _card_template() -> string.Template:
    text = resources.files("hf_seqtemp").joinpath("templates", "seqtemp_card.md").read_text(encoding="utf-8")
    return string.Template(text)


def _metadata(config: SequenceTemperatureConfig, dataset_names) -> str:
    from huggingface_hub import ModelCardData

    tags = ["seqtemp", "lora", f"sequence-temperature-{config.target_temperature:g}", "hf_seqtemp"]
    data = ModelCardData(
        base_model=config.base_model_id,
        library_name="peft",
        tags=tags,
        datasets=list(dataset_names or []) or None,
        pipeline_tag="text-generation" if config.model_family == "causal_lm" else None,
    )
    return data.to_yaml()


def _evaluation_section(reports, num_sequences: int | None, dataset_names, plot_name: str | None) -> str:
    if not reports:
        return "No held-out evaluation was run when this card was written (no held-out dataset was given)."
    source = f" from {', '.join(f'`{d}`' for d in dataset_names)}" if dataset_names else ""
    lines = [
        (
            f"Measured on {num_sequences} held-out sequences{source}, never used for training. Every model is"
            " compared with the base model p on the same sequences."
        ),
        "",
        "| model | T_eff | Kendall τ | NLL / token |",
        "|---|---:|---:|---:|",
    ]
    for key, label in ROW_NAMES.items():
        r = reports[key]
        lines.append(f"| {label} | {r['t_eff']:.4f} | {r['kendall_tau']:.4f} | {r['nll_per_token']:.4f} |")
    if plot_name:
        lines += [
            "",
            f"![log p against log q over the held-out sequences]({plot_name})",
            "",
            (
                "Each point is one held-out sequence; the solid lines have the fitted slopes 1/T_eff and the dashed "
                "line the target slope 1/T."
            ),
        ]
    return "\n".join(lines)


def render_model_card(
    config: SequenceTemperatureConfig,
    reports: dict[str, dict[str, float]] | None = None,
    num_sequences: int | None = None,
    repo_id: str | None = None,
    dataset_names: list[str] | None = None,
    plot_name: str | None = PLOT_NAME,
) -> str:
    """Fills `hf_seqtemp/templates/seqtemp_card.md` (`string.Template`) with a config and measured reports.

    Args:
        config ([`SequenceTemperatureConfig`]): temperature, base model, loss and hyper-parameters.
        reports (`dict`, *optional*): [`measure_held_out`] reports; without them the card says nothing was measured.
        num_sequences (`int`, *optional*): how many held-out sequences the reports cover.
        repo_id (`str`, *optional*): the Hub repository, used in the usage snippet.
        dataset_names (`list` of `str`, *optional*): Hub dataset ids for the metadata.
        plot_name (`str`, *optional*): file name of the plot inside the repository.

    Example:
    ```python
    >>> from hf_seqtemp import SequenceTemperatureConfig
    >>> card = render_model_card(SequenceTemperatureConfig(0.5, base_model_id="my/base"), repo_id="me/tempered")
    >>> "sequence-temperature-0.5" in card and 'load_tempered("me/tempered")' in card
    True
    ```
    """
    base = config.base_model_id or "unknown base model"
    hyper = {"target sequence temperature T": f"{config.target_temperature:g}", "loss": f"`{config.loss_type}`"}
    hyper.update({key: value for key, value in sorted(config.training_hyperparameters.items()) if value is not None})
    values: dict[str, Any] = {
        "metadata": _metadata(config, dataset_names).strip(),
        "title": f"{base.split('/')[-1]} at sequence temperature T = {config.target_temperature:g}",
        "base_model": base,
        "base_model_url": f"https://huggingface.co/{base}" if config.base_model_id else "#",
        "temperature": f"{config.target_temperature:g}",
        "repo_id": repo_id or "<user>/<repo>",
        "tokenizer_id": config.base_model_id or repo_id or "<user>/<repo>",
        "training_table": "\n".join(f"| {key} | {value} |" for key, value in hyper.items()),
        "evaluation": _evaluation_section(reports, num_sequences, dataset_names, plot_name if reports else None),
    }
    return _card_template().substitute(values)


# ---------------------------------------------------------------------------------------------------- the folder
def _unpack(trainer_or_model, tokenizer, base_model):
    """Returns (model, config, tokenizer, held-out dataset, scorer, saver) for a trainer or a model."""
    from .trainer import SeqTempTrainer

    if isinstance(trainer_or_model, SeqTempTrainer):
        trainer = trainer_or_model
        base = base_model if base_model is not None else trainer._ref_model
        return (
            trainer.model,
            trainer.sequence_temperature_config(),
            tokenizer or trainer.processing_class,
            trainer.eval_dataset,
            trainer.family.scorer,
            base,
            lambda folder: trainer.save_model(folder, _internal_call=True),
        )
    model = trainer_or_model
    config = getattr(model, "seqtemp_config", None)
    if not isinstance(config, SequenceTemperatureConfig):
        raise TypeError(
            "`trainer_or_model` must be a SeqTempTrainer or a model carrying `seqtemp_config` (from `load_tempered`), "
            f"got a {type(model).__name__} without one: set `model.seqtemp_config = SequenceTemperatureConfig(...)`."
        )
    return model, config, tokenizer, None, None, base_model, lambda folder: model.save_pretrained(folder)


def save_for_hub(
    trainer_or_model,
    folder: str | os.PathLike,
    *,
    held_out_dataset=None,
    base_model=None,
    tokenizer=None,
    dataset_names: list[str] | None = None,
    repo_id: str | None = None,
    batch_size: int = 16,
) -> SequenceTemperatureConfig:
    """Writes the folder that `push_to_hub` uploads: adapter, `seqtemp_config.json`, `custom_generate/`, card, plot.

    With a held-out dataset (for a [`SeqTempTrainer`], its `eval_dataset` by default) the base model, the myopic
    baseline and the tempered model are scored on it ([`measure_held_out`]); the tempered model's T_eff, Kendall τ
    and NLL per token go into `seqtemp_config.json` and all three rows into the card's table and plot.

    Args:
        trainer_or_model ([`SeqTempTrainer`] or `PeftModel`): a trainer, or a model from [`load_tempered`] (any
            model with a `seqtemp_config` attribute and `save_pretrained`).
        folder (`str` or `os.PathLike`): where to write; created if needed.
        held_out_dataset ([`~datasets.Dataset`], *optional*): sequences to measure on.
        base_model (*optional*): the base model object (full fine-tuning), or a Hub id recorded as the base model.
        tokenizer (*optional*): saved in the folder and used to tokenise text datasets.
        dataset_names (`list` of `str`, *optional*): Hub dataset ids recorded in the card metadata.
        repo_id (`str`, *optional*): repository the folder is meant for (used in the usage snippet).
        batch_size (`int`, *optional*, defaults to 16): sequences per forward pass when measuring.

    Returns:
        [`SequenceTemperatureConfig`]: the config written, with the measured figures.

    Example:
    ```python
    >>> config = save_for_hub(trainer, "outputs/hub", dataset_names=["me/prompts"])  # doctest: +SKIP
    >>> config.eval_t_eff  # doctest: +SKIP
    ```
    """
    if isinstance(dataset_names, str):
        raise TypeError(f"`dataset_names` must be a list of Hub dataset ids, got the string {dataset_names!r}.")
    model, config, tokenizer, default_held_out, scorer, base, save = _unpack(trainer_or_model, tokenizer, base_model)
    config = copy.deepcopy(config)  # never change the model's own `seqtemp_config`
    held_out = held_out_dataset if held_out_dataset is not None else default_held_out
    os.makedirs(folder, exist_ok=True)
    save(str(folder))
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))
    if isinstance(base_model, (str, os.PathLike)):
        config.base_model_id = str(base_model)
    config.base_model_id = config.base_model_id or None  # a model built from a config has `_name_or_path == ""`
    reports, num_sequences, plot_name = None, None, None
    if held_out is not None:
        reports, logps = measure_held_out(
            model, held_out, config.target_temperature, base, tokenizer, scorer, batch_size=batch_size
        )
        num_sequences = int(logps["base"].numel())
        config.eval_t_eff = reports["tempered"]["t_eff"]
        config.eval_kendall_tau = reports["tempered"]["kendall_tau"]
        config.eval_nll = reports["tempered"]["nll_per_token"]
        plot_name = os.path.basename(
            plot_log_likelihoods(logps, reports, config.target_temperature, os.path.join(folder, PLOT_NAME))
        )
    config.save_pretrained(folder)
    write_custom_generate(folder)
    card = render_model_card(config, reports, num_sequences, repo_id, dataset_names, plot_name or PLOT_NAME)
    with open(os.path.join(folder, CARD_NAME), "w", encoding="utf-8") as handle:
        handle.write(card)
    return config


# ---------------------------------------------------------------------------------------------------- the upload
def push_to_hub(
    folder: str | os.PathLike,
    repo_id: str,
    private: bool | None = False,
    token: str | None = None,
    commit_message: str = "Upload sequence-tempered adapter with hf_seqtemp",
    revision: str | None = None,
):
    """Creates the repository (if needed) and uploads `folder`: the only network call of hf_seqtemp.

    Args:
        folder (`str` or `os.PathLike`): typically written by [`save_for_hub`].
        repo_id (`str`): `"user/name"`.
        private (`bool`, *optional*, defaults to `False`): visibility of a newly created repository.
        token (`str`, *optional*): Hub token with write access; the logged-in token by default.
        commit_message (`str`, *optional*): commit message.
        revision (`str`, *optional*): branch to commit to.

    Returns:
        `huggingface_hub.CommitInfo` of the upload.

    Example:
    ```python
    >>> push_to_hub("outputs/hub", "me/smollm2-seqtemp-0.5")  # doctest: +SKIP
    ```
    """
    if not isinstance(repo_id, str) or not repo_id.strip():
        raise ValueError(f"`repo_id` must be a Hub repository id such as 'user/name', got {repo_id!r}.")
    if not os.path.isdir(folder):
        raise ValueError(f"`folder` must be an existing folder (from `save_for_hub`), got {str(folder)!r}.")
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    return api.upload_folder(
        repo_id=repo_id, folder_path=str(folder), commit_message=commit_message, revision=revision
    )
