# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`hf-seqtemp audit` gives the Python API's figures; the grid and the tuned-myopic search."""

from __future__ import annotations

import json
import math

import pytest
from tiny_models import tiny_causal_lm
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from hf_seqtemp.audit import audit_grid, parse_grid, tune_token_temperature
from hf_seqtemp.cli import main

PROMPTS = ["a b", "c", "d d a"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit_cli")
    model = tiny_causal_lm(8, seed=3)
    model.generation_config.eos_token_id = 6
    model.generation_config.do_sample, model.generation_config.top_k = True, 2  # defaults the audit must not apply
    model.save_pretrained(root)
    vocab = {"<s>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "</s>": 6, "<pad>": 7}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.save_pretrained(root)
    (root / "prompts.txt").write_text("\n".join(PROMPTS) + "\n", encoding="utf-8")
    return root


def test_cli_grid_matches_the_python_api(base, tmp_path, capsys):
    out = tmp_path / "audit"
    argv = ["audit", "--model_name_or_path", str(base), "--prompts_file", str(base / "prompts.txt")]
    argv += ["--grid", "temperature=0.5,1.0", "+", "top_p=0.8", "--num_samples", "6", "--max_new_tokens", "4"]
    argv += ["--output_dir", str(out), "--no_plot"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    printed = captured.out
    # each phase announced as it starts, on stderr (stdout keeps the table)
    phases = [
        "sampling p exactly",
        "setting 1/3: temperature=0.5",
        "setting 2/3: temperature=1",
        "setting 3/3: top_p=0.8",
    ]
    positions = [captured.err.find(phase) for phase in phases]
    assert -1 not in positions and positions == sorted(positions), captured.err
    assert "| temperature=0.5 |" in printed and "| top_p=0.8 |" in printed and "wall time" in printed
    written = json.loads((out / "audit.json").read_text())
    model, tokenizer = AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base)
    expected = audit_grid(
        model.eval(),
        tokenizer,
        PROMPTS,
        parse_grid(["temperature=0.5,1.0", "+", "top_p=0.8"]),
        num_samples=6,
        max_new_tokens=4,
    )
    assert [row["setting"] for row in written["rows"]] == [{"temperature": 0.5}, {"temperature": 1.0}, {"top_p": 0.8}]
    for got, want in zip(written["rows"], expected["rows"]):
        assert got["processors"] == want["processors"]
        for key, value in want["summary"].items():
            assert got["summary"][key] == pytest.approx(value, rel=1e-9, nan_ok=True) or (
                got["summary"][key] is None and math.isnan(value)
            ), key
    assert written["rows"][1]["processors"] == []  # temperature 1: the model's own top_k = 2 is not applied
    assert written["rows"][1]["summary"]["t_eff"] == pytest.approx(1.0, rel=1e-9)
    assert (out / "audit.md").read_text().count("\n") == 5


def test_single_flags_and_grid_are_exclusive(base, capsys):
    argv = ["audit", "--model_name_or_path", str(base), "--prompt", "a", "--top_p", "0.9", "--grid", "top_k=2"]
    with pytest.raises(SystemExit):
        main(argv)
    assert "`--grid` or single-setting flags" in capsys.readouterr().err


def test_tuned_myopic_row_reaches_the_target_on_the_tuning_prompts(base):
    model, tokenizer = AutoModelForCausalLM.from_pretrained(base).eval(), AutoTokenizer.from_pretrained(base)
    result = audit_grid(
        model,
        tokenizer,
        PROMPTS,
        [{"temperature": 0.3}, {"temperature": 1.0}],
        [0.6],
        num_samples=16,
        max_new_tokens=4,
    )
    (tuned,) = result["tuned_myopic"]
    assert abs(tuned["search"]["t_eff"] - 0.6) / 0.6 <= 0.01 + 1e-9
    assert tuned["setting"] == {"temperature": tuned["search"]["token_temperature"]}
    assert 0.3 < tuned["setting"]["temperature"] < 1.0


def test_tune_token_temperature_inverts_a_monotone_curve():
    curve = lambda t: t**1.7 / (1 + 0.3 * t)
    for target in (0.25, 0.5, 0.8, 2.0):
        out = tune_token_temperature(curve, target, rel_tol=1e-4, max_evals=40, high=10.0)
        assert abs(curve(out["token_temperature"]) - target) / target <= 1e-4
    with pytest.raises(ValueError, match="T_eff does not move with t .*no token temperature reaches T = 2"):
        tune_token_temperature(lambda t: 0.5, 2.0)


def test_parse_grid_errors_name_the_entry():
    with pytest.raises(ValueError, match="`temperature=0.3,0.7`"):
        parse_grid(["temperature"])
    with pytest.raises(ValueError, match="not a number"):
        parse_grid(["top_p=high"])


def test_tune_myopic_finds_the_token_temperature_whose_t_eff_is_t():
    """On held-out sequences of two prompts: T_eff (within prompts) at the tuned token temperature is T, and its
    log-likelihoods are the base model's at that token temperature (a float64 oracle)."""
    import torch
    from datasets import Dataset
    from toy import sample_sequences

    from hf_seqtemp.measure import dataset_groups, score_dataset, tune_myopic
    from hf_seqtemp.metrics.core import effective_temperature

    model = tiny_causal_lm(6, seed=1).eval()
    rows = []
    for first in (1, 2):
        seqs = sample_sequences(model, 24, 4, seed=first)
        seqs[:, 1] = first  # two prompts, [BOS, 1] and [BOS, 2] (any sequences can be scored)
        rows += seqs.tolist()
    data = Dataset.from_dict({"input_ids": rows, "completion_mask": [[0, 0, 1, 1, 1]] * len(rows)})
    groups = dataset_groups(data)
    ref, _ = score_dataset(model, data, desc="base")
    for target in (0.5, 2.0):
        t, logps = tune_myopic(model, data, target, ref, groups, batch_size=16)
        assert effective_temperature(ref, logps, groups=groups) == pytest.approx(target, rel=0.005 + 1e-6)
        ids = torch.tensor(rows)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[:, 1:-1].double() / t
        oracle = logits.log_softmax(-1).gather(-1, ids[:, 2:, None]).squeeze(-1).sum(1)
        assert torch.allclose(logps.double(), oracle, rtol=0, atol=2e-5)


def test_an_unreachable_target_keeps_the_grid(base):
    model, tokenizer = AutoModelForCausalLM.from_pretrained(base).eval(), AutoTokenizer.from_pretrained(base)
    result = audit_grid(model, tokenizer, PROMPTS[:2], [{"top_p": 0.9}], [1e4], num_samples=4, max_new_tokens=3)
    assert (
        len(result["rows"]) == 1 and "no token temperature in the searched range" in result["tuned_myopic"][0]["error"]
    )


def test_progress_prints_a_line_per_wait_while_a_phase_runs():
    """The audit's progress thread prints one "still ..." line each time its wait (every 25 s) times out, naming
    the phase that is running, and stops when the audit ends."""
    import io
    import threading

    from hf_seqtemp.cli.audit import Progress

    waits, phase_set = iter([False, False, False, True]), threading.Event()

    def wait(seconds):  # three intervals pass while the phase runs, then the audit ends
        phase_set.wait(5)
        return next(waits)

    stream = io.StringIO()
    with Progress(every=25.0, stream=stream, wait=wait) as progress:
        progress("setting 1/1: top_p=0.9")
        phase_set.set()
    lines = [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()]
    assert lines == ["setting 1/1: top_p=0.9 …"] + ["still setting 1/1: top_p=0.9 …"] * 3
    assert Progress().every <= 30
