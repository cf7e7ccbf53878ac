# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Two processes compute what one process computes: fresh samples drawn independently on each rank (and from p),
prompt-only sampling divided across ranks, every per-group normaliser over the whole group when a group is split
across ranks, and evaluation figures over each example once. One launch runs every check
(`distributed_exactness.py`), to keep the suite fast."""

import json
import math
import sys
from pathlib import Path

import pytest
import torch
from conditional_toy import PROMPTS, completion_logps, enumerate_completions
from distribution_checks import cell_counts, chi_square_pvalue
from launching import free_port, run_ranks
from tiny_models import conditional_lm

STEPS = 100


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    output = tmp_path_factory.mktemp("distributed")
    torchrun = Path(sys.executable).with_name("torchrun")
    script = Path(__file__).with_name("distributed_exactness.py")
    command = [
        str(torchrun),
        "--nproc_per_node",
        "2",
        "--master_port",
        free_port(),
        str(script),
        str(output),
        str(STEPS),
    ]
    run_ranks(command, timeout=300)
    return [json.loads((output / f"rank{r}.json").read_text()) for r in range(2)]


def _exact_p() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every completion of the prompts "x", "y", "z", their prompt index and exact log p(x | c)."""
    ids, groups = enumerate_completions(4, 3, PROMPTS[1:])
    return ids, groups, completion_logps(conditional_lm(4), ids, 2)


def test_fresh_samples_of_one_group_are_independent_draws_of_p_on_the_two_ranks(ranks):
    """Per-device batch 1, `num_generations=2`: each step's group is one completion per rank. With one shared
    random stream (as before) both ranks drew the same completion at every step, so the pair loss and its gradient
    were exactly 0."""
    steps = [dict(zip(("step", "rows", "groups"), s)) for s in ranks[0]["fresh"]["seen"]]
    other = [dict(zip(("step", "rows", "groups"), s)) for s in ranks[1]["fresh"]["seen"]]
    assert [s["step"] for s in steps] == [s["step"] for s in other] == list(range(STEPS))
    pairs = [(a["rows"][0], b["rows"][0]) for a, b in zip(steps, other)]
    assert all(a["groups"] == b["groups"] for a, b in zip(steps, other))  # one prompt group per global batch
    assert all(x[:2] == y[:2] for x, y in pairs)
    # identical pairs happen only as often as two independent draws of p(.|c) collide
    ids, groups, ref = _exact_p()
    collision = [(2 * ref[groups == g]).exp().sum().item() for g in range(3)]  # sum_x p(x|c)^2
    chances = [collision[x[1] - 1] for x, _ in pairs]
    expected, spread = sum(chances), math.sqrt(sum(q * (1 - q) for q in chances))
    identical = sum(x == y for x, y in pairs)
    assert identical <= expected + 4 * spread + 1, (identical, expected, spread)
    # the pooled draws are samples of p: chi-square over every (prompt, completion) cell
    drawn = torch.tensor([row for pair in pairs for row in pair])
    counts = cell_counts(drawn, ids)
    per_prompt = torch.tensor([float((drawn[:, 1] == g + 1).sum()) for g in range(3)])
    _, p_value, _ = chi_square_pvalue(counts, ref.exp() * per_prompt[groups])
    assert p_value > 1e-3, p_value
    # every step with two different completions trains (logged steps count from 1)
    norms = ranks[0]["fresh"]["grad_norms"]
    differing = [s for s, (x, y) in enumerate(pairs) if x != y]
    assert len(differing) > STEPS // 2
    assert all(norms[str(s + 1)] > 0 for s in differing)


def test_prompt_only_sampling_is_divided_across_ranks_and_draws_what_one_process_draws(ranks):
    """3 prompts × 5 completions in chunks of 4: the ranks draw disjoint chunks, and the gathered dataset equals the
    one a single process draws (each chunk has its own seeded stream)."""
    sizes = [r["fresh"]["divided_chunk_sizes"] for r in ranks]
    assert sum(map(sum, sizes)) == 15 and all(0 < sum(s) < 15 for s in sizes), sizes
    assert all(r["fresh"]["divided_equals_alone"] for r in ranks)


@pytest.mark.parametrize("loss_type", ["ssts", "ratio"])
def test_a_group_split_across_ranks_gives_the_one_process_loss_and_gradient(ranks, loss_type):
    """Group 0 held 2 + 1 and group 1 held 1 + 1 by the ranks, completions of 3 and 2 tokens. SSTS self-normalised
    within each rank's share before (loss/ssts became the NLL for a share of one); the NLL term was a mean of the
    ranks' token means instead of the token mean of the batch."""
    for rank in ranks:
        split = rank["split"][loss_type]
        assert split["loss"] == pytest.approx(split["loss_alone"], rel=1e-5)
        assert split["grad_error"] <= 1e-5 * split["grad_scale"], split


def test_evaluation_on_two_ranks_counts_each_example_once(ranks):
    """7 eval rows at 2 per device: accelerate pads the last global batch with a repeated row, which counted twice
    before. T_eff and NLL equal the one-process figures up to float32 rounding, τ exactly."""
    for rank in ranks:
        (t_eff, tau, nll), (t_alone, tau_alone, nll_alone) = rank["eval"]["logged"], rank["eval"]["alone"]
        assert t_eff == pytest.approx(t_alone, rel=1e-5)
        assert nll == pytest.approx(nll_alone, rel=1e-5)
        assert tau == tau_alone


def test_smc_distillation_on_two_ranks_trains_what_one_process_trains(ranks, tmp_path):
    """Each prompt's 4 SMC particles (adapter proposal, refreshed every step) are split 2 + 2 across the ranks. Both
    ranks draw the prompt's particles from the stream of (seed, generation, prompt), so together they hold the
    particles one process draws; the weights are normalised over the gathered prompt; the adapter after 6 steps is
    the one-process adapter."""
    sys.path.insert(0, str(Path(__file__).parent))
    import distributed_exactness

    alone = distributed_exactness.smc_distill_run(
        str(tmp_path), distributed_exactness.SMC_STEPS, per_device=4, ddp_backend=None
    )
    first, second = (r["smc_distill"] for r in ranks)
    assert len(alone["seen"]) == len(first["seen"]) == len(second["seen"]) == distributed_exactness.SMC_STEPS
    for one, a, b in zip(alone["seen"], first["seen"], second["seen"]):
        assert one[0] == a[0] == b[0]
        assert one[1] == a[1] + b[1] and one[2] == a[2] + b[2]  # the same particles of the same prompt
        assert one[3] == pytest.approx(a[3] + b[3], rel=1e-6)  # and their weights
    assert len(set(map(tuple, alone["seen"][0][1]))) > 1  # the particles differ: a real weighted set
    assert alone["losses"] == pytest.approx(first["losses"], rel=1e-4)
    assert first["adapter"].keys() == alone["adapter"].keys()
    for name, values in alone["adapter"].items():
        torch.testing.assert_close(torch.tensor(first["adapter"][name]), torch.tensor(values), rtol=1e-4, atol=1e-6)
        assert first["adapter"][name] == second["adapter"][name]


def test_a_checkpoint_of_two_ranks_is_not_resumed_by_one_process(ranks, tmp_path):
    """The SMC distillation run above saved a checkpoint on its two ranks (each wrote its `seqtemp_state_<rank>.json`,
    with its share of the particle pool). Resuming it in one process would draw another data order and other
    particles: refused by name, before any step."""
    sys.path.insert(0, str(Path(__file__).parent))
    import distributed_exactness

    output = Path(ranks[0]["output_dir"]) / "smc"
    checkpoint = output / f"checkpoint-{distributed_exactness.SMC_STEPS}"
    states = sorted(path.name for path in checkpoint.glob("seqtemp_state_*.json"))
    assert states == ["seqtemp_state_0.json", "seqtemp_state_1.json"]
    with pytest.raises(ValueError, match=r"written by 2 process\(es\) and this run has 1.*Resume on 2 process"):
        distributed_exactness.smc_distill_run(
            str(output), distributed_exactness.SMC_STEPS + 2, per_device=4, ddp_backend=None, resume=str(checkpoint)
        )
