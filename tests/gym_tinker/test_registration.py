"""Registration: every env id makes, in every spelling Gymnasium supports; turn limits are the env's own."""

from __future__ import annotations

import importlib

import gymnasium as gym
import pytest

import gym_tinker
from gym_tinker import TextEnv
from gym_tinker.registration import ENV_ENTRIES, register_all

ENTRIES = {entry.id: entry for entry in ENV_ENTRIES}


def _env_class(entry):
    module_name, class_name = entry.entry_point.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def test_every_entry_is_registered_under_tinker():
    assert {entry.name for entry in ENV_ENTRIES} == {
        "ToolUse",
        "Math",
        "Countdown",
        "Code",
        "Wordle",
        "GuessNumber",
    }
    for env_id in ENTRIES:
        assert env_id.startswith("tinker/") and env_id.endswith("-v0") and env_id in gym.registry


@pytest.mark.parametrize("env_id", ENTRIES)
def test_make_by_id_and_module_prefix(env_id):
    entry = ENTRIES[env_id]
    for spelling in (env_id, f"gym_tinker:{env_id}"):
        env = gym.make(spelling)
        try:
            assert isinstance(env.unwrapped, _env_class(entry)) and isinstance(env.unwrapped, TextEnv)
            observation, info = env.reset(seed=0)
            assert isinstance(observation, str) and observation
            assert {"system_prompt", "tools", "task_id", "difficulty"} <= info.keys()
        finally:
            env.close()


@pytest.mark.parametrize("env_id", ENTRIES)
def test_turn_limit_is_the_envs_own(env_id):
    """No TimeLimit wrapper: the env truncates itself at `max_turns` (registered default, or passed)."""
    entry = ENTRIES[env_id]
    cls = _env_class(entry)
    assert entry.max_turns == cls.default_max_turns, (
        f"{env_id}: registered max_turns={entry.max_turns} but {cls.__name__}.default_max_turns={cls.default_max_turns}"
    )
    env = gym.make(env_id)
    assert env.spec.max_episode_steps is None
    assert env.unwrapped.max_turns == entry.max_turns
    for max_turns in (entry.max_turns, 2):
        env = gym.make(env_id, max_turns=max_turns)
        env.reset(seed=0)
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(" ")
            steps += 1
            done = terminated or truncated
        # An empty reply ends single-turn envs as a (wrong) final answer; others run out of turns.
        assert steps <= max_turns and (terminated or (truncated and steps == max_turns)), (steps, max_turns)
        env.close()


@pytest.mark.parametrize("env_id", ENTRIES)
def test_description_is_one_line(env_id):
    cls = _env_class(ENTRIES[env_id])
    assert cls.description and "\n" not in cls.description and len(cls.description) <= 100


def test_register_envs_and_register_all_are_idempotent():
    before = set(gym.registry)
    gym.register_envs(gym_tinker)
    register_all()
    assert set(gym.registry) == before


def test_list_envs_lists_every_env_with_its_description():
    rows = dict(gym_tinker.list_envs())
    assert list(rows) == [entry.id for entry in ENV_ENTRIES]
    assert all(description for description in rows.values())


def test_import_does_not_pull_in_torch():
    import subprocess
    import sys

    code = "import sys, gym_tinker, gym_tinker.testing, gym_tinker.oracles; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
