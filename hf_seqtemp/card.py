# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The model card of a tempered model: its plot, its text, and the files written next to the weights."""

from __future__ import annotations

import copy
import os
import string
from importlib import resources
from typing import Any

import torch

from .config import SequenceTemperatureConfig

CARD_NAME = "README.md"
PLOT_NAME = "seqtemp_loglik.png"
ROW_NAMES = {
    "base": "base model",
    "myopic": "myopic baseline (token temperature T)",
    "tempered": "tempered (this adapter)",
    "tuned_myopic": "tuned myopic (the token temperature whose T_eff is T)",
}
CARD_ORDER = ("base", "myopic", "tuned_myopic", "tempered")
"""The order of the card's rows: each baseline beside the other, then the adapter."""


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


NO_HELD_OUT = (
    "no held-out dataset was given (pass `eval_dataset` to the trainer, or `held_out_dataset` to `save_for_hub`)"
)


def _evaluation_section(reports, num_sequences, dataset_names, plot_name, source, reason, prompts=None) -> str:
    if not reports:
        reason = reason or NO_HELD_OUT
        return f"**Nothing was measured** for this card: {reason}, so it reports no T_eff, Kendall τ or NLL."
    if not {"base", "myopic", "tempered"} <= set(reports):  # figures recorded earlier, for the tempered model only
        r = reports["tempered"]
        return "\n".join(
            [
                (
                    f"Figures of this adapter from {source or 'an earlier evaluation'}; the base model and the "
                    "myopic baseline were not scored for this card."
                ),
                "",
                "| model | T_eff | Kendall τ | NLL / token |",
                "|---|---:|---:|---:|",
                (
                    f"| {ROW_NAMES['tempered']} | {_figure(r['t_eff'])} | {_figure(r['kendall_tau'])} | "
                    f"{_figure(r['nll_per_token'])} |"
                ),
            ]
        )
    data = f" from {', '.join(f'`{d}`' for d in dataset_names)}" if dataset_names else ""
    lines = [
        (
            f"Measured on {num_sequences} held-out sequences{data}, never used for training. Every model is"
            " compared with the base model p on the same sequences"
            + (f", within each of their {prompts} prompts." if prompts else ".")
        ),
        "",
        "| model | T_eff | Kendall τ | NLL / token |",
        "|---|---:|---:|---:|",
    ]
    for key in (key for key in CARD_ORDER if key in reports):
        r = reports[key]
        lines.append(f"| {ROW_NAMES[key]} | {r['t_eff']:.4f} | {r['kendall_tau']:.4f} | {r['nll_per_token']:.4f} |")
    if "token_temperature" in reports.get("tuned_myopic", {}):
        lines += [
            "",
            (
                f"The tuned myopic baseline samples every token at temperature "
                f"{reports['tuned_myopic']['token_temperature']:.3g}, found on these sequences so that its T_eff is "
                "T: the best a token temperature can do, so the adapter has to beat it on τ and NLL."
            ),
        ]
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


def _figure(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def render_model_card(
    config: SequenceTemperatureConfig,
    reports: dict[str, dict[str, float]] | None = None,
    num_sequences: int | None = None,
    repo_id: str | None = None,
    dataset_names: list[str] | None = None,
    plot_name: str | None = PLOT_NAME,
    source: str | None = None,
    reason: str | None = None,
) -> str:
    """Fills `hf_seqtemp/templates/seqtemp_card.md` (`string.Template`) with a config and measured reports.

    Args:
        config ([`SequenceTemperatureConfig`]): temperature, base model, loss and hyper-parameters.
        reports (`dict`, *optional*): [`measure_held_out`] reports (rows `"base"`, `"myopic"`, `"tempered"`), or
            only a `"tempered"` row of figures recorded earlier; without them the card says nothing was measured.
        num_sequences (`int`, *optional*): how many held-out sequences the reports cover.
        repo_id (`str`, *optional*): the Hub repository, used in the usage snippet.
        dataset_names (`list` of `str`, *optional*): Hub dataset ids for the metadata.
        plot_name (`str`, *optional*): file name of the plot inside the repository.
        source (`str`, *optional*): where a `"tempered"`-only row comes from, e.g. "the last `evaluate()`".
        reason (`str`, *optional*): why nothing was measured, when there are no reports; by default, that no
            held-out dataset was given.

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
        "evaluation": _evaluation_section(
            reports, num_sequences, dataset_names, plot_name if reports else None, source, reason, config.eval_prompts
        ),
    }
    return _card_template().substitute(values)


def write_card(
    folder: str | os.PathLike,
    config: SequenceTemperatureConfig,
    measurement: tuple[dict, dict] | None = None,
    *,
    repo_id: str | None = None,
    dataset_names: list[str] | None = None,
    source: str | None = None,
    reason: str | None = None,
) -> SequenceTemperatureConfig:
    """Writes `seqtemp_config.json`, the model card `README.md` and (with a measurement) the plot into `folder`.

    With `measurement` (what [`~hf_seqtemp.hub.measure_held_out`] returns) the tempered model's figures go into the
    config and all three rows into the card and the plot. Without it the card shows the figures the config
    already records (from `source`), or says plainly that nothing was measured. Each file is written once.

    Args:
        folder (`str` or `os.PathLike`): an existing folder (the saved model's).
        config ([`SequenceTemperatureConfig`]): not modified; a copy with the measured figures is written.
        measurement (`tuple`, *optional*): `(reports, logps)` from `measure_held_out`.
        repo_id (`str`, *optional*), dataset_names (`list` of `str`, *optional*): as in [`render_model_card`].
        source (`str`, *optional*): where the config's recorded figures come from, named in the card.
        reason (`str`, *optional*): why nothing was measured, when nothing was (see [`render_model_card`]).

    Returns:
        [`SequenceTemperatureConfig`]: the config written.

    Example:
    ```python
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = write_card(folder, SequenceTemperatureConfig(0.5, base_model_id="my/base"))
    ...     "Nothing was measured" in open(os.path.join(folder, CARD_NAME), encoding="utf-8").read()
    True
    ```
    """
    config = copy.deepcopy(config)
    config.base_model_id = config.base_model_id or None  # a model built from a config has `_name_or_path == ""`
    reports, num_sequences, plot_name = None, None, None
    if measurement is not None:
        reports, logps = measurement
        num_sequences = int(logps["base"].numel())
        config.eval_sequences = num_sequences
        config.eval_prompts = len(set(logps["groups"])) if "groups" in logps else None
        config.eval_t_eff = reports["tempered"]["t_eff"]
        config.eval_kendall_tau = reports["tempered"]["kendall_tau"]
        config.eval_nll = reports["tempered"]["nll_per_token"]
        path = plot_log_likelihoods(logps, reports, config.target_temperature, os.path.join(folder, PLOT_NAME))
        plot_name = os.path.basename(path)
    elif config.eval_t_eff is not None:
        figures = (config.eval_t_eff, config.eval_kendall_tau, config.eval_nll)
        reports = {"tempered": dict(zip(("t_eff", "kendall_tau", "nll_per_token"), figures))}
    config.save_pretrained(folder)
    card = render_model_card(config, reports, num_sequences, repo_id, dataset_names, plot_name, source, reason)
    with open(os.path.join(folder, CARD_NAME), "w", encoding="utf-8") as handle:
        handle.write(card)
    return config
