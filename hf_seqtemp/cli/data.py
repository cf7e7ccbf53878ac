# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Where the `hf-seqtemp` commands get their sequences: a dataset file or folder, or prompts to sample completions
of, checked before any model is loaded."""

from __future__ import annotations

import os

from ..checks import check_int
from .arguments import DataArguments, EvalArguments


def _read_dataset(path: str, split: str, split_flag: str = "--dataset_train_split"):
    import datasets

    if not os.path.exists(path):
        raise FileNotFoundError(
            f"`--dataset_path` {path!r} not found (working directory {os.getcwd()!r}): give an existing "
            "`load_from_disk` folder or .json/.jsonl file."
        )
    if os.path.isdir(path):
        loaded = datasets.load_from_disk(path)
    elif path.endswith(".jsonl") and os.path.isfile(path):
        _check_json_lines(path)  # a cut or malformed line is named, not a datasets traceback
        loaded = _from_json(path)
    elif path.endswith(".json") and os.path.isfile(path):
        if not sum(1 for _, line in utf8_lines(path, "--dataset_path") if line.strip()):  # every line read
            raise ValueError(f"`--dataset_path` {path!r} is empty: give a JSON list of example objects.")
        loaded = _from_json(path)
    else:
        raise ValueError(
            f"`--dataset_path` must be a `load_from_disk` folder or a .json/.jsonl file, got {path!r}; a text file "
            "of prompts, one per line, goes to `--sample_prompts_file` (completions are then sampled)."
        )
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise ValueError(f"`{split_flag}` {split!r} is not in {path!r}; its splits are {sorted(loaded)}.")
        loaded = loaded[split]
    return loaded


def _from_json(path: str):
    """`datasets.Dataset.from_json`, with a file that holds no example named (datasets says only that its split
    "corresponds to no data")."""
    import datasets

    try:
        loaded = datasets.Dataset.from_json(path)
    except ValueError as error:
        if "corresponds to no data" not in str(error):
            raise
        loaded = None
    if loaded is None or len(loaded) == 0:
        raise ValueError(
            f"`--dataset_path` {path!r} holds no example (an empty JSON list, or no object in it): give a JSON list "
            'of example objects, e.g. [{"prompt": ..., "completion": ...}].'
        )
    return loaded


def utf8_lines(path: str, flag: str):
    """The lines of the text file `path`, numbered from 1; a line that is not UTF-8 is a `ValueError` naming the
    file, the line, the byte and the fix (the decoder's own words name none of them)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"`{flag}` {path!r}: line {number} is not UTF-8 text (byte {raw[error.start]:#04x} at byte "
                    f"{error.start + 1} of the line). Save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 "
                    f"{os.path.basename(path)} > fixed{os.path.splitext(path)[1]}`."
                ) from None


def _check_json_lines(path: str) -> None:
    """Every non-blank line of the JSON Lines file `path` is one JSON object; else a `ValueError` naming the line."""
    import json

    examples = 0
    for number, line in utf8_lines(path, "--dataset_path"):
        if not line.strip():
            continue
        examples += 1
        try:
            row = json.loads(line)
        except ValueError as error:
            cut = " (cut short: was the file still being written?)" if not line.endswith("\n") else ""
            raise ValueError(
                f"`--dataset_path` {path!r}: line {number} is not valid JSON{cut}: {error.msg} at column "
                f"{error.colno}. Fix or remove that line; each line is one example, a JSON object."
            ) from None
        if not isinstance(row, dict):
            raise ValueError(  # noqa: TRY004 - a bad value in the user's file, not a wrong argument type
                f"`--dataset_path` {path!r}: line {number} is a JSON {type(row).__name__}, not an object: each "
                'line is one example, e.g. {"prompt": ..., "completion": ...}.'
            )
    if examples == 0:
        raise ValueError(
            f"`--dataset_path` {path!r} holds no example (the file is empty or blank): each line is one example, a "
            'JSON object such as {"prompt": ..., "completion": ...}.'
        )


def _read_prompts(data_args: DataArguments, tokenizer) -> list:
    """The prompts of --sample_prompts_file, as conversations when the tokenizer has a chat template."""
    if not os.path.isfile(data_args.sample_prompts_file):
        raise ValueError(f"`--sample_prompts_file` {data_args.sample_prompts_file!r} is not a file.")
    lines = utf8_lines(data_args.sample_prompts_file, "--sample_prompts_file")
    prompts = [line.strip() for _, line in lines if line.strip()]
    if not prompts:
        raise ValueError(f"`--sample_prompts_file` {data_args.sample_prompts_file!r} has no prompt (one per line).")
    from ..data import as_conversation

    if getattr(tokenizer, "chat_template", None):
        return [as_conversation(p, data_args.system_prompt) for p in prompts]
    return prompts


def _check_one_source(data_args: DataArguments) -> None:
    given = [
        v for v in (data_args.dataset_path, data_args.dataset_name, data_args.sample_prompts_file) if v is not None
    ]
    if len(given) != 1:
        raise ValueError("pass exactly one of `--dataset_path`, `--dataset_name` and `--sample_prompts_file`.")


def read_source(data_args: DataArguments, split: str, split_flag: str = "--dataset_train_split"):
    """The dataset of `--dataset_path` (a folder or JSON file) or `--dataset_name` (the Hub, or its cache)."""
    if data_args.dataset_path is not None:
        return _read_dataset(data_args.dataset_path, split, split_flag)
    import datasets

    name, config = data_args.dataset_name, data_args.dataset_config
    try:
        loaded = datasets.load_dataset(name, config)
    except Exception as error:  # noqa: BLE001 - offline, no such dataset, no such config: all named below
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(
            f"`--dataset_name` {name!r}{f' (config {config!r})' if config else ''} could not be read ({first}). On "
            "a machine without the Hub (HF_HUB_OFFLINE=1) only a dataset already in the Hugging Face cache can be; "
            "save it once with `load_dataset(...).save_to_disk(folder)` and pass `--dataset_path folder`."
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise ValueError(f"`{split_flag}` {split!r} is not in {name!r}; its splits are {sorted(loaded)}.")
        loaded = loaded[split]
    return loaded


def _check_pairs(data, fmt: str, path: str) -> None:
    """Fails unless some prompt of `data` has 2 completions: T_eff and τ compare completions of one prompt."""
    from collections import Counter

    from ..data import prompt_key

    keys = data["prompt_id"] if "prompt_id" in data.column_names else [prompt_key(row, fmt) for row in data]
    if max(Counter(map(str, keys)).values()) < 2:
        raise ValueError(
            f"every prompt of `--dataset_path` {path!r} has a single completion, but T_eff and Kendall tau compare "
            "completions of the same prompt: give at least 2 completions per prompt (or a shared `prompt_id` "
            "column), or give the prompts alone (`--sample_prompts_file`, or a file with only a `prompt` column) to "
            "have `--num_generations` completions of each sampled."
        )


def _eval_data(args: EvalArguments):
    """`(dataset, prompts)` for `eval`, checked before any model is loaded: a dataset with completions, or the
    prompts to sample `--num_generations` completions of (from a prompt-only dataset; `None` for the prompts file)."""
    _check_one_source(args)
    check_int(args.max_completion_length, "max_completion_length")
    check_int(args.num_generations, "num_generations")
    if args.dataset_path is not None or args.dataset_name is not None:
        from ..data import detect_format

        source = args.dataset_path or args.dataset_name
        data = read_source(args, args.dataset_test_split, "--dataset_test_split")
        fmt = detect_format(data.column_names, args.dataset_text_field, "--dataset_path")
        if fmt != "prompt_only":
            _check_pairs(data, fmt, source)
            return data, None
        print(
            f"{source} holds prompts only: sampling {args.num_generations} completions of each from the "
            "base model (as `--sample_prompts_file` does)"
        )
        prompts = list(data["prompt"])
    else:
        prompts = None
    if args.num_generations < 2:
        raise ValueError(
            f"`--num_generations` {args.num_generations}: T_eff and Kendall tau compare completions of the same "
            "prompt, so `eval` samples at least 2 per prompt: set `--num_generations 2` or more (8 by default)."
        )
    return None, prompts


def _sample(args: EvalArguments, model, tokenizer, prompts):
    from ..data import sample_dataset

    return sample_dataset(
        model,
        tokenizer,
        prompts if prompts is not None else _read_prompts(args, tokenizer),
        num_samples=args.num_generations,
        max_new_tokens=args.max_completion_length,
        seed=args.sample_seed,
        system_prompt=args.system_prompt,
    )
