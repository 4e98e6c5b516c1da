"""Every registered env passes every public conformance check in `gym_tinker.testing`."""

from __future__ import annotations

import threading

import pytest

import gym_tinker
from gym_tinker import TextEnv, testing

ENV_IDS = [entry.id for entry in gym_tinker.ENV_ENTRIES]


class HoldsALock(TextEnv):
    """Keeps a lock on the instance, which cannot pickle."""

    def _reset(self, options):
        self.lock = threading.Lock()
        return "go", {}

    def _step(self, action):
        return "ok", 0.0, False, False, {}


@pytest.mark.parametrize("check", list(testing.CHECKS), ids=str)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_conformance(env_id, check):
    if check == "vector_entry_point" and env_id == "tinker/Code-v0":
        # Every random action runs in the sandbox (~50 ms); Code is single-turn, so every step
        # still ends an episode and exercises the autoreset.
        testing.check_vector_entry_point(env_id, seed=0, num_envs=2, steps=6)
        return
    testing.CHECKS[check](env_id, seed=0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_other_seed(env_id):
    """Determinism and pickling hold for another seed too (tasks, not just seed 0)."""
    testing.check_same_seed_same_episode(env_id, seed=12345, steps=15)
    testing.check_pickle(env_id, seed=12345, steps=15)


def test_checks_fail_loudly_on_a_broken_env():
    """The checks are not vacuous: an env using the global `random` fails determinism."""
    import random

    class GlobalRandom(TextEnv):
        default_max_turns = 2

        def _reset(self, options):
            return f"Task {random.random()}", {}

        def _step(self, action):
            return "ok", 0.0, False, False, {}

    with pytest.raises(
        AssertionError, match="check_same_seed_same_episode failed for GlobalRandom: the runs diverge"
    ):
        testing.check_same_seed_same_episode(GlobalRandom)

    class NeverEnds(GlobalRandom):
        default_max_turns = 10**9

        def _reset(self, options):
            return "go", {}

    with pytest.raises(AssertionError, match="did not end within 20 random actions"):
        testing.check_reset_needed(NeverEnds, max_steps=20)

    class Fragile(NeverEnds):
        def _step(self, action):
            return str(int(action)), 0.0, False, False, {}

    with pytest.raises(
        AssertionError, match=r"check_robust_actions failed for Fragile: action '' raised ValueError"
    ):
        testing.check_robust_actions(Fragile)

    class Lenient(NeverEnds):
        def step(self, action):
            return "fine", 0.0, False, False, {}

    with pytest.raises(AssertionError, match="action 42 of type int was accepted"):
        testing.check_action_type(Lenient)

    class NaNReward(NeverEnds):
        def _step(self, action):
            return "?", float("nan"), False, False, {}

    with pytest.raises(AssertionError, match="gave reward nan"):
        testing.check_robust_actions(NaNReward, actions=["x"])

    with pytest.raises(
        AssertionError, match="check_pickle failed for HoldsALock: pickling mid-episode raised TypeError"
    ):
        testing.check_pickle(HoldsALock)
    with pytest.raises(TypeError, match="Expected an env id"):
        testing.check_action_type(42)
