# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The `hf-seqtemp` commands `train`, `eval` and `bench`, each given its parsed flags (`generate`:
[`~hf_seqtemp.cli.generate`])."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from ..checks import check_int, check_temperature
from .arguments import (
    EvalArguments,
    ModelArguments,
    TrainScriptArguments,
)
from .data import _check_one_source, _eval_data, _read_prompts, _sample, read_source
from .held_out import MIN_HELD_OUT_PROMPTS, announce_split


def _flagged(message: str, dataclass_types) -> str:
    """Rewrites backticked field names in an error message into the flags that set them (`x` → `--x`)."""
    names = {f.name for cls in dataclass_types for f in fields(cls)}
    return re.sub(r"`(\w+)`", lambda m: f"`--{m.group(1)}`" if m.group(1) in names else m.group(0), message)


def _load_base(
    model_args: ModelArguments, required: bool = True, trust_remote_code=None, quantization=None, init_kwargs=None
):
    """(model, tokenizer) for --default_model / --model_name_or_path, or (None, None) when neither is given; with
    TRL's --model_revision, --attn_implementation, --trust_remote_code, a quantisation config and `train`'s
    --model_init_kwargs (`from_pretrained` keywords, which win)."""
    if model_args.default_model and model_args.model_name_or_path:
        raise ValueError("pass either `--default_model` or `--model_name_or_path`, not both.")
    dtype = _dtype(model_args.dtype)
    if init_kwargs and model_args.default_model:
        if set(init_kwargs) - {"dtype"}:
            raise ValueError(
                f"`--model_init_kwargs` {sorted(init_kwargs)} with `--default_model`: the embedded model takes only "
                "`dtype` (or `--dtype`); pass `--model_name_or_path` for other `from_pretrained` keywords."
            )
        dtype = _dtype(init_kwargs["dtype"]) if isinstance(init_kwargs["dtype"], str) else init_kwargs["dtype"]
    if model_args.default_model:
        from ..models.default import load_default_model

        return load_default_model(**({} if dtype in (None, "auto") else {"dtype": dtype}))
    if model_args.model_name_or_path is None:
        if required:
            raise ValueError("no base model: pass `--model_name_or_path <id or folder>` or `--default_model`.")
        return None, None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    trust = getattr(model_args, "trust_remote_code", False) if trust_remote_code is None else trust_remote_code
    shared = {"revision": model_args.model_revision, "trust_remote_code": trust}
    options = {"dtype": dtype or "float32", **shared}
    if model_args.attn_implementation is not None:
        options["attn_implementation"] = model_args.attn_implementation
    if quantization is not None:
        options["quantization_config"] = quantization
    options.update(init_kwargs or {})  # `--model_init_kwargs` (train): TRL's name for these keywords, which win
    shared.update({key: options[key] for key in ("revision", "trust_remote_code")})
    from ..offline import named_when_offline

    with named_when_offline(model_args.model_name_or_path, "`--model_name_or_path`"):
        model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, **options)
        return model, AutoTokenizer.from_pretrained(model_args.model_name_or_path, **shared)


def _quantization(args: TrainScriptArguments):
    """TRL's bitsandbytes flags as a `BitsAndBytesConfig`, or `None` (named when bitsandbytes is not installed)."""
    if not (args.load_in_4bit or args.load_in_8bit):
        return None
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is None:
        flag = "--load_in_4bit" if args.load_in_4bit else "--load_in_8bit"
        raise ImportError(
            f"`{flag}` needs the `bitsandbytes` package (and, for most of its kernels, a CUDA GPU), which is not "
            "installed: `pip install bitsandbytes`, or load the model unquantised (leave the flag out)."
        )
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(
        load_in_4bit=args.load_in_4bit,
        load_in_8bit=args.load_in_8bit,
        bnb_4bit_compute_dtype=_dtype(args.dtype) if args.dtype not in (None, "auto") else None,
        bnb_4bit_quant_type=args.bnb_4bit_quant_type,
        bnb_4bit_use_double_quant=args.use_bnb_nested_quant,
        bnb_4bit_quant_storage=args.bnb_4bit_quant_storage,
    )


def _lora(args: TrainScriptArguments):
    """The `LoraConfig` of TRL's LoRA flags (`--lora_*`, `--use_rslora`, `--use_dora`), or `None` without PEFT."""
    if not args.use_peft:
        return None
    from peft import LoraConfig

    targets = args.lora_target_modules
    return LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        target_modules="all-linear" if targets == ["all-linear"] else targets,
        target_parameters=args.lora_target_parameters,
        modules_to_save=args.lora_modules_to_save,
        task_type=args.lora_task_type,
        use_rslora=args.use_rslora,
        use_dora=args.use_dora,
    )


def _dtype(name: str | None):
    """`--dtype`: None, "auto", or the torch dtype it names."""
    if name is None or name == "auto":
        return name
    import torch

    return getattr(torch, name)


# ---------------------------------------------------------------------------------------------------- commands
def run_train(script_args: TrainScriptArguments, training_args) -> int:
    """Trains a LoRA adapter with [`SeqTempTrainer`] and saves it to `--output_dir` (and pushes with --push_to_hub)."""
    from ..hub import check_can_push
    from .parser import missing_integration

    missing = missing_integration(training_args.report_to)
    if missing:
        raise ValueError(missing)
    if training_args.push_to_hub:
        check_can_push(training_args.hub_token)  # before hours of training, not after
    from ..trainer import SeqTempTrainer

    if not 0.0 <= script_args.eval_fraction < 1.0:
        raise ValueError(f"`--eval_fraction` must be in [0, 1), got {script_args.eval_fraction}.")
    check_int(script_args.lora_r, "lora_r")
    prompts_only = script_args.sample_prompts_file is not None
    if not prompts_only:  # read and check the data before loading a model
        from ..data import detect_format

        _check_one_source(script_args)
        data = read_source(script_args, script_args.dataset_train_split)
        if detect_format(data.column_names, training_args.dataset_text_field, "--dataset_path") == "text":
            source = script_args.dataset_path or script_args.dataset_name
            print(
                f"hf-seqtemp train: {source!r} holds a `{training_args.dataset_text_field}` column and no prompts "
                "(TRL's language-modeling format): each row is trained as one whole sequence of an unconditional "
                "distribution (the empty prompt), all rows one group. If its rows are prompts, name the column "
                "`prompt` (completions are then sampled from the base model) or give `prompt` and `completion`.",
                file=sys.stderr,
            )
    quantization = _quantization(script_args)
    init_kwargs = training_args.model_init_kwargs  # the CLI loads the model: TRL's keywords apply to that load
    model, tokenizer = _load_base(script_args, True, training_args.trust_remote_code, quantization, init_kwargs)
    training_args.model_init_kwargs = None
    if prompts_only:
        # prompt only: the trainer samples `--num_generations` completions per prompt from the base model
        from datasets import Dataset

        data = Dataset.from_dict({"prompt": _read_prompts(script_args, tokenizer)})
    train, held_out, unseen = data, None, False
    if script_args.dataset_test_split is not None:
        if script_args.eval_fraction > 0 or prompts_only:
            raise ValueError(
                "`--dataset_test_split` measures on a split of --dataset_path / --dataset_name: pass it without "
                "`--eval_fraction` (which holds out prompts of the training data instead) and without "
                "`--sample_prompts_file`."
            )
        path = script_args.dataset_path
        if path is not None and not os.path.isdir(path):
            raise ValueError(
                f"`--dataset_test_split` needs a dataset of several splits (a `save_to_disk` folder or "
                f"--dataset_name), but `--dataset_path` {path!r} is one file: one split. Use `--eval_fraction` to hold "
                "out some of its prompts."
            )
        held_out = read_source(script_args, script_args.dataset_test_split, "--dataset_test_split")
    if script_args.eval_fraction > 0:
        from ..data import split_by_prompt

        train, held_out, unseen = split_by_prompt(
            data, script_args.eval_fraction, training_args.seed, training_args.dataset_text_field
        )
    announce_split(train, held_out, prompts_only, training_args.num_generations, training_args.dataset_text_field)
    lora = _lora(script_args)
    trainer = SeqTempTrainer(
        model, training_args, train_dataset=train, eval_dataset=held_out, processing_class=tokenizer, peft_config=lora
    )
    _announce_plan(model, tokenizer, training_args, train, held_out)  # once the trainer took every setting
    if held_out is None:  # told once every flag is checked: a flag error shows only its own message
        print(
            "hf-seqtemp train: nothing will be measured after training (`--eval_fraction` is 0): pass "
            "`--eval_fraction 0.25` to hold out a quarter of the prompts (2 prompts at least), or measure later with "
            "`hf-seqtemp eval` on other prompts.",
            file=sys.stderr,
        )
    trainer.train(resume_from_checkpoint=_resume_value(training_args.resume_from_checkpoint))
    if held_out is not None:
        trainer.evaluate()
    trainer.save_model(training_args.output_dir, _internal_call=True)
    if trainer.is_world_process_zero():
        print(_saved_summary(training_args.output_dir, unseen))
    if training_args.push_to_hub:
        trainer.push_to_hub(dataset_names=script_args.dataset_names or None)
        print(f"pushed to https://huggingface.co/{trainer.hub_model_id}")
    return 0


def _announce_plan(model, tokenizer, args, train, held_out) -> None:
    """Prints the work of a run on prompt-only data (prompts × completions × tokens, sampling calls, steps) and its
    estimated time on this machine, before any of it starts ([`~hf_seqtemp.trainer.plan`])."""
    from ..data import prepare_dataset
    from ..data.prepare import PROMPT_IDS, is_prompt_only
    from ..trainer.plan import estimate_seconds, work_plan

    prepared = prepare_dataset(train, tokenizer, args.dataset_text_field, args.max_length, "--dataset_path")
    if not is_prompt_only(prepared):
        return
    held = None
    if held_out is not None:
        held = prepare_dataset(held_out, tokenizer, args.dataset_text_field, args.max_length, "held-out prompts")
    prompts = list(prepared[PROMPT_IDS]) + (
        list(held[PROMPT_IDS]) if held is not None and is_prompt_only(held) else []
    )
    longest = max(len(ids) for ids in prompts)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    held_prompts = len(set(held["group_id"])) if held is not None and is_prompt_only(held) else 0
    plan = work_plan(args, len(set(prepared["group_id"])), held_prompts, longest, world)
    device = next(model.parameters()).device
    if world == 1 and not args.use_vllm and device.type == args.device.type:  # timed where it will run
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        plan.seconds = estimate_seconds(model, plan, pad)
    if int(os.environ.get("RANK", "0")) == 0:
        print(plan.describe(), flush=True)


def _resume_value(value: str | None) -> str | bool | None:
    """`--resume_from_checkpoint`: `True` (the last complete checkpoint of --output_dir), a folder, or `None`.

    Example:
    ```python
    >>> _resume_value("True"), _resume_value("out/checkpoint-6"), _resume_value(None)
    (True, 'out/checkpoint-6', None)
    ```
    """
    if value is None or str(value).strip().lower() in ("", "false", "none"):
        return None
    return True if str(value).strip().lower() == "true" else str(value)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _saved_summary(folder: str, unseen_prompts: bool = False) -> str:
    """What `train` saved, with the held-out figures its `seqtemp_config.json` records (or why there are none);
    "never trained on" only when the held-out prompts are unseen prompts."""
    from ..config import SequenceTemperatureConfig

    config = SequenceTemperatureConfig.from_pretrained(folder)
    where = f"adapter saved to {folder} (seqtemp_config.json, model card README.md)"
    if config.eval_t_eff is None:
        return f"{where}; nothing measured: pass `--eval_fraction` to hold out prompts and measure on them."
    over = "the held-out prompts"
    if config.eval_sequences is not None and config.eval_prompts is not None:
        over = f"{config.eval_sequences} completions of {_count(config.eval_prompts, 'held-out prompt')}"
    if not unseen_prompts:
        over = f"{config.eval_sequences} held-out rows of a corpus without prompts (unseen rows, not unseen prompts)"
    few = ""
    if unseen_prompts and config.eval_prompts is not None and config.eval_prompts < MIN_HELD_OUT_PROMPTS:
        few = f" (on fewer than {MIN_HELD_OUT_PROMPTS} prompts: indicative only)"
    return (
        f"{where}\nmeasured within prompts on {over}{', never trained on' if unseen_prompts else ''}: T_eff {config.eval_t_eff:.4f} (target "
        f"{config.target_temperature:g}), Kendall tau {config.eval_kendall_tau:.4f}, NLL/token "
        f"{config.eval_nll:.4f}; the card compares them with the base model and the myopic baseline{few}"
    )


def run_eval(args: EvalArguments) -> int:
    """Prints a table of T_eff, Kendall τ and NLL per token (base, myopic baseline, adapter) and writes JSON."""
    from ..config import SequenceTemperatureConfig
    from ..hub import ROW_NAMES, measure_held_out
    from ..loading import load_tempered
    from ..measure import format_table
    from ..models.default import DEFAULT_MODEL_ID

    if args.adapter_path is None:
        raise ValueError("`--adapter_path` is required: the tempered adapter folder or Hub repo id to evaluate.")
    config = SequenceTemperatureConfig.from_pretrained(args.adapter_path)
    if config.model_family != "causal_lm":
        raise ValueError(
            f"the adapter is for a {config.model_family} model: `hf-seqtemp eval` supports causal LMs only (schedule "
            "variance of diffusion models is not supported here; use `hf_seqtemp.likelihood` from Python)."
        )
    if not (args.default_model or args.model_name_or_path):
        if config.base_model_id == DEFAULT_MODEL_ID:
            args.default_model = True
        else:
            args.model_name_or_path = config.base_model_id
    data, prompts = _eval_data(args)  # every check that needs no model, before loading one
    base, tokenizer = _load_base(args)
    if data is None:
        data = _sample(args, base, tokenizer, prompts)
    myopic_t = args.token_temperature if args.token_temperature is not None else config.target_temperature
    check_temperature(myopic_t, "token_temperature")
    model = load_tempered(args.adapter_path, base_model=base)
    reports, logps = measure_held_out(
        model,
        data,
        myopic_t,
        tokenizer=tokenizer,
        batch_size=args.per_device_eval_batch_size,
        max_length=args.max_length,
    )
    prompts = len(set(logps["groups"]))
    print(
        f"{args.adapter_path}: target T = {config.target_temperature:g}; {logps['base'].numel()} completions of "
        f"{_count(prompts, 'prompt')}, T_eff and Kendall tau within prompts (exact at T: T_eff = T, tau = 1)"
    )
    print(format_table({ROW_NAMES[name]: report for name, report in reports.items()}))
    if args.output_json:
        payload = {
            "adapter": args.adapter_path,
            "base_model": config.base_model_id,
            "target_temperature": config.target_temperature,
            "myopic_token_temperature": myopic_t,
            "num_sequences": int(logps["base"].numel()),
            "num_prompts": prompts,
            "reports": reports,
        }
        Path(args.output_json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output_json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _bench_candidates() -> list[Path]:
    """Where `benchmarks/run_all.py` is looked for: the working directory, then the source checkout."""
    return [
        Path.cwd() / "benchmarks" / "run_all.py",
        Path(__file__).resolve().parents[2] / "benchmarks" / "run_all.py",
    ]


def run_bench(argv: list[str]) -> int:
    """Runs `benchmarks/run_all.py` with `argv` passed through, writing under `./outputs/` unless `--results` says
    otherwise; returns its exit status."""
    script = next((path for path in _bench_candidates() if path.is_file()), None)
    if script is None:
        raise FileNotFoundError(
            "`hf-seqtemp bench` needs benchmarks/run_all.py, which is not in the working directory nor next to the "
            "package: run it from a source checkout of hf_seqtemp."
        )
    if not any(arg.split("=", 1)[0] == "--results" for arg in argv):  # the results go where the command runs
        argv = [*argv, "--results", str(Path.cwd() / "outputs" / "bench")]
    env = {**os.environ, "HF_SEQTEMP_PROG": "hf-seqtemp bench"}
    return subprocess.call([sys.executable, str(script), *argv], env=env)
