"""Tests of Kuhn poker: payoffs of every line, hidden cards, the env, and the Nash bot."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from multiagent import kuhn_poker_v0
from multiagent.kuhn_poker.bots import NashBot, nash_policy, read_state
from multiagent.kuhn_poker.game import CARDS, KuhnHand

DEALS = list(itertools.permutations(CARDS, 2))
# line -> (stake, who wins: "showdown", or the winning player after a fold)
LINES: dict[tuple[str, ...], tuple[int, str | int]] = {
    ("check", "check"): (1, "showdown"),
    ("check", "bet", "call"): (2, "showdown"),
    ("check", "bet", "fold"): (1, 1),
    ("bet", "call"): (2, "showdown"),
    ("bet", "fold"): (1, 0),
}


def expected_payoff(cards: tuple[str, str], line: tuple[str, ...]) -> int:
    stake, winner = LINES[line]
    if winner == "showdown":
        winner = 0 if CARDS.index(cards[0]) > CARDS.index(cards[1]) else 1
    return stake if winner == 0 else -stake


@pytest.mark.parametrize("cards", DEALS)
@pytest.mark.parametrize("line", list(LINES))
def test_payoffs_of_every_line(cards: tuple[str, str], line: tuple[str, ...]) -> None:
    hand = KuhnHand(cards)
    for action in line:
        assert not hand.is_over()
        hand.play(action)
    assert hand.is_over()
    p0, p1 = hand.payoffs()
    assert p0 == expected_payoff(cards, line) and p0 + p1 == 0


@pytest.mark.parametrize("cards", DEALS)
@pytest.mark.parametrize("line", list(LINES))
def test_env_rewards_match_the_rules(cards: tuple[str, str], line: tuple[str, ...]) -> None:
    env = kuhn_poker_v0.env()
    env.reset(options={"cards": cards})
    for action in line:
        env.step(f"I {action}.")
    p0 = expected_payoff(cards, line)
    assert env.rewards == {"player_0": float(p0), "player_1": float(-p0)}
    final = env.observe("player_0")
    if LINES[line][1] == "showdown":
        assert f"Showdown: player_0 has {cards[0]}, player_1 has {cards[1]}." in final
    else:
        assert "folds." in final and "Showdown" not in final


def test_hand_rejects_illegal_play() -> None:
    hand = KuhnHand(("J", "Q"))
    with pytest.raises(ValueError, match="'call' is not legal"):
        hand.play("call")
    with pytest.raises(ValueError, match="not over yet"):
        hand.winner()
    with pytest.raises(ValueError, match="two different cards"):
        KuhnHand(("J", "X"))


def test_each_player_sees_only_its_own_card() -> None:
    views = {}
    for cards in DEALS:
        env = kuhn_poker_v0.env()
        env.reset(options={"cards": cards})
        env.step("check")
        views[cards] = (env.observe("player_0"), env.observe("player_1"), env.infos)
    for (a0, a1), (obs0, obs1, _) in views.items():
        assert f"Your card: {a0}." in obs0 and f"Your card: {a1}." in obs1
        for b1 in CARDS:
            # player_0's view is the same whatever player_1 holds, and vice versa
            if b1 not in (a0, a1):
                assert views[(a0, b1)][0] == obs0
        for b0 in CARDS:
            if b0 not in (a0, a1):
                assert views[(b0, a1)][1] == obs1


def test_same_seed_same_deal_and_every_deal_occurs() -> None:
    deals = []
    for seed in range(40):
        env = kuhn_poker_v0.raw_env()
        env.reset(seed=seed)
        deals.append(env.hand.cards)
        again = kuhn_poker_v0.raw_env()
        again.reset(seed=seed)
        assert again.hand.cards == env.hand.cards
    assert set(deals) == set(DEALS)


@pytest.mark.parametrize(
    ("answer", "move"),
    [
        ("bet", "bet"),
        ("BET!", "bet"),
        ("<move>check</move>", "check"),
        ("pass", "check"),
        ("I raise", "bet"),
        ("[thinking] I bet", "bet"),
    ],
)
def test_lenient_first_actions(answer: str, move: str) -> None:
    env = kuhn_poker_v0.raw_env()
    env.reset(options={"cards": ("Q", "K")})
    env.step(answer)
    assert env.hand.history == [move]


def test_pass_folds_facing_a_bet_and_illegal_words_are_explained() -> None:
    env = kuhn_poker_v0.raw_env()
    env.reset(options={"cards": ("Q", "K")})
    env.step("call")
    assert (
        env.infos["player_0"]["error"]
        == "call is not legal now (there is no bet to call); answer check or bet"
    )
    env.step("bet")
    env.step("check")
    assert env.infos["player_1"]["error"].startswith("check is not legal now (you face a bet)")
    env.step("hmm, pass")
    assert env.hand.history == ["bet", "fold"] and env.rewards == {"player_0": 1.0, "player_1": -1.0}


def test_forfeit_pays_the_opponent_the_offenders_chips() -> None:
    env = kuhn_poker_v0.env(max_retries=0, forfeit_penalty=-5.0)
    env.reset(options={"cards": ("J", "K")})
    env.step("check")
    env.step("bet")
    env.step("what?")  # player_0 forfeits, having put in 1
    assert env.rewards == {"player_0": -5.0, "player_1": 1.0}


def test_observation_lists_betting_and_pot() -> None:
    env = kuhn_poker_v0.env()
    env.reset(options={"cards": ("K", "Q")})
    env.step("check")
    env.step("bet")
    obs = env.observe("player_0")
    assert "Betting so far: player_0 checks, player_1 bets." in obs
    assert "Pot: 3 chips (you put in 1)." in obs
    assert "Legal moves: call, fold." in obs
    assert env.infos["player_0"]["legal_moves"] == ["call", "fold"]
    assert read_state(obs) == (0, "K", ("check", "bet"))


Policy = Callable[[int, str, tuple[str, ...]], dict[str, float]]


def value(policy0: Policy, policy1: Policy) -> float:
    """Exact expected payoff of player 0, averaged over the six deals."""
    total = 0.0

    def walk(cards: tuple[str, str], history: tuple[str, ...], p: float) -> float:
        hand = KuhnHand(cards)
        for action in history:
            hand.play(action)
        if hand.is_over():
            return p * hand.payoffs()[0]
        position = hand.to_act()
        policy = (policy0, policy1)[position](position, cards[position], history)
        return sum(walk(cards, (*history, a), p * q) for a, q in policy.items() if q > 0)

    for cards in DEALS:
        total += walk(cards, (), 1.0)
    return total / len(DEALS)


def pure(choices: dict[tuple[str, tuple[str, ...]], str]) -> Policy:
    def policy(position: int, card: str, history: tuple[str, ...]) -> dict[str, float]:
        return {choices[(card, history)]: 1.0}

    return policy


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_nash_value_is_minus_one_eighteenth(alpha: float) -> None:
    nash0 = lambda pos, card, hist: nash_policy(pos, card, hist, alpha)  # noqa: E731
    assert value(nash0, nash_policy) == pytest.approx(-1 / 18, abs=1e-12)


def test_no_pure_strategy_beats_the_nash_strategies() -> None:
    sets0 = [(c, h) for c in CARDS for h in ((), ("check", "bet"))]
    moves0 = {(): ("check", "bet"), ("check", "bet"): ("call", "fold")}
    best0 = max(
        value(pure(dict(zip(sets0, combo, strict=True))), nash_policy)
        for combo in itertools.product(*(moves0[h] for _, h in sets0))
    )
    assert best0 == pytest.approx(-1 / 18, abs=1e-12)  # player 0 cannot exploit Nash player 1
    sets1 = [(c, h) for c in CARDS for h in (("bet",), ("check",))]
    moves1 = {("bet",): ("call", "fold"), ("check",): ("check", "bet")}
    worst1 = min(
        value(nash_policy, pure(dict(zip(sets1, combo, strict=True))))
        for combo in itertools.product(*(moves1[h] for _, h in sets1))
    )
    assert worst1 == pytest.approx(-1 / 18, abs=1e-12)  # nor player 1 Nash player 0


def test_nash_bot_samples_its_policy() -> None:
    env = kuhn_poker_v0.env()
    env.reset(options={"cards": ("K", "J")})
    obs, info = env.observe("player_0"), env.infos["player_0"]
    bot = NashBot(alpha=1 / 6, seed=0)
    bets = sum(bot(obs, info) == "bet" for _ in range(2000))
    assert 900 < bets < 1100  # K bets with probability 3 * alpha = 1/2
    first = [NashBot(seed=5)(obs, info) for _ in range(3)]
    assert len(set(first)) == 1  # same seed, same choice
    assert bot(obs, {"legal_moves": []}) == ""
    with pytest.raises(ValueError, match="alpha in \\[0, 1/3\\]"):
        NashBot(alpha=0.5)


def test_nash_bot_plays_full_games() -> None:
    env = kuhn_poker_v0.env()
    bots = {"player_0": NashBot(seed=1), "player_1": NashBot(seed=2)}
    total = 0.0
    for seed in range(300):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                total += reward if agent == "player_0" else 0.0
                env.step(None)
            else:
                env.step(bots[agent](obs, info))
    assert -0.5 < total / 300 < 0.4  # the exact value is -1/18; this only checks play is sane
