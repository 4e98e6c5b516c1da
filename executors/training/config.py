"""Training hyper-parameters: the ``params`` of ``grpo``, ``ppo`` and ``sft`` jobs, one pydantic model per algorithm.

Every field has a description, so the same class is the YAML schema (a job file's ``params:``
mapping), the ``key=value`` override syntax (:func:`apply_overrides`) and the documentation
(:func:`describe`). Unknown fields are errors, so a typo never silently trains with a default.

A GRPO job file::

    kind: grpo
    model: smollm2-135m-instruct
    adapter: {r: 16, alpha: 32}
    env: tinker/Math-v0
    params: {steps: 40, prompts_per_step: 4, group_size: 8, env_kwargs: {difficulty: easy}}
"""

from __future__ import annotations

import importlib.util
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from executors.errors import SpecError
from executors.spec import format_validation_error

__all__ = [
    "DEFAULT_MODEL",
    "OPPONENT_CATEGORIES",
    "PARAMS_BY_KIND",
    "GRPOParams",
    "PPOParams",
    "SFTParams",
    "SelfPlayParams",
    "TrainParams",
    "apply_overrides",
    "describe",
    "parse_params",
]

DEFAULT_MODEL = "smollm2-135m-instruct"
"""The model a training job uses when its spec names none."""


class TrainParams(BaseModel):
    """What every training job shares: length, optimiser, sampling, evaluation, outputs.

    >>> p = TrainParams(steps=3)
    >>> p.steps, p.checkpoint_every, p.eval_seed
    (3, 10, 1000000)
    """

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(50, ge=1, description="Optimizer steps to train for.")
    learning_rate: float = Field(
        1e-4, gt=0, description="Peak learning rate (LoRA likes ~1e-4; full fine-tuning ~1e-5)."
    )
    lr_scheduler: Literal["constant", "linear", "cosine"] = Field(
        "constant", description="Learning-rate schedule after warm-up."
    )
    warmup_steps: int = Field(0, ge=0, description="Linear warm-up steps.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    seed: int = Field(0, ge=0, description="Seeds the model's dropout, the data order and every rollout.")
    env_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for gym.make, e.g. {difficulty: easy}."
    )
    max_tokens: int = Field(128, ge=1, le=32768, description="Most tokens sampled per agent turn.")
    max_turns: int | None = Field(None, ge=1, description="Turn limit per episode; default the env's own.")
    temperature: float = Field(1.0, gt=0, le=10, description="Sampling temperature of training rollouts.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass of training rollouts.")
    checkpoint_every: int = Field(
        10, ge=1, description="Save a resumable checkpoint every N steps (and when asked to yield)."
    )
    eval_every: int = Field(
        10, ge=0, description="Greedy held-out evaluation every N steps; 0: only before and after training."
    )
    eval_episodes: int = Field(32, ge=0, description="Held-out episodes per evaluation; 0 disables it.")
    eval_seed: int = Field(
        1_000_000, ge=0, description="First held-out seed (far from training seeds, which start at `seed`)."
    )
    eval_batch_size: int = Field(16, ge=1, le=256, description="Held-out episodes sampled together.")
    sample_every: int = Field(10, ge=1, description="Write sample transcripts every N steps.")
    report_to: list[str] | Literal["auto", "none"] = Field(
        "auto",
        description="Where TRL trainers also log: a list such as [tensorboard, trackio]; auto = the installed ones.",
    )
    merge: bool = Field(False, description="Also save the LoRA adapter merged into a full model folder.")
    gradient_checkpointing: bool = Field(
        False,
        description="Recompute activations in the backward pass: far less memory on long sequences, one more forward pass.",
    )
    threads: int | None = Field(None, ge=1, description="torch CPU threads for this job (default torch's).")
    device: str = Field("cpu", description="torch device, e.g. cpu or cuda.")

    @field_validator("report_to")
    @classmethod
    def _check_report_to(cls, value: Any) -> Any:
        known = {"tensorboard", "trackio", "wandb", "mlflow", "comet_ml"}
        if isinstance(value, list):
            unknown = [v for v in value if v not in known]
            if unknown:
                raise ValueError(
                    f"unknown reporting integration(s) {unknown}; expected some of {sorted(known)}"
                )
        return value

    def integrations(self) -> list[str]:
        """The ``report_to`` list for transformers: ``auto`` means TensorBoard and trackio where installed.

        >>> TrainParams(report_to="none").integrations()
        []
        """
        if self.report_to == "none":
            return []
        if self.report_to == "auto":
            return [name for name in ("tensorboard", "trackio") if _installed(name)]
        return list(self.report_to)


class GRPOParams(TrainParams):
    """GRPO: ``group_size`` rollouts of each of ``prompts_per_step`` tasks per step, advantages within groups.

    >>> p = GRPOParams(prompts_per_step=2, group_size=4)
    >>> p.batch_size, p.rollout
    (8, 'engine')
    """

    prompts_per_step: int = Field(4, ge=1, description="Tasks (env seeds) per step; each is one group.")
    group_size: int = Field(8, ge=2, description="Rollouts per task (TRL's num_generations).")
    beta: float = Field(0.0, ge=0, description="KL coefficient against the reference (base) model.")
    epsilon: float = Field(0.2, gt=0, lt=1, description="PPO-style clipping range of the ratio.")
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = Field(
        "dapo", description="TRL's loss normalisation."
    )
    scale_rewards: Literal["group", "batch", "none"] = Field(
        "group", description="Divide advantages by the group's (or batch's) reward std, or not."
    )
    token_budget: int | None = Field(None, ge=1, description="Most tokens per episode (prompt included).")
    loss_batch_groups: int | None = Field(
        None,
        ge=1,
        description=(
            "Groups per forward/backward pass (gradient accumulation over the step); None: the whole step at "
            "once. Lower it when long episodes run out of memory; it must divide prompts_per_step."
        ),
    )
    rollout: Literal["engine", "trl_env"] = Field(
        "engine",
        description="engine: our batched, token-exact rollouts via rollout_func; trl_env: TRL's own tool loop.",
    )

    @model_validator(mode="after")
    def _check_loss_batch(self) -> GRPOParams:
        if self.loss_batch_groups is not None and self.prompts_per_step % self.loss_batch_groups:
            raise ValueError(
                f"loss_batch_groups ({self.loss_batch_groups}) must divide prompts_per_step ({self.prompts_per_step})"
            )
        return self

    @property
    def batch_size(self) -> int:
        """Completions per step: ``prompts_per_step * group_size``."""
        return self.prompts_per_step * self.group_size

    @property
    def accumulation_steps(self) -> int:
        """Forward/backward passes per step (1 unless ``loss_batch_groups`` splits the step).

        >>> GRPOParams(prompts_per_step=4, group_size=2, loss_batch_groups=1).accumulation_steps
        4
        """
        return 1 if self.loss_batch_groups is None else self.prompts_per_step // self.loss_batch_groups


class PPOParams(TrainParams):
    """Actor-critic PPO over tokens: value head, GAE over sampled tokens, clipped losses, KL to the reference.

    >>> PPOParams().kl_mode, PPOParams().value_model
    ('penalty', 'head')
    """

    episodes_per_step: int = Field(16, ge=1, description="Episodes sampled per step.")
    ppo_epochs: int = Field(2, ge=1, description="Passes over each step's episodes.")
    minibatch_size: int = Field(8, ge=1, description="Episodes per gradient step.")
    gamma: float = Field(1.0, ge=0, le=1, description="Discount over sampled tokens.")
    lam: float = Field(0.95, ge=0, le=1, description="GAE lambda.")
    clip_range: float = Field(0.2, gt=0, lt=1, description="Policy ratio clipping.")
    value_clip_range: float = Field(0.2, gt=0, description="Value prediction clipping around the old value.")
    vf_coef: float = Field(0.1, ge=0, description="Weight of the value loss.")
    kl_coef: float = Field(0.05, ge=0, description="KL coefficient (per-token reward penalty or loss term).")
    kl_mode: Literal["penalty", "loss"] = Field(
        "penalty",
        description="penalty: -kl_coef*KL added to token rewards; loss: kl_coef*KL added to the loss.",
    )
    entropy_coef: float = Field(0.0, ge=0, description="Entropy bonus.")
    value_model: Literal["head", "separate"] = Field(
        "head", description="head: a value head on the policy; separate: its own copy of the base model."
    )
    whiten_advantages: bool = Field(True, description="Normalise advantages over each step's tokens.")
    value_learning_rate: float | None = Field(
        None, gt=0, description="Learning rate of the value parameters; default `learning_rate`."
    )


class SFTParams(TrainParams):
    """Supervised fine-tuning on a dataset or on kept rollouts, loss on assistant tokens only.

    >>> SFTParams(source="rollouts").keep
    'success'
    """

    source: Literal["dataset", "rollouts"] = Field(
        "dataset",
        description="dataset: the job's `dataset`; rollouts: sample the job's `env` and keep episodes.",
    )
    keep: Literal["success", "all"] = Field("success", description="Which sampled episodes to train on.")
    min_reward: float | None = Field(None, description="Also require this total reward to keep an episode.")
    rollout_episodes: int = Field(64, ge=1, description="Episodes sampled for source=rollouts.")
    epochs: float | None = Field(
        None, gt=0, description="Train for this many epochs instead of `steps` when set."
    )
    batch_size: int = Field(4, ge=1, description="Sequences per optimizer step.")
    max_length: int = Field(1024, ge=8, description="Longest sequence in tokens; longer ones are cut.")
    assistant_only_loss: bool = Field(True, description="Loss on assistant (sampled) tokens only.")


OPPONENT_CATEGORIES = ("latest", "snapshots", "bots")
"""The league's opponent categories: the live policy, its past snapshots, the game's bots."""


class SelfPlayParams(GRPOParams):
    """Self-play GRPO on a two-player game: opponents from a league of the learner, its snapshots and bots.

    >>> p = SelfPlayParams(opponents={"latest": 1, "bots": 1}, opponent_bots=["random"])
    >>> p.opponents, p.eval_games, p.snapshot_every
    ({'latest': 1.0, 'bots': 1.0}, 50, 10)
    """

    game: str | None = Field(
        None, description="Game id (e.g. tictactoe_v0 or tinker/tictactoe_v0); default the job's `env`."
    )
    opponents: dict[str, float] = Field(
        default_factory=lambda: {"latest": 0.5, "snapshots": 0.3, "bots": 0.2},
        description="Opponent mixture per group: weights of latest (self-play), snapshots and bots.",
    )
    opponent_bots: list[str] | None = Field(
        None, description="Bots to train against (names from multiagent.bots); default all of the game's."
    )
    snapshot_every: int = Field(
        10, ge=1, description="Save the learner as a snapshot opponent every N steps (step 0 included)."
    )
    max_snapshots: int = Field(5, ge=1, description="Most recent snapshots kept in the opponent pool.")
    eval_bots: list[str] | None = Field(
        None, description="Bots of the greedy evaluation (win/draw/loss rates); default all of the game's."
    )
    eval_episodes: int = Field(
        32, ge=0, description="0 disables the evaluation; any other value leaves it on (see eval_games)."
    )
    eval_games: int = Field(50, ge=2, description="Greedy games against each eval bot (seats alternate).")
    eval_snapshot_games: int = Field(
        2, ge=0, description="Greedy games against each pool snapshot at every evaluation (for Elo)."
    )

    @field_validator("opponents")
    @classmethod
    def _check_opponents(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(OPPONENT_CATEGORIES))
        if unknown:
            raise ValueError(
                f"unknown opponent categories {unknown}; expected keys among {OPPONENT_CATEGORIES}"
            )
        if any(not w >= 0 for w in value.values()) or not sum(value.values()) > 0:
            raise ValueError(f"expected weights >= 0 with a positive sum, got {value}")
        return {k: float(v) for k, v in value.items()}

    @field_validator("rollout")
    @classmethod
    def _engine_only(cls, value: str) -> str:
        if value != "engine":
            raise ValueError(
                f"self-play plays games with our rollout engine: rollout must be 'engine', got {value!r}"
            )
        return value


PARAMS_BY_KIND: dict[str, type[TrainParams]] = {
    "grpo": GRPOParams,
    "ppo": PPOParams,
    "sft": SFTParams,
    "selfplay": SelfPlayParams,
}
"""The params class of each training job kind."""


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def parse_params(kind: str, params: dict[str, Any]) -> TrainParams:
    """Validate a training job's ``params`` for ``kind``.

    Raises:
        SpecError: an unknown kind, or invalid params (one line per bad field).

    >>> parse_params("grpo", {"steps": 2}).group_size
    8
    >>> parse_params("grpo", {"step": 2})
    Traceback (most recent call last):
    ...
    executors.errors.SpecError: invalid params for a grpo job:
      step: Extra inputs are not permitted (got 2)
    """
    cls = PARAMS_BY_KIND.get(kind)
    if cls is None:
        raise SpecError(f"no training params for job kind {kind!r}; expected one of {sorted(PARAMS_BY_KIND)}")
    try:
        return cls(**params)
    except ValidationError as exc:
        body = format_validation_error(exc).removeprefix("invalid job spec:")
        raise SpecError(f"invalid params for a {kind} job:{body}") from None


def apply_overrides(spec: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key=value`` overrides (dotted keys, YAML values) to a job-spec mapping, returning a new one.

    Keys that name a training param may leave out ``params.``: ``steps=5`` sets ``params.steps``.

    Raises:
        SpecError: an override without ``=``, or a dotted key through a non-mapping.

    >>> apply_overrides({"kind": "grpo", "params": {"steps": 50}}, ["steps=5", "adapter.r=4", "env=tinker/Math-v0"])
    {'kind': 'grpo', 'params': {'steps': 5}, 'adapter': {'r': 4}, 'env': 'tinker/Math-v0'}
    """
    top_level = set(_spec_fields())
    result: dict[str, Any] = yaml.safe_load(yaml.safe_dump(spec)) or {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SpecError(f"an override looks like key=value (e.g. steps=20), got {item!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise SpecError(f"cannot parse the value of override {item!r}: {exc}") from None
        parts = key.split(".")
        if parts[0] not in top_level:
            parts = ["params", *parts]
        node = result
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise SpecError(f"override {item!r}: {part!r} is {child!r}, not a mapping")
            node = child
        node[parts[-1]] = value
    return result


def _spec_fields() -> list[str]:
    from executors.spec import JobSpec

    return list(JobSpec.model_fields)


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (Union, UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        inner = ", ".join(_type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def describe(cls: type[BaseModel]) -> list[tuple[str, str, str, str]]:
    """``(name, type, default, description)`` for every field of a params class, for docs and ``--help``.

    >>> [row[0] for row in describe(SFTParams)][:3]
    ['steps', 'learning_rate', 'lr_scheduler']
    """
    rows = []
    for name, field in cls.model_fields.items():
        type_name = _type_name(field.annotation)
        default = "(factory)" if field.default_factory is not None else repr(field.default)
        rows.append((name, type_name, default, field.description or ""))
    return rows


def params_markdown() -> str:
    """Every training params class as a Markdown table (the reference part of ``docs/training.md``).

    >>> print(params_markdown().splitlines()[0])
    ### Common to every kind (`TrainParams`)
    """
    sections: list[tuple[str, type[TrainParams], set[str]]] = [("Common to every kind", TrainParams, set())]
    common = set(TrainParams.model_fields)
    sections += [(f"`{kind}` only", cls, common) for kind, cls in PARAMS_BY_KIND.items()]
    out: list[str] = []
    for title, cls, skip in sections:
        out += [
            f"### {title} (`{cls.__name__}`)",
            "",
            "| field | type | default | meaning |",
            "|---|---|---|---|",
        ]
        for name, type_name, default, description in describe(cls):
            if name not in skip:
                cell = type_name.replace("|", "\\|")
                out.append(f"| `{name}` | {cell} | `{default}` | {description} |")
        out.append("")
    return "\n".join(out)
