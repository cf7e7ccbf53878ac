# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Training with `use_vllm=True`: the samples of p and their reference come from the engine server.

The trainer's model is the local copy of the served tiny Llama (|V| = 4, EOS 3) with a LoRA adapter, so the
reference p (the adapter off) is the served model; prompts are words ("x", "x y", ...) of a word-level tokenizer
whose EOS is token 3.
"""

from __future__ import annotations

import http.server
import threading
import urllib.request

import pytest
import torch
from datasets import Dataset
from engine.conftest import engine_llama, word_tokenizer
from peft import LoraConfig

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.engine import EngineError
from hf_seqtemp.engine.agreement import local_token_logps
from hf_seqtemp.trainer import reference as reference_module
from hf_seqtemp.trainer.checkpoints import checkpoint_problem, checkpoints_in

PROMPTS = ["x", "x y", "y x y"]  # 2, 3 and 4 tokens with BOS


def _tokenizer():
    return word_tokenizer()


def _args(tmp_path, url, **overrides):
    values = {
        "output_dir": str(tmp_path),
        "target_temperature": 0.5,
        "loss_type": "ratio",
        "num_generations": 4,
        "max_completion_length": 3,
        "per_device_train_batch_size": 4,
        "per_device_eval_batch_size": 8,
        "max_steps": 3,
        "logging_steps": 1,
        "save_strategy": "no",
        "use_cpu": True,
        "seed": 0,
        "disable_tqdm": True,
        "use_vllm": True,
        "vllm_server_base_url": url,
        "vllm_server_timeout": 120.0,
    }
    values.update(overrides)
    return SeqTempConfig(**values)


def _lora():
    return LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])


def _losses(trainer) -> list[float]:
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def _no_transformers_sampling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("use_vllm=True sampled with generate")

    monkeypatch.setattr(reference_module, "sample_completions", refuse)
    monkeypatch.setattr("hf_seqtemp.trainer.prompt_only.sample_completions", refuse)


def test_training_on_engine_samples_equals_training_on_the_same_completions(engine, tmp_path, monkeypatch):
    """The engine draws the completions of p and their reference; a run without the engine on the very same
    completions (reference from the scorer) has the same within-prompt losses to 1e-5, and the two references
    agree to 1e-4 per sequence."""
    _no_transformers_sampling(monkeypatch)
    data = Dataset.from_dict({"prompt": PROMPTS})
    engine_run = SeqTempTrainer(
        _fresh(engine), _args(tmp_path / "a", engine.base.base_url), train_dataset=data,
        processing_class=_tokenizer(), peft_config=_lora(),
    )  # fmt: skip
    completed = engine_run.train_dataset
    engine_run.train()
    monkeypatch.undo()
    given = Dataset.from_dict(
        {
            "input_ids": completed["input_ids"],
            "completion_mask": completed["completion_mask"],
            "truncated": completed["truncated"],
            "prompt_id": completed["group_id"],
        }
    )
    plain_run = SeqTempTrainer(
        _fresh(engine), _args(tmp_path / "b", engine.base.base_url, use_vllm=False), train_dataset=given,
        processing_class=_tokenizer(), peft_config=_lora(),
    )  # fmt: skip
    assert plain_run.train_dataset["input_ids"] == completed["input_ids"]
    reference = torch.tensor(plain_run.train_dataset["ref_logps"]) - torch.tensor(completed["ref_logps"])
    assert reference.abs().max() < 1e-4, reference.abs().max()
    plain_run.train()
    torch.testing.assert_close(torch.tensor(_losses(engine_run)), torch.tensor(_losses(plain_run)), atol=1e-5, rtol=0)
    assert len(_losses(engine_run)) == 3 and len(set(completed["group_id"])) == len(PROMPTS)


def _fresh(engine):
    """A new local model of the served weights (each trainer adds its own adapter)."""
    return engine_llama()


def test_fresh_engine_samples_every_step_carry_the_engines_reference(engine, tmp_path, monkeypatch):
    """`sample_every_steps=1`: every batch is drawn afresh by the engine, and the rows' reference is the engine's
    log p, equal to the scorer's to 1e-4 per token."""
    _no_transformers_sampling(monkeypatch)
    args = _args(tmp_path, engine.base.base_url, sample_every_steps=1, loss_type="ssts", max_steps=2)
    trainer = SeqTempTrainer(
        _fresh(engine), args, train_dataset=Dataset.from_dict({"prompt": PROMPTS}), processing_class=_tokenizer(),
        peft_config=_lora(),
    )  # fmt: skip
    trainer.train()
    rows = [row for row in trainer.train_dataset.rows if row is not None]
    assert len(rows) >= 4 and {row["example_id"] for row in rows}
    starts = [len(r["input_ids"]) - sum(r["completion_mask"]) for r in rows]
    local = local_token_logps(engine.model, [r["input_ids"] for r in rows], starts)
    for row, start, values in zip(rows, starts, local):
        assert abs(row["ref_logps"] - sum(values)) < 1e-4
        assert row["ref_token_logps"][start:] == pytest.approx(values, abs=1e-4)


class _Proxy:
    """An HTTP proxy in front of the engine server that can be shut down, as a server that dies mid-run."""

    def __init__(self, target: str):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                request = urllib.request.Request(outer.target + self.path, data=body, method=self.command)
                request.add_header("Content-Type", "application/json")
                with urllib.request.urlopen(request, timeout=120) as answer:
                    payload = answer.read()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward

            def log_message(self, *args):
                pass

        self.target = target
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_server_that_dies_mid_run_stops_it_with_a_clear_error_and_loses_no_checkpoint(engine, tmp_path):
    from transformers import TrainerCallback

    proxy = _Proxy(engine.base.base_url)

    class KillAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            proxy.close()

    args = _args(tmp_path, proxy.url, sample_every_steps=1, max_steps=4, save_strategy="steps", save_steps=1,
                 vllm_server_timeout=10.0)  # fmt: skip
    data = Dataset.from_dict({"prompt": PROMPTS})
    trainer = SeqTempTrainer(_fresh(engine), args, train_dataset=data, processing_class=_tokenizer(),
                             peft_config=_lora(), callbacks=[KillAfterFirstSave()])  # fmt: skip
    with pytest.raises(EngineError, match=f"{proxy.url}.*does not answer.*checkpoints already written are complete"):
        trainer.train()
    saved = checkpoints_in(str(tmp_path))
    assert saved and all(checkpoint_problem(folder) is None for folder in saved), saved
    # the run continues from its last checkpoint once a server answers again
    resumed = SeqTempTrainer(_fresh(engine), _args(tmp_path, engine.base.base_url, sample_every_steps=1,
                             max_steps=4, save_strategy="steps", save_steps=1), train_dataset=data,
                             processing_class=_tokenizer(), peft_config=_lora())  # fmt: skip
    resumed.train(resume_from_checkpoint=True)
    assert resumed.state.global_step == 4


def test_a_server_of_another_model_is_refused_on_the_first_batch(engine, tmp_path):
    other = _fresh(engine)
    with torch.no_grad():
        other.lm_head.weight.mul_(1.2)
    with pytest.raises(ValueError, match=r"first batch of samples of p .* differ from the scorer's by up to"):
        SeqTempTrainer(other, _args(tmp_path, engine.base.base_url), train_dataset=Dataset.from_dict(
            {"prompt": PROMPTS}), processing_class=_tokenizer(), peft_config=_lora())  # fmt: skip


def test_engine_settings_are_checked_by_name(tmp_path):
    with pytest.raises(ValueError, match="`vllm_mode` must be 'server', got 'colocate': .*cannot share"):
        _args(tmp_path, None, vllm_mode="colocate")
    with pytest.raises(ValueError, match="`use_vllm=True` with `loss_type='smc_distill'`"):
        _args(tmp_path, None, loss_type="smc_distill")
    with pytest.raises(ValueError, match="`vllm_server_timeout` must be a number > 0, got 0"):
        _args(tmp_path, None, vllm_server_timeout=0)
    assert _args(tmp_path, None, vllm_server_port=8123).vllm_server_port == 8123
