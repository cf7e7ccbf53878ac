# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Sequence-temperature training of masked/block diffusion LMs, against exact enumeration of every sequence."""

import itertools
import json
import os

import pytest
import torch
from datasets import Dataset
from peft import LoraConfig
from tiny_models import tiny_masked_lm
from trainer.test_trainer import _config as trainer_config

from hf_seqtemp import SeqTempTrainer
from hf_seqtemp.likelihood.block_diffusion import BlockDiffusionScorer
from hf_seqtemp.likelihood.elbo import diffusion_elbo_loss
from hf_seqtemp.likelihood.masked_diffusion import MaskedDiffusionScorer, order_logps
from hf_seqtemp.models.diffusion import BlockDiffusionWrapper, MaskedLMWrapper
from hf_seqtemp.trainer.families import _per_example_orders, order_seed

MASK, VOCAB, LENGTH, BLOCK = 4, 4, 3, 2  # tokens 0-3 and the mask; prompt token 0 + 3 completion tokens
SEQUENCES = torch.tensor([[0, *c] for c in itertools.product(range(VOCAB), repeat=LENGTH)])
COMPLETION = torch.tensor([[False] + [True] * LENGTH] * len(SEQUENCES))


def tiny_bert(seed: int = 0):
    """Large initial weights, so conditionals depend strongly on context and unmasking orders really differ."""
    return tiny_masked_lm(VOCAB + 1, seed=seed, init_range=0.5, max_positions=8)


@torch.no_grad()
def exact_logps(adapter) -> torch.Tensor:
    """Exact log p(x) of all 64 completions by the block DP (validated against brute force in tests/likelihood)."""
    return BlockDiffusionScorer(BLOCK)(adapter.eval(), SEQUENCES, None, COMPLETION).double()


def tempered_kl(ref_logps: torch.Tensor, model_logps: torch.Tensor, temperature: float) -> float:
    """KL(p_T || q_T) over the enumerated set. Both are normalised explicitly over it: the model also gives mass
    to the mask token as an output, so Σ_x p(x) over the 4^3 real completions is < 1 (0.82 here)."""
    log_pt = ref_logps / temperature
    log_pt = log_pt - torch.logsumexp(log_pt, 0)
    log_q = model_logps - torch.logsumexp(model_logps, 0)
    return (log_pt.exp() * (log_pt - log_q)).sum().item()


def samples(ref_logps: torch.Tensor, num: int, seed: int = 0) -> Dataset:
    """`num` completions drawn exactly from p (normalised over the enumerated set)."""
    probs = (ref_logps - torch.logsumexp(ref_logps, 0)).exp().float()
    index = torch.multinomial(probs, num, replacement=True, generator=torch.Generator().manual_seed(seed))
    return Dataset.from_dict(
        {"input_ids": SEQUENCES[index].tolist(), "completion_mask": COMPLETION[index].int().tolist()}
    )


def _config(tmp_path, **overrides):
    """The autoregressive training tests' configuration, 80 steps with 0.05 x L_diff."""
    return trainer_config(tmp_path, **{"max_steps": 80, "nll_weight": 0.05, "logging_steps": 40, **overrides})


@pytest.mark.parametrize("method", ["exact", "mc"])
def test_block_diffusion_training_reduces_exact_tempered_kl_to_under_a_third(tmp_path, method):
    """L_p with the exact block DP, and L_k with k = 4 orders; both plus 0.05 x L_diff, full fine-tuning."""
    model = BlockDiffusionWrapper(tiny_bert(), MASK, BLOCK)
    ref = exact_logps(model)
    start = tempered_kl(ref, ref, 0.5)
    trainer = SeqTempTrainer(
        model, _config(tmp_path, likelihood_method=method, num_orders=4), train_dataset=samples(ref, 256)
    )
    trainer.train()
    end = tempered_kl(ref, exact_logps(model), 0.5)
    assert start > 0.1
    assert end < start / 3, f"{method}: KL {start:.4f} -> {end:.4f}"
    logged = [entry for entry in trainer.state.log_history if "temp/t_eff" in entry]
    for key in ("temp/kendall_tau", "temp/h_std", "loss/ratio", "loss/nll"):
        assert logged[-1][key] == logged[-1][key]  # logged, and not NaN (L_diff is computed)


def test_lora_reference_is_the_disabled_adapter_and_save(tmp_path):
    base = tiny_bert(seed=1)
    model = BlockDiffusionWrapper(tiny_bert(seed=1), MASK, BLOCK)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], init_lora_weights=False)
    data = samples(exact_logps(BlockDiffusionWrapper(base, MASK, BLOCK)), 32)
    trainer = SeqTempTrainer(
        model, _config(tmp_path, max_steps=2), train_dataset=data, eval_dataset=data, peft_config=lora
    )
    assert trainer._ref_model is None and type(trainer.model.model).__name__ == "PeftModel"
    ids = torch.tensor(data["input_ids"])
    with torch.no_grad():
        expected = BlockDiffusionScorer(BLOCK)(
            BlockDiffusionWrapper(base, MASK, BLOCK), ids, None, torch.tensor(data["completion_mask"]).bool()
        )
        active = BlockDiffusionScorer(BLOCK)(
            trainer.model.eval(), ids, None, torch.tensor(data["completion_mask"]).bool()
        )
    assert (active - expected).abs().max() > 1e-3  # the adapter is not a no-op ...
    torch.testing.assert_close(torch.tensor(trainer.train_dataset["ref_logps"]), expected, atol=1e-5, rtol=0)
    trainer.train()
    assert trainer.evaluate()["eval_temp/t_eff"] == trainer.evaluate()["eval_temp/t_eff"]
    trainer.save_model(str(tmp_path / "adapter"))
    files = set(os.listdir(tmp_path / "adapter"))
    assert {"adapter_config.json", "adapter_model.safetensors", "seqtemp_config.json"} <= files
    with open(tmp_path / "adapter" / "seqtemp_config.json") as handle:
        saved = json.load(handle)
    assert saved["model_family"] == "block_diffusion"
    assert saved["training_hyperparameters"]["likelihood_method"] == "exact"


def test_mc_reference_uses_seeded_orders_independent_of_batching(tmp_path):
    """The precomputed L_k reference of example i is log p̃ over the orders drawn from order_seed(seed, i)."""
    base = tiny_bert(seed=2)
    model = MaskedLMWrapper(base, MASK)
    rows = [[0, 1, 2, 3], [0, 3, 3], [0, 2, 1, 1], [0, 1]]
    data = Dataset.from_dict({"input_ids": rows, "completion_mask": [[0] + [1] * (len(r) - 1) for r in rows]})
    values = []
    for eval_batch in (4, 1):
        args = _config(tmp_path, seed=7, ref_num_orders=6, per_device_eval_batch_size=eval_batch)
        trainer = SeqTempTrainer(model, args, train_dataset=data)
        assert trainer.family.method == "mc"  # masked diffusion defaults to the k-order estimate
        values.append(torch.tensor(trainer.train_dataset["ref_logps"]))
    torch.testing.assert_close(values[0], values[1], atol=1e-5, rtol=0)
    assert trainer.train_dataset["ref_order_seed"] == [order_seed(7, i) for i in range(4)]
    for i, row in enumerate(rows):
        ids = torch.tensor([row])
        completion = torch.tensor([[False] + [True] * (len(row) - 1)])
        gen = torch.Generator().manual_seed(order_seed(7, i))
        keys = torch.rand(1, 6, len(row), generator=gen)
        keys = torch.where(completion[:, None], keys, torch.full_like(keys, float("inf")))
        orders = torch.where(completion[:, None], keys.argsort(-1).argsort(-1), -1)
        with torch.no_grad():
            logps = order_logps(model.eval(), ids, torch.ones_like(ids), completion, orders)
        assert values[0][i].item() == pytest.approx(
            (logps.logsumexp(1) - torch.log(torch.tensor(6.0))).item(), abs=1e-5
        )
    batch = {
        "input_ids": torch.tensor([rows[0]]),
        "attention_mask": torch.ones(1, 4, dtype=torch.long),
        "completion_mask": torch.tensor([[False, True, True, True]]),
        "example_id": torch.tensor([3]),
    }
    other = _per_example_orders(batch, 6, None, 8)
    assert not torch.equal(other, _per_example_orders(batch, 6, None, 7))  # the seed matters


@pytest.mark.parametrize("block_size", [None, BLOCK])
def test_elbo_estimate_matches_the_order_elbo(block_size):
    """E[L_diff estimate] = −(mean over (block-respecting) orders of log p(x; π)) / m, by brute force over orders."""
    base = tiny_bert(seed=3)
    model = MaskedLMWrapper(base, MASK) if block_size is None else BlockDiffusionWrapper(base, MASK, block_size)
    ids = torch.tensor([[0, 2, 1, 3]])
    completion = torch.tensor([[False, True, True, True]])
    positions = [1, 2, 3]
    perms = [p for p in itertools.permutations(positions) if block_size is None or p[0] == 1]
    orders = torch.full((1, len(perms), 4), -1)
    for j, perm in enumerate(perms):
        for step, pos in enumerate(perm):
            orders[0, j, pos] = step
    with torch.no_grad():
        oracle = -order_logps(model, ids, torch.ones_like(ids), completion, orders).mean().item() / 3
        n = 40000
        rep = ids.expand(n, -1)
        estimate = diffusion_elbo_loss(
            model, rep, torch.ones_like(rep), completion.expand(n, -1), block_size, torch.Generator().manual_seed(0)
        ).item()
    assert estimate == pytest.approx(oracle, rel=0.03), (estimate, oracle)


def test_raw_masked_lm_is_wrapped(tmp_path):
    base = tiny_bert()
    base.config.mask_token_id = MASK
    data = samples(exact_logps(BlockDiffusionWrapper(tiny_bert(), MASK, BLOCK)), 8)
    trainer = SeqTempTrainer(base, _config(tmp_path, num_orders=2), train_dataset=data)
    assert isinstance(trainer.model, MaskedLMWrapper) and trainer.family.name == "masked_diffusion"
    assert isinstance(trainer.family.scorer, MaskedDiffusionScorer) and trainer.family.scorer.num_orders == 2


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"num_orders": 0}, r"`num_orders` must be an integer ≥ 1.*got 0"),
        ({"num_orders": 2.0}, r"`num_orders` must be an integer ≥ 1.*got 2.0"),
        ({"ref_num_orders": -3}, r"`ref_num_orders` must be an integer ≥ 1.*got -3"),
        ({"likelihood_method": "dp"}, r"`likelihood_method` must be 'exact', 'mc' or None.*'dp'"),
    ],
)
def test_bad_config(tmp_path, overrides, match):
    with pytest.raises(ValueError, match=match):
        _config(tmp_path, **overrides)


def test_bad_combinations(tmp_path):
    data = samples(exact_logps(BlockDiffusionWrapper(tiny_bert(), MASK, BLOCK)), 8)
    with pytest.raises(ValueError, match=r"`loss_type='c_div'` is not available for block_diffusion models"):
        SeqTempTrainer(
            BlockDiffusionWrapper(tiny_bert(), MASK, BLOCK), _config(tmp_path, loss_type="c_div"), train_dataset=data
        )
    with pytest.raises(ValueError, match=r"`likelihood_method='exact'` cannot be used with loss_type='ssts'"):
        SeqTempTrainer(
            BlockDiffusionWrapper(tiny_bert(), MASK, BLOCK),
            _config(tmp_path, loss_type="ssts", likelihood_method="exact"),
            train_dataset=data,
        )
    with pytest.raises(ValueError, match=r"`ref_num_orders`=8 differs from `num_orders`=4"):
        SeqTempTrainer(
            MaskedLMWrapper(tiny_bert(), MASK),
            _config(tmp_path, loss_type="ssts", ref_num_orders=8),
            train_dataset=data,
        )
    with pytest.raises(ValueError, match=r"`likelihood_method='exact'` is only available for block diffusion"):
        SeqTempTrainer(
            MaskedLMWrapper(tiny_bert(), MASK), _config(tmp_path, likelihood_method="exact"), train_dataset=data
        )
    with pytest.raises(ValueError, match=r"`scorer` is only used for causal LMs"):
        SeqTempTrainer(
            MaskedLMWrapper(tiny_bert(), MASK), _config(tmp_path), train_dataset=data, scorer=MaskedDiffusionScorer()
        )
    with pytest.raises(ValueError, match=r"`min_time` must be a float in \(0, 1\), got 0.0"):
        diffusion_elbo_loss(
            MaskedLMWrapper(tiny_bert(), MASK), SEQUENCES[:1], torch.ones(1, 4), COMPLETION[:1], min_time=0.0
        )


# ---------------------------------------------------------------- loss_type="ssts" (Eq. 18 / 28)
def all_order_logps(adapter) -> torch.Tensor:
    """Exact log p(x) of a masked-diffusion model: the mean of p(x; π) over all 3! orders of the completion."""
    perms = list(itertools.permutations(range(1, LENGTH + 1)))
    orders = torch.full((len(SEQUENCES), len(perms), LENGTH + 1), -1)
    for j, perm in enumerate(perms):
        for step, pos in enumerate(perm):
            orders[:, j, pos] = step
    with torch.no_grad():
        logps = order_logps(adapter.eval(), SEQUENCES, torch.ones_like(SEQUENCES), COMPLETION, orders).double()
    return logps.logsumexp(1) - torch.log(torch.tensor(float(len(perms)), dtype=torch.float64))


@pytest.mark.parametrize("kind", ["masked", "block"])
def test_ssts_training_reduces_exact_tempered_kl_to_under_a_third(tmp_path, kind):
    """L_SSTS along k = 4 seeded orders per example + 0.05 x L_diff, full fine-tuning toward T = 0.5.

    Measured (80 steps, 256 samples): masked 0.1720 -> 0.0058, block 0.1935 -> 0.0139. At T = 0.5 the weight
    p(x | state)^{(1-T)/T} is linear in the one-order reference estimate, so its importance-sampling noise stays
    small here (logged ess/fraction ≈ 0.79-0.85).
    """
    if kind == "masked":
        model, exact = MaskedLMWrapper(tiny_bert(), MASK), all_order_logps
    else:
        model, exact = BlockDiffusionWrapper(tiny_bert(), MASK, BLOCK), exact_logps
    ref = exact(model)
    start = tempered_kl(ref, ref, 0.5)
    trainer = SeqTempTrainer(model, _config(tmp_path, loss_type="ssts", num_orders=4), train_dataset=samples(ref, 256))
    trainer.train()
    end = tempered_kl(ref, exact(model), 0.5)
    assert start > 0.1
    assert end < start / 3, f"{kind}: KL {start:.4f} -> {end:.4f}"
    logged = [entry for entry in trainer.state.log_history if "loss/ssts" in entry][-1]
    assert 0.3 < logged["ess/fraction"] <= 1.0 and logged["loss/nll"] == logged["loss/nll"]


def fresh_step_logps(adapter, row: list[int], orders: torch.Tensor) -> torch.Tensor:
    """Brute force, one state at a time: [j, s] = log p(token revealed at step s | state before step s)."""
    ids = torch.tensor([row])
    values = torch.zeros(orders.shape[0], len(row) - 1)
    with torch.no_grad():
        for j, ranks in enumerate(orders):
            for step in range(len(row) - 1):
                state = torch.where((ranks >= step) & (ranks >= 0), torch.full_like(ids, MASK), ids)
                position = int((ranks == step).nonzero())
                logits = adapter(state, torch.ones_like(ids))[0, position].float()
                logits[MASK] = -float("inf")  # the mask token is never a sampled token: renormalised away
                values[j, step] = logits.log_softmax(-1)[row[position]]
    return values


@pytest.mark.parametrize("kind", ["masked", "block"])
def test_ssts_reference_steps_equal_a_fresh_computation_for_the_stored_seeds(tmp_path, kind):
    """The `ref_step_logps` column holds, per example, the k·m reference conditionals along the orders drawn from
    its `ref_order_seed` (block-respecting for block diffusion), independent of batching; the trained model is
    scored along the same orders; the on-the-fly reference gives the same loss."""
    base = tiny_bert(seed=4)
    model = MaskedLMWrapper(base, MASK) if kind == "masked" else BlockDiffusionWrapper(base, MASK, BLOCK)
    rows = [[0, 1, 2, 3], [0, 3, 3], [0, 2, 1, 1], [0, 1]]
    data = Dataset.from_dict({"input_ids": rows, "completion_mask": [[0] + [1] * (len(r) - 1) for r in rows]})
    stored = []
    for eval_batch in (4, 1):
        args = _config(
            tmp_path, loss_type="ssts", seed=7, num_orders=3, nll_weight=0.0, per_device_eval_batch_size=eval_batch
        )
        trainer = SeqTempTrainer(model, args, train_dataset=data, eval_dataset=data)
        stored.append(trainer.train_dataset["ref_step_logps"])
    assert trainer.eval_dataset["ref_step_logps"] == trainer.train_dataset["ref_step_logps"]
    metrics = trainer.evaluate()
    assert metrics["eval_temp/t_eff"] == pytest.approx(1.0, abs=1e-3)  # untrained: q = p along the same orders
    assert metrics["eval_ess/fraction"] < 1.0
    for a, b in zip(*stored):
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b), atol=1e-5, rtol=0)
    assert trainer.train_dataset["ref_order_seed"] == [order_seed(7, i) for i in range(4)]
    for i, row in enumerate(rows):
        m = len(row) - 1
        gen = torch.Generator().manual_seed(order_seed(7, i))
        keys = torch.rand(3, len(row), generator=gen)  # the draw of sample_orders over the row's real tokens
        if kind == "block":
            keys = keys + torch.arange(len(row)) // BLOCK  # blocks of real positions, revealed one after another
        keys[:, 0] = float("inf")  # the prompt token is never revealed
        orders = keys.argsort(-1).argsort(-1)
        orders[:, 0] = -1
        expected = fresh_step_logps(model.eval(), row, orders)
        assert len(stored[0][i]) == 3 * m
        torch.testing.assert_close(torch.tensor(stored[0][i]).view(3, m), expected, atol=1e-5, rtol=0)
    # the trained model (still equal to p) is scored along the very same orders, and the stored column unpacks
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(4)])
    reference = trainer.family.stored_reference(batch)
    with torch.no_grad():
        policy_seq, extra = trainer.family.score(model.eval(), batch)
    torch.testing.assert_close(extra["token_logps"], reference, atol=1e-5, rtol=0)
    torch.testing.assert_close(policy_seq, batch["ref_logps"], atol=1e-5, rtol=0)
    # recomputing the reference at every step gives the same objective as the stored column
    fly = SeqTempTrainer(
        model,
        _config(tmp_path, loss_type="ssts", seed=7, num_orders=3, nll_weight=0.0, precompute_ref_log_probs=False),
        train_dataset=data,
    )
    with torch.no_grad():
        stored_loss = trainer.compute_loss(model.eval(), batch)
        fly_batch = {key: value for key, value in batch.items() if not key.startswith("ref_")}
        fly_loss = fly.compute_loss(model.eval(), fly_batch)
    assert stored_loss.item() == pytest.approx(fly_loss.item(), abs=1e-5)
