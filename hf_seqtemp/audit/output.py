# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What an audit writes: a Markdown table, a JSON file and a plot of log q against log p, coloured by prompt."""

from __future__ import annotations

import json
import math
from pathlib import Path

COLUMNS = (
    ("t_eff", "T_eff"),
    ("kendall_tau", "τ"),
    ("ref_nll_per_token", "NLL/token (p)"),
    ("policy_nll_per_token", "NLL/token (q)"),
    ("mean_log_kept_mass", "Σ log S"),
    ("rare_fraction", "rare under p"),
    ("distinct_fraction", "distinct"),
)


PROMPT_MARKERS = ("o", "s", "^", "D", "v", "P")


def prompt_style(index: int) -> tuple[str, str]:
    """`(colour, marker)` of the `index`-th prompt in a plot: the ten saturated colours of matplotlib's `tab10`, then
    the same colours with the next marker, so that up to 60 prompts are told apart (`tab20`'s pale halves are not).

    Example:
    ```python
    >>> prompt_style(0), prompt_style(11)
    (('C0', 'o'), ('C1', 's'))
    ```
    """
    return f"C{index % 10}", PROMPT_MARKERS[(index // 10) % len(PROMPT_MARKERS)]


def setting_name(setting: dict) -> str:
    """`temperature=0.7, top_p=0.9`, or `p (temperature=1)` for no processor.

    Example:
    ```python
    >>> setting_name({"top_p": 0.9}), setting_name({})
    ('top_p=0.9', 'p (temperature=1)')
    ```
    """
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in setting.items()) or (
        "p (temperature=1)"
    )


def _cell(value) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def markdown_table(result: dict) -> str:
    """One row per audited setting (and per tuned-myopic target) of [`audit_grid`] or [`audit_decoding`] output."""
    rows = result.get("rows", [result] if "summary" in result else [])
    lines = ["| setting | " + " | ".join(label for _, label in COLUMNS) + " |"]
    lines.append("|---|" + "---:|" * len(COLUMNS))
    for row in rows:
        cells = [_cell(row["summary"].get(key)) for key, _ in COLUMNS]
        lines.append(f"| {setting_name(row['setting'])} | " + " | ".join(cells) + " |")
    for tuned in result.get("tuned_myopic", []):
        if "summary" not in tuned:
            lines.append(f"| tuned myopic for T={tuned['target']:g}: not found ({tuned.get('error', '')}) |")
            continue
        cells = [_cell(tuned["summary"].get(key)) for key, _ in COLUMNS]
        name = f"tuned myopic for T={tuned['target']:g}: temperature={tuned['setting']['temperature']:.3g}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def plot_audit(result: dict, path: str | Path) -> str:
    """Log q against log p of every sampled answer, centred within its prompt and coloured by prompt: one panel per
    audited setting. A decoding that tempers whole answers at T puts a prompt's points on a line of slope 1/T."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result.get("rows", [result]) + result.get("tuned_myopic", []) if r.get("sequences")]
    if not rows:
        raise ValueError("`result` holds no per-sequence records to plot: audit with `keep_sequences=True`.")
    columns = min(4, len(rows))
    lines = math.ceil(len(rows) / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.6 * columns, 3.3 * lines), dpi=100, squeeze=False)
    for axis, row in zip(axes.flat, rows):
        by_prompt: dict[int, list] = {}
        for seq in row["sequences"]:
            if math.isfinite(seq["policy_logp"]):
                by_prompt.setdefault(seq["prompt"], []).append((seq["ref_logp"], seq["policy_logp"]))
        for prompt, points in by_prompt.items():
            mean_p = sum(p for p, _ in points) / len(points)
            mean_q = sum(q for _, q in points) / len(points)
            xs, ys = [p - mean_p for p, _ in points], [q - mean_q for _, q in points]
            colour, marker = prompt_style(prompt)
            axis.scatter(xs, ys, s=9, color=colour, marker=marker, alpha=0.8)
        summary = row["summary"]
        name = setting_name(row["setting"]) if "target" not in row else f"tuned for T={row['target']:g}"
        axis.set_title(f"{name}\nT_eff {_cell(summary['t_eff'])}, τ {_cell(summary['kendall_tau'])}", fontsize=8)
        axis.axline((0, 0), slope=1.0, color="k", linestyle="--", linewidth=0.8, label="log q = log p (p itself)")
        axis.tick_params(labelsize=7)
    for axis in list(axes.flat)[len(rows) :]:
        axis.axis("off")
    axes.flat[0].legend(fontsize=7, loc="upper left")  # the dashed line is the same in every panel
    figure.supxlabel("log p(x|c) − prompt mean", fontsize=9)
    figure.supylabel("log q(x|c) − prompt mean", fontsize=9)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return str(path)


def write_audit(result: dict, output_dir: str | Path, plot: bool = True) -> dict[str, str]:
    """Writes `audit.json`, `audit.md` and (with `plot`) `audit.png` into `output_dir`; returns their paths."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": str(folder / "audit.json"), "markdown": str(folder / "audit.md")}
    Path(paths["json"]).write_text(json.dumps(_json_safe(result), indent=1) + "\n", encoding="utf-8")
    Path(paths["markdown"]).write_text(markdown_table(result) + "\n", encoding="utf-8")
    if plot:
        paths["plot"] = plot_audit(result, folder / "audit.png")
    return paths
