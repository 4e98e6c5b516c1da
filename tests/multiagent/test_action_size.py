"""Answers of any size: every game's step is linear in the answer's length, and long answers are cut."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gym_tinker.adversarial import AdversarialPattern
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from multiagent import GAMES, kuhn_poker_v0, negotiation_v0, prisoners_dilemma_v0, tictactoe_v0
from multiagent.testing import check_game_linear_step

INSTALLED = [g for g, (module, _, _) in GAMES.items() if importlib.util.find_spec(module) is not None]
FORMS = ["env", "parallel_env"]
MEGABYTE = 1_000_000
NOTE = f"only the first {DEFAULT_MAX_ACTION_CHARS:,} were read"


def factory(game: str, form: str) -> Callable[..., Any]:
    return getattr(importlib.import_module(GAMES[game][0]), form)  # type: ignore[no-any-return]


# --- linear time --------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("game", INSTALLED)
def test_step_is_linear_on_every_adversarial_pattern(game: str, form: str) -> None:
    times = check_game_linear_step(factory(game, form))
    assert {"move tags", "message tags", "offer tags", "brace flood"} <= set(times)


TOKENS = [
    "<move>",
    "</move>",
    "< move >",
    "<message>",
    "</message>",
    "<offer>",
    "</offer>",
    "<",
    ">",
    "/",
    "{",
    "}",
    "[",
    "]",
    '"books": ',
    "books=",
    "\\boxed{",
    "1",
    "7",
    "0",
    "-",
    ",",
    ":",
    "`",
    "```",
    "é",
    "٣",
    "²",
    "🙂",
    " ",
    "\n",
    "rock",
    "paper",
    "cooperate",
    "defect",
    "a1",
    "b",
    "bet",
    "call",
    "walk",
    "away",
    "accept",
    "propose:",
    "offer",
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("game", INSTALLED)
def test_step_is_linear_on_drawn_patterns(game: str, form: str) -> None:
    make = factory(game, form)

    @settings(
        max_examples=10,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(unit=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8).map("".join))
    def check(unit: str) -> None:
        pattern = AdversarialPattern(f"drawn {unit!r}", unit)
        check_game_linear_step(make, patterns=[pattern], size=2_048, factor=16)

    check()


def test_the_check_catches_a_quadratic_parser() -> None:
    import re

    lazy = re.compile(r"<move>(.*?)</move>", re.DOTALL)

    class Quadratic(tictactoe_v0.raw_env):
        def _interpret(self, agent: str, text: str) -> tuple[int | None, str]:
            lazy.findall(text)
            return super()._interpret(agent, text)

    def make(**kwargs: Any) -> Any:
        return Quadratic(**kwargs)

    pattern = AdversarialPattern("move tags", "<move>")
    with pytest.raises(AssertionError, match="not linear in the action's length: 'move tags'"):
        check_game_linear_step(make, patterns=[pattern], size=2_000, factor=16)


# --- the cap ------------------------------------------------------------------------------


def huge(move: str, filler: str = "<move>") -> str:
    """A legal move early on, then a megabyte of tag flood."""
    return (f"I play {move}. " + filler * (MEGABYTE // len(filler)))[:MEGABYTE]


def test_aec_cuts_a_long_answer_and_says_so_in_the_next_observation() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step(huge("5", filler=" "))  # accepted: square 5 is in the first 32 KB
    assert env.unwrapped.board.cells[4] != 0
    assert env.infos["player_0"]["action_truncated"] is True
    assert "action_truncated" not in env.infos["player_1"]
    assert NOTE in env.observe("player_0")
    assert "1,000,000 characters" in env.observe("player_0")
    assert NOTE not in env.observe("player_1")
    env.step("1")  # player_1's normal move: player_0 still sees the note until it answers again
    assert NOTE in env.observe("player_0")
    assert "action_truncated" not in env.infos["player_1"]
    env.step("9")
    assert NOTE not in env.observe("player_0")
    assert "action_truncated" not in env.infos["player_0"]


def test_aec_note_comes_with_a_rejected_answer_too() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step("x" * MEGABYTE)
    assert env.agent_selection == "player_0"
    observation = env.observe("player_0")
    assert NOTE in observation and "was not accepted" in observation
    assert env.infos["player_0"]["action_truncated"] is True
    assert len(observation) < 2_000


def test_a_move_past_the_cap_is_not_read() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step(" " * DEFAULT_MAX_ACTION_CHARS + "5")
    assert env.unwrapped.board.cells[4] == 0
    assert "no square found" in env.infos["player_0"]["error"]
    uncapped = tictactoe_v0.env(max_action_chars=None)
    uncapped.reset(seed=0)
    uncapped.step(" " * DEFAULT_MAX_ACTION_CHARS + "5")
    assert uncapped.unwrapped.board.cells[4] != 0
    assert "action_truncated" not in uncapped.infos["player_0"]


def test_a_small_cap_cuts_at_its_length() -> None:
    env = kuhn_poker_v0.env(max_action_chars=10)
    env.reset(seed=0, options={"cards": ("K", "J")})
    env.step("I check.  But actually I bet")  # only "I check.  " is read
    assert env.unwrapped.hand.history == ["check"]
    assert "only the first 10 were read" in env.observe("player_0")


def test_parallel_native_game_cuts_and_notes_per_agent() -> None:
    env = prisoners_dilemma_v0.parallel_env(rounds=2)
    env.reset(seed=0)
    answer = "<message>" + "trust me " * (MEGABYTE // 9) + "</message> <move>cooperate</move>"
    observations, _, _, _, infos = env.step({"player_0": answer, "player_1": "defect"})
    # the cut text has no closing tag and no move outside the message: player_0 must retry
    assert infos["player_0"]["action_truncated"] is True
    assert "action_truncated" not in infos["player_1"]
    assert NOTE in observations["player_0"] and NOTE not in observations["player_1"]
    assert "error" in infos["player_0"]
    observations, _, _, _, infos = env.step({"player_0": huge("cooperate", filler=" ")})
    assert NOTE in observations["player_0"]
    record = env.history[-1]
    assert record.moves == {"player_0": "cooperate", "player_1": "defect"}
    assert all(len(message) <= env.max_message_chars for message in record.messages.values())
    assert all(len(text) < 5_000 for text in observations.values())


def test_parallel_aec_form_carries_the_note_and_info() -> None:
    env = prisoners_dilemma_v0.env()
    env.reset(seed=0)
    env.step(huge("cooperate", filler=" "))
    env.step("defect")
    assert env.infos["player_0"]["action_truncated"] is True
    assert NOTE in env.observe("player_0")
    assert "action_truncated" not in env.infos["player_1"]


def test_turn_based_parallel_view_carries_the_note_and_info() -> None:
    env = tictactoe_v0.parallel_env()
    env.reset(seed=0)
    observations, _, _, _, infos = env.step({"player_0": huge("5", filler=" "), "player_1": "x" * MEGABYTE})
    assert infos["player_0"]["action_truncated"] is True
    assert "action_truncated" not in infos["player_1"]  # not its turn: its answer was ignored
    assert NOTE in observations["player_0"] and NOTE not in observations["player_1"]


def test_negotiation_relays_only_the_cut_message() -> None:
    env = negotiation_v0.env(max_message_chars=10_000_000)
    env.reset(seed=0, options={"counts": (3, 2, 1), "values": ((1, 2, 3), (2, 2, 0))})
    env.step("<offer>balls=1</offer> " + "please " * (MEGABYTE // 7))
    message = env.unwrapped.events[-1].reply.message
    assert 0 < len(message) <= DEFAULT_MAX_ACTION_CHARS
    assert env.unwrapped.offer == (0, (0, 0, 1))
    seen = env.observe("player_1")
    assert NOTE not in seen and len(seen) < DEFAULT_MAX_ACTION_CHARS + 2_000
    assert NOTE in env.observe("player_0")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("game", INSTALLED)
def test_megabyte_answers_keep_every_game_small(game: str, form: str) -> None:
    env = factory(game, form)()
    if form == "env":
        env.reset(seed=0)
        for _ in range(2):
            if not env.agents:
                break
            agent = env.agent_selection
            env.step(
                None if env.terminations[agent] or env.truncations[agent] else "<move>" * (MEGABYTE // 6)
            )
        observations = [env.observe(agent) for agent in env.agents]
    else:
        env.reset(seed=0)
        observations = list(
            env.step({agent: "<message>" * (MEGABYTE // 9) for agent in env.agents})[0].values()
        )
    assert observations and all(len(text) < 5_000 for text in observations)
    raw = env.unwrapped
    kept = [getattr(raw, "history", []), getattr(raw, "events", []), getattr(raw, "_errors", {})]
    assert len(repr(kept)) < 5_000


@pytest.mark.parametrize("game", INSTALLED)
@pytest.mark.parametrize("value", [0, -1, "x", True, 1.5])
def test_invalid_caps_are_rejected_with_the_value(game: str, value: Any) -> None:
    for form in FORMS:
        with pytest.raises(ValueError, match=f"max_action_chars.*got {value!r}"):
            factory(game, form)(max_action_chars=value)


@pytest.mark.parametrize("game", INSTALLED)
def test_cap_is_stored_and_none_disables_it(game: str) -> None:
    assert factory(game, "parallel_env")().unwrapped.max_action_chars == DEFAULT_MAX_ACTION_CHARS
    env = factory(game, "env")(max_action_chars=None)
    assert env.unwrapped.max_action_chars is None
    env.reset(seed=0)
    if game in ("rock_paper_scissors_v0", "prisoners_dilemma_v0"):
        env.step("x" * 40_000)
        env.step("x" * 40_000)
        assert not any("action_truncated" in env.infos[agent] for agent in env.agents)
    else:
        env.step("x" * 40_000)
        assert "action_truncated" not in env.infos[env.agent_selection]
