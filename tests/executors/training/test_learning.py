"""Learning tests (slow): GRPO and PPO make the tiny random model better at a toy env within seconds of CPU.

The toy env rewards an answer containing the letter "a", which the untrained model's samples
do about one time in five (its greedy answer does not), so the reward is reachable and the
held-out greedy accuracy starts near zero. Fixed seeds; the assertions are on the trend.
"""

from __future__ import annotations

from typing import Any

import pytest

from executors.context import JobContext
from executors.spec import JobSpec
from executors.training.common import RunFolder
from executors.training.grpo import grpo_body
from executors.training.ppo import ppo_body
from tests.executors.training.toy_env import ENV_ID

pytestmark = pytest.mark.slow

COMMON = {"steps": 40, "max_tokens": 4, "learning_rate": 1e-2, "eval_episodes": 64, "eval_every": 10,
          "report_to": "none", "threads": 1}  # fmt: skip


def train(body: Any, kind: str, tmp_path: Any, **params: Any) -> RunFolder:
    spec = JobSpec(
        kind=kind, model="tiny-random", adapter={"r": 8, "dropout": 0.0}, env=ENV_ID,
        params={**COMMON, **params}, output_dir=str(tmp_path / "run"),
    )  # fmt: skip
    body(JobContext(spec, 1, 1, tmp_path / "checkpoints"))
    return RunFolder(tmp_path / "run")


def assert_learned(run: RunFolder, reward_key: str) -> None:
    history = run.history()
    heldout = [row["heldout_accuracy"] for row in history.values() if row.get("heldout_accuracy") is not None]
    rewards = [row[reward_key] for row in history.values() if row.get(reward_key) is not None]
    assert len(heldout) == 5 and len(rewards) == 40
    assert heldout[0] < 0.2, heldout
    assert heldout[-1] >= heldout[0] + 0.5, heldout
    first, last = sum(rewards[:10]) / 10, sum(rewards[-10:]) / 10
    assert last >= first + 0.15, (first, last)


def test_grpo_learns_the_toy_env(tmp_path):
    run = train(grpo_body, "grpo", tmp_path, prompts_per_step=4, group_size=8)
    assert_learned(run, "reward")


def test_ppo_learns_the_toy_env(tmp_path):
    run = train(ppo_body, "ppo", tmp_path, episodes_per_step=16, minibatch_size=8, kl_coef=0.05)
    assert_learned(run, "score_mean")
