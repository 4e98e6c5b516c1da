"""Every game passes every conformance check (`multiagent.testing.check_game`), and the checks catch broken games."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
from typing import Any

import pettingzoo
import pytest

from multiagent import GAMES, tictactoe_v0
from multiagent.core import turn_based_env, turn_based_parallel_env
from multiagent.testing import ADVISORY_WARNINGS, check_game

ALWAYS = {"api_test", "seed_test", "render_test", "reset_determinism", "truncation", "fuzz"}
PARALLEL = {"parallel_api_test", "parallel_determinism"}


def game_params() -> list[Any]:
    params = []
    for game, (module, _, _) in GAMES.items():
        missing = importlib.util.find_spec(module) is None
        params.append(
            pytest.param(game, id=game, marks=pytest.mark.skipif(missing, reason=f"{module} not written yet"))
        )
    return params


@pytest.mark.parametrize("game", game_params())
def test_game_passes_every_check(game: str) -> None:
    module_name, native, _ = GAMES[game]
    module = importlib.import_module(module_name)
    for attr in ("env", "raw_env", "parallel_env", "max_cycles"):
        assert hasattr(module, attr), f"{module_name} has no {attr}"
    assert module.__doc__ and len(module.__doc__) > 500, "the module docstring is the game's documentation"
    report = check_game(module.env, module.parallel_env, module=module, fuzz_examples=40)
    assert set(report.passed) >= ALWAYS | PARALLEL
    if native == "parallel":
        assert {"aec_to_parallel_api_test", "max_cycles_test"} <= set(report.passed)
    else:
        assert set(report.skipped) == {"aec_to_parallel_api_test", "max_cycles_test"}
    assert set(report.advisories) <= set(ADVISORY_WARNINGS)


@pytest.mark.parametrize("game", game_params())
def test_registered_in_pettingzoo(game: str) -> None:
    aec = pettingzoo.make("aec", f"tinker/{game}")
    par = pettingzoo.make("parallel", f"tinker/{game}")
    aec.reset(seed=1)
    observations, infos = par.reset(seed=1)
    assert set(observations) == set(par.agents) and set(infos) == set(par.agents)
    assert isinstance(aec.observe(aec.agent_selection), str)


# --- the checks can fail ------------------------------------------------------------------


class CrashesOnUnicode(tictactoe_v0.raw_env):
    def _interpret(self, agent: str, text: str) -> tuple[int | None, str]:
        return (int(text), "") if text and not text.isascii() else super()._interpret(agent, text)


class LeaksAcrossGames(tictactoe_v0.raw_env):
    games = itertools.count()  # shared by every instance: no two games start alike

    def _new_game(self, options: dict[str, Any] | None) -> str:
        super()._new_game(options)
        self.board.play(next(self.games) % 9 + 1, 2)
        return "player_0"


class TruncatesLate(tictactoe_v0.raw_env):
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        super().reset(seed, options)
        self._step_limit += 1  # one step too many


def broken(cls: type) -> tuple[Any, Any]:
    return (lambda **kw: turn_based_env(cls, **kw)), (lambda **kw: turn_based_parallel_env(cls, **kw))


def test_fuzzing_catches_a_parser_that_raises() -> None:
    env_fn, _ = broken(CrashesOnUnicode)
    with pytest.raises(AssertionError, match=r"check_game: \w+ failed: ValueError: invalid literal"):
        check_game(env_fn, fuzz_examples=20)


def test_determinism_checks_catch_state_that_ignores_the_seed() -> None:
    env_fn, par_fn = broken(LeaksAcrossGames)
    with pytest.raises(AssertionError, match=r"check_game: (seed_test|reset_determinism) failed"):
        check_game(env_fn, par_fn, fuzz_examples=0)


def test_truncation_check_catches_an_off_by_one() -> None:
    env_fn, par_fn = broken(TruncatesLate)
    with pytest.raises(AssertionError, match=r"check_game: truncation failed: .*9 live steps; max_cycles=4"):
        check_game(env_fn, par_fn, fuzz_examples=0)


def test_unexpected_warnings_fail_unless_not_strict() -> None:
    class Warns(tictactoe_v0.raw_env):
        def _new_game(self, options: dict[str, Any] | None) -> str:
            import warnings

            warnings.warn("something odd", RuntimeWarning, stacklevel=1)
            return super()._new_game(options)

    env_fn, _ = broken(Warns)
    with pytest.raises(AssertionError, match="api_test warned: RuntimeWarning: something odd"):
        check_game(env_fn, fuzz_examples=0)
    report = check_game(env_fn, fuzz_examples=0, strict=False)
    assert "parallel_api_test" in report.skipped and "api_test" in report.passed


def test_check_game_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="num_cycles"):
        check_game(tictactoe_v0.env, num_cycles=0)
    with pytest.raises(ValueError, match="fuzz_examples"):
        check_game(tictactoe_v0.env, fuzz_examples=-1)
