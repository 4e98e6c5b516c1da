"""Tests of tic-tac-toe: board rules, the text env, and the bots."""

from __future__ import annotations

from typing import Any

import pytest

from multiagent import tictactoe_v0
from multiagent.bots import RandomLegalBot
from multiagent.tictactoe.board import CROSS as X
from multiagent.tictactoe.board import LINES, Board, square_of
from multiagent.tictactoe.board import NOUGHT as O
from multiagent.tictactoe.bots import MinimaxBot, best_moves, read_board


def fill(board: Board, squares: list[int]) -> None:
    for i, square in enumerate(squares):
        board.play(square, X if i % 2 == 0 else O)


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("mark", [X, O])
def test_every_line_wins(line: tuple[int, int, int], mark: int) -> None:
    board = Board()
    other = O if mark == X else X
    others = [i for i in range(9) if i not in line][:2]
    for own, theirs in zip(line, [*others, None], strict=True):
        assert board.winner() == 0
        board.play(own + 1, mark)
        if theirs is not None:
            board.play(theirs + 1, other)
    assert board.winner() == mark
    assert board.legal_moves() == []


def test_draw_and_board_round_trip() -> None:
    board = Board()
    fill(board, [1, 2, 3, 5, 4, 6, 8, 7, 9])
    assert board.winner() == 0 and board.is_full() and board.legal_moves() == []
    assert board.compact() == "XOXXOOOXX"
    assert Board("XOXXOOOXX").compact() == "XOXXOOOXX"
    assert Board("XXX.OO...").winner() == X


def test_board_rejects_bad_input() -> None:
    board = Board()
    board.play(5, X)
    with pytest.raises(ValueError, match="Square 5 is not an empty square"):
        board.play(5, O)
    with pytest.raises(ValueError, match="Square 10"):
        board.play(10, O)
    with pytest.raises(ValueError, match="mark 1 \\(X\\) or 2 \\(O\\)"):
        board.play(1, 3)
    with pytest.raises(ValueError, match="9 characters"):
        Board("XO")
    with pytest.raises(ValueError, match="column in a-c"):
        square_of("d", 1)


@pytest.mark.parametrize(
    ("answer", "square"),
    [
        ("5", 5),
        (" 7\n", 7),
        ("I play 5", 5),
        ("<move>3</move>", 3),
        ("[9]", 9),
        ("b2", 5),
        ("C1", 3),
        ("a 3", 7),
        ("I'll go for the corner: <move>c3</move>", 9),
        ("4 looks weak, 6 is better", 6),
        ("\\boxed{8}", 8),
        ("[thinking] the centre is free, I play 5", 5),
        ("<move>the corner</move> so 9", 9),
    ],
)
def test_lenient_answers(answer: str, square: int) -> None:
    env = tictactoe_v0.env()
    env.reset()
    env.step(answer)
    assert env.agent_selection == "player_1", env.infos["player_0"].get("error")
    assert square not in env.infos["player_1"]["legal_moves"]
    assert f"X (player_0) played {square}." in env.observe("player_1")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("centre", "no square found in it"),
        ("0", "0 is not a square (squares are 1-9)"),
        ("12", "12 is not a square"),
        ("²", "no square found"),
        ("d4", "no square found"),
    ],
)
def test_rejected_answers(answer: str, error: str) -> None:
    env = tictactoe_v0.env()
    env.reset()
    env.step(answer)
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["error"].startswith(error)


def test_taken_square_is_rejected() -> None:
    env = tictactoe_v0.env()
    env.reset()
    env.step("5")
    env.step("b2")
    assert env.infos["player_1"]["error"] == "square 5 is already taken"


def play(env: Any, moves: list[str]) -> None:
    for move in moves:
        env.step(move)


def test_win_loss_rewards_and_final_observations() -> None:
    env = tictactoe_v0.env()
    env.reset()
    play(env, ["1", "4", "2", "5", "3"])
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert all(env.terminations.values())
    assert "Game over. X (player_0) wins with three in a row." in env.observe("player_1")
    rewards = {}
    for agent in env.agent_iter():
        _, reward, terminated, _, _ = env.last()
        assert terminated
        rewards[agent] = reward
        env.step(None)
    assert rewards == {"player_0": 1.0, "player_1": -1.0}


def test_o_can_win() -> None:
    env = tictactoe_v0.env()
    env.reset()
    play(env, ["1", "3", "2", "5", "4", "7"])
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}


def test_draw_rewards() -> None:
    env = tictactoe_v0.env()
    env.reset()
    play(env, ["1", "2", "3", "5", "4", "6", "8", "7", "9"])
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert "a draw" in env.observe("player_0")


def test_observation_content() -> None:
    env = tictactoe_v0.env()
    env.reset()
    first = env.observe("player_0")
    assert first.startswith("Tic-tac-toe. You are X (player_0).")
    assert "Your turn. Legal moves: 1, 2, 3, 4, 5, 6, 7, 8, 9." in first
    assert "Waiting for X (player_0) to move." in env.observe("player_1")
    assert env.infos["player_1"]["legal_moves"] == []


def games(bot_x: Any, bot_o: Any, n: int, seed: int = 0) -> list[float]:
    """Rewards of player_0 over n games."""
    env = tictactoe_v0.env()
    results = []
    for g in range(n):
        env.reset(seed=seed + g)
        bots = {"player_0": bot_x, "player_1": bot_o}
        final = {}
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                final[agent] = reward
                env.step(None)
            else:
                env.step(bots[agent](obs, info))
        results.append(final["player_0"])
    return results


def test_minimax_never_loses_to_random() -> None:
    as_x = games(MinimaxBot(seed=0), RandomLegalBot(seed=1), 150)
    as_o = games(RandomLegalBot(seed=2), MinimaxBot(seed=3), 150)
    assert min(as_x) >= 0 and max(as_o) <= 0
    assert as_x.count(1.0) > 120  # and it mostly wins


def test_minimax_against_itself_always_draws() -> None:
    assert set(games(MinimaxBot(seed=0), MinimaxBot(seed=1), 20)) == {0.0}


def test_minimax_takes_wins_and_blocks() -> None:
    assert best_moves("XX.OO....", "X") == [3]
    assert best_moves("XX.OO....", "O") == [6]  # its own win beats blocking
    assert best_moves("XX.O.....", "O") == [3]  # lost anyway, but blocks the immediate loss
    with pytest.raises(ValueError, match="9 cells of X, O or"):
        best_moves("XX", "X")
    with pytest.raises(ValueError, match="Not a tic-tac-toe observation"):
        read_board("Connect four.")
