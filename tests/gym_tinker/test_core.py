"""TextEnv base behaviour, through a small env defined here."""

from __future__ import annotations

import pickle

import pytest
from gymnasium.error import ResetNeeded

from gym_tinker import TextEnv


class CountTo(TextEnv):
    """Say the hidden number; feedback 'higher'/'lower'."""

    description = "test env"
    default_max_turns = 4

    def _reset(self, options):
        self.target = int(self.np_random.integers(1000))
        return "Say the number.", {"task_id": f"count-{self.target}"}

    def _step(self, action):
        if action.strip() == str(self.target):
            return "yes", 1.0, True, False, {"hit": True}
        return "no", 0.0, False, False, {"hit": False}


def test_reset_info_defaults_and_turns():
    env = CountTo()
    observation, info = env.reset(seed=0)
    assert observation == "Say the number."
    assert info == {"task_id": f"count-{env.target}", "system_prompt": "", "tools": [], "turn": 0}
    assert env.step("x")[4] == {"hit": False, "turn": 1}
    assert env.turn == 1


def test_same_seed_same_task_and_seed_continues():
    a, b = CountTo(), CountTo()
    assert a.reset(seed=7)[1] == b.reset(seed=7)[1]
    assert a.reset()[1] == b.reset()[1], "unseeded resets continue the seeded stream"
    assert len({CountTo().reset(seed=s)[1]["task_id"] for s in range(10)}) > 5


def test_truncates_at_max_turns_unless_terminated():
    env = CountTo(max_turns=2)
    env.reset(seed=0)
    assert env.step("x")[2:4] == (False, False)
    assert env.step("x")[2:4] == (False, True)
    env.reset(seed=0)
    env.step("x")
    assert env.step(str(env.target))[1:4] == (1.0, True, False), "a terminating last turn is not truncated"


def test_type_error_names_the_type():
    env = CountTo()
    env.reset(seed=0)
    for action in (1, None, b"x"):
        with pytest.raises(TypeError, match=rf"expects the action as a str .*got {type(action).__name__}"):
            env.step(action)
    assert env.turn == 0, "a rejected action does not use a turn"


def test_reset_needed_before_reset_and_after_the_end():
    env = CountTo()
    with pytest.raises(ResetNeeded, match="before reset"):
        env.step("1")
    env.reset(seed=0)
    env.step(str(env.target))
    with pytest.raises(ResetNeeded, match="after the episode ended"):
        env.step("1")
    env.reset()
    assert env.step("x")[1] == 0.0


def test_render_modes(capsys):
    env = CountTo(render_mode="ansi")
    env.reset(seed=0)
    env.step("5")
    assert env.render() == "[observation] Say the number.\n[action] 5\n[observation] no"
    human = CountTo(render_mode="human")
    human.reset(seed=0)
    assert "[observation] Say the number." in capsys.readouterr().out
    with pytest.warns(UserWarning, match="render_mode"):
        assert CountTo().render() is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_turns": 0}, "max_turns"),
        ({"max_turns": True}, "max_turns"),
        ({"render_mode": "rgb_array"}, "render_mode"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CountTo(**kwargs)


def test_subclass_must_implement_reset_and_step():
    with pytest.raises(NotImplementedError):
        TextEnv().reset(seed=0)


def test_pickles_mid_episode():
    env = CountTo()
    env.reset(seed=3)
    env.step("x")
    clone = pickle.loads(pickle.dumps(env))
    assert clone.turn == 1 and clone.target == env.target
    assert clone.step(str(env.target))[1] == 1.0
    assert clone.reset()[1] == env.reset()[1]
