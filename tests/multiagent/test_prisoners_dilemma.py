"""Tests for prisoners_dilemma_v0: payoffs, cheap talk, conformance, determinism, fuzzing, bots."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test

from multiagent import prisoners_dilemma_v0
from multiagent.bots import RandomLegalBot
from multiagent.prisoners_dilemma.bots import AlwaysCooperate, AlwaysDefect, TitForTat
from multiagent.prisoners_dilemma.logic import PayoffMatrix, extract_message

TEXT_NOT_NUMPY = pytest.mark.filterwarnings(
    "ignore:Observation is not a NumPy array", "ignore:.*space for each agent probably should be"
)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("cooperate", "cooperate", (3.0, 3.0)),
        ("cooperate", "defect", (0.0, 5.0)),
        ("defect", "cooperate", (5.0, 0.0)),
        ("defect", "defect", (1.0, 1.0)),
    ],
)
def test_standard_payoff_matrix(a, b, expected):
    env = prisoners_dilemma_v0.parallel_env()
    env.reset(seed=0)
    _, rewards, *_ = env.step({"player_0": a, "player_1": b})
    assert (rewards["player_0"], rewards["player_1"]) == expected


def test_payoff_matrix_is_configurable_and_validated():
    env = prisoners_dilemma_v0.parallel_env(payoffs={"reward": 4, "sucker": -2})
    env.reset(seed=0)
    _, rewards, *_ = env.step({"player_0": "C", "player_1": "d"})
    assert rewards == {"player_0": -2.0, "player_1": 5.0}
    assert "both cooperate 4 each" in env.rules
    assert PayoffMatrix().is_dilemma and not PayoffMatrix(reward=6).is_dilemma
    with pytest.raises(ValueError, match="bonus"):
        prisoners_dilemma_v0.parallel_env(payoffs={"bonus": 1})
    with pytest.raises(ValueError, match="temptation"):
        PayoffMatrix(temptation="high")


def test_cheap_talk_is_delivered_to_the_other_player_next_round():
    env = prisoners_dilemma_v0.parallel_env(rounds=3)
    observations, _ = env.reset(seed=0)
    assert "said" not in observations["player_1"]
    observations, *_ = env.step(
        {"player_0": "<message>Let's both cooperate.</message><move>cooperate</move>", "player_1": "defect"}
    )
    assert 'The opponent said: "Let\'s both cooperate."' in observations["player_1"]
    # a sender does not see its own message as the opponent's, and a bare move says nothing
    assert "The opponent said" not in observations["player_0"]
    assert env.history[-1].messages == {"player_0": "Let's both cooperate.", "player_1": ""}
    observations, *_ = env.step({"player_0": "You betrayed me. defect", "player_1": "Sorry! <move>C</move>"})
    assert 'The opponent said: "Sorry!"' in observations["player_0"]
    assert 'The opponent said: "You betrayed me. defect"' in observations["player_1"]
    # only the latest round's message is shown
    assert "Let's both" not in observations["player_1"]


def test_a_move_named_inside_a_message_does_not_count():
    env = prisoners_dilemma_v0.parallel_env()
    env.reset(seed=0)
    env.step({"player_0": "cooperate <message>never defect</message>", "player_1": "<message>c</message>"})
    assert env.history == []  # player_1 named no move outside its message
    assert env._locked["player_0"][0] == "cooperate"


def test_message_length_is_capped():
    assert extract_message("<message>" + "x" * 50 + "</message> C", 10) == "x" * 9 + "…"
    env = prisoners_dilemma_v0.parallel_env(max_message_chars=5)
    env.reset(seed=0)
    observations, *_ = env.step({"player_0": "hello there, cooperate", "player_1": "D"})
    assert 'said: "hell…"' in observations["player_1"]


def test_forfeit_penalty_and_zero_for_the_other():
    env = prisoners_dilemma_v0.parallel_env(max_retries=0, forfeit_penalty=-2.5)
    env.reset(seed=0)
    _, rewards, *_ = env.step({"player_0": "cooperate", "player_1": "maybe"})
    assert rewards == {"player_0": 0.0, "player_1": -2.5}


@TEXT_NOT_NUMPY
def test_pettingzoo_conformance():
    api_test(prisoners_dilemma_v0.env(), num_cycles=200)
    parallel_api_test(prisoners_dilemma_v0.parallel_env(), num_cycles=200)
    seed_test(prisoners_dilemma_v0.env, num_cycles=50)
    max_cycles_test(prisoners_dilemma_v0)
    render_test(prisoners_dilemma_v0.env)


def _run(seed, bots, **kwargs):
    env = prisoners_dilemma_v0.parallel_env(**kwargs)
    observations, infos = env.reset(seed=seed)
    transcript = [(observations, infos)]
    total = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {agent: bots[agent](observations[agent], infos[agent]) for agent in env.agents}
        step = env.step(actions)
        observations, rewards, _, _, infos = step
        transcript.append(step)
        for agent, reward in rewards.items():
            total[agent] += reward
    return total, transcript


def test_multi_step_parallel_determinism():
    def bots():
        return {"player_0": RandomLegalBot(seed=5), "player_1": RandomLegalBot(seed=6)}

    total_a, transcript_a = _run(11, bots(), rounds=8)
    total_b, transcript_b = _run(11, bots(), rounds=8)
    assert transcript_a == transcript_b and total_a == total_b
    assert len(transcript_a) == 9


def test_tit_for_tat_against_classic_bots():
    total, _ = _run(0, {"player_0": TitForTat(), "player_1": AlwaysDefect()}, rounds=10)
    assert total == {"player_0": 9.0, "player_1": 14.0}  # suckered once, then mutual defection
    total, _ = _run(0, {"player_0": TitForTat(), "player_1": AlwaysCooperate()}, rounds=10)
    assert total == {"player_0": 30.0, "player_1": 30.0}
    total, transcript = _run(0, {"player_0": TitForTat(), "player_1": TitForTat()}, rounds=4)
    assert total == {"player_0": 12.0, "player_1": 12.0}
    assert 'The opponent said: "I cooperate as long as you do."' in transcript[-1][0]["player_0"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(), st.text()), min_size=1, max_size=12))
def test_any_unicode_reply_is_handled(pairs):
    env = prisoners_dilemma_v0.parallel_env(rounds=3)
    env.reset(seed=0)
    for a, b in pairs:
        if not env.agents:
            break
        observations, *_ = env.step({"player_0": a, "player_1": b})
        assert all(isinstance(o, str) for o in observations.values())


def test_registered_in_pettingzoo():
    import pettingzoo

    import multiagent  # noqa: F401  (registers the games)

    parallel = pettingzoo.make("parallel", "tinker/prisoners_dilemma_v0", rounds=2)
    parallel.reset(seed=0)
    _, rewards, *_ = parallel.step({"player_0": "defect", "player_1": "defect"})
    assert rewards == {"player_0": 1.0, "player_1": 1.0}


def test_check_game_passes():
    from multiagent.testing import check_game

    report = check_game(
        prisoners_dilemma_v0.env,
        prisoners_dilemma_v0.parallel_env,
        module=prisoners_dilemma_v0,
        fuzz_examples=10,
    )
    assert {"api_test", "parallel_api_test", "max_cycles_test", "parallel_determinism", "fuzz"} <= set(
        report.passed
    )
