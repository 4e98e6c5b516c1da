"""Kuhn poker rules: a three-card deck, one betting round, payoffs for every line of play."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CARDS", "KuhnHand"]

#: The deck, lowest to highest.
CARDS = ("J", "Q", "K")

# history (tuple of actions) -> legal actions of the player to act; absent = the hand is over.
_LEGAL: dict[tuple[str, ...], tuple[str, ...]] = {
    (): ("check", "bet"),
    ("check",): ("check", "bet"),
    ("check", "bet"): ("call", "fold"),
    ("bet",): ("call", "fold"),
}


class KuhnHand:
    """One hand of Kuhn poker between player 0 (acts first) and player 1.

    Each player antes 1 chip and gets one card. Player 0 checks or bets 1. After a check,
    player 1 checks (showdown for a pot of 2) or bets 1; facing a bet, a player calls (showdown
    for a pot of 4) or folds (the other wins the pot). The higher card wins a showdown.

    Example:
        >>> hand = KuhnHand(("K", "Q"))
        >>> hand.play("check"); hand.play("bet"); hand.play("call")
        >>> hand.is_over(), hand.payoffs()
        (True, (2, -2))
        >>> hand = KuhnHand(("J", "Q")); hand.play("bet"); hand.play("fold")
        >>> hand.payoffs()
        (1, -1)
    """

    __slots__ = ("cards", "history")

    def __init__(self, cards: Sequence[str]):
        cards = tuple(cards)
        if len(cards) != 2 or cards[0] == cards[1] or any(c not in CARDS for c in cards):
            raise ValueError(f"Expected two different cards from {CARDS}, got {cards!r}")
        self.cards: tuple[str, str] = (cards[0], cards[1])
        self.history: list[str] = []

    def to_act(self) -> int:
        """0 or 1: the player whose turn it is (players alternate, player 0 first)."""
        return len(self.history) % 2

    def legal_actions(self) -> tuple[str, ...]:
        """What the player to act may do; empty once the hand is over."""
        return _LEGAL.get(tuple(self.history), ())

    def play(self, action: str) -> None:
        """Apply ``action`` for the player to act; it must be one of :meth:`legal_actions`."""
        legal = self.legal_actions()
        if action not in legal:
            raise ValueError(f"Action {action!r} is not legal after {self.history}; legal: {list(legal)}")
        self.history.append(action)

    def is_over(self) -> bool:
        """True after a fold or a showdown."""
        return not self.legal_actions()

    def contributions(self) -> tuple[int, int]:
        """Chips each player has put in the pot so far (ante included)."""
        put = [1, 1]
        for i, action in enumerate(self.history):
            if action in ("bet", "call"):
                put[i % 2] += 1
        return put[0], put[1]

    def folded(self) -> int | None:
        """The player who folded, if one did."""
        return (len(self.history) - 1) % 2 if self.history and self.history[-1] == "fold" else None

    def winner(self) -> int:
        """The player who wins the pot; the hand must be over."""
        if not self.is_over():
            raise ValueError(f"The hand is not over yet (history {self.history})")
        folder = self.folded()
        if folder is not None:
            return 1 - folder
        return 0 if CARDS.index(self.cards[0]) > CARDS.index(self.cards[1]) else 1

    def payoffs(self) -> tuple[int, int]:
        """Net chips won by each player (zero-sum): the winner gains what the loser put in."""
        put = self.contributions()
        w = self.winner()
        gain = put[1 - w]
        return (gain, -gain) if w == 0 else (-gain, gain)
