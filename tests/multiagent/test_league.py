"""Tests for multiagent.league: members, seeded opponent sampling, rated rounds, the table."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from multiagent import rock_paper_scissors_v0
from multiagent.league import League
from multiagent.rock_paper_scissors.bots import ConstantBot, FrequencyBot


def rps():
    return rock_paper_scissors_v0.parallel_env(rounds=5)


def make_league(seed=0, **kwargs):
    league = League(rps, seed=seed, **kwargs)
    league.add("learner", FrequencyBot(), frozen=False)
    league.add("rock", ConstantBot("rock"))
    league.add("paper", ConstantBot("paper"))
    league.snapshot("learner@0", FrequencyBot(opening="rock"))
    return league


def test_members_by_kind():
    league = make_league()
    assert league.learners() == ["learner"]
    assert league.bots() == ["rock", "paper"]
    assert league.snapshots() == ["learner@0"]
    assert league["learner@0"].parent == "learner" and league["learner@0"].frozen
    assert not league["learner"].frozen and len(league) == 4


def test_opponent_sampling_is_deterministic_per_seed():
    draws = [make_league(seed=7).sample_opponents("learner", 40) for _ in range(2)]
    assert draws[0] == draws[1]
    assert make_league(seed=8).sample_opponents("learner", 40) != draws[0]
    assert set(draws[0]) == {"learner", "learner@0", "rock", "paper"}


def test_weights_choose_categories():
    only_bots = make_league(weights={"bots": 1.0})
    assert set(only_bots.sample_opponents("learner", 30)) == {"rock", "paper"}
    only_latest = make_league(weights={"latest": 1.0})
    assert only_latest.sample_opponents("learner", 5) == ["learner"] * 5
    # an empty category is skipped: no snapshots here, so all weight falls on bots
    league = League(rps, seed=0, weights={"snapshots": 0.9, "bots": 0.1})
    league.add("learner", FrequencyBot(), frozen=False)
    league.add("rock", ConstantBot("rock"))
    assert league.sample_opponents("learner", 10) == ["rock"] * 10
    # the category mix follows the weights
    mixed = make_league(seed=1, weights={"latest": 0.75, "bots": 0.25}).sample_opponents("learner", 400)
    assert 250 < mixed.count("learner") < 350


def test_play_round_rates_games_and_returns_learner_trajectories():
    league = make_league(weights={"bots": 1.0})
    played = league.play_round(games=6)
    assert len(played.opponents["learner"]) == 3
    assert len(played.report) == 6
    # each pairing is played from both seats with one seed
    results = played.report.results
    assert [r.seed for r in results[::2]] == [r.seed for r in results[1::2]]
    assert results[0].seats["player_0"] == results[1].seats["player_1"] == "learner"
    assert len(played.trajectories) == 6
    assert all(t.metadata["policy"] == "learner" for t in played.trajectories)
    rows = {row["name"]: row for row in league.table()}
    assert rows["learner"]["games"] == 6 and rows["learner"]["wins"] == 6
    assert rows["learner"]["rating"] > 1000 > min(rows["rock"]["rating"], rows["paper"]["rating"])
    assert rows["learner@0"]["games"] == 0 and rows["learner@0"]["low"] == float("-inf")
    assert league.table()[0]["name"] == "learner"


def test_mirror_matches_are_not_rated_and_both_seats_learn():
    league = make_league(weights={"latest": 1.0})
    played = league.play_round(games=2)
    assert len(played.trajectories) == 4  # 2 games x 2 learner seats
    assert league.elo.games("learner") == 0 and league.elo.rating("learner") == 1000.0


def test_snapshot_starts_at_the_learner_rating():
    league = make_league(weights={"bots": 1.0})
    league.play_round(games=4)
    league.snapshot("learner@1", FrequencyBot())
    assert league.elo.rating("learner@1") == league.elo.rating("learner")


def test_rich_table_renders():
    league = make_league(weights={"bots": 1.0})
    league.play_round(games=2)
    console = Console(file=io.StringIO(), width=100)
    console.print(league)
    text = console.file.getvalue()
    assert "League after 1 rounds" in text and "95% interval" in text and "learner@0" in text


def test_bad_input_is_named():
    league = make_league()
    with pytest.raises(ValueError, match="already has a member named 'rock'"):
        league.add("rock", ConstantBot())
    with pytest.raises(ValueError, match="not a learner"):
        league.sample_opponents("rock", 1)
    with pytest.raises(ValueError, match="'rock' is not a learner"):
        league.snapshot("x", ConstantBot(), of="rock")
    with pytest.raises(ValueError, match="Unknown opponent categories"):
        League(rps, weights={"elders": 1.0})
    with pytest.raises(ValueError, match="games"):
        league.play_round(games=0)
    empty = League(rps)
    empty.add("bot", ConstantBot())
    with pytest.raises(ValueError, match="no learner"):
        empty.play_round()
    lonely = League(rps, weights={"bots": 1.0})
    lonely.add("learner", FrequencyBot(), frozen=False)
    with pytest.raises(ValueError, match="No opponents"):
        lonely.sample_opponents("learner", 1)
