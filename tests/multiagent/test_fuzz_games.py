"""Fuzzing every game with arbitrary unicode answers: nothing escapes, and legal moves in any wrapping are accepted."""

from __future__ import annotations

import importlib
import importlib.util
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent import GAMES

INSTALLED = [g for g, (module, _, _) in GAMES.items() if importlib.util.find_spec(module) is not None]
BOARD_GAMES = ["tictactoe_v0", "connect_four_v0", "kuhn_poker_v0"]
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None)

NASTY = [
    "",
    " ",
    "\x00",
    "²",
    "٣",
    "໕",
    "9" * 5000,
    "1" * 10,
    "-1",
    "0",
    "<move>",
    "<move></move>",
    "<move>²</move>",
    "[]",
    "[" * 1000,
    "\\boxed{",
    "🙂" * 1000,
    "b2" * 1000,
    "\n\n\t",
    "call fold bet check pass raise",
    "I play 5 " * 500,
]


def module_of(game: str) -> Any:
    return importlib.import_module(GAMES[game][0])


def assert_sane(env: Any) -> None:
    for agent in env.agents:
        assert isinstance(env.observe(agent), str)
        assert math.isfinite(float(env.rewards[agent]))
        assert isinstance(env.infos[agent].get("legal_moves", []), list)


@pytest.mark.parametrize("game", INSTALLED)
@pytest.mark.parametrize("answer", NASTY, ids=lambda a: repr(a[:12]))
def test_nasty_answers_never_raise(game: str, answer: str) -> None:
    env = module_of(game).env(max_retries=3)
    env.reset(seed=0)
    for _agent in env.agent_iter(40):
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else answer)
        assert_sane(env)


@pytest.mark.parametrize("game", INSTALLED)
def test_arbitrary_unicode_games(game: str) -> None:
    module = module_of(game)

    @FUZZ
    @given(answers=st.lists(st.text(max_size=200), max_size=40), seed=st.integers(0, 1000))
    def play(answers: list[str], seed: int) -> None:
        env = module.env()
        env.reset(seed=seed)
        moves = iter(answers)
        for _agent in env.agent_iter(300):
            _, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else next(moves, ""))
            assert_sane(env)

    play()


@pytest.mark.parametrize("game", INSTALLED)
def test_arbitrary_unicode_parallel_games(game: str) -> None:
    module = module_of(game)

    @FUZZ
    @given(answers=st.lists(st.text(max_size=100), min_size=1, max_size=30), seed=st.integers(0, 1000))
    def play(answers: list[str], seed: int) -> None:
        env = module.parallel_env()
        env.reset(seed=seed)
        for step in range(60):
            if not env.agents:
                break
            actions = {a: answers[(step + i) % len(answers)] for i, a in enumerate(env.agents)}
            observations, rewards, _, _, _ = env.step(actions)
            assert all(isinstance(o, str) for o in observations.values())
            assert all(math.isfinite(float(r)) for r in rewards.values())

    play()


WRAPPINGS = [
    "{m}",
    " {m}\n",
    "I play {m}",
    "<move>{m}</move>",
    "[{m}]",
    "\\boxed{{{m}}}",
    "{noise} <move>{m}</move>",
]


@pytest.mark.parametrize("game", BOARD_GAMES)
def test_legal_moves_are_accepted_in_any_wrapping(game: str) -> None:
    module = module_of(game)
    noise = st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=60)

    @FUZZ
    @given(
        choices=st.lists(
            st.tuples(st.integers(0, 100), st.sampled_from(WRAPPINGS), noise), min_size=1, max_size=42
        ),
        seed=st.integers(0, 1000),
    )
    def play(choices: list[tuple[int, str, str]], seed: int) -> None:
        env = module.env(max_retries=0)  # a rejected legal move would forfeit at once
        env.reset(seed=seed)
        for k, (pick, wrapping, text) in enumerate(choices):
            if not env.agents or env.terminations[env.agent_selection]:
                break
            agent = env.agent_selection
            legal = env.infos[agent]["legal_moves"]
            move = legal[pick % len(legal)]
            env.step(wrapping.format(m=move, noise=text))
            if any(env.terminations.values()):
                assert "forfeits" not in env.observe(agent), (
                    f"step {k}: {wrapping!r} with {move!r} was rejected"
                )
                break
            assert env.agent_selection != agent, f"step {k}: {wrapping!r} with {move!r} was not played"

    play()
