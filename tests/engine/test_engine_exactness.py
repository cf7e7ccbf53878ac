# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The exactness oracles of the samplers on both backends: a tiny random Llama served by vLLM, and its local copy.

The SMC, PIMH and MH tests take the `backend` fixture (`conftest.Backend`) and run once on the transformers loop
(the local weights) and once on the engine (the served ones): the same sampler code, the same oracle, the same
thresholds. The rest concern the engine alone (its samples of p, its log-probs, its refusals).

|V| = 4 with EOS 3, three prompts, at most 3 new tokens: 40 answers per prompt ("3", "x3", "xy3" and the truncated
"xyz"), every one enumerated and scored by the local copy of the served weights. The target is
`p(answer | prompt)^(1/T) / Z(prompt)` per prompt, T = 0.5. Checked per prompt:

- the samples of p (the trainer's `use_vllm=True`): chi-square of their law against p, and the engine's log p of
  every sampled token against the scorer's;
- SMC with the token-temperature proposal and with a served LoRA as proposal: `E[Z_hat / Z] = 1` (the normaliser
  estimate is unbiased at any number of particles) and chi-square of the returned answers against the target;
- MH power sampling: chi-square of its answers against the target;
- PIMH over SMC runs (`pimh_steps`): one particle per run, whose answer is the proposal's biased draw, corrected by
  the chain over 17 runs, with either proposal;
- the proposals' `log r` (the engine's processed log-probs at temperature T, the LoRA's log-probs) against the
  scorer at token temperature T and against the local PEFT adapter.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from distribution_checks import chi_square_pvalue
from engine.conftest import EOS, NEW, PROMPTS, T, V

from hf_seqtemp.engine import check_against_scorer, engine_sample_completions, probe_engine
from hf_seqtemp.engine.agreement import local_token_logps
from hf_seqtemp.generation.engine_proposal import EngineProposal
from hf_seqtemp.generation.power_sampling import power_sample
from hf_seqtemp.generation.smc import smc_sample

ALPHA = 1 / T


def _answer(tokens) -> tuple[int, ...]:
    tokens = [int(t) for t in tokens]
    return tuple(tokens[: tokens.index(EOS) + 1] if EOS in tokens else tokens[:NEW])


def _oracle(model, prompt) -> tuple[list[tuple[int, ...]], torch.Tensor]:
    """The prompt's answers and their exact `log p(answer | prompt)` (float64)."""
    answers = sorted({_answer(tail) for tail in itertools.product(range(V), repeat=NEW)})
    logps = local_token_logps(model, [list(prompt) + list(a) for a in answers], [len(prompt)] * len(answers))
    return answers, torch.tensor([sum(values) for values in logps], dtype=torch.float64)


def _counts(answers, drawn) -> torch.Tensor:
    index = {a: i for i, a in enumerate(answers)}
    counts = torch.zeros(len(answers), dtype=torch.float64)
    for tokens in drawn:
        counts[index[_answer(tokens)]] += 1  # a KeyError is an answer outside the enumeration
    return counts


def _rows(runs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`runs` rows per prompt, left-padded: `(input_ids, attention_mask)`, prompt-major."""
    width = max(len(p) for p in PROMPTS)
    ids = torch.tensor([[0] * (width - len(p)) + list(p) for p in PROMPTS]).repeat_interleave(runs, 0)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in PROMPTS]).repeat_interleave(runs, 0)
    return ids, mask


def _check_smc(backend, out, runs):
    """Per prompt: E[Z_hat / Z] within 4 standard errors of 1, and chi-square of the returned answers."""
    width = max(len(p) for p in PROMPTS)
    for b, prompt in enumerate(PROMPTS):
        answers, logp = _oracle(backend.model, prompt)
        target, log_z = (ALPHA * logp).softmax(0), (ALPHA * logp).logsumexp(0)
        ratio = (out.log_normalizer[b * runs : (b + 1) * runs].double() - log_z).exp()
        error = ratio.std() / runs**0.5
        assert abs(ratio.mean() - 1) < 4 * error, (b, ratio.mean().item(), error.item())
        counts = _counts(answers, out.sequences[b * runs : (b + 1) * runs, width:].tolist())
        pvalue = chi_square_pvalue(counts, target)[1]
        print(f"prompt {b}: E[Z_hat/Z] = {ratio.mean().item():.4f} ± {error.item():.4f}, chi-square p = {pvalue:.3g}")
        assert pvalue > 1e-3, b


def test_the_engine_samples_p_with_the_scorers_log_p(engine):
    """2000 samples of p per prompt: chi-square against p, and the engine's log p of each token is the scorer's."""
    runs = 2000
    prompts = [list(p) for p in PROMPTS for _ in range(runs)]
    completions, logps = engine_sample_completions(engine.base, prompts, NEW, [EOS], seed=0)
    worst = check_against_scorer("samples", engine.model, [p + c for p, c in zip(prompts, completions)],
                                 [len(p) for p in prompts], logps, tolerance=1e-4)  # fmt: skip
    assert worst < 1e-4
    for b, prompt in enumerate(PROMPTS):
        answers, logp = _oracle(engine.model, prompt)
        counts = _counts(answers, completions[b * runs : (b + 1) * runs])
        assert chi_square_pvalue(counts, logp.softmax(0))[1] > 1e-3, b
    # the same seed draws the same samples (each prompt is one request with its own run of seeds)
    assert engine_sample_completions(engine.base, prompts[:5], NEW, [EOS], seed=0)[0] == completions[:5]


def test_many_long_seeded_prompts_at_once_are_reproducible(engine):
    """64 seeded prompts of 56 tokens in one round: 3584 prompt tokens, more than vLLM's default step budget (2048),
    with which the CPU build cuts a prompt by chunked prefill and its engine crashes on the seeded request (measured
    with `--enable-chunked-prefill --max-num-batched-tokens 2048`). Served as `hf-seqtemp serve` serves, every
    completion comes back, and the same seed draws the same ones."""
    generator = torch.Generator().manual_seed(0)
    prompts = torch.randint(V, (64, 56), generator=generator).tolist()
    first = engine_sample_completions(engine.base, prompts, 4, [EOS], seed=3)
    assert len(first[0]) == 64 and all(1 <= len(c) <= 4 for c in first[0])
    assert engine_sample_completions(engine.base, prompts, 4, [EOS], seed=3) == first


def test_the_probe_finds_processed_log_probs_and_the_proposals_log_q(engine):
    """The server returns log r of the tempered proposal for sampled tokens (processed log-probs), measured against
    the scorer at token temperature T; the served LoRA's log q of its samples is the local PEFT adapter's."""
    probe = probe_engine(engine.base, engine.model, PROMPTS, [EOS])
    assert probe.logprobs_mode == "processed_logprobs" and probe.max_abs_logp_difference < 1e-4
    proposal = EngineProposal(engine.base, ALPHA, [EOS])
    from hf_seqtemp.engine.sampling import SeedStream

    blocks = proposal.draw([list(p) for p in PROMPTS] * 20, NEW, SeedStream(0))
    sequences = [list(p) + b.tokens for p, b in zip(list(PROMPTS) * 20, blocks)]
    starts = [len(p) for p in list(PROMPTS) * 20]
    check_against_scorer("log r", engine.model, sequences, starts, [b.logr for b in blocks], 1e-4, T)
    check_against_scorer("log p", engine.model, sequences, starts, [b.logp for b in blocks], 1e-4)
    adapter = EngineProposal(engine.base, ALPHA, [EOS], "lora", engine.proposer)
    blocks = adapter.draw([list(p) for p in PROMPTS] * 20, NEW, SeedStream(1))
    sequences = [list(p) + b.tokens for p, b in zip(list(PROMPTS) * 20, blocks)]
    check_against_scorer("the LoRA's log q", engine.peft, sequences, starts, [b.logr for b in blocks], 1e-4)


def test_token_proposal_smc_on_the_engine_is_exact(backend):
    """Blocks of one token, resampled whenever the weights are not all equal (`ess_threshold=1`)."""
    runs = 400
    ids, mask = _rows(runs)
    out = backend.smc(ids, mask, block=1, max_new_tokens=NEW, seq_temperature=T, num_particles=16, ess_threshold=1.0,
                      generator=torch.Generator().manual_seed(0), eos_token_id=EOS, return_dict_in_generate=True)  # fmt: skip
    _check_smc(backend, out, runs)
    assert out.num_resamples.sum() > 0
    assert backend.name != "engine" or out.model_calls == 2 * NEW  # two requests a round


def test_adapter_proposal_smc_on_the_engine_is_exact(backend):
    """A random LoRA proposes (on the engine: served by name on its own server, the base server weighing; blocks of
    2 tokens). Against the adapter's own tempered law (what weighing with the adapter instead of the base would
    target) the answers fail: the weights do correct the proposal."""
    runs = 400
    ids, mask = _rows(runs)
    out = backend.smc(ids, mask, proposal="adapter", block=2, max_new_tokens=NEW, seq_temperature=T, num_particles=16,
                      generator=torch.Generator().manual_seed(1), eos_token_id=EOS, return_dict_in_generate=True)  # fmt: skip
    _check_smc(backend, out, runs)
    width, against_adapter = max(len(p) for p in PROMPTS), []
    for b, prompt in enumerate(PROMPTS):
        answers, logq = _oracle(backend.peft, prompt)
        counts = _counts(answers, out.sequences[b * runs : (b + 1) * runs, width:].tolist())
        against_adapter.append(chi_square_pvalue(counts, (ALPHA * logq).softmax(0))[1])
    assert min(against_adapter) < 1e-6, against_adapter


@pytest.mark.parametrize("proposal", ["token", "adapter"])
def test_pimh_answers_on_the_engine_are_exact_where_one_runs_answer_is_not(backend, proposal):
    """One particle per run: a run's answer is the proposal's own draw (token temperature T, or the random LoRA),
    whose law is not p^α: chi-square fails. The PIMH chain over 16 such runs (`pimh_steps=16`, all 17 runs in the
    same requests) accepts by the ratio of their normaliser estimates, and its answers pass on every prompt."""
    runs = 1000
    ids, mask = _rows(runs)
    options = {"max_new_tokens": NEW, "seq_temperature": T, "num_particles": 1, "block": NEW, "proposal": proposal}
    options.update(eos_token_id=EOS, return_dict_in_generate=True)
    width = max(len(p) for p in PROMPTS)
    laws = {}
    for steps in (0, 16):
        out = backend.smc(ids, mask, generator=torch.Generator().manual_seed(7), pimh_steps=steps, **options)
        laws[steps] = []
        for b, prompt in enumerate(PROMPTS):
            answers, logp = _oracle(backend.model, prompt)
            counts = _counts(answers, out.sequences[b * runs : (b + 1) * runs, width:].tolist())
            laws[steps].append(chi_square_pvalue(counts, (ALPHA * logp).softmax(0))[1])
    print(f"{proposal}: one run's answer p = {laws[0]}, PIMH-16 p = {laws[16]}")
    assert min(laws[0]) < 1e-3 and min(laws[16]) > 1e-3
    assert out.pimh_acceptance.shape == (len(PROMPTS) * runs,) and 0.1 < float(out.pimh_acceptance.mean()) < 1.0


def test_mh_power_sampling_on_the_engine_is_exact(backend):
    """2000 answers per prompt, 20 MH steps after each one-token block. (At 6 steps the chain has not mixed: with
    each row's own boundaries the second prompt fails at 2000 answers, p 3.7e-7 on the transformers backend; 500
    answers could not see it.)"""
    runs = 2000
    ids, mask = _rows(runs)
    out = backend.power(ids, mask, max_new_tokens=NEW, seq_temperature=T, mcmc_steps=20, block_size=1,
                        generator=torch.Generator().manual_seed(2), eos_token_id=EOS, return_dict_in_generate=True)  # fmt: skip
    width = max(len(p) for p in PROMPTS)
    for b, prompt in enumerate(PROMPTS):
        answers, logp = _oracle(backend.model, prompt)
        counts = _counts(answers, out.sequences[b * runs : (b + 1) * runs, width:].tolist())
        pvalue = chi_square_pvalue(counts, (ALPHA * logp).softmax(0))[1]
        print(f"prompt {b}: chi-square p = {pvalue:.3g}")
        assert pvalue > 1e-3, b
        assert 0.2 < out.acceptance_rate[b * runs : (b + 1) * runs].nanmean() < 1.0


def test_mh_on_the_engine_redraws_every_row_in_one_round_per_step(engine, monkeypatch):
    """The rows of a call draw their own boundaries, and an MH step still sends all of them in one sampling round
    (each its own prefix and length): one proposal draw per block and per step, whatever the boundaries drawn."""
    calls, draw = [], EngineProposal.draw

    def counted(self, prefixes, length, seeds):
        calls.append(sorted(set([length] if isinstance(length, int) else length)))
        return draw(self, prefixes, length, seeds)

    monkeypatch.setattr(EngineProposal, "draw", counted)
    ids, mask = _rows(10)
    power_sample(engine.base, ids, mask, max_new_tokens=NEW, seq_temperature=T, mcmc_steps=4, block_size=1,
                 generator=torch.Generator().manual_seed(0), eos_token_id=EOS)  # fmt: skip
    assert len(calls) == NEW * (1 + 4)  # a new block, then 4 steps, for each of the NEW one-token blocks
    assert any(len(lengths) > 1 for lengths in calls)  # steps whose rows drew different boundaries: still one round


def test_a_raw_log_prob_server_is_refused_for_the_token_proposal(engine, monkeypatch):
    """Raw log-probs of the sampled token do not give `Z_t`: the token proposal and MH refuse such a server by name,
    the adapter proposal (`log r` at temperature 1) does not need processed ones."""
    monkeypatch.setattr(engine.base, "logprobs_mode", "raw_logprobs")
    ids, mask = _rows(1)
    with pytest.raises(ValueError, match="--logprobs-mode processed_logprobs"):
        smc_sample(engine.base, ids, mask, max_new_tokens=NEW, eos_token_id=EOS)
    with pytest.raises(ValueError, match="raw log p"):
        power_sample(engine.base, ids, mask, max_new_tokens=NEW, eos_token_id=EOS)
    with pytest.raises(ValueError, match="is not served"):
        smc_sample(engine.base, ids, mask, max_new_tokens=NEW, eos_token_id=EOS, proposal="adapter",
                   adapter_name="other", proposal_client=engine.proposer)  # fmt: skip


def test_another_model_is_refused_with_the_numbers(engine):
    """The first-batch check: the server's log p against a local model that is not the served one."""
    from engine.conftest import engine_llama

    other = engine_llama()
    with torch.no_grad():
        other.lm_head.weight.mul_(1.1)
    with pytest.raises(ValueError, match=r"differ from the scorer's by up to [0-9.]+ per token over \d+ tokens"):
        probe_engine(engine.base, other, PROMPTS, [EOS])
