"""Elo ratings with confidence intervals, for ranking policies that play each other.

Ratings are updated online after every game with the standard Elo rule::

    expected_a = 1 / (1 + 10 ** ((rating_b - rating_a) / 400))
    rating_a  += k * (score_a - expected_a)        # score: 1 win, 0.5 draw, 0 loss

The confidence interval of a rating comes from the Fisher information of the logistic model
behind Elo: each game against an opponent of (current) rating ``r_o`` adds
``(ln 10 / 400) ** 2 * p * (1 - p)`` to a player's information, where ``p`` is the expected
score of that game. The standard error is ``1 / sqrt(information)`` and the interval is
``rating ± z * standard_error`` with ``z`` the normal quantile for the chosen confidence
(1.96 for 95%). For ``n`` games between equals this is ``± 1.96 * 347.4 / sqrt(n)``: about
±680 after one game, ±68 after 100. A player with no games has an infinite interval.

.. warning::
    The interval treats the opponents' ratings as known and the games as independent; it
    says how much a rating could move with more games of the same kind, not how good an
    agent is against opponents it never met. Online Elo also depends on the order of games
    and on ``k``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["EloRatings", "PlayerRating", "expected_score", "update_ratings"]

_LOGISTIC_SCALE = math.log(10) / 400.0


def expected_score(rating: float, opponent: float) -> float:
    """Expected score (win = 1, draw = 0.5) of a player rated ``rating`` against ``opponent``.

    Example:
        >>> expected_score(1000, 1000)
        0.5
        >>> round(expected_score(1200, 1000), 4)
        0.7597
    """
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / 400.0))


def update_ratings(rating_a: float, rating_b: float, score_a: float, k: float = 32.0) -> tuple[float, float]:
    """The two ratings after one game in which player A scored ``score_a`` (1, 0.5 or 0).

    Example:
        >>> update_ratings(1000, 1000, 1.0)
        (1016.0, 984.0)
        >>> tuple(round(r, 2) for r in update_ratings(1200, 1000, 0.5))
        (1191.69, 1008.31)
    """
    if not 0.0 <= score_a <= 1.0:
        raise ValueError(f"Expected `score_a` in [0, 1] (1 win, 0.5 draw, 0 loss), got {score_a!r}")
    delta = k * (score_a - expected_score(rating_a, rating_b))
    return rating_a + delta, rating_b - delta


@dataclass(frozen=True)
class PlayerRating:
    """One row of :meth:`EloRatings.table`."""

    name: str
    rating: float
    low: float
    """Lower end of the confidence interval (``-inf`` with no games)."""
    high: float
    """Upper end of the confidence interval (``inf`` with no games)."""
    games: int
    wins: int
    draws: int
    losses: int


class EloRatings:
    """Online Elo ratings for named players, with Fisher-information confidence intervals.

    Args:
        k: The Elo K-factor (how far one game moves a rating).
        initial: Rating of a new player.
        confidence: Coverage of :meth:`interval`, in (0, 1).

    Example:
        >>> elo = EloRatings(k=32)
        >>> elo.record("alice", "bob", 1.0)
        >>> elo.rating("alice"), elo.rating("bob")
        (1016.0, 984.0)
        >>> low, high = elo.interval("alice")
        >>> round(high - elo.rating("alice"), 1)  # 1.96 * 400 / ln(10) / sqrt(0.25)
        681.0
    """

    def __init__(self, k: float = 32.0, initial: float = 1000.0, confidence: float = 0.95):
        if not k > 0:
            raise ValueError(f"Expected `k` > 0, got {k!r}")
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"Expected `confidence` in (0, 1), got {confidence!r}")
        self.k = float(k)
        self.initial = float(initial)
        self.confidence = float(confidence)
        self._z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
        self._ratings: dict[str, float] = {}
        self._information: dict[str, float] = {}
        # name -> [wins, draws, losses]
        self._record: dict[str, list[int]] = {}

    def add(self, name: str, rating: float | None = None) -> None:
        """Add a player (a no-op for a known name unless ``rating`` is given)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"Expected a player name as a non-empty str, got {name!r}")
        if name not in self._ratings:
            self._information[name] = 0.0
            self._record[name] = [0, 0, 0]
            self._ratings[name] = self.initial
        if rating is not None:
            self._ratings[name] = float(rating)

    def __contains__(self, name: object) -> bool:
        return name in self._ratings

    def __len__(self) -> int:
        return len(self._ratings)

    def rating(self, name: str) -> float:
        """Current rating of ``name``."""
        try:
            return self._ratings[name]
        except KeyError:
            raise KeyError(f"No player named {name!r}; known players: {sorted(self._ratings)}") from None

    def expected(self, name: str, opponent: str) -> float:
        """Expected score of ``name`` against ``opponent`` at the current ratings."""
        return expected_score(self.rating(name), self.rating(opponent))

    def record(self, name: str, opponent: str, score: float) -> None:
        """Update both ratings after a game in which ``name`` scored ``score`` (1, 0.5, 0).

        Unknown names are added at the initial rating. A player cannot play itself.
        """
        if name == opponent:
            raise ValueError(f"A player cannot be rated against itself: {name!r}")
        self.add(name)
        self.add(opponent)
        rating, other = self._ratings[name], self._ratings[opponent]
        p = expected_score(rating, other)
        self._ratings[name], self._ratings[opponent] = update_ratings(rating, other, score, self.k)
        information = _LOGISTIC_SCALE**2 * p * (1.0 - p)
        self._information[name] += information
        self._information[opponent] += information
        for player, player_score in ((name, score), (opponent, 1.0 - score)):
            self._record[player][0 if player_score > 0.5 else 1 if player_score == 0.5 else 2] += 1

    def standard_error(self, name: str) -> float:
        """Standard error of ``name``'s rating (``inf`` before its first game)."""
        self.rating(name)
        information = self._information[name]
        return math.inf if information <= 0.0 else 1.0 / math.sqrt(information)

    def interval(self, name: str) -> tuple[float, float]:
        """``(low, high)``: the rating ± ``z`` standard errors at ``self.confidence``."""
        half = self._z * self.standard_error(name)
        rating = self.rating(name)
        return rating - half, rating + half

    def games(self, name: str) -> int:
        """Games ``name`` has played."""
        self.rating(name)
        return sum(self._record[name])

    def table(self) -> list[PlayerRating]:
        """Every player, best rating first (ties by name)."""
        rows = []
        for name, rating in self._ratings.items():
            low, high = self.interval(name)
            wins, draws, losses = self._record[name]
            rows.append(PlayerRating(name, rating, low, high, wins + draws + losses, wins, draws, losses))
        rows.sort(key=lambda row: (-row.rating, row.name))
        return rows
