# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The model card's plot: log q against log p of the held-out completions, centred within each prompt."""

from __future__ import annotations

import torch


def within_prompt_points(logps: dict[str, torch.Tensor], name: str):
    """`(codes, log p, log q)` of the plot: each sequence's prompt code, and its base and `name` log-likelihoods
    centred within its prompt (float64).

    Example:
    ```python
    >>> logps = {"base": torch.tensor([-1.0, -3.0, -10.0, -14.0]), "groups": [0, 0, 1, 1]}
    >>> within_prompt_points(logps, "base")[1].tolist()
    [1.0, -1.0, 2.0, -2.0]
    ```
    """
    from .groups import group_codes, group_means

    base, values = logps["base"].double(), logps[name].double()
    codes = group_codes(logps.get("groups"), base.numel(), device=base.device)
    return codes, base - group_means(base, codes), values - group_means(values, codes)


def plot_log_likelihoods(
    logps: dict[str, torch.Tensor], reports: dict[str, dict[str, float]], target_temperature: float, path: str
) -> str:
    """Log q against log p over held-out sequences, **centred within each prompt** and coloured by prompt: one panel
    for the myopic baseline, one for the tempered model, each with its fitted slope 1/T_eff and the target 1/T.

    T_eff (Eq. 17) is the least-squares slope of centred log p on centred log q, taken within prompts (each prompt
    has its own normaliser Z_T(c), which centring removes), so a model tempered exactly at T puts every point on the
    dashed line. `logps["groups"]` gives each sequence's prompt (one prompt when absent).

    Example:
    ```python
    >>> plot_log_likelihoods(logps, reports, 0.5, "seqtemp_loglik.png")  # doctest: +SKIP
    ```
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = logps["base"].double()
    codes, base_c, _ = within_prompt_points(logps, "base")
    from .audit.output import prompt_style

    span = torch.linspace(base_c.min().item(), base_c.max().item(), 2, dtype=torch.float64, device="cpu")
    figure, panels = plt.subplots(1, 2, figsize=(10, 4.4), dpi=100, sharex=True, sharey=True)
    for axes, (name, label) in zip(
        panels, (("myopic", "myopic baseline (token T)"), ("tempered", "tempered adapter"))
    ):
        t_eff, tau = reports[name]["t_eff"], reports[name]["kendall_tau"]
        model_c = within_prompt_points(logps, name)[2]
        for prompt in torch.unique(codes).tolist():  # a colour and marker per prompt (`prompt_style`)
            colour, marker = prompt_style(prompt)
            mask = codes == prompt
            axes.scatter(base_c[mask], model_c[mask], s=12, color=colour, marker=marker, alpha=0.8)
        axes.plot(
            span, span / t_eff, color="tab:red", linewidth=1.8, label=f"fitted slope 1/T_eff, T_eff = {t_eff:.3f}"
        )
        axes.plot(
            span,
            span / target_temperature,
            "k--",
            linewidth=1,
            label=f"target slope 1/T = {1 / target_temperature:.3g}",
        )
        axes.set(title=f"{label}: T_eff {t_eff:.3f}, τ {tau:.3f}", xlabel="log p(x|c) − prompt mean  (base model)")
        axes.legend(fontsize=8)
    panels[0].set_ylabel("log q(x|c) − prompt mean")
    prompts = int(codes.max().item()) + 1 if codes.numel() else 0
    figure.suptitle(
        f"{base.numel()} held-out completions of {prompts} prompt{'s' if prompts != 1 else ''} (one colour and "
        f"marker per prompt), centred within prompts; target T = {target_temperature:g}",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
