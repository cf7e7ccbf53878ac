# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""lm-evaluation-harness runs our routes (hf_seqtemp.harness): the `seqtemp` model's answers are `seqtemp_generate`'s
at the same seed, its likelihoods are the route's density (refused by name without one), its cost lands in the
results, and the plain `hf` model with `peft=` evaluates a folder our trainer saved. Offline, on a tiny word-level
model and two local tasks of four rows. Skipped without lm-eval (the `eval` extra), except in CI (`CI` set)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

try:
    import lm_eval
except ImportError as error:
    if os.environ.get("CI"):
        raise ImportError(f"CI runs the harness tests, and lm-eval (the `eval` extra) is missing: {error}") from error
    pytest.skip(f"the harness tests need lm-eval: pip install -e '.[eval]' ({error})", allow_module_level=True)

from lm_eval.tasks import TaskManager
from peft import LoraConfig
from tiny_models import tiny_llama
from toy import as_dataset, sample_sequences
from transformers import AutoModelForCausalLM

from hf_seqtemp import SeqTempConfig, SeqTempTrainer, load_tempered, seqtemp_generate
from hf_seqtemp.harness import prompt_seed

WORDS = {"<s>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "</s>": 5}
EOS = 5
PROMPTS = ["a", "b a", "c", "d c b"]
NEW = 4  # max_gen_toks
T = 0.5
SEED = 7


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(WORDS, unk_token="</s>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="</s>")


def _base():
    """Six words, EOS 5 (also the pad id), conditionals far from uniform."""
    return tiny_llama(6, seed=3, head_scale=2.0, eos_token_id=EOS, pad_token_id=EOS, max_position_embeddings=64)


_GEN_TASK = """task: seqtemp_tiny_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["</s>"]
  max_gen_toks: {new}
  do_sample: false
metric_list:
  - metric: exact_match
"""

_CHOICE_TASK = """task: seqtemp_tiny_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{prompt}}}}"
doc_to_choice: ["a", "b c", "d"]
doc_to_target: "{{{{label}}}}"
metric_list:
  - metric: acc
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """A base folder (model and tokenizer), a tempered adapter our trainer saved (T = 0.5, two steps), the two
    tasks' YAML and data files, and their `TaskManager`."""
    root = tmp_path_factory.mktemp("harness")
    _base().save_pretrained(root / "base")
    _tokenizer().save_pretrained(root / "base")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(root / "base")
    values = {"output_dir": str(root / "run"), "target_temperature": T, "max_steps": 2, "seed": 0, "use_cpu": True}
    values.update(per_device_train_batch_size=8, learning_rate=1e-2, save_strategy="no", report_to=[])
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    data = as_dataset(sample_sequences(_base(), 16, 4, seed=2))
    trainer = SeqTempTrainer(model, SeqTempConfig(disable_tqdm=True, **values), train_dataset=data, peft_config=lora)
    trainer.train()
    trainer.save_model(str(root / "adapter"))
    tasks = root / "tasks"
    tasks.mkdir()
    rows = [{"prompt": p, "answer": "a", "label": i % 3} for i, p in enumerate(PROMPTS)]
    (tasks / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tasks / "gen.yaml").write_text(_GEN_TASK.format(data=tasks / "rows.jsonl", new=NEW))
    (tasks / "choice.yaml").write_text(_CHOICE_TASK.format(data=tasks / "rows.jsonl"))
    return {
        "base": str(root / "base"),
        "adapter": str(root / "adapter"),
        "include_path": str(tasks),
        "tasks": TaskManager(include_path=str(tasks)),
    }


def _evaluate(harness, task: str, model: str = "seqtemp", gen_kwargs=None, **model_args):
    model_args = {"device": "cpu", "batch_size": 1, **model_args}
    return lm_eval.simple_evaluate(
        model=model, model_args=model_args, tasks=[task], task_manager=harness["tasks"], log_samples=True,
        gen_kwargs=gen_kwargs,
    )  # fmt: skip


def _responses(results, task: str) -> dict[str, list]:
    """`{prompt: [response per request]}` of a task's logged samples."""
    return {s["doc"]["prompt"]: [r[0] for r in s["resps"]] for s in results["samples"][task]}


def _direct_answer(model, prompt: str, **route) -> str:
    """What `model.generate(..., custom_generate=seqtemp_generate)` answers to `prompt` at the harness's seed."""
    tokenizer = _tokenizer()
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    seed = prompt_seed(SEED, ids)
    torch.manual_seed(seed)
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=NEW,
        custom_generate=seqtemp_generate,
        generator=torch.Generator().manual_seed(seed),
        pad_token_id=EOS,
        do_sample=True,
        top_k=0,
        **route,
    )
    return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)


ROUTES = {
    "smc-pimh": {"strategy": "smc", "seq_temperature": T, "num_particles": 3, "pimh_steps": 2},
    "mcmc": {"strategy": "mcmc", "seq_temperature": T, "mcmc_steps": 2},
    "adapter": {"strategy": "adapter", "seq_temperature": T},
}


@pytest.mark.parametrize("route", ROUTES)
def test_generations_are_seqtemp_generates_at_the_same_seed(harness, route):
    adapter = {"adapter": harness["adapter"]} if route == "adapter" else {}
    results = _evaluate(harness, "seqtemp_tiny_gen", pretrained=harness["base"], seed=SEED, **adapter, **ROUTES[route])
    answers = {prompt: responses[0] for prompt, responses in _responses(results, "seqtemp_tiny_gen").items()}
    model = load_tempered(harness["adapter"]) if adapter else AutoModelForCausalLM.from_pretrained(harness["base"])
    expected = {prompt: _direct_answer(model, prompt, **ROUTES[route]) for prompt in PROMPTS}
    assert answers == expected
    assert len(set(answers.values())) > 1  # the answers depend on the prompt: a comparison that can fail
    cost = results["config"]["seqtemp"]["cost"]["generate_until"]
    assert cost["answers"] == len(PROMPTS) and cost["model_calls"] >= len(PROMPTS)
    assert "exact_match,none" in results["results"]["seqtemp_tiny_gen"]


def test_the_cost_is_the_routes_own_count(harness):
    """SMC's own `model_calls` (its `SMCOutput`) summed over the prompts is what the harness records."""
    route = ROUTES["smc-pimh"]
    results = _evaluate(harness, "seqtemp_tiny_gen", pretrained=harness["base"], seed=SEED, **route)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(harness["base"]), _tokenizer()
    calls = 0
    for prompt in PROMPTS:
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
        out = model.generate(
            ids, max_new_tokens=NEW, custom_generate=seqtemp_generate, return_dict_in_generate=True, **route
        )
        calls += out.model_calls
    recorded = results["config"]["seqtemp"]["cost"]["generate_until"]
    assert recorded["model_calls"] == calls
    # a call forwards the particles of the 3 runs (PIMH 2 steps) in one batch: more rows than one run's 3 particles
    assert recorded["token_forwards"] > 3 * calls


def _direct_logps(model, prompt: str, token_temperature: float = 1.0) -> list[float]:
    tokenizer = _tokenizer()
    context = tokenizer(prompt)["input_ids"]
    logps = []
    for choice in ["a", "b c", "d"]:
        ids = torch.tensor([tokenizer(f"{prompt} {choice}")["input_ids"]])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1] / token_temperature
        tokens = logits.log_softmax(-1).gather(-1, ids[0, 1:, None])[:, 0]
        logps.append(float(tokens[len(context) - 1 :].sum()))
    return logps


@pytest.mark.parametrize("route", ["p", "token", "adapter"])
def test_loglikelihoods_are_the_routes_density(harness, route):
    args = {"pretrained": harness["base"]}
    base = AutoModelForCausalLM.from_pretrained(harness["base"])
    if route == "adapter":
        args.update(adapter=harness["adapter"], strategy="adapter")  # its temperature: the adapter's own
        model, temperature = load_tempered(harness["adapter"]), 1.0
    else:
        model, temperature = base, 0.5 if route == "token" else 1.0
        args.update(token_temperature=temperature) if route == "token" else None
    results = _evaluate(harness, "seqtemp_tiny_choice", **args)
    logps = {
        prompt: [r[0] for r in responses] for prompt, responses in _responses(results, "seqtemp_tiny_choice").items()
    }
    for prompt in PROMPTS:
        assert logps[prompt] == pytest.approx(_direct_logps(model, prompt, temperature), abs=1e-4)
    if route != "p":  # another density than p's: the comparison can fail
        assert logps[PROMPTS[0]] != pytest.approx(_direct_logps(base, PROMPTS[0]), abs=1e-3)
    assert results["config"]["seqtemp"]["cost"]["loglikelihood"]["answers"] == 3 * len(PROMPTS)


@pytest.mark.parametrize(
    ("route", "name"),
    [
        (ROUTES["smc-pimh"], "strategy='smc', PIMH 2 steps"),
        ({"strategy": "mcmc", "seq_temperature": T}, "strategy='mcmc'"),
        ({"strategy": "glauber", "seq_temperature": T}, "strategy='glauber'"),
    ],
)
def test_a_route_without_a_density_refuses_loglikelihood_by_name(harness, route, name):
    with pytest.raises(ValueError, match=f"{name} at sequence temperature 0.5 draws whole answers and has no density"):
        _evaluate(harness, "seqtemp_tiny_choice", pretrained=harness["base"], **route)


def test_plain_hf_with_peft_evaluates_our_folder_as_load_tempered_does(harness):
    """`lm_eval --model hf --model_args pretrained=BASE,peft=FOLDER` on the trainer's save: greedy answers equal those
    of `load_tempered(FOLDER)`, and differ from the base's somewhere (the adapter was loaded)."""
    results = _evaluate(harness, "seqtemp_tiny_gen", model="hf", pretrained=harness["base"], peft=harness["adapter"])
    answers = {prompt: responses[0] for prompt, responses in _responses(results, "seqtemp_tiny_gen").items()}
    tokenizer = _tokenizer()

    def greedy(model, prompt):
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
        out = model.generate(ids, max_new_tokens=NEW, do_sample=False, pad_token_id=EOS)
        return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)

    tempered = load_tempered(harness["adapter"])
    assert answers == {prompt: greedy(tempered, prompt) for prompt in PROMPTS}
    base = AutoModelForCausalLM.from_pretrained(harness["base"])
    assert answers != {prompt: greedy(base, prompt) for prompt in PROMPTS}


def test_the_command_line_writes_the_routes_cost_into_the_results_json(harness, tmp_path):
    """`python -m hf_seqtemp.harness` is lm-eval's command line with `seqtemp` registered: the results JSON it writes
    holds the route and its cost."""
    model_args = f"pretrained={harness['base']},strategy=smc,seq_temperature={T},num_particles=3,pimh_steps=1"
    command = [sys.executable, "-m", "hf_seqtemp.harness", "--model", "seqtemp", "--model_args", model_args]
    command += ["--tasks", "seqtemp_tiny_gen", "--include_path", harness["include_path"], "--device", "cpu"]
    command += ["--batch_size", "1", "--output_path", str(tmp_path / "out")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "out").rglob("results_*.json")
    route = json.loads(path.read_text())["config"]["seqtemp"]
    assert route["route"] == f"strategy='smc', PIMH 1 step at sequence temperature {T:g}"
    assert route["cost"]["generate_until"]["answers"] == len(PROMPTS)
    assert route["cost"]["generate_until"]["model_calls_per_answer"] > 0


@pytest.mark.parametrize("length", ["max_completion_length", "max_new_tokens"])
def test_gen_kwargs_take_trls_and_transformers_names_for_the_answers_length(harness, length):
    """`--gen_kwargs max_completion_length=2` (TRL's name) or `max_new_tokens=2` (transformers') bound the answers as
    lm-eval's `max_gen_toks=2` does, in place of the task's own `max_gen_toks` (4), which gives longer ones."""
    route = {"pretrained": harness["base"], "seed": SEED, "token_temperature": 3.0}  # flat: long answers
    full = _responses(_evaluate(harness, "seqtemp_tiny_gen", **route), "seqtemp_tiny_gen")
    short = _responses(_evaluate(harness, "seqtemp_tiny_gen", gen_kwargs=f"{length}=2", **route), "seqtemp_tiny_gen")
    tokenizer = _tokenizer()
    for prompt in PROMPTS:
        words = tokenizer(short[prompt][0], add_special_tokens=False)["input_ids"]
        assert len(words) <= 2
    assert any(len(tokenizer(full[p][0], add_special_tokens=False)["input_ids"]) > 2 for p in PROMPTS)


@pytest.mark.parametrize(
    ("gen_kwargs", "message"),
    [
        ("seq_temperature=0.25", "`seq_temperature` cannot be a request's generation setting .* `--model_args`"),
        ("num_generations=4", "`num_generations` cannot be a request's generation setting .* `repeats`"),
        ("max_completion_length=2,max_new_tokens=3", "sets the answer's length twice, differently"),
    ],
)
def test_gen_kwargs_that_would_change_the_route_or_contradict_are_refused_by_name(harness, gen_kwargs, message):
    with pytest.raises(ValueError, match=message):
        _evaluate(harness, "seqtemp_tiny_gen", gen_kwargs=gen_kwargs, pretrained=harness["base"], **ROUTES["mcmc"])


# lm-eval's own flags mean what they mean in lm-eval (issue 67, A)


def _seqtemp(harness, **model_args):
    """A `seqtemp` model built here, so that a test sees what it was asked (`cost`) across `simple_evaluate` runs."""
    from hf_seqtemp.harness import SeqTempLM

    return SeqTempLM(**{"pretrained": harness["base"], "device": "cpu", "batch_size": 1, **model_args})


def test_use_cache_serves_a_second_run_without_a_request_to_the_model(harness, tmp_path):
    """lm-eval's `--use_cache` keys an answer by the request as lm-eval made it: the model must not rewrite it."""
    lm = _seqtemp(harness, seed=SEED, **ROUTES["mcmc"])
    runs = []
    for _ in range(2):
        results = lm_eval.simple_evaluate(
            model=lm, tasks=["seqtemp_tiny_gen"], task_manager=harness["tasks"], log_samples=True,
            use_cache=str(tmp_path / "cache"), gen_kwargs="max_completion_length=3",
        )  # fmt: skip
        runs.append(_responses(results, "seqtemp_tiny_gen"))
        assert lm.cost.summary()["generate_until"]["answers"] == len(PROMPTS)  # the second run asked nothing
    assert runs[0] == runs[1]


def _answers(harness, torch_seed, **model_args):
    lm = _seqtemp(harness, token_temperature=3.0, **model_args)  # flat: the seed shows in the answers
    results = lm_eval.simple_evaluate(
        model=lm, tasks=["seqtemp_tiny_gen"], task_manager=harness["tasks"], log_samples=True,
        torch_random_seed=torch_seed,
    )  # fmt: skip
    return _responses(results, "seqtemp_tiny_gen"), results["config"]["seqtemp"]


def test_lm_evals_seed_seeds_the_draws_unless_model_args_name_one(harness):
    """`--seed` (its torch seed) seeds the draws and the results record it; `seed=` in the model args wins."""
    first, route = _answers(harness, 5)
    assert (route["seed"], route["seed_from"]) == (5, "lm-eval's torch seed (`--seed`)")
    assert _answers(harness, 5)[0] == first
    other, route = _answers(harness, 0)
    assert other != first and route["seed"] == 0
    fixed, route = _answers(harness, 0, seed=5)
    assert fixed == first and (route["seed"], route["seed_from"]) == (5, "the model argument `seed=`")
    assert _answers(harness, 1, seed=5)[0] == first


def test_batch_size_auto_does_not_count_its_probe_and_whole_answer_routes_refuse_it(harness):
    """lm-eval's `batch_size=auto` probes forward passes before the requests: the cost is the requests' alone.
    A whole-answer route runs many rows per prompt, which the probe does not measure: it wants an integer."""
    costs = {}
    for batch_size in ("auto", 4):
        results = _evaluate(harness, "seqtemp_tiny_gen", pretrained=harness["base"], seed=SEED, token_temperature=2.0,
                            batch_size=batch_size)  # fmt: skip
        costs[batch_size] = results["config"]["seqtemp"]["cost"]["generate_until"]
    assert costs["auto"] == costs[4] and costs[4]["token_forwards"] > 0
    for batch_size in ("auto", 64):  # the probe of loglikelihood requests too (both: one batch of the 12 requests)
        results = _evaluate(harness, "seqtemp_tiny_choice", pretrained=harness["base"], batch_size=batch_size)
        costs[batch_size] = results["config"]["seqtemp"]["cost"]["loglikelihood"]
    assert costs["auto"] == costs[64] and costs[64]["answers"] == 3 * len(PROMPTS)
    for route in ("smc-pimh", "mcmc"):
        with pytest.raises(ValueError, match="`batch_size='auto'` .* pass an integer `batch_size`"):
            _seqtemp(harness, batch_size="auto", **ROUTES[route])


def test_a_whole_answer_route_refuses_a_run_with_loglikelihood_tasks_before_sampling(harness):
    lm = _seqtemp(harness, **ROUTES["smc-pimh"])
    with pytest.raises(ValueError, match=r"cannot score the loglikelihood requests of \['seqtemp_tiny_choice'\]"):
        lm_eval.simple_evaluate(model=lm, tasks=["seqtemp_tiny_gen", "seqtemp_tiny_choice"],
                                task_manager=harness["tasks"])  # fmt: skip
    assert lm.cost.summary() == {}  # nothing was sampled


def test_a_device_this_machine_lacks_is_refused_by_name(harness):
    """lm-eval's `hf` model falls back to another device and its results record the one asked for."""
    missing = f"cuda:{torch.cuda.device_count()}"  # one past the last: on no machine
    with pytest.raises(ValueError, match=f"`device='{missing}'` is not on this machine .* pass `device=cpu`"):
        _seqtemp(harness, device=missing)


def test_the_command_line_sets_the_device_the_run_uses_unless_told(harness):
    from hf_seqtemp.harness.__main__ import with_device

    here = "cuda:0" if torch.cuda.is_available() else "cpu"
    run = ["prog", "--model", "seqtemp", "--tasks", "x"]
    assert with_device(run) == [*run, "--device", here]
    assert with_device([*run, "--device", "cuda:1"]) == [*run, "--device", "cuda:1"]
    assert with_device([*run, "--config", "run.yaml"]) == [*run, "--config", "run.yaml"]  # the file may set it
    assert with_device(["prog", "ls", "tasks"]) == ["prog", "ls", "tasks"]
