"""Tests for negotiation_v0: parsing, deals, walk-aways, the turn limit, privacy, conformance, bots."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent import negotiation_v0
from multiagent.bots import RandomLegalBot, get_bot
from multiagent.negotiation.bots import ThresholdNegotiator
from multiagent.negotiation.logic import all_splits, draw_pool, parse_reply
from multiagent.selfplay import play_matches
from multiagent.testing import check_game

POOL = {"counts": (3, 2, 1), "values": ((1, 2, 3), (2, 2, 0))}


def game(**kwargs):
    env = negotiation_v0.env(**kwargs)
    env.reset(seed=0, options=POOL)
    return env


@pytest.mark.parametrize(
    ("text", "kind", "share"),
    [
        ("<offer>books=2 hats=0 balls=1</offer>", "propose", (2, 0, 1)),
        ("propose: books=1, hats=2", "propose", (1, 2, 0)),
        ("Propose: 2 books and 1 ball", "propose", (2, 0, 1)),
        ('{"books": 3, "hats": 1, "balls": 0}', "propose", (3, 1, 0)),
        ('<offer>{"book": 1, "hat": 1}</offer>', "propose", (1, 1, 0)),
        ("propose: books=1 then propose: balls=1", "propose", (0, 0, 1)),
        ("I accept.", "accept", None),
        ("<move>reject</move> <message>accept it? never</message>", "reject", None),
        ("I won't accept this, I walk away", "walk", None),
        ("hello", None, None),
        ("propose: books=9", None, None),
        ("propose: nothing", None, None),
        ("books=²", None, None),
    ],
)
def test_parse_reply(text, kind, share):
    reply = parse_reply(text, (3, 2, 1))
    assert (reply.kind, reply.share) == (kind, share)
    assert bool(reply.error) == (kind is None)


def test_parse_reply_messages():
    assert parse_reply("<message>Fair?</message><offer>books=1</offer>", (3, 2, 1)).message == "Fair?"
    assert (
        parse_reply("Take it or leave it <offer>books=1</offer>", (3, 2, 1)).message == "Take it or leave it"
    )
    assert parse_reply("accept", (3, 2, 1)).message == ""
    assert (
        parse_reply("<message>" + "x" * 20 + "</message> reject", (3, 2, 1), max_message_chars=5).message
        == "xxxx…"
    )


def test_pools_are_drawn_from_the_seed():
    a, b = draw_pool(np.random.default_rng(4)), draw_pool(np.random.default_rng(4))
    assert a == b
    assert all(1 <= c <= 4 for c in a.counts) and all(0 <= v <= 5 for row in a.values for v in row)
    env1, env2 = negotiation_v0.env(), negotiation_v0.env()
    env1.reset(seed=9)
    env2.reset(seed=9)
    assert env1.unwrapped.pool == env2.unwrapped.pool
    assert len(all_splits(a.counts)) == np.prod([c + 1 for c in a.counts])


def test_deal_gives_normalised_values():
    env = game()
    env.step("<offer>books=0 hats=0 balls=1</offer>")
    assert env.infos["player_1"]["offer"] == {
        "proposer": "player_0",
        "you_get": {"books": 3, "hats": 2, "balls": 0},
        "they_get": {"books": 0, "hats": 0, "balls": 1},
    }
    assert "accept" in env.infos["player_1"]["legal_moves"]
    env.step("accept")
    assert env.rewards == {"player_0": 0.3, "player_1": 1.0}
    assert all(env.terminations.values())
    assert "Deal: player_0 takes books=0 hats=0 balls=1" in env.observe("player_1")


def test_raw_values_when_not_normalised():
    env = game(normalize=False)
    env.step("propose: books=3 hats=0 balls=0")
    env.step("accept")
    assert env.rewards == {"player_0": 3.0, "player_1": 4.0}


def test_counter_proposal_replaces_the_offer_and_reject_clears_it():
    env = game()
    env.step("propose: books=3 hats=2 balls=1")
    env.step("No way. propose: books=3 hats=2 balls=0")
    assert env.unwrapped.offer == (1, (3, 2, 0))
    env.step("reject")
    assert env.unwrapped.offer is None
    assert "accept" not in env.infos["player_1"]["legal_moves"]
    env.step("accept")  # nothing to accept: a retry, not an exception
    assert "no proposal from the other player" in env.infos["player_1"]["error"]
    assert env.agent_selection == "player_1"


def test_walk_away_gives_the_disagreement_payoff():
    env = game(disagreement=0.1)
    env.step("propose: books=1")
    env.step("I walk away.")
    assert env.rewards == {"player_0": 0.1, "player_1": 0.1}
    assert all(env.terminations.values())
    assert "player_1 walked away" in env.unwrapped.result


def test_turn_limit_ends_with_no_deal():
    env = game(max_turns=3)
    env.step("propose: books=3")
    env.step("propose: books=3")
    assert "This is the last turn" in env.observe("player_0")
    env.step("propose: books=2")
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert "No deal within 3 turns" in env.unwrapped.result


def test_forfeit_after_retries():
    env = game(max_retries=1, forfeit_penalty=-2.0)
    env.step("hmm")
    env.step("still thinking")
    assert env.rewards == {"player_0": -2.0, "player_1": 0.0}


def test_each_player_sees_only_its_own_values():
    env = game()
    env.step("<message>hi</message> propose: books=1")
    mine, theirs = env.observe("player_0"), env.observe("player_1")
    assert "Your private values per item: books=1 hats=2 balls=3" in mine
    assert "Your private values per item: books=2 hats=2 balls=0" in theirs
    assert "books=2 hats=2 balls=0" not in mine and "books=1 hats=2 balls=3" not in theirs
    assert env.infos["player_0"]["values"] == {"books": 1, "hats": 2, "balls": 3}
    assert env.infos["player_1"]["values"] == {"books": 2, "hats": 2, "balls": 0}
    assert 'player_0: proposed to take books=1 hats=0 balls=0 and said: "hi"' in theirs


def test_bad_options_and_arguments_are_named():
    env = negotiation_v0.env()
    with pytest.raises(ValueError, match="counts"):
        env.reset(options={"counts": (0, 1, 1), "values": POOL["values"]})
    with pytest.raises(ValueError, match="worth something"):
        env.reset(options={"counts": (1, 1, 1), "values": ((0, 0, 0), (1, 1, 1))})
    with pytest.raises(ValueError, match="max_turns"):
        negotiation_v0.env(max_turns=0)


@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
def test_conformance():
    report = check_game(
        negotiation_v0.env, negotiation_v0.parallel_env, module=negotiation_v0, fuzz_examples=10
    )
    assert {"api_test", "seed_test", "render_test", "parallel_api_test", "truncation", "fuzz"} <= set(
        report.passed
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=15))
def test_any_unicode_reply_is_handled(replies):
    env = negotiation_v0.env(max_retries=None)
    env.reset(seed=1)
    for reply in replies:
        if not env.agents:
            break
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            env.step(None)
            continue
        env.step(reply)
        assert isinstance(env.observe(env.agent_selection), str)


def test_legal_moves_are_all_accepted():
    env = game()
    legal = env.infos["player_0"]["legal_moves"]
    assert len(legal) == 4 * 3 * 2 + 1 and legal[-1] == "walk away"
    for move in legal[:-1]:
        assert parse_reply(move, (3, 2, 1)).kind == "propose"


def test_negotiators_make_deals_and_beat_random():
    report = play_matches(
        negotiation_v0.env,
        {"a": ThresholdNegotiator(), "b": get_bot("negotiation_v0", "negotiator")},
        games=10,
    )
    assert all(min(r.rewards.values()) > 0.4 for r in report.results)  # every game is a deal
    report = play_matches(
        negotiation_v0.env, {"bot": ThresholdNegotiator(), "random": RandomLegalBot(seed=0)}, games=20
    )
    summary = report.summary()
    assert summary["bot"].mean_reward > summary["random"].mean_reward + 0.2


def _info(offer_you_get=None, turn=0, max_turns=10):
    info = {
        "legal_moves": ["walk away"],
        "pool": {"books": 3, "hats": 2, "balls": 1},
        "values": {"books": 1, "hats": 2, "balls": 3},
        "offer": None,
        "turn": turn,
        "max_turns": max_turns,
    }
    if offer_you_get is not None:
        info["legal_moves"] = ["accept", "reject", "walk away"]
        info["offer"] = {
            "proposer": "player_1",
            "you_get": dict(zip(("books", "hats", "balls"), offer_you_get, strict=True)),
        }
    return info


def test_negotiator_threshold_falls_and_decides_by_it():
    bot = ThresholdNegotiator(start=0.8, end=0.4)
    assert bot.threshold(0, 10) == 0.8 and bot.threshold(9, 10) == pytest.approx(0.4)
    # an offer worth 5 of 10: below 0.8 early, above the threshold late
    assert "<offer>" in bot("", _info((0, 1, 1), turn=1))
    assert "accept" in bot("", _info((0, 1, 1), turn=8))
    # worth 1 of 10: refused, except on the last chance
    assert "<offer>" in bot("", _info((1, 0, 0), turn=5))
    assert "accept" in bot("", _info((1, 0, 0), turn=9))
    # its proposals always leave the other player something
    reply = bot("", _info(turn=0))
    assert parse_reply(reply, (3, 2, 1)).share != (3, 2, 1)
    assert bot("", {"legal_moves": []}) == ""
    with pytest.raises(ValueError, match="start"):
        ThresholdNegotiator(start=0.2, end=0.5)


def test_registered_in_pettingzoo():
    import pettingzoo

    import multiagent  # noqa: F401  (registers the games)

    env = pettingzoo.make("aec", "tinker/negotiation_v0", max_turns=4)
    env.reset(seed=0)
    assert env.unwrapped.max_turns == 4 and env.agent_selection == "player_0"
