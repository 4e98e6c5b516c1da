"""Training jobs: GRPO (TRL's GRPOTrainer fed by our rollouts), actor-critic PPO, SFT and game self-play, LoRA or full.

Each algorithm is a scheduler job kind (``grpo``, ``ppo``, ``sft``, ``selfplay``) whose ``params`` are
validated by :mod:`executors.training.config`. Heavy imports (torch, transformers, trl, peft)
happen inside the job bodies, so importing this package is cheap.
"""

from executors.training.config import (
    PARAMS_BY_KIND,
    GRPOParams,
    PPOParams,
    SelfPlayParams,
    SFTParams,
    TrainParams,
    apply_overrides,
    describe,
    parse_params,
)

__all__ = [
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
