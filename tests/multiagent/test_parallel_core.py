"""Tests for multiagent.parallel_core: the iterated parallel game base and choice parsing."""

from __future__ import annotations

from typing import ClassVar

import pytest
from gymnasium.error import ResetNeeded

from gym_tinker.spaces import TextObservation
from multiagent.parallel_core import IteratedTextGame, choice_pattern, parse_choice


class Pennies(IteratedTextGame):
    """Matching pennies: player_0 wins on a match, player_1 on a mismatch."""

    title = "Matching pennies"
    moves = ("heads", "tails")
    aliases: ClassVar[dict[str, str]] = {"heads": "heads", "h": "heads", "tails": "tails", "t": "tails"}
    default_rounds = 3

    def score_round(self, moves):
        match = moves["player_0"] == moves["player_1"]
        return {"player_0": 1.0 if match else -1.0, "player_1": -1.0 if match else 1.0}


ALIASES = {"rock": "rock", "r": "rock", "paper": "paper", "p": "paper", "scissors": "scissors"}
PATTERN = choice_pattern(ALIASES)


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("rock", "rock"),
        ("  R. ", "rock"),
        ("[paper]", "paper"),
        ("<move> Scissors </move>", "scissors"),
        ("<MOVE>p</MOVE>", "paper"),
        ("I considered rock but I play paper", "paper"),
        ("\\boxed{rock}", "rock"),
        ("rocky road", None),
        ("", None),
        ("r and p", None),  # single letters count only alone
        ("ſcissors", None),  # unicode case folding must not create a move
        ("<move>lizard</move> rock", None),  # the tag is what counts
    ],
)
def test_parse_choice(text, move):
    parsed = parse_choice(text, ALIASES, PATTERN)
    assert parsed.move == move
    assert (parsed.error == "") == (move is not None)


def test_round_resolves_when_both_move_and_rewards_are_payoffs():
    env = Pennies()
    observations, infos = env.reset(seed=0)
    assert isinstance(observations["player_0"], TextObservation)
    assert infos["player_0"]["legal_moves"] == ["heads", "tails"]
    _, rewards, terminations, truncations, infos = env.step({"player_0": "heads", "player_1": "H"})
    assert rewards == {"player_0": 1.0, "player_1": -1.0}
    assert not any(terminations.values()) and not any(truncations.values())
    assert infos["player_1"]["history"] == (("heads", "heads"),)
    assert env.scores == {"player_0": 1.0, "player_1": -1.0}


def test_illegal_reply_gets_error_and_the_legal_player_is_locked():
    env = Pennies(max_retries=2)
    env.reset()
    observations, rewards, _, _, infos = env.step({"player_0": "heads", "player_1": "edge"})
    assert rewards == {"player_0": 0.0, "player_1": 0.0}
    assert infos["player_1"]["error"].startswith("no move found")
    assert infos["player_1"]["retries_left"] == 1
    assert "'edge' was not accepted" in observations["player_1"]
    assert infos["player_0"]["locked"] and infos["player_0"]["legal_moves"] == []
    assert "locked in" in observations["player_0"]
    # player_0's reply is ignored while locked; it may even be left out.
    _, rewards, _, _, infos = env.step({"player_1": "tails"})
    assert rewards == {"player_0": -1.0, "player_1": 1.0}
    assert env.history[-1].moves == {"player_0": "heads", "player_1": "tails"}
    assert infos["player_1"]["retries_left"] == 2 and "error" not in infos["player_1"]


def test_running_out_of_retries_forfeits_the_round_not_the_game():
    env = Pennies(max_retries=1, forfeit_penalty=-3.0)
    env.reset()
    env.step({"player_0": "heads", "player_1": "?"})
    observations, rewards, terminations, _, _ = env.step({"player_1": "still no"})
    assert rewards == {"player_0": 0.0, "player_1": -3.0}
    assert "forfeit the round" in observations["player_1"]
    assert not any(terminations.values())
    assert env.history[-1].moves["player_1"] is None
    assert env.agents == ["player_0", "player_1"]


def test_game_terminates_after_rounds_and_then_needs_reset():
    env = Pennies(rounds=2)
    env.reset()
    env.step({"player_0": "h", "player_1": "t"})
    observations, _, terminations, truncations, infos = env.step({"player_0": "t", "player_1": "t"})
    assert terminations == {"player_0": True, "player_1": True}
    assert truncations == {"player_0": False, "player_1": False}
    assert env.agents == []
    assert "game over after 2 of 2 rounds" in observations["player_0"]
    assert infos["player_0"]["legal_moves"] == []
    with pytest.raises(ResetNeeded):
        env.step({"player_0": "h", "player_1": "h"})


def test_max_cycles_truncates_counting_retries():
    env = Pennies(rounds=5, max_cycles=3)
    env.reset()
    env.step({"player_0": "x", "player_1": "y"})
    env.step({"player_0": "h", "player_1": "h"})
    _, _, terminations, truncations, _ = env.step({"player_0": "h", "player_1": "t"})
    assert truncations == {"player_0": True, "player_1": True}
    assert not any(terminations.values())
    assert len(env.history) == 2 and env.agents == []


def test_default_max_cycles_never_cuts_a_game():
    env = Pennies(rounds=4, max_retries=2)
    assert env.max_cycles == 12
    env.reset()
    steps = 0
    while env.agents:
        env.step({"player_0": "nope", "player_1": "nope"})
        steps += 1
    assert steps == 12 and len(env.history) == 4


def test_bad_calls_are_clear_errors_and_change_nothing():
    env = Pennies()
    env.reset()
    with pytest.raises(TypeError, match=r"player_1.*str"):
        env.step({"player_0": "h", "player_1": 3})
    with pytest.raises(ValueError, match="No action for 'player_1'"):
        env.step({"player_0": "h"})
    assert env.cycles == 0 and env._locked == {}
    for kwargs, name in [
        (dict(rounds=0), "rounds"),
        (dict(max_retries=-1), "max_retries"),
        (dict(max_cycles=0), "max_cycles"),
        (dict(render_mode="rgb_array"), "render_mode"),
        (dict(forfeit_penalty="x"), "forfeit_penalty"),
    ]:
        with pytest.raises(ValueError, match=name):
            Pennies(**kwargs)


def test_history_window_limits_listed_rounds():
    env = Pennies(rounds=6, history_window=2)
    observations, _ = env.reset()
    for _ in range(5):
        observations, *_ = env.step({"player_0": "h", "player_1": "t"})
    text = observations["player_0"]
    assert "Earlier rounds (last 2 of 4)" in text
    assert "Round 3:" in text and "Round 4:" in text and "Round 2:" not in text
    assert "Last round: you heads, opponent tails" in text


def test_render_ansi_lists_rounds():
    env = Pennies(render_mode="ansi")
    env.reset()
    env.step({"player_0": "h", "player_1": "t"})
    text = env.render()
    assert "round 1: player_0 heads (-1), player_1 tails (+1)" in text
