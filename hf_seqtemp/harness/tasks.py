# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""Our checkable chat task families as lm-evaluation-harness tasks: local data files and YAML written by the package.

[`write_tasks`] writes, for each family of [`hf_seqtemp.tasks.chat`] (`addition`, `capitals`, `comparison`), its
held-out questions (the split of [`split_family`], so the prompts a trained adapter never saw) as a JSON-lines file and
a `generate_until` task that draws `repeats` answers per question and scores them with the family's own checker:

- `pass@1`: the fraction of a question's answers the checker accepts (averaged over questions: the expected score of
  one answer);
- `pass@k` (`k = repeats`, 8 by default): the unbiased estimate of "one of k answers is right" ([`pass_at_k`]);
- `exact_match`: lm-eval's own `exact_match` between the answer the checker reads from each reply and the reference
  (equal to `pass@1`: a check that the harness and the checker read the same answers).

The questions are chat prompts: run the tasks with `apply_chat_template=True` and `system_instruction=SYSTEM_PROMPT`
(`--apply_chat_template --system_instruction "Answer briefly."` on the command line), which renders exactly the text
[`conversation`] renders for the benchmarks; [`evaluate_tasks`] sets both.

Every task carries the tag `seqtemp_tasks`, so `--tasks seqtemp_tasks` runs the three.

Example (Python):
```python
folder = write_tasks("outputs/harness_tasks", num_held_out=16)
results = evaluate_tasks("seqtemp", "default_model=True,strategy=smc,seq_temperature=0.25,num_particles=8", folder)
```
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..metrics.pass_at_k_math import pass_at_k
from ..tasks.chat import FAMILIES, LONG_ANSWER_FAMILIES, SYSTEM_PROMPT, get_family, split_family

TAG = "seqtemp_tasks"
CHECKS_MODULE = "seqtemp_checks"
DEFAULT_FAMILIES = ("addition", "capitals", "comparison")


def task_name(family: str) -> str:
    """The harness task of a family: `seqtemp_<family>`."""
    return f"seqtemp_{family}"


def score_answers(family: str, answer: str, replies: list[str], k: int) -> dict[str, float]:
    """The task's metrics of one question: `pass@1` (fraction of `replies` the family's checker accepts), `pass@k`
    and lm-eval's `exact_match` of the answers the checker reads against `answer`.

    Example:
    ```python
    >>> score_answers("addition", "12", ["7 + 5 = 12.", "It is 13", "12"], k=2)
    {'pass@1': 0.6666666666666666, 'pass@2': 1.0, 'exact_match': 0.6666666666666666}
    ```
    """
    from lm_eval.api.metrics import exact_match_hf_evaluate

    checker = get_family(family)
    if k > len(replies):
        raise ValueError(f"`k` ({k}) exceeds the {len(replies)} replies of a question: set the task's `repeats` >= k.")
    correct = sum(bool(checker.check(answer, reply)) for reply in replies)
    read = [checker.extract(reply) or "" for reply in replies]
    matched = float(exact_match_hf_evaluate(predictions=read, references=[answer] * len(read))["exact_match"])
    return {"pass@1": correct / len(replies), f"pass@{k}": pass_at_k(len(replies), correct, k), "exact_match": matched}


def process_results_for(family: str, k: int):
    """The task's `process_results`: lm-eval passes the question's row and `[replies]` (its `repeats` answers, kept by
    the `take_first_k` filter)."""

    def process_results(doc: dict, results: list) -> dict[str, float]:
        replies = results[0]
        if isinstance(replies, str):  # a filter that kept one answer
            replies = [replies]
        return score_answers(family, doc["answer"], list(replies), k)

    process_results.__name__ = f"process_{family}"
    return process_results


def questions_beside(module_file: str, data_name: str):
    """A task's `custom_dataset`: the questions of the JSON-lines file `data_name` in the folder of `module_file`
    (the checks module [`write_tasks`] writes beside the YAML), so that the folder may be moved or copied; lm-eval
    passes the task's metadata and model arguments, which it ignores."""
    path = Path(module_file).resolve().parent / data_name

    def custom_dataset(**_):
        import datasets

        if not path.is_file():
            raise FileNotFoundError(
                f"the harness task's questions {path} are missing: the folder holds the YAML without its data file. "
                f"Write the tasks again there: `python -m hf_seqtemp.harness.tasks {path.parent}`."
            )
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})

    custom_dataset.__name__ = f"dataset_{path.stem}"
    return custom_dataset


def _task_yaml(family: str, repeats: int, k: int, max_gen_toks: int) -> str:
    config = {
        "task": task_name(family),
        "tag": [TAG],
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{question}}",
        "doc_to_target": "{{answer}}",
        "repeats": repeats,
        # exact sampling of p (the `hf` model, `seqtemp` with strategy=p); a seqtemp route replaces these settings
        "generation_kwargs": {
            "until": [],
            "max_gen_toks": max_gen_toks,
            "do_sample": True,
            "temperature": 1.0,
            "top_k": 0,
            "top_p": 1.0,
        },
        "filter_list": [{"name": "all", "filter": [{"function": "take_first_k", "k": repeats}]}],
        "metric_list": [
            {"metric": name, "aggregation": "mean", "higher_is_better": True}
            for name in ("pass@1", f"pass@{k}", "exact_match")
        ],
        "metadata": {"version": 1.0, "family": family, "system_instruction": SYSTEM_PROMPT},
    }
    import yaml

    header = f"# lm-evaluation-harness task written by hf_seqtemp.harness.tasks (family {family!r})\n"
    checks = f"process_results: !function {CHECKS_MODULE}.process_{family}\n"
    data = (
        f"custom_dataset: !function {CHECKS_MODULE}.dataset_{family}  # the questions: the .jsonl beside this file\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False, width=120) + data + checks


def write_tasks(
    output_dir: str | Path,
    families: tuple[str, ...] | list[str] = DEFAULT_FAMILIES,
    num_held_out: int = 16,
    split_seed: int = 0,
    repeats: int = 8,
    k: int = 8,
    max_gen_toks: int | None = None,
) -> Path:
    """Writes the harness tasks of `families` into `output_dir` and returns it (lm-eval's `include_path`).

    Args:
        output_dir (`str` or `Path`): the folder (created). Each YAML reads its questions from the JSON-lines file
            beside it (through the checks module, also beside it), so the folder may be moved or copied.
        families (`list[str]`): families of [`hf_seqtemp.tasks.chat.FAMILIES`].
        num_held_out (`int`, defaults to 16): questions per family: the first held-out prompts of
            `split_family(family, 0, num_held_out, seed=split_seed)`, those the benchmarks hold out from training.
        split_seed (`int`, defaults to 0): the split's seed.
        repeats (`int`, defaults to 8): answers drawn per question.
        k (`int`, defaults to 8): the `pass@k` reported besides `pass@1`; `1 <= k <= repeats`.
        max_gen_toks (`int`, *optional*): the longest answer, in tokens: by default 16, and 96 for the long-answer
            families (`LONG_ANSWER_FAMILIES`: a sentence comes before the answer). Fewer than 96 tokens for a
            long-answer family is refused: a cut reply reads as no answer, and pass@1 would measure the cut.
    """
    unknown = [name for name in families if name not in FAMILIES]
    if unknown:
        raise ValueError(f"`families` must be among {sorted(FAMILIES)}, got {unknown}.")
    given = max_gen_toks is not None
    short = [family for family in families if family in LONG_ANSWER_FAMILIES and given and max_gen_toks < 96]
    if short:
        raise ValueError(
            f"`max_gen_toks={max_gen_toks}` cuts the replies of {short}, which write a sentence before their answer "
            "(about 40 tokens, up to 96): give at least 96, or write them apart from the short-answer families."
        )
    lengths = {
        family: max_gen_toks if given else (96 if family in LONG_ANSWER_FAMILIES else 16) for family in families
    }
    for name, value in (
        ("num_held_out", num_held_out),
        ("repeats", repeats),
        ("max_gen_toks", max_gen_toks if given else 16),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}.")
    if not 1 <= k <= repeats:
        raise ValueError(f"`k` must lie in [1, repeats={repeats}], got {k}: pass@k needs k answers per question.")
    for family in families:
        available = len(get_family(family).items)
        if num_held_out > available:
            raise ValueError(
                f"`num_held_out` must be at most {available} (the {family!r} questions), got {num_held_out}."
            )
    folder = Path(output_dir).resolve()
    held_out = {family: split_family(get_family(family), 0, num_held_out, seed=split_seed)[1] for family in families}
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Written by hf_seqtemp.harness.tasks: each task's questions (its JSON-lines file, beside this module)",
             "# and process_results (its family's checker).",
             "from hf_seqtemp.harness.tasks import process_results_for, questions_beside", ""]  # fmt: skip
    for family in families:
        rows = [{"question": q, "answer": a, "family": family} for q, a in held_out[family]]
        (folder / f"{task_name(family)}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        (folder / f"{task_name(family)}.yaml").write_text(_task_yaml(family, repeats, k, lengths[family]))
        lines.append(f"dataset_{family} = questions_beside(__file__, {task_name(family) + '.jsonl'!r})")
        lines.append(f"process_{family} = process_results_for({family!r}, k={k})")
    (folder / f"{CHECKS_MODULE}.py").write_text("\n".join(lines) + "\n")
    return folder


def evaluate_tasks(model, model_args, include_path: str | Path, families=DEFAULT_FAMILIES, **kwargs) -> dict:
    """`lm_eval.simple_evaluate` of the tasks [`write_tasks`] wrote into `include_path`, as chat prompts with the
    families' system prompt; `model` is a registered name (`"seqtemp"`, `"hf"`) or an `LM`, `kwargs` go to
    `simple_evaluate` (`log_samples=True` keeps every reply)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from . import model as _registers_seqtemp  # noqa: F401

    return lm_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=[task_name(family) for family in families],
        task_manager=TaskManager(include_path=str(include_path)),
        apply_chat_template=True,
        system_instruction=SYSTEM_PROMPT,
        **kwargs,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hf_seqtemp.harness.tasks",
        description="Write the checkable task families as lm-evaluation-harness tasks (run them with "
        '--include_path DIR --tasks seqtemp_tasks --apply_chat_template --system_instruction "Answer briefly.").',
    )
    parser.add_argument("output_dir")
    parser.add_argument("--families", nargs="+", default=list(DEFAULT_FAMILIES), choices=sorted(FAMILIES))
    parser.add_argument("--num_held_out", type=int, default=16)
    parser.add_argument("--split_seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max_gen_toks", type=int, default=None, help="default: 16, and 96 for long-answer families")
    args = parser.parse_args(argv)
    try:
        folder = write_tasks(
            args.output_dir, args.families, args.num_held_out, args.split_seed, args.repeats, args.k, args.max_gen_toks
        )
    except ValueError as error:  # a bad setting: one line, as argparse reports its own (exit status 2)
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"wrote {', '.join(task_name(f) for f in args.families)} (tag {TAG}) into {folder}")


if __name__ == "__main__":
    main()
