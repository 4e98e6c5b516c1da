"""Tests of the turn-based game base class, its wrapper, registration and the bot registry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pettingzoo
import pytest
from pettingzoo.utils.conversions import turn_based_aec_to_parallel_wrapper

import multiagent
from gym_tinker.spaces import TextObservation, TextSpace
from multiagent import tictactoe_v0
from multiagent.bots import BOTS, RandomLegalBot, get_bot
from multiagent.core import GameOver, TextGameWrapper, TurnBasedTextGame


class Countdown(TurnBasedTextGame[int]):
    """Three players count down from a random start; whoever says 0 wins. Uses np_random."""

    players = ("player_0", "player_1", "player_2")

    def _new_game(self, options: dict[str, Any] | None) -> str:
        self.count = int(self.np_random.integers(3, 9))
        return "player_1"

    def _legal_moves(self, agent: str) -> list[int]:
        return [self.count - 1]

    def _interpret(self, agent: str, text: str) -> tuple[int | None, str]:
        if text.strip() != str(self.count - 1):
            return None, f"say {self.count - 1}"
        return self.count - 1, ""

    def _apply_move(self, agent: str, move: int) -> GameOver | None:
        self.count = move
        if move == 0:
            return GameOver(
                {a: (2.0 if a == agent else -1.0) for a in self.possible_agents}, f"{agent} said 0."
            )
        return None

    def _observation_text(self, agent: str) -> str:
        return f"count {self.count}; {self.agent_selection} to move; {self.result}"


def play_until_done(env: Any, answer: Any) -> list[str]:
    order = []
    for agent in env.agent_iter(1000):
        _, _, terminated, truncated, info = env.last()
        order.append(agent)
        env.step(None if terminated or truncated else answer(agent, info))
    return order


def test_turn_order_rewards_and_dead_steps() -> None:
    game = Countdown()
    game.reset(seed=3)
    start = game.count
    order = play_until_done(game, lambda agent, info: str(info["legal_moves"][0]))
    # player_1 starts, turns cycle in `players` order, then each agent steps once more with None.
    live = order[:start]
    assert live == [("player_1", "player_2", "player_0")[i % 3] for i in range(start)]
    assert sorted(order[start:]) == ["player_0", "player_1", "player_2"]
    assert game.agents == []


def test_rewards_reach_every_agent_through_last() -> None:
    game = Countdown()
    game.reset(seed=3)
    totals: dict[str, float] = {}
    for agent in game.agent_iter():
        _, reward, terminated, truncated, info = game.last()
        totals[agent] = totals.get(agent, 0.0) + reward
        game.step(None if terminated or truncated else str(info["legal_moves"][0]))
    assert sorted(totals.values()) == [-1.0, -1.0, 2.0]


def test_same_seed_same_game_and_reset_without_seed_continues() -> None:
    counts = []
    for seed in (5, 5, 6, 7, 8):
        game = Countdown()
        game.reset(seed=seed)
        counts.append(game.count)
    assert counts[0] == counts[1]
    assert len(set(counts)) > 1
    game = Countdown()
    game.reset(seed=5)
    assert game.np_random_seed == 5
    # reset without a seed continues the same generator instead of reseeding
    game.reset()
    second = game.count
    reference = Countdown()
    reference.reset(seed=5)
    reference.reset()
    assert reference.count == second


def test_invalid_answer_costs_a_retry_and_shows_the_error() -> None:
    env = tictactoe_v0.env(max_retries=2)
    env.reset(seed=0)
    env.step("the middle, obviously")
    assert env.agent_selection == "player_0"
    info = env.infos["player_0"]
    assert info["retries_left"] == 1
    assert info["error"] == "no square found in it"
    obs = env.observe("player_0")
    assert "'the middle, obviously' was not accepted: no square found in it" in obs
    assert "1 retry left" in obs
    assert "not accepted" not in env.observe("player_1")
    env.step("5")
    assert env.agent_selection == "player_1"
    assert "not accepted" not in env.observe("player_0")
    assert env.infos["player_1"]["retries_left"] == 2


def test_forfeit_after_the_retry_budget() -> None:
    env = tictactoe_v0.env(max_retries=1, forfeit_penalty=-3.0)
    env.reset(seed=0)
    env.step("5")
    env.step("5")  # taken: retry 1 of 1
    assert not any(env.terminations.values())
    env.step("nonsense")  # second invalid answer in the same turn forfeits
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -3.0}
    assert "player_1 forfeits after 2 invalid answers" in env.observe("player_0")


def test_retry_budget_is_per_turn() -> None:
    env = tictactoe_v0.env(max_retries=1)
    env.reset(seed=0)
    for _ in range(3):
        env.step("?")  # one bad answer per turn is within the budget
        env.step(str(env.infos[env.agent_selection]["legal_moves"][0]))
    assert not any(env.terminations.values())


def test_zero_retries_forfeits_at_once_and_none_means_unlimited() -> None:
    env = tictactoe_v0.env(max_retries=0)
    env.reset()
    env.step("x")
    assert all(env.terminations.values())
    env = tictactoe_v0.env(max_retries=None, max_cycles=1000)
    env.reset()
    for _ in range(500):
        env.step("x")
    assert env.agents == ["player_0", "player_1"] and not any(env.terminations.values())
    assert env.infos["player_0"]["retries_left"] is None


def test_truncation_after_max_cycles_counts_attempts() -> None:
    env = tictactoe_v0.env(max_retries=None, max_cycles=3)
    env.reset()
    for _ in range(5):
        env.step("?")
    assert not any(env.truncations.values())
    env.step("?")  # 3 cycles of 2 steps
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert "stopped after 3 cycles" in env.observe("player_1")


def test_parallel_view_counts_steps_as_cycles() -> None:
    par = tictactoe_v0.parallel_env(max_cycles=2, max_retries=None)
    assert isinstance(par, turn_based_aec_to_parallel_wrapper)
    obs, infos = par.reset(seed=0)
    assert set(obs) == {"player_0", "player_1"} and isinstance(obs["player_0"], TextObservation)
    _, _, _, truncations, infos = par.step({"player_0": "?", "player_1": "ignored, not my turn"})
    assert infos["player_0"]["active_agent"] == "player_0" and not any(truncations.values())
    _, _, _, truncations, _ = par.step({"player_0": "?", "player_1": "?"})
    assert all(truncations.values()) and par.agents == []


def test_non_string_actions_are_type_errors_and_dead_agents_take_none() -> None:
    env = tictactoe_v0.env(max_retries=0)
    env.reset()
    with pytest.raises(TypeError, match=r"expects the move of 'player_0' as a str, got int: 5"):
        env.step(5)
    with pytest.raises(TypeError, match="got NoneType"):
        env.step(None)
    env.step("?")  # forfeit
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step("5")
    env.step(None)
    env.step(None)
    assert env.agents == []


def test_observations_are_lazy_and_cached_until_the_next_step() -> None:
    game = tictactoe_v0.raw_env()
    game.reset()
    calls = []
    original = game._observation_text
    game._observation_text = lambda agent: calls.append(agent) or original(agent)  # type: ignore[method-assign]
    game.step("5")
    game.step("1")
    assert calls == []  # stepping renders nothing
    first = game.observe("player_0")
    assert game.observe("player_0") is first and calls == ["player_0"]
    game.step("9")
    assert game.observe("player_0") is not first


def test_spaces_are_shared_text_spaces() -> None:
    env = tictactoe_v0.env()
    assert env.observation_space("player_0") is env.observation_space("player_0")
    assert env.action_space("player_1") == TextSpace() and env.observation_space("player_1").dtype == object
    with pytest.raises(KeyError, match="Unknown agent 'player_7'"):
        env.action_space("player_7")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"forfeit_penalty": "lose"}, "forfeit_penalty"),
        ({"max_cycles": 0}, "max_cycles"),
        ({"max_cycles": True}, "max_cycles"),
        ({"steps_per_cycle": 0}, "steps_per_cycle"),
        ({"render_mode": "rgb_array"}, "render_mode"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tictactoe_v0.raw_env(**kwargs)


def test_a_game_without_players_is_rejected() -> None:
    class NoPlayers(TurnBasedTextGame[int]):
        pass

    with pytest.raises(TypeError, match="players"):
        NoPlayers()


def test_wrapper_enforces_order_like_pettingzoo() -> None:
    env = tictactoe_v0.env()
    assert isinstance(env, TextGameWrapper)
    for name in ("agents", "agent_selection", "rewards", "terminations", "truncations", "infos"):
        with pytest.raises(AttributeError, match=f"{name} cannot be accessed before reset"):
            getattr(env, name)
    with pytest.raises(Exception, match="reset"):
        env.step("5")
    with pytest.raises(Exception, match="reset"):
        env.last()
    env.reset()
    assert env.last()[4]["legal_moves"] == list(range(1, 10))


def test_render_modes() -> None:
    env = tictactoe_v0.env(render_mode="ansi")
    env.reset()
    env.step("b2")
    text = env.render()
    assert isinstance(text, str) and " 4 | X | 6" in text and "player_1 to move" in text
    silent = tictactoe_v0.raw_env()
    silent.reset()
    with pytest.warns(UserWarning, match="without a render_mode"):
        assert silent.render() is None


def test_registry_makes_every_installed_game() -> None:
    for game, _ in multiagent.list_games():
        aec = pettingzoo.make("aec", f"tinker/{game}")
        par = pettingzoo.make("parallel", f"tinker/{game}")
        aec.reset(seed=0)
        par.reset(seed=0)
        assert isinstance(aec.observe(aec.agent_selection), str)
    multiagent.register_all()  # idempotent: no override warning (warnings are errors here)


def test_list_games_describes_the_board_games() -> None:
    games = dict(multiagent.list_games())
    assert {"tictactoe_v0", "connect_four_v0", "kuhn_poker_v0"} <= set(games)
    assert all(isinstance(d, str) and d for d in games.values())


def test_bot_registry() -> None:
    for game, bots in BOTS.items():
        if dict(multiagent.list_games()).get(game) is None:
            continue
        for name in bots:
            assert callable(get_bot(game, name, seed=0))
    with pytest.raises(KeyError, match="No bots for game 'chess_v0'"):
        get_bot("chess_v0", "random")
    bot = RandomLegalBot(seed=1)
    picks = {bot("", {"legal_moves": [1, 2, 3]}) for _ in range(50)}
    assert picks == {"1", "2", "3"}
    same = [RandomLegalBot(seed=2)("", {"legal_moves": list(range(9))}) for _ in range(2)]
    assert same[0] == same[1]


def test_failed_reset_leaves_the_previous_game_alone() -> None:
    from multiagent import kuhn_poker_v0

    env = kuhn_poker_v0.raw_env()
    env.reset(options={"cards": ("K", "J")})
    env.step("bet")
    with pytest.raises(ValueError, match=r"two different cards .* got \('K', 'K'\)"):
        env.reset(options={"cards": ("K", "K")})
    assert env.hand.cards == ("K", "J") and env.hand.history == ["bet"]
    assert np.isfinite(env.rewards["player_0"])


def test_games_pickle_and_copy_mid_game() -> None:
    import copy
    import pickle

    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step("5")
    restored = pickle.loads(pickle.dumps(env))
    assert restored.observe("player_1") == env.observe("player_1")
    branch = copy.deepcopy(env)
    branch.step("1")
    assert env.agent_selection == "player_1" and branch.agent_selection == "player_0"


@pytest.mark.parametrize("game", ["tictactoe_v0", "connect_four_v0", "kuhn_poker_v0"])
def test_listed_description_is_the_games_own(game: str) -> None:
    import importlib

    module = importlib.import_module(f"multiagent.{game}")
    assert module.raw_env.description == dict(multiagent.list_games())[game]
    assert module.raw_env.metadata["name"] == game
