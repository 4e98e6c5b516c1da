"""Kuhn poker as a text game: a hidden-information AEC environment for two players.

Rules
    A deck of three cards, J < Q < K. Each player antes 1 chip and is dealt one card, which
    only it sees. ``player_0`` acts first: ``check`` or ``bet`` (1 chip). After a check,
    ``player_1`` may ``check`` (showdown for a pot of 2) or ``bet``. Facing a bet, a player may
    ``call`` (showdown for a pot of 4) or ``fold`` (the opponent takes the pot). The higher
    card wins a showdown. One hand per game.

Observation
    A :class:`~gym_tinker.spaces.TextObservation` (a ``str``): the rules in one line, the
    player's own card (never the opponent's until a showdown), the betting so far, the pot,
    whose turn it is, the legal moves, and the reason the last answer was rejected, if it was.
    ``infos[agent]["legal_moves"]`` lists the legal words (e.g. ``["check", "bet"]``) for the
    player to act.

Action
    Any string, read leniently: the last of ``check``, ``bet``, ``call``, ``fold``, ``pass``,
    ``raise`` (any case, whole words) in the first part of the answer that names one, trying
    the most explicit first (``<move>bet</move>``, ``\\boxed{}``, ``[bet]``, then the whole text). ``pass`` means check, or fold when facing a bet; ``raise``
    means bet. Anything else, or an illegal word (``call`` with no bet to call), costs a retry;
    after ``max_retries`` retries in one turn the next bad answer forfeits.
    At most ``max_action_chars`` characters of an answer are read (default 32,768): a longer
    action is cut, with a note in the observation (``None``: no cap); only the cut text is
    parsed and kept. Parsing takes time linear in the answer's length.

Rewards
    Net chips: +1/-1 for a fold or a showdown after checks, +2/-2 for a called bet (zero-sum).
    A forfeit gives the offender ``forfeit_penalty`` (default -1) and the opponent the chips the
    offender had put in, as if it had folded. Truncation after ``max_cycles`` gives 0.

Render
    ``render()`` (``"ansi"``/``"human"``) shows the table: both cards and the betting. It is for
    people watching, never an agent's observation.

Determinism and options
    The deal comes from ``np_random``, seeded by ``reset(seed=...)``: same seed, same cards.
    ``reset(options={"cards": ("K", "J")})`` deals given cards (player_0's first).

Parallel view
    ``parallel_env()`` is PettingZoo's turn-based conversion: each step every live agent sends
    an action and only the player to act is played; ``max_cycles`` counts parallel steps.

Versions
    * v0: first version.

Example:
    >>> from multiagent import kuhn_poker_v0
    >>> env = kuhn_poker_v0.env()
    >>> env.reset(seed=0, options={"cards": ("Q", "K")})
    >>> env.step("I'll check.")
    >>> print(env.observe("player_1"))
    Kuhn poker (deck J < Q < K; antes 1; one bet of 1). You are player_1.
    Your card: K.
    Betting so far: player_0 checks.
    Pot: 2 chips (you put in 1).
    Your turn. Legal moves: check, bet.
    Answer with one word: check or bet.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pettingzoo import AECEnv, ParallelEnv

from multiagent.core import GameOver, TurnBasedTextGame, turn_based_env, turn_based_parallel_env
from multiagent.kuhn_poker.game import CARDS, KuhnHand
from multiagent.parsing import keyword_pattern, last_keyword

__all__ = ["env", "max_cycles", "parallel_env", "raw_env"]

#: Default ``max_cycles``: a hand takes at most 2 cycles; the rest leaves room for retries.
max_cycles = 20

_WORDS = keyword_pattern(["check", "bet", "call", "fold", "pass", "raise"])
_EXACT = {w: w for w in ("check", "bet", "call", "fold")}
_VERB = {"check": "checks", "bet": "bets", "call": "calls", "fold": "folds"}
_INDEX = {"player_0": 0, "player_1": 1}


class raw_env(TurnBasedTextGame[str]):
    """Kuhn poker, unwrapped. See the module docstring for rules, observations and rewards.

    Args:
        max_retries: Invalid answers allowed per turn before the next one forfeits (None: no limit).
        forfeit_penalty: Reward of a player that forfeits (its opponent gets the offender's chips).
        max_cycles: Cycles (one turn per player) before truncation.
        steps_per_cycle: See :class:`~multiagent.core.TurnBasedTextGame`.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an answer that are read (default 32,768); a longer
            action is cut, with a note in the observation (``None``: no cap).
    """

    metadata: ClassVar[dict[str, Any]] = {**TurnBasedTextGame.metadata, "name": "kuhn_poker_v0"}
    players = ("player_0", "player_1")
    description = "Kuhn poker: one hidden card each from J, Q, K and one betting round."
    default_max_cycles = max_cycles

    def _new_game(self, options: dict[str, Any] | None) -> str:
        cards = (options or {}).get("cards")
        if cards is None:
            deal = self.np_random.permutation(len(CARDS))
            cards = (CARDS[int(deal[0])], CARDS[int(deal[1])])
        elif isinstance(cards, str) or len(cards) != 2:
            raise ValueError(f"Expected options['cards'] to be two cards such as ('K', 'J'), got {cards!r}")
        self.hand = KuhnHand(cards)
        return "player_0"

    def _legal_moves(self, agent: str) -> list[str]:
        return list(self.hand.legal_actions())

    def _interpret(self, agent: str, text: str) -> tuple[str | None, str]:
        legal = self.hand.legal_actions()
        word = _EXACT.get(text.strip().lower()) or last_keyword(_WORDS, text)
        if word is None:
            return None, f"no move found in it; answer {' or '.join(legal)}"
        if word == "pass":
            word = "check" if "check" in legal else "fold"
        elif word == "raise":
            word = "bet"
        if word not in legal:
            reason = "there is no bet to call" if word in ("call", "fold") else "you face a bet"
            return None, f"{word} is not legal now ({reason}); answer {' or '.join(legal)}"
        return word, ""

    def _apply_move(self, agent: str, move: str) -> GameOver | None:
        self.hand.play(move)
        if not self.hand.is_over():
            return None
        p0, p1 = self.hand.payoffs()
        winner = self.possible_agents[self.hand.winner()]
        chips = abs(p0)
        won = f"{winner} wins {chips} chip{'s' if chips > 1 else ''}."
        if self.hand.folded() is not None:
            result = f"{agent} folds. {won}"
        else:
            c0, c1 = self.hand.cards
            result = f"Showdown: player_0 has {c0}, player_1 has {c1}. {won}"
        return GameOver({"player_0": float(p0), "player_1": float(p1)}, result)

    def _forfeit_rewards(self, agent: str) -> dict[str, float]:
        put = self.hand.contributions()[_INDEX[agent]]
        return {a: (self.forfeit_penalty if a == agent else float(put)) for a in self.possible_agents}

    def _betting(self) -> str:
        if not self.hand.history:
            return "none"
        return ", ".join(f"player_{i % 2} {_VERB[a]}" for i, a in enumerate(self.hand.history))

    def _observation_text(self, agent: str) -> str:
        index = _INDEX[agent]
        put = self.hand.contributions()
        lines = [
            f"Kuhn poker (deck J < Q < K; antes 1; one bet of 1). You are {agent}.",
            f"Your card: {self.hand.cards[index]}.",
            f"Betting so far: {self._betting()}.",
            f"Pot: {sum(put)} chips (you put in {put[index]}).",
        ]
        if self.game_over:
            lines.append("Game over. " + self.result)
        elif agent != self.agent_selection:
            lines.append(f"Waiting for {self.agent_selection} to act.")
        else:
            legal = self.infos[agent]["legal_moves"]
            lines.append(f"Your turn. Legal moves: {', '.join(legal)}.")
            lines.append(f"Answer with one word: {' or '.join(legal)}.")
        return "\n".join(lines)

    def _board_text(self) -> str:
        c0, c1 = self.hand.cards
        status = self.result if self.game_over else f"{self.agent_selection} to act."
        return f"Cards: player_0 {c0}, player_1 {c1}. Betting: {self._betting()}.\n{status}"


def env(**kwargs: Any) -> AECEnv:
    """Kuhn poker with PettingZoo's order-enforcing wrapper; ``kwargs`` go to :class:`raw_env`."""
    return turn_based_env(raw_env, **kwargs)


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The turn-based parallel view (only the player to act is played each step)."""
    return turn_based_parallel_env(raw_env, **kwargs)
