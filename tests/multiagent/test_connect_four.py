"""Tests of connect four: board rules, the text env, and the alpha-beta bot."""

from __future__ import annotations

from typing import Any

import pytest

from multiagent import connect_four_v0
from multiagent.bots import RandomLegalBot
from multiagent.connect_four.board import WINDOWS, Board
from multiagent.connect_four.bots import AlphaBetaBot, evaluate, read_board, search

# A full board without four in a line (checked below, move by move).
DRAW = [int(c) for c in "111111222222333333544444455555666666777777"]


@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ([1, 1, 2, 2, 3, 3, 4], 1),  # horizontal, bottom row
        ([4, 5, 4, 5, 4, 5, 4], 1),  # vertical
        ([1, 2, 2, 3, 3, 4, 3, 4, 4, 7, 4], 1),  # diagonal up-right
        ([7, 6, 6, 5, 5, 4, 5, 4, 4, 1, 4], 1),  # diagonal up-left
        ([1, 2, 1, 2, 1, 2, 7, 2], 2),  # O vertical
        ([7, 1, 7, 2, 6, 3, 6, 4], 2),  # O horizontal
    ],
)
def test_wins_in_every_direction(moves: list[int], winner: int) -> None:
    board = Board()
    for i, column in enumerate(moves):
        assert board.winner() == 0, f"won early at move {i}"
        board.drop(column)
    assert board.winner() == winner
    assert board.legal_moves() == []


def test_every_window_is_a_line_of_four() -> None:
    assert len(WINDOWS) == 69  # 24 horizontal + 21 vertical + 2 * 12 diagonal
    for window in WINDOWS:
        rows = [i // 7 for i in window]
        cols = [i % 7 for i in window]
        steps = {(rows[k + 1] - rows[k], cols[k + 1] - cols[k]) for k in range(3)}
        assert len(steps) == 1 and steps.pop() in {(0, 1), (1, 0), (1, 1), (1, -1)}


def test_full_board_draw() -> None:
    board = Board()
    for column in DRAW:
        assert board.winner() == 0
        board.drop(column)
    assert board.is_full() and board.winner() == 0 and board.legal_moves() == []


def test_board_rejects_bad_drops() -> None:
    board = Board.from_moves([3] * 6)
    assert not board.can_drop(3)
    with pytest.raises(ValueError, match="column 3"):
        board.drop(3)
    with pytest.raises(ValueError, match="column 0"):
        board.drop(0)


def run(env: Any, moves: list[int]) -> None:
    for column in moves:
        env.step(str(column))


@pytest.mark.parametrize(
    ("answer", "column"),
    [
        ("4", 4),
        ("column 6", 6),
        ("<move>2</move>", 2),
        ("[7]", 7),
        ("I'd say 3... no, 5", 5),
        ("\\boxed{1}", 1),
        ("[plan] block them: column 3", 3),
    ],
)
def test_lenient_answers(answer: str, column: int) -> None:
    env = connect_four_v0.env()
    env.reset()
    env.step(answer)
    assert env.agent_selection == "player_1", env.infos["player_0"].get("error")
    assert f"dropped in column {column}." in env.observe("player_1")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("left", "no column number found"),
        ("0", "0 is not a column (columns are 1-7)"),
        ("8", "8 is not a column"),
    ],
)
def test_rejected_answers(answer: str, error: str) -> None:
    env = connect_four_v0.env()
    env.reset()
    env.step(answer)
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["error"].startswith(error)


def test_full_column_is_rejected_and_not_listed() -> None:
    env = connect_four_v0.env()
    env.reset()
    run(env, [1] * 6)
    assert 1 not in env.infos["player_0"]["legal_moves"]
    env.step("1")
    assert env.infos["player_0"]["error"] == "column 1 is full"


def test_rewards_for_win_and_draw() -> None:
    env = connect_four_v0.env()
    env.reset()
    run(env, [1, 2, 1, 2, 1, 2, 7, 2])
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}
    assert "O (player_1) wins with four in a line." in env.observe("player_0")
    env.reset()
    run(env, DRAW)
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0} and all(env.terminations.values())


def test_observation_and_render() -> None:
    env = connect_four_v0.env(render_mode="ansi")
    env.reset()
    run(env, [4, 4])
    obs = env.observe("player_0")
    assert "|. . . O . . .|\n|. . . X . . .|" in obs
    assert "Your turn. Legal moves: 1, 2, 3, 4, 5, 6, 7." in obs
    assert env.render().endswith("player_0 to move.")
    cells, me = read_board(obs)
    assert cells[3] == 1 and cells[10] == 2 and me == 1


def test_search_wins_and_blocks() -> None:
    win_now = Board.from_moves([1, 1, 2, 2, 3, 3])  # X to move: 4 wins
    values = search(win_now.cells, 1, depth=3)
    assert max(values, key=values.__getitem__) == 4
    must_block = Board.from_moves([1, 7, 2, 7, 3])  # O to move: X threatens 4
    values = search(must_block.cells, 2, depth=4)
    assert max(values, key=values.__getitem__) == 4
    empty = [0] * 42
    assert evaluate(empty, 1) == 0


def play_games(bots: dict[str, Any], n: int) -> list[float]:
    env = connect_four_v0.env()
    results = []
    for g in range(n):
        env.reset(seed=g)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                if agent == "player_0":
                    results.append(reward)
                env.step(None)
            else:
                env.step(bots[agent](obs, info))
    return results


def test_alphabeta_beats_random() -> None:
    as_x = play_games({"player_0": AlphaBetaBot(depth=4, seed=0), "player_1": RandomLegalBot(seed=1)}, 6)
    as_o = play_games({"player_0": RandomLegalBot(seed=2), "player_1": AlphaBetaBot(depth=4, seed=3)}, 6)
    assert as_x == [1.0] * 6
    assert as_o == [-1.0] * 6


def test_search_finds_a_double_threat() -> None:
    board = Board.from_moves([2, 2, 3, 3])  # X to move: 4 makes _XXX_ on the bottom row
    values = search(board.cells, 1, depth=3)
    assert max(values, key=values.__getitem__) == 4 and values[4] > 10**6
    assert all(v < 10**6 for c, v in values.items() if c != 4)


def test_bot_validates_depth() -> None:
    with pytest.raises(ValueError, match="depth"):
        AlphaBetaBot(depth=0)
