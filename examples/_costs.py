# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""What the quick start's routes cost once, in one unit for every route: seconds on this machine and token-forwards
(token positions run through the model), counted per phase of the run by [`TokenCounter`]."""

from __future__ import annotations

import time

from hf_seqtemp.costs import ForwardCounter


class TokenCounter:
    """Token positions run through the transformer under `model` ([`~hf_seqtemp.costs.ForwardCounter`]: a whole
    forward, a prompt forwarded once for its completions, a sampling step) and the seconds spent, per named phase."""

    def __init__(self, model):
        self.forwards, self.totals = ForwardCounter(model), {}

    @property
    def tokens(self) -> int:
        return self.forwards.tokens

    def measure(self, phase: str):
        """A context that adds the seconds and token-forwards of its block to `totals[phase]`."""
        counter = self

        class _Phase:
            def __enter__(self):
                self.start, self.cpu, self.tokens = time.time(), time.process_time(), counter.tokens

            def __exit__(self, *exc):
                seconds, tokens, cpu = counter.totals.get(phase, (0.0, 0, 0.0))
                counter.totals[phase] = (
                    seconds + time.time() - self.start,
                    tokens + counter.tokens - self.tokens,
                    cpu + time.process_time() - self.cpu,  # below the wall time where other jobs share the cores
                )

        return _Phase()


def one_time_costs(args, reports: dict, totals: dict, prompts: int, train_prompts: int) -> dict[str, dict]:
    """What each route pays once, in seconds on this machine and token-forwards: nothing for token temperature T;
    for the best token temperature, its search on every new prompt (samples of p, scored under p, then at each token
    temperature the search tries: all of the measurement's scoring passes but the adapter's), per prompt of the
    `prompts` measured; for the adapter (and its SMC route), sampling the completions of the `train_prompts` and
    training. `totals` are [`TokenCounter`]'s."""
    trained = f"sampling {args.num_generations} completions of each of {train_prompts} prompts, {args.max_steps} steps"
    seconds, forwards = (sum(totals[f"training: {part}"][i] for part in ("sampling", "steps")) for i in (0, 1))
    adapter = {"seconds": seconds, "token_forwards": forwards, "per_prompt": False, "what": trained}
    once = {
        "myopic": {"seconds": 0.0, "token_forwards": 0, "per_prompt": False, "what": "none"},
        "tempered": adapter,
        "smc_adapter": {**adapter, "what": f"the adapter's: {trained}"},
    }
    tuned_once = reports.get("tuned_once")
    if tuned_once is not None:  # its search, timed where it ran, and the samples of p it was searched on
        sampling = totals["training: sampling"]
        drawn = tuned_once["tuning_prompts"] / max(1, train_prompts)  # its samples of p: a share of the training's
        tokens = sampling[1] / max(1, args.num_generations * train_prompts) * tuned_once["tuning_sequences"]
        once["tuned_once"] = {
            "seconds": tuned_once["search_seconds"] + drawn * sampling[0],
            "token_forwards": tuned_once["forward_passes"] * tokens + drawn * sampling[1],
            "per_prompt": False,
            "what": (
                f"{tuned_once['tuning_sequences']} samples of p of {tuned_once['tuning_prompts']} training prompts "
                f"scored once, then {tuned_once['scoring_passes'] - 1} steps of the search on their head inputs"
            ),
        }
    tuned = reports.get("tuned_myopic")
    if tuned is not None:
        passes = 2 + tuned["scoring_passes"]  # log p, token temperature T, the search's own passes
        share = passes / (passes + 1)  # of the measurement's passes over the same completions (+1: the adapter's)
        sampled, measured = totals["held-out samples"], totals["measurement"]
        once["tuned_myopic"] = {
            "seconds": (sampled[0] + share * measured[0]) / prompts,  # (wall seconds, token-forwards, CPU seconds)
            "token_forwards": (sampled[1] + share * measured[1]) / prompts,
            "per_prompt": True,
            "what": f"{args.held_out_generations} samples of p scored in {passes} passes",
        }
    return once
