# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The scored event is the one users mean, in every dataset layout: the prompt generation conditions on (chat template
and generation prompt included), then a completion that ends with EOS unless the row says it was truncated.

"The same event in every layout" means the same *rendered text*: a plain-text prompt and a conversational prompt
render different tokens (the chat template), so the layouts compared here are built to render the same text."""

import logging

import pytest
from datasets import Dataset
from tiny_models import tiny_causal_lm
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from hf_seqtemp import SeqTempConfig, SeqTempTrainer
from hf_seqtemp.data import GROUP_ID, PROMPT_IDS, prepare_dataset

BOS, EOS, USER, ASSISTANT, A, B, C, D, PAD, THINK, END_THINK = range(11)
PROMPT = [BOS, USER, A, B, EOS, ASSISTANT]  # "<s><|user|> a b </s> <|assistant|> "
EVENT = [*PROMPT, C, D, EOS]
MASK = [0] * len(PROMPT) + [1] * 3


def chat_tokenizer(generation_prompt: str = "<|assistant|> "):
    """Words a-d, BOS and EOS, and a chat template whose turns end with EOS (as `<|im_end|>` does)."""
    words = ["<s>", "</s>", "<|user|>", "<|assistant|>", "a", "b", "c", "d", "<pad>", "<think>", "</think>"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        additional_special_tokens=["<|user|>", "<|assistant|>", "<think>", "</think>"],
    )
    tokenizer.chat_template = (
        "<s>{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} </s> {% endfor %}"
        "{% if add_generation_prompt %}" + generation_prompt + "{% endif %}"
    )
    return tokenizer


def merging_tokenizer():
    """Characters merged into `The`, `Ther`, `There` (so `"The" + "re is"` tokenises across the boundary), EOS and no
    BOS, as GPT-2's tokenizer."""
    vocab = {"</s>": 0}
    for char in "Thercatis ":
        vocab.setdefault(char, len(vocab))
    merges = [("T", "h"), ("Th", "e"), ("The", "r"), ("Ther", "e")]
    vocab.update({a + b: len(vocab) + i for i, (a, b) in enumerate(merges)})
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab, merges)), eos_token="</s>")


def _prepare(rows, tokenizer, **kwargs):
    return prepare_dataset(Dataset.from_list(rows), tokenizer, "text", 64, "train_dataset", **kwargs)


def _user(text):
    return [{"role": "user", "content": text}]


def _assistant(text):
    return [{"role": "assistant", "content": text}]


def test_every_layout_scores_the_same_event_with_eos_and_the_same_group():
    tokenizer = chat_tokenizer()
    layouts = {
        "prompt/completion, text": {"prompt": "<|user|> a b </s> <|assistant|>", "completion": " c d"},
        "prompt/completion, conversational": {"prompt": _user("a b"), "completion": _assistant("c d")},
        "messages": {"messages": _user("a b") + _assistant("c d")},
        "pre-tokenised with EOS": {"input_ids": EVENT, "completion_mask": MASK},
        "pre-tokenised without EOS": {"input_ids": EVENT[:-1], "completion_mask": MASK[:-1]},
        "text completion carrying EOS": {"prompt": "<|user|> a b </s> <|assistant|>", "completion": " c d </s>"},
        "text completion past EOS": {"prompt": "<|user|> a b </s> <|assistant|>", "completion": " c d </s> a"},
    }
    groups = set()
    for layout, row in layouts.items():
        prepared = _prepare([row], tokenizer)
        assert prepared["input_ids"] == [EVENT] and prepared["completion_mask"] == [MASK], layout
        groups.add(prepared[GROUP_ID][0])
    for prompt in ("<|user|> a b </s> <|assistant|>", _user("a b")):  # prompt-only: completions to be sampled
        prepared = _prepare([{"prompt": prompt}], tokenizer)
        assert prepared[PROMPT_IDS] == [PROMPT]
        groups.add(prepared[GROUP_ID][0])
    assert len(groups) == 1
    truncated = {"prompt": "<|user|> a b </s> <|assistant|>", "completion": " c d", "truncated": True}
    assert _prepare([truncated], tokenizer)["input_ids"] == [EVENT[:-1]]  # marked truncated: no EOS appended
    truncated = {"input_ids": EVENT[:-1], "completion_mask": MASK[:-1], "truncated": True}
    assert _prepare([truncated], tokenizer)["input_ids"] == [EVENT[:-1]]


def test_an_unconditional_text_is_the_same_event_as_an_empty_prompt():
    tokenizer = chat_tokenizer()
    layouts = [{"text": "a b c"}, {"prompt": "", "completion": "a b c"}, {"input_ids": [BOS, A, B, C]}]
    prepared = [_prepare([row], tokenizer) for row in layouts]
    assert all(p["input_ids"] == [[BOS, A, B, C, EOS]] for p in prepared)
    assert all(p["completion_mask"] == [[0, 1, 1, 1, 1]] for p in prepared)
    assert len({p[GROUP_ID][0] for p in prepared}) == 1
    # without a BOS the event starts from EOS, as generation from an empty prompt does, and every token is scored
    merging = merging_tokenizer()
    the, space, c, a, t, eos = merging.convert_tokens_to_ids(["The", " ", "c", "a", "t", "</s>"])
    prepared = [_prepare([row], merging) for row in ({"text": "The cat"}, {"prompt": "", "completion": "The cat"})]
    assert all(p["input_ids"] == [[eos, the, space, c, a, t, eos]] for p in prepared)
    assert len({p[GROUP_ID][0] for p in prepared}) == 1


def test_a_one_token_text_prompt_is_not_duplicated(caplog):
    tokenizer = merging_tokenizer()
    r, e, space, i, s, the, eos = tokenizer.convert_tokens_to_ids(["r", "e", " ", "i", "s", "The", "</s>"])
    prepared = _prepare([{"prompt": "The", "completion": "re is"}, {"prompt": "The", "completion": " is"}], tokenizer)
    # was [The, There, ' ', i, s]: the prompt, then the whole text again ("TheThere is")
    assert prepared["input_ids"] == [[the, r, e, space, i, s, eos], [the, space, i, s, eos]]
    assert prepared["completion_mask"] == [[0, 1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1]]


def test_a_prompt_that_is_not_a_prefix_warns_once_with_the_count_and_is_scored_as_written(caplog):
    tokenizer = merging_tokenizer()
    r, e, space, i, s, the, ther, eos = tokenizer.convert_tokens_to_ids(
        ["r", "e", " ", "i", "s", "The", "Ther", "</s>"]
    )
    rows = [
        {"prompt": "The", "completion": "re is"},
        {"prompt": "Ther", "completion": "e is"},
        {"prompt": "The", "completion": " is"},
    ]
    with caplog.at_level(logging.WARNING):
        prepared = _prepare(rows, tokenizer)
    assert prepared["input_ids"] == [
        [the, r, e, space, i, s, eos],
        [ther, e, space, i, s, eos],
        [the, space, i, s, eos],
    ]
    warnings = [
        r.getMessage() for r in caplog.records if "do not start with the prompt's own tokens" in r.getMessage()
    ]
    assert len(warnings) == 1 and "in 2 of 3 examples" in warnings[0] and "row 0" in warnings[0]


def test_a_generation_prompt_the_conversation_does_not_render_is_kept(caplog):
    """A template whose generation prompt adds `<think> </think>`: the completion is scored given the full generation
    prompt, as generation (and the prompt-only path) conditions on it, and the prompt keeps its group."""
    tokenizer = chat_tokenizer("<|assistant|> <think> </think> ")
    prompt = [*PROMPT, THINK, END_THINK]
    rows = [
        {"prompt": _user("a b"), "completion": _assistant("c d")},
        {"prompt": _user("a b"), "completion": _assistant("d")},
    ]
    with caplog.at_level(logging.WARNING):
        prepared = _prepare(rows, tokenizer)
        messages = _prepare([{"messages": _user("a b") + _assistant("c d")}], tokenizer)
    assert prepared["input_ids"] == [[*prompt, C, D, EOS], [*prompt, D, EOS]] and messages["input_ids"][0] == [
        *prompt,
        C,
        D,
        EOS,
    ]
    assert prepared["completion_mask"][0] == [0] * len(prompt) + [1] * 3
    only = _prepare([{"prompt": _user("a b")}], tokenizer)
    assert only[PROMPT_IDS] == [prompt]
    assert set(prepared[GROUP_ID]) == set(messages[GROUP_ID]) == set(only[GROUP_ID])
    warned = [r.getMessage() for r in caplog.records if "do not start with the prompt's own tokens" in r.getMessage()]
    assert len(warned) == 2 and "in 2 of 2 examples" in warned[0] and "in 1 of 1 examples" in warned[1]


def test_a_prompt_id_that_joins_different_prompts_is_an_error_naming_both():
    tokenizer = chat_tokenizer()
    rows = [
        {"prompt": "a b", "completion": " c", "prompt_id": "q1"},
        {"prompt": "a b", "completion": " d", "prompt_id": "q1"},
        {"prompt": "a c", "completion": " d", "prompt_id": "q1"},
    ]
    with pytest.raises(
        ValueError, match=r"rows 0 and 2 share `prompt_id`='q1' but have different prompts: '<s> a b' "
    ):
        _prepare(rows, tokenizer)
    rows[2]["prompt_id"] = "q2"
    assert len(set(_prepare(rows, tokenizer)[GROUP_ID])) == 2


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"prompt": _user("a"), "completion": "c"}],
            r"row 0, column `completion`: expected a list of chat messages .* \(the prompt is conversational\), got str",
        ),
        (
            [{"prompt": "a", "completion": " c"}, {"prompt": "a", "completion": None}],
            r"row 1, column `completion`: expected str \(the prompt is text\), got NoneType",
        ),
        (
            [{"messages": _user("a") + _assistant("c")}, {"messages": _user("a") + _assistant(None)}],
            r"row 1, column `messages`, message 1 `content`: expected str .*, got NoneType",
        ),
        (
            [{"prompt": [{"role": "user", "content": 7}], "completion": [{"role": "assistant", "content": 8}]}],
            r"row 0, column `prompt`, message 0 `content`: expected str .*, got int",
        ),
        ([{"text": "a b"}, {"text": None}], r"row 1, column `text`: expected str, got NoneType"),
        ([{"prompt": None}], r"row 0, column `prompt`: expected str or a list of chat messages"),
        (
            [{"prompt": "a", "completion": " c", "truncated": "yes"}],
            r"row 0, column `truncated`: expected bool \(or None\), got str",
        ),
    ],
)
def test_a_bad_cell_is_one_error_naming_the_row_the_column_and_the_type(rows, message):
    with pytest.raises(TypeError, match=r"`train_dataset` " + message):
        _prepare(rows, chat_tokenizer())


def _word_tokenizer():
    """BOS and four words, no EOS (as the tiny model has none): sampled completions run to their length limit."""
    backend = Tokenizer(models.WordLevel({"<s>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "<pad>": 5}, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", pad_token="<pad>")


@pytest.mark.parametrize("fresh", [False, True])
def test_max_length_holds_for_sampled_completions(tmp_path, caplog, fresh):
    args = SeqTempConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        max_steps=1,
        save_strategy="no",
        max_length=6,
        max_completion_length=5,
        num_generations=2,
        per_device_train_batch_size=2,
        sample_every_steps=1 if fresh else None,
    )
    data = Dataset.from_dict({"prompt": ["a b c", "d d"]})  # 4 and 3 tokens with BOS
    with caplog.at_level(logging.WARNING):
        trainer = SeqTempTrainer(
            tiny_causal_lm(6, seed=4), args, train_dataset=data, processing_class=_word_tokenizer()
        )
        if fresh:
            batch = trainer.data_collator([{"pool_index": i} for i in range(4)])
            rows = [trainer.train_dataset.rows[i] for i in range(4)]
        else:
            rows = list(trainer.train_dataset)
    assert [len(r["input_ids"]) for r in rows] == [6] * 4 and all(r["truncated"] for r in rows)
    assert [sum(r["completion_mask"]) for r in rows] == [2, 2, 3, 3]
    assert "cut 4 of 4 sampled completions so that prompt + completion fits max_length=6" in caplog.text
    if fresh:
        assert batch["input_ids"].shape == (4, 6)


@pytest.mark.slow
def test_the_embedded_tokenizer_and_chat_template(caplog):
    """SmolLM2's own tokenizer and template: the text, conversational and `messages` layouts of one rendered event
    coincide and end with `<|im_end|>`; a thinking generation prompt is kept, with a warning."""
    from transformers import AutoTokenizer

    from hf_seqtemp.models.default import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "The capital of France?"}]
    rendered = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    layouts = [
        {"prompt": rendered, "completion": "Paris."},
        {"prompt": prompt, "completion": _assistant("Paris.")},
        {"messages": prompt + _assistant("Paris.")},
    ]
    prepared = [_prepare([row], tokenizer) for row in layouts]
    assert prepared[0]["input_ids"][0][-1] == end
    assert all(p["input_ids"] == prepared[0]["input_ids"] and p[GROUP_ID] == prepared[0][GROUP_ID] for p in prepared)
    ids, mask = prepared[0]["input_ids"][0], prepared[0]["completion_mask"][0]
    assert tokenizer.decode([i for i, m in zip(ids, mask) if m]) == "Paris.<|im_end|>"
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "'<|im_start|>assistant\n'", "'<|im_start|>assistant\n<think>\n\n</think>\n\n'"
    )
    assert "<think>" in tokenizer.chat_template
    with caplog.at_level(logging.WARNING):
        thinking = _prepare([layouts[1]], tokenizer)
    ids, mask = thinking["input_ids"][0], thinking["completion_mask"][0]
    scored = [i for i, m in zip(ids, mask) if m]
    assert tokenizer.decode(ids[: len(ids) - len(scored)]).endswith("assistant\n<think>\n\n</think>\n\n")
    assert tokenizer.decode(scored) == "Paris.<|im_end|>"
    assert "in 1 of 1 examples" in caplog.text
    plain = _prepare([{"prompt": "Hello wor", "completion": "ld!"}], tokenizer)
    assert plain["input_ids"][0] == tokenizer("Hello wor")["input_ids"] + tokenizer("ld!")["input_ids"] + [end]
