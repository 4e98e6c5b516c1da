"""Tests for multiagent.elo against hand-computed values."""

from __future__ import annotations

import math

import pytest

from multiagent.elo import EloRatings, expected_score, update_ratings


def test_expected_score_hand_computed():
    assert expected_score(1000, 1000) == 0.5
    # 400 points apart: 10:1 odds.
    assert expected_score(1400, 1000) == pytest.approx(10 / 11)
    assert expected_score(1000, 1400) == pytest.approx(1 / 11)
    assert expected_score(1200, 1000) + expected_score(1000, 1200) == pytest.approx(1.0)


def test_update_hand_computed():
    # Equal ratings, K=32: winner +16, loser -16.
    assert update_ratings(1000, 1000, 1.0) == (1016.0, 984.0)
    # 1400 vs 1000 with K=20, the favourite loses: delta = 20 * (0 - 10/11) = -18.1818...
    a, b = update_ratings(1400, 1000, 0.0, k=20)
    assert a == pytest.approx(1400 - 200 / 11)
    assert b == pytest.approx(1000 + 200 / 11)
    with pytest.raises(ValueError, match="score_a"):
        update_ratings(1000, 1000, 2.0)


def test_sequence_of_games_and_record():
    elo = EloRatings(k=32)
    elo.record("a", "b", 1.0)  # a 1016, b 984
    elo.record("a", "b", 0.5)
    # expected for a at 1016 vs 984: 1 / (1 + 10 ** (-32 / 400))
    p = 1 / (1 + 10 ** (-32 / 400))
    assert elo.rating("a") == pytest.approx(1016 + 32 * (0.5 - p))
    assert elo.rating("a") + elo.rating("b") == pytest.approx(2000.0)
    rows = {row.name: row for row in elo.table()}
    assert (rows["a"].wins, rows["a"].draws, rows["a"].losses, rows["a"].games) == (1, 1, 0, 2)
    assert (rows["b"].wins, rows["b"].draws, rows["b"].losses) == (0, 1, 1)
    assert [row.name for row in elo.table()] == ["a", "b"]


def test_interval_from_fisher_information():
    elo = EloRatings(confidence=0.95)
    elo.add("new")
    assert elo.interval("new") == (-math.inf, math.inf)
    # n games between players kept at equal ratings: SE = (400 / ln 10) / sqrt(n / 4).
    for _ in range(100):
        elo.add("x", 1000.0)
        elo.add("y", 1000.0)
        elo.record("x", "y", 0.5)
    se = 400 / math.log(10) / math.sqrt(100 / 4)
    assert elo.standard_error("x") == pytest.approx(se)
    low, high = elo.interval("x")
    assert high - low == pytest.approx(2 * 1.959963984540054 * se)
    # More games, narrower interval.
    elo.record("x", "y", 1.0)
    assert elo.standard_error("x") < se


def test_bad_input_is_named():
    elo = EloRatings()
    with pytest.raises(KeyError, match="ghost"):
        elo.rating("ghost")
    with pytest.raises(ValueError, match="itself"):
        elo.record("a", "a", 1.0)
    with pytest.raises(ValueError, match="confidence"):
        EloRatings(confidence=1.5)
    with pytest.raises(ValueError, match="k"):
        EloRatings(k=0)
