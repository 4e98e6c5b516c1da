"""Tests for rock_paper_scissors_v0: rules, history, PettingZoo conformance, determinism, fuzzing, bots."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test

from multiagent import rock_paper_scissors_v0
from multiagent.bots import RandomLegalBot
from multiagent.rock_paper_scissors.bots import ConstantBot, FrequencyBot
from multiagent.rock_paper_scissors.logic import BEATS, MOVES, counter_move, round_payoff

# PettingZoo's checks warn that text is not a NumPy array / Box space; that is by design here.
TEXT_NOT_NUMPY = pytest.mark.filterwarnings(
    "ignore:Observation is not a NumPy array", "ignore:.*space for each agent probably should be"
)


@pytest.mark.parametrize("move", MOVES)
def test_logic_payoffs(move):
    assert round_payoff(move, move) == 0.0
    assert round_payoff(move, BEATS[move]) == 1.0
    assert round_payoff(BEATS[move], move) == -1.0
    assert round_payoff(counter_move(move), move) == 1.0
    with pytest.raises(ValueError, match="lizard"):
        round_payoff(move, "lizard")


def test_custom_payoffs_and_rounds():
    env = rock_paper_scissors_v0.parallel_env(rounds=1, win=2.0, loss=-0.5, draw=0.25)
    env.reset(seed=0)
    _, rewards, terminations, _, _ = env.step({"player_0": "scissors", "player_1": "paper"})
    assert rewards == {"player_0": 2.0, "player_1": -0.5}
    assert all(terminations.values())


def test_history_is_in_observation_and_info():
    env = rock_paper_scissors_v0.parallel_env(rounds=4)
    env.reset(seed=0)
    env.step({"player_0": "rock", "player_1": "paper"})
    env.step({"player_0": "paper", "player_1": "paper"})
    observations, _, _, _, infos = env.step({"player_0": "scissors", "player_1": "paper"})
    text = observations["player_1"]
    assert "Round 1: you paper, opponent rock: you +1" in text
    assert "Round 2: you paper, opponent paper: you 0" in text
    assert "Last round: you paper, opponent scissors: you -1" in text
    assert "Score: you 0, opponent 0." in text
    assert infos["player_0"]["history"] == (("rock", "paper"), ("paper", "paper"), ("scissors", "paper"))
    assert infos["player_1"]["history"][0] == ("paper", "rock")


def test_forfeit_gives_the_other_player_a_win():
    env = rock_paper_scissors_v0.parallel_env(max_retries=0)
    env.reset(seed=0)
    _, rewards, *_ = env.step({"player_0": "rock", "player_1": "I refuse"})
    assert rewards == {"player_0": 1.0, "player_1": -1.0}


@TEXT_NOT_NUMPY
def test_pettingzoo_conformance():
    api_test(rock_paper_scissors_v0.env(), num_cycles=200)
    parallel_api_test(rock_paper_scissors_v0.parallel_env(), num_cycles=200)
    seed_test(rock_paper_scissors_v0.env, num_cycles=50)
    max_cycles_test(rock_paper_scissors_v0)
    render_test(rock_paper_scissors_v0.env)


def _play(seed, actions_by_step):
    env = rock_paper_scissors_v0.parallel_env(rounds=5)
    out = [env.reset(seed=seed)]
    for actions in actions_by_step:
        if not env.agents:
            break
        out.append(env.step({agent: actions[agent] for agent in env.agents}))
    return out


def test_multi_step_parallel_determinism():
    bots = {"player_0": RandomLegalBot(seed=1), "player_1": RandomLegalBot(seed=2)}
    env = rock_paper_scissors_v0.parallel_env(rounds=5)
    observations, infos = env.reset(seed=3)
    script = []
    while env.agents:
        actions = {agent: bots[agent](observations[agent], infos[agent]) or "x" for agent in env.agents}
        script.append(actions)
        observations, _, _, _, infos = env.step(actions)
    assert _play(3, script) == _play(3, script)
    assert len(script) == 5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(), st.text()), min_size=1, max_size=12))
def test_any_unicode_reply_is_handled(pairs):
    env = rock_paper_scissors_v0.parallel_env(rounds=3)
    env.reset(seed=0)
    for a, b in pairs:
        if not env.agents:
            break
        observations, rewards, *_ = env.step({"player_0": a, "player_1": b})
        assert all(isinstance(o, str) for o in observations.values())
        assert set(rewards) == {"player_0", "player_1"}


def test_frequency_bot_beats_a_constant_bot():
    env = rock_paper_scissors_v0.parallel_env(rounds=10)
    observations, infos = env.reset(seed=0)
    bots = {"player_0": FrequencyBot(), "player_1": ConstantBot("scissors")}
    total = dict.fromkeys(bots, 0.0)
    while env.agents:
        actions = {agent: bots[agent](observations[agent], infos[agent]) for agent in env.agents}
        observations, rewards, _, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            total[agent] += reward
    # paper opening loses to scissors once, then rock wins the other nine rounds
    assert total == {"player_0": 8.0, "player_1": -8.0}


def test_registered_in_pettingzoo():
    import pettingzoo

    import multiagent  # noqa: F401  (registers the games)

    parallel = pettingzoo.make("parallel", "tinker/rock_paper_scissors_v0", rounds=2)
    assert parallel.rounds == 2 and parallel.metadata["name"] == "rock_paper_scissors_v0"
    aec = pettingzoo.make("aec", "tinker/rock_paper_scissors_v0")
    aec.reset(seed=0)
    aec.step("rock")
    aec.step("paper")
    assert aec.rewards == {"player_0": -1.0, "player_1": 1.0}


def test_check_game_passes():
    from multiagent.testing import check_game

    report = check_game(
        rock_paper_scissors_v0.env,
        rock_paper_scissors_v0.parallel_env,
        module=rock_paper_scissors_v0,
        fuzz_examples=10,
    )
    assert {"api_test", "parallel_api_test", "max_cycles_test", "parallel_determinism", "fuzz"} <= set(
        report.passed
    )
