# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""`SeqTempConfig`: the training arguments of [`SeqTempTrainer`]."""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import TrainingArguments

from ..losses import LOSSES
from .config_checks import check_config, normalise_config
from .engine_arguments import EngineArguments
from .trl_names import RefusedTRLArguments, refusing_grpo_only


@dataclass
class SeqTempConfig(RefusedTRLArguments, EngineArguments, TrainingArguments):
    r"""
    Configuration class for [`SeqTempTrainer`]: sequence-level temperature fine-tuning.

    Only the parameters specific to sequence temperature are listed here; for the others see
    [`~transformers.TrainingArguments`]. Paper: *Temperature Scaling in Discrete Sequence (Language) Models*
    (Scheufele, Blohm, Garg), Section 5.2.

    Parameters:
        > Parameters that control the training

        target_temperature (`float`, *optional*, defaults to `0.5`):
            Sequence temperature T to reach: the trained model q_T should satisfy q_T ∝ p^{1/T} over whole
            sequences. T < 1 sharpens (more likely sequences get more mass), T > 1 flattens. Must be > 0.
        loss_type (`str`, *optional*, defaults to `"ratio"`):
            Objective, a key of `hf_seqtemp.losses.LOSSES`: `"ratio"` (the likelihood-ratio loss, the default),
            `"ssts"` (importance sampling), `"smc_distill"` (SMC particles of p^{1/T}), or a recall-oriented loss
            (`"c_div"`, `"trunc_r"`, `"lambda_pr"`, below).

            `"ratio"` is the likelihood-ratio variance loss L_ratio / L_p (Eq. 19-20) over all pairs of sequences in
            the (cross-rank) batch; `"ssts"` is the importance-sampling loss L_SSTS / LHTS (Eq. 8, 18), a token NLL
            weighted by self-normalised weights.

            For a diffusion model `"ssts"` is Eq. 18 / 28 over the unmasking steps of k orders per example, drawn
            from its order seed and shared with the reference, whose per-step conditionals are precomputed into the
            `ref_step_logps` column (k·m values per example); log p(x | state before step s) is their suffix sum
            along the order, a one-order estimate (`hf_seqtemp.losses.reference_conditionals`). It is scaled per
            completion token and logs `ess/fraction`; `likelihood_method` must then be `None` or `"mc"`.

            `"smc_distill"` trains on sequential Monte Carlo particles of p^{1/T} that the trainer draws for every
            prompt of a prompt-only `train_dataset` (`num_generations` particles per prompt, see `smc_proposal`): the
            self-normalised weighted NLL of the particles, weights normalised within each prompt (the forward KL to
            the SMC estimate of p_T(·|c)). It logs `ess/fraction` (the particles' ESS / N after SMC's resampling) and
            `ess/proposal_fraction`, the particles' estimate of how good the trained model is as an importance
            sampler of p_T(·|c): the mean over prompts of 1 / E_{p_T}[p_T / q] (1 at the target; optimistic where q's
            tails are lighter than the target's, as few particles miss the answers that q under-weights, and
            in-sample on particles re-used across epochs without `sample_every_steps`, which q has fitted).
        nll_weight (`float`, *optional*, defaults to `0.1`, and to `0` for `loss_type="smc_distill"`):
            λ: weight of the model's own token NLL added to the objective. It prevents *likelihood drift* (the ratio
            loss alone is also minimised by shifting every log q by a constant per length), at the price of pulling
            the temperature back toward 1. The paper combines L_p with the NLL (Section 5.2.2). Must be ≥ 0. For a
            diffusion model the term is its own diffusion objective L_diff (Eq. 4, the ELBO) instead of the token NLL.
            SMC distillation is itself a likelihood of the target and needs no such term: a λ > 0 given with it adds
            the *unweighted* NLL of the particles, which pulls q toward the proposal.
        init_from_token_temperature (`bool`, *optional*, defaults to `False`):
            Start the adapter at the myopic baseline: the decoder's final norm becomes a trainable PEFT
            `modules_to_save` copy scaled by 1/T, which divides every logit by T (checked at start-up). Training then
            only has to learn the sequence-level correction. Needs a `peft_config` and a causal LM whose final norm
            feeds a bias-free linear head (Llama, Mistral, Qwen, SmolLM, GPT-2 style).
        init_token_temperature (`float`, *optional*):
            The token temperature t that `init_from_token_temperature=True` starts at (default: T). On long answers
            the token temperature whose sequence T_eff is T lies well below T (the per-step normalisers add up over
            the answer): start at that once-tuned t (`hf_seqtemp.tune_token_temperature_once`) and training only learns
            what one scalar cannot. Must be > 0; needs `init_from_token_temperature=True`.

        > Parameters of the recall-oriented losses (`loss_type` in `"c_div"`, `"trunc_r"`, `"lambda_pr"`)

        c_div_alpha (`float`, *optional*, defaults to `1.4`):
            α > 1 of the conditional Tsallis divergence of `loss_type="c_div"`; larger α weighs the tokens the
            model under-covers more (recall), α → 1 recovers the NLL.
        trunc_r_quantile (`float`, *optional*, defaults to `0.8`):
            Level in (0, 1] of the rolling quantile of recent sequence log-likelihoods under which `"trunc_r"`
            trains on a sequence; 1 trains on every sequence.
        lambda_pr_lambda (`float`, *optional*, defaults to `0.5`):
            λ > 0 of the precision–recall divergence of `"lambda_pr"`; λ < 1 favours recall, λ > 1 precision.

        > Parameters that control diffusion models (ignored for causal LMs)

        likelihood_method (`str` or `None`, *optional*, defaults to `None`):
            How log q(x) and log p(x) of a diffusion model are computed: `"exact"` is the block dynamic program
            (Prop. 4.6, loss L_p; block diffusion only, cost O(L 2^B)), `"mc"` the k-order Monte-Carlo estimate
            log p̃ (Eq. 23, loss L_k of Eq. 24). `None` picks `"exact"` for block diffusion and `"mc"` for masked
            diffusion (whose exact likelihood sums over all L! orders).
        num_orders (`int`, *optional*, defaults to `4`):
            k: random unmasking orders per sequence and step for the trained model's estimate log q̃ (`"mc"`).
            Fresh orders are drawn at every step. Must be ≥ 1.
        ref_num_orders (`int` or `None`, *optional*, defaults to `None`):
            k for the reference estimate log p̃ (`"mc"`), which is computed once, so it may be larger than
            `num_orders`. The orders of example i are drawn from the seed `(seed · 1000003 + i) mod 2^63`
            (`hf_seqtemp.trainer.families.order_seed`), stored in the `ref_order_seed` column, so the reference is
            reproducible. `None` uses `num_orders`. Must be ≥ 1. With `loss_type="ssts"` the trained model is
            scored along these same seeded orders (not fresh ones), so it must be `None` or equal `num_orders`.

        > Parameters that control the prompt groups and the sampling of completions

        num_generations (`int`, *optional*, defaults to `8`):
            Completions of one prompt in a batch (TRL's name). A prompted model is tempered per prompt, so the
            temperature losses compare completions of the same prompt only: batches are built from runs of
            `num_generations` completions of one prompt (as TRL's GRPO does), and a prompt-only dataset gets this many
            completions per prompt sampled from the reference. Must be ≥ 2 for `"ratio"` and `"ssts"`, and
            `per_device_train_batch_size` × processes must be a multiple of it.
        max_completion_length (`int`, *optional*, defaults to `64`):
            Longest completion sampled for a prompt-only dataset (a completion also ends at EOS). Sampling is exact:
            token temperature 1, no top-k / top-p, from the reference p (the adapter disabled).
        sampling_batch_tokens (`int`, *optional*, defaults to `8192`):
            Prompt-only data: the size of one sampling call before training, in tokens: as many rows as fit
            `rows × (longest prompt + max_completion_length)`, so that many prompts share a `generate` call (at least
            one row). Each call is seeded from `seed` and its place, so the completions depend on it: with one seed,
            8, 64 and 8192 draw three different pools (each an exact sample of p). A resume keeps the value it was
            trained with (another one is refused).
        sample_every_steps (`int` or `None`, *optional*, defaults to `None`):
            Fresh samples of p during training, for a prompt-only `train_dataset`: `None` samples once, before
            training; an integer k samples again every k optimisation steps.

            `None` samples `num_generations` completions per prompt once, before training, and trains on that fixed
            set (epochs re-use it): p, the
            reference, does not change, so one sample of it stays a sample of it (GRPO samples its *policy*, which
            does). An integer k keeps `num_generations` completion slots per prompt and starts a new generation
            every k optimisation steps: a slot drawn in an earlier generation is resampled (and its reference
            log-probabilities recomputed) the next time a batch reads it, so a long run is not limited to one finite
            sample. k = 1 samples every batch afresh, as GRPO does. Needs a causal LM; with full fine-tuning it keeps
            a frozen copy of the model as the reference. (TRL's `steps_per_generation` counts micro-batches and
            defaults to sampling every optimisation step; it is refused here with this translation.)
        num_generations_eval (`int` or `None`, *optional*, defaults to `None`):
            Completions sampled per prompt for a prompt-only `eval_dataset` (TRL's name); `None` uses
            `num_generations`. ≥ 2: the figures compare completions of one prompt.
        smc_proposal (`str`, *optional*, defaults to `"token"`):
            With `loss_type="smc_distill"`, what proposes the SMC particles: `"token"` (token temperature T of the
            reference p, training-free Power-SMC) or `"adapter"` (the adapter being trained, refreshed at every
            generation of particles; needs a `peft_config`). The target is p^{1/T} with p the reference either way.
        smc_ess_threshold (`float`, *optional*, defaults to `0.5`):
            With `loss_type="smc_distill"`, resample a prompt's particles when their effective sample size falls
            below this fraction of `num_generations` (0: never, importance sampling with final weights). In [0, 1].
        prompt_id_column (`str`, *optional*, defaults to `"prompt_id"`):
            Column that names each example's prompt group, when the dataset has it (any ids). Without it the group
            is the prompt's token ids (identical prompts share a group whatever the dataset layout); a plain-text
            corpus is one group.

        > Parameters that control the model

        model_init_kwargs (`dict` or `None`, *optional*, defaults to `None`):
            Keyword arguments of `AutoModelForCausalLM.from_pretrained` when the trainer's `model` is a Hub id or a
            path (TRL's name), e.g. `{"dtype": "bfloat16"}`.
        trust_remote_code (`bool`, *optional*, defaults to `False`):
            Passed to `from_pretrained` (model and tokenizer) when the trainer's `model` is a Hub id or a path, as
            in TRL's configs: allows a model whose code lives in its repository. Only for repositories you trust.
        disable_dropout (`bool`, *optional*, defaults to `True`):
            Set every dropout probability of the model to 0, the adapter's own (`lora_dropout`) included, however the
            adapter arrives (`peft_config` or a `PeftModel`), as TRL does after adding the adapter. TRL's name; the
            default is DPO's and KTO's, not GRPO's (`False`), on purpose: the reference p is scored in eval mode, and
            with dropout on the trained model's forward in train mode is another distribution, so at initialisation
            T_eff and τ read other than 1 (GPT-2 and OPT ship dropout 0.1). `False` keeps every dropout as it is.

        > Parameters that control the data preprocessing

        max_length (`int`, *optional*, defaults to `512`):
            Maximum tokens per example (prompt + completion). Longer examples of the dataset are dropped with a
            warning that counts them, never truncated: a truncated sequence is a different event with a different
            likelihood. A completion sampled for a prompt-only dataset is cut to fit instead (it is then the event
            "these tokens first" of p, marked `truncated`), with a warning that counts the cut completions.
        dataset_text_field (`str`, *optional*, defaults to `"text"`):
            Column holding plain text. Datasets may instead be in any of TRL's other formats: `prompt`/`completion`
            (text or conversational; only completion tokens are scored and trained), `messages` (the last assistant
            turn is the completion), `prompt` only (completions are sampled), or pre-tokenised `input_ids` (with an
            optional `completion_mask`). Chat templates apply to conversational examples, as in TRL. In every layout a
            completion ends with EOS (appended when missing, as TRL's SFT does, unless the row's boolean `truncated`
            column is `True`) and its prompt is what generation conditions on ([`~hf_seqtemp.data.formats`]).
        precompute_ref_log_probs (`bool`, *optional*, defaults to `True`):
            Compute the reference log-probabilities log p(x) once before training (in batches of
            `per_device_eval_batch_size`, with a progress bar) and store them as dataset columns keyed by example.
            With `False` they are recomputed at every step (the adapter disabled, or a frozen copy without PEFT).

        > Parameters that control checkpoints

        overwrite_output_dir (`bool`, *optional*, defaults to `False`):
            A run that starts afresh (no `resume_from_checkpoint`) in an `output_dir` holding `checkpoint-*` folders
            of an earlier run raises an error instead of overwriting them. `True` deletes them first and starts
            afresh. Resuming (`trainer.train(resume_from_checkpoint=True)`, or the CLI's `--resume_from_checkpoint`)
            continues from the last complete checkpoint, with the pool of fresh samples and its random stream.

        chat_template_path (`str`, *optional*, defaults to `None`):
            As TRL's: a Jinja file, or a tokenizer (folder or Hub id) whose chat template the tokenizer takes before
            the data are rendered (saved with the adapter). A template needing special tokens the tokenizer lacks is
            refused: TRL would add them and resize the embeddings, which changes the base model p.

        > Deprecated parameters

        precompute_ref_logps (`bool`, *optional*):
            Deprecated alias of `precompute_ref_log_probs`; removed in a later release.

        > Parameters documented with their own classes

        The sampling engine's fields, TRL's names for its vLLM server mode, are documented in
        [`~hf_seqtemp.trainer.engine_arguments.EngineArguments`]; TRL's parameters refused by name (each raises
        when set, saying why and what to use) in [`~hf_seqtemp.trainer.trl_names.RefusedTRLArguments`].

    > [!NOTE]
    > Defaults that differ from [`~transformers.TrainingArguments`]: `logging_steps=10`,
    > `remove_unused_columns=False` (the reference columns must reach the loss), `report_to="none"`,
    > `learning_rate=1e-4` (LoRA), and `dataloader_pin_memory=False` when there is no accelerator (or `use_cpu`).
    """

    # Parameters that control the training
    target_temperature: float = field(
        default=0.5,
        metadata={
            "help": "Sequence temperature T to reach (q_T ∝ p^{1/T}), in [1e-3, 1e3]; T < 1 sharpens, T > 1 flattens."
        },
    )
    loss_type: str = field(
        default="ratio",
        metadata={
            "help": "Objective: 'ratio' (L_ratio/L_p, Eq. 19-20, pairs over the batch), 'ssts' (LHTS/L_SSTS, "
            "Eq. 8/18, importance-weighted NLL), or a recall-oriented loss: 'c_div' (conditional Tsallis "
            "divergence, see --c_div_alpha), 'trunc_r' (NLL on the sequences below a rolling likelihood quantile, "
            "see --trunc_r_quantile), 'lambda_pr' (precision-recall divergence, see --lambda_pr_lambda), 'smc_distill' "
            "(weighted NLL of SMC particles of p^(1/T) drawn per prompt, see --smc_proposal).",
            "choices": sorted(LOSSES),
        },
    )
    nll_weight: float | None = field(
        default=None,
        metadata={
            "help": "λ: weight of the model's own token NLL, preventing likelihood drift; ≥ 0. Default 0.1 (0 for "
            "smc_distill)."
        },
    )
    # Parameters that control diffusion models
    likelihood_method: str | None = field(
        default=None,
        metadata={
            "help": "Diffusion likelihood: 'exact' (block DP, L_p; block diffusion only) or 'mc' (k orders, L_k, "
            "Eq. 23-24). Default: exact for block diffusion, mc for masked diffusion.",
            "choices": ["exact", "mc"],
        },
    )
    num_orders: int = field(
        default=4, metadata={"help": "k: unmasking orders per sequence for the trained model's estimate (mc); ≥ 1."}
    )
    ref_num_orders: int | None = field(
        default=None,
        metadata={"help": "k for the precomputed reference estimate (mc), may exceed num_orders; default num_orders."},
    )
    init_from_token_temperature: bool = field(
        default=False,
        metadata={"help": "Start the adapter at token temperature T (final norm scaled by 1/T, trained with LoRA)."},
    )
    init_token_temperature: float | None = field(
        default=None,
        metadata={"help": "Token temperature t > 0 that init_from_token_temperature starts at (default: T)."},
    )
    # Parameters of the recall-oriented losses
    c_div_alpha: float = field(default=1.4, metadata={"help": "α > 1 of the Tsallis divergence of loss_type='c_div'."})
    trunc_r_quantile: float = field(
        default=0.8, metadata={"help": "Quantile in (0, 1] of recent log-likelihoods below which 'trunc_r' trains."}
    )
    lambda_pr_lambda: float = field(default=0.5, metadata={"help": "λ > 0 of the precision-recall divergence."})
    # Parameters that control the prompt groups and the sampling of completions
    num_generations: int = field(
        default=8,
        metadata={
            "help": "Completions of one prompt per batch run (and sampled per prompt for prompt-only data); ≥ 2 for "
            "ratio/ssts; per-device batch × processes must be a multiple of it."
        },
    )
    max_completion_length: int = field(
        default=64, metadata={"help": "Longest completion sampled for a prompt-only dataset (also ends at EOS)."}
    )
    sampling_batch_tokens: int = field(
        default=8192,
        metadata={
            "help": "Prompt-only data: tokens per sampling call, rows × (longest prompt + max_completion_length): "
            "many prompts are sampled in one `generate` call (raise it on a GPU with memory to spare). Another value "
            "draws another pool of completions; a resume must keep it."
        },
    )
    sample_every_steps: int | None = field(
        default=None,
        metadata={
            "help": "Prompt-only data: sample fresh completions of p every k optimisation steps; None samples once "
            "before training (p does not change)."
        },
    )
    num_generations_eval: int | None = field(
        default=None,
        metadata={"help": "Completions sampled per prompt of a prompt-only eval_dataset; default num_generations."},
    )
    smc_proposal: str = field(
        default="token",
        metadata={
            "help": "smc_distill: what proposes the particles, 'token' (token temperature T of p) or 'adapter' (the "
            "adapter being trained).",
            "choices": ["token", "adapter"],
        },
    )
    smc_ess_threshold: float = field(
        default=0.5,
        metadata={"help": "smc_distill: resample when a prompt's ESS falls below this fraction of the particles."},
    )
    prompt_id_column: str = field(
        default="prompt_id",
        metadata={"help": "Column naming each example's prompt group, if present; else the prompt's tokens."},
    )
    # Parameters that control the model
    model_init_kwargs: dict | str | None = field(
        default=None,
        metadata={"help": "from_pretrained kwargs when the model is given by id or path (a dict, or its JSON)."},
    )
    trust_remote_code: bool = field(
        default=False,
        metadata={"help": "Run the model's own code from the Hub when `model` is an id (from_pretrained's flag)."},
    )
    disable_dropout: bool = field(
        default=True,
        metadata={
            "help": "Set every dropout probability of the model and its adapter to 0 (DPO's default; GRPO's is "
            "False: here dropout would make T_eff and tau read other than 1 at initialisation)."
        },
    )
    chat_template_path: str | None = field(
        default=None,
        metadata={
            "help": "TRL's: a Jinja file, or a tokenizer folder / Hub id, whose chat template the tokenizer takes "
            "(saved with the adapter)."
        },
    )
    # Parameters that control the data preprocessing
    max_length: int = field(
        default=512,
        metadata={
            "help": "Maximum tokens per example; longer examples are dropped with a warning, never truncated "
            "(sampled completions are cut to fit and marked truncated)."
        },
    )
    dataset_text_field: str = field(
        default="text", metadata={"help": "Name of the plain-text column (used when there is no prompt/completion)."}
    )
    precompute_ref_log_probs: bool = field(
        default=True,
        metadata={
            "help": "Compute reference log p(x) once before training and store it keyed by example (TRL's name)."
        },
    )
    # Parameters that control checkpoints
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Start afresh in an output_dir that holds checkpoints of an earlier run, deleting them first; "
            "without it such a run is an error (continue it with resume_from_checkpoint instead)."
        },
    )
    resume_from_checkpoint: str | None = field(
        default=None,
        metadata={
            "help": "`hf-seqtemp train`: continue from this checkpoint folder, or 'True' for the last complete "
            "checkpoint in output_dir (a half-written one is skipped with a warning). From Python, pass it to "
            "`trainer.train(resume_from_checkpoint=...)`."
        },
    )
    # Defaults that differ from TrainingArguments
    logging_steps: float = field(default=10, metadata={"help": "Log every X update steps."})
    remove_unused_columns: bool = field(
        default=False, metadata={"help": "Keep the reference columns; must stay False for SeqTempTrainer."}
    )
    report_to: None | str | list[str] = field(  # this order: HfArgumentParser reads args[1] as the type
        default="none", metadata={"help": "Integrations to report to, e.g. 'tensorboard'."}
    )
    learning_rate: float = field(default=1e-4, metadata={"help": "Initial learning rate (AdamW)."})
    # Deprecated parameters
    precompute_ref_logps: bool | None = field(
        default=None, metadata={"help": "Deprecated: use `precompute_ref_log_probs` (TRL's name)."}
    )

    def __post_init__(self):
        normalise_config(self)
        check_config(self)
        super().__post_init__()


SeqTempConfig.__init__ = refusing_grpo_only(SeqTempConfig.__init__)
