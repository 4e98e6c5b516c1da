"""Negotiation as a text game: two players divide a pool of items they value privately.

Rules
    A pool holds books, hats and balls (1-``max_count`` of each, drawn from the seed). Each
    player has a private value per item (0-``max_value``, drawn from the seed; the pool is
    worth something to each); a player sees only its own values. Players take turns, starting
    with ``player_0``. On its turn a player either *proposes* a split (what it takes; the other
    player gets the rest), *accepts* the other player's proposal on the table (a deal, the game
    ends), *rejects* it without a counter-proposal, or *walks away* (no deal, the game ends).
    Every reply may carry a free-text message for the other player. After ``max_turns`` turns
    (default 10) without a deal, the game ends with no deal.

Observation
    A :class:`~gym_tinker.spaces.TextObservation`: the pool, the player's own values (never the
    other's), the turn and the limit, what the reward will be, the last ``history_window``
    turns (proposals, decisions and messages), the proposal on the table with its worth to the
    reader, and the ways to answer. ``infos[agent]`` has ``legal_moves`` (for the player to
    move: every proposal as ``"propose: books=B hats=H balls=L"``, plus ``"accept"`` and
    ``"reject"`` when the other player's proposal is on the table, and ``"walk away"``),
    ``retries_left``, ``error`` after a rejected answer, and for every player its own ``pool``
    and ``values`` (item -> int), ``offer`` (``None`` or ``{"proposer", "you_get",
    "they_get"}``), ``turn`` and ``max_turns``.

Action
    Any string, read leniently. A proposal names what the *speaker* takes:
    ``<offer>books=2 hats=0 balls=1</offer>``, ``propose: books=2, hats=0, balls=1``,
    ``propose: 2 books 1 ball`` or JSON ``{"books": 2, "hats": 0, "balls": 1}`` (alone or in
    ``<offer>``); singular item names work, items not named count 0, and the last proposal in
    the reply counts. Otherwise the last of ``accept``, ``reject``/``decline``,
    ``walk away``/``walk`` in the most explicit part of the reply (``<move>`` tag, brackets,
    else the whole reply). The message is the ``<message>...</message>`` content, else the
    rest of the reply; words inside ``<message>`` never count as a move. Asking for more items
    than the pool has, accepting or rejecting with nothing on the table, or a reply with no
    move costs a retry; after ``max_retries`` retries in one turn the next bad answer forfeits.
    At most ``max_action_chars`` characters of an answer are read (default 32,768): a longer
    action is cut, with a note in the observation (``None``: no cap); only the cut text is
    parsed and kept. Parsing takes time linear in the answer's length.

Rewards
    A deal gives each player the worth of its share at its own values, divided by the worth of
    the whole pool to it (``normalize=True``, so rewards are in [0, 1]; raw worth otherwise).
    No deal (walk-away or the turn limit) gives both ``disagreement`` (default 0). A forfeit
    gives the offender ``forfeit_penalty`` (default -1) and the other ``disagreement``.
    Truncation at ``max_cycles`` (only reachable through retries) gives 0.

Versions
    * v0: first version.

Example:
    >>> from multiagent import negotiation_v0
    >>> env = negotiation_v0.env()
    >>> env.reset(seed=0, options={"counts": (3, 2, 1), "values": ((1, 2, 3), (2, 2, 0))})
    >>> env.step("<message>I only care about the ball.</message><offer>balls=1</offer>")
    >>> env.step("Deal, I accept.")
    >>> env.rewards
    {'player_0': 0.3, 'player_1': 1.0}
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

from pettingzoo import AECEnv, ParallelEnv

from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from multiagent.core import GameOver, TurnBasedTextGame, turn_based_env, turn_based_parallel_env
from multiagent.negotiation.logic import (
    ITEMS,
    Pool,
    Reply,
    all_splits,
    draw_pool,
    format_split,
    parse_reply,
    split_value,
)

__all__ = ["env", "max_cycles", "parallel_env", "raw_env"]

#: Default ``max_cycles``: far more than ``max_turns`` needs, so only endless retries reach it.
max_cycles = 50


class _Event(NamedTuple):
    turn: int
    player: int
    reply: Reply


def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Expected `{name}` to be an int >= 1, got {value!r}")
    return value


class raw_env(TurnBasedTextGame[Reply]):
    """Negotiation, unwrapped. See the module docstring for rules, observations and rewards.

    Args:
        max_turns: Turns (legal moves) before the game ends with no deal.
        max_count: Most items of one kind in a drawn pool.
        max_value: Highest value of one item in drawn values.
        disagreement: Reward of both players when there is no deal.
        normalize: Divide deal rewards by the pool's worth to each player.
        history_window: Most recent turns listed in an observation.
        max_message_chars: Longest message passed on (longer ones are cut).
        max_action_chars: Characters of a reply that are read (default 32,768); a longer
            action is cut, with a note in the observation (``None``: no cap). Messages passed
            on come from the cut text only, and are cut again to ``max_message_chars``.
        **kwargs: ``max_retries``, ``forfeit_penalty``, ``max_cycles``, ``steps_per_cycle``,
            ``render_mode`` (see :class:`~multiagent.core.TurnBasedTextGame`).

    ``reset(options=...)`` accepts ``{"counts": (books, hats, balls), "values": (values_0,
    values_1)}`` to play a given pool instead of a drawn one.
    """

    metadata: ClassVar[dict[str, Any]] = {**TurnBasedTextGame.metadata, "name": "negotiation_v0"}
    players = ("player_0", "player_1")
    description = "Negotiation: split a pool of items with private values (AEC, 2 players)."
    default_max_cycles = max_cycles

    def __init__(
        self,
        *,
        max_turns: int = 10,
        max_count: int = 4,
        max_value: int = 5,
        disagreement: float = 0.0,
        normalize: bool = True,
        history_window: int = 6,
        max_message_chars: int = 300,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
        **kwargs: Any,
    ):
        super().__init__(max_action_chars=max_action_chars, **kwargs)
        self.max_turns = _positive_int("max_turns", max_turns)
        self.max_count = _positive_int("max_count", max_count)
        self.max_value = _positive_int("max_value", max_value)
        self.history_window = _positive_int("history_window", history_window)
        self.max_message_chars = _positive_int("max_message_chars", max_message_chars)
        if isinstance(disagreement, bool) or not isinstance(disagreement, (int, float)):
            raise ValueError(f"Expected `disagreement` to be a number, got {disagreement!r}")
        self.disagreement = float(disagreement)
        self.normalize = bool(normalize)

    # --- game rules -----------------------------------------------------------------------

    def _new_game(self, options: dict[str, Any] | None) -> str:
        options = options or {}
        if "counts" in options or "values" in options:
            self.pool = _pool_from_options(options)
        else:
            self.pool = draw_pool(self.np_random, self.max_count, self.max_value)
        self.turn = 0
        self.offer: tuple[int, tuple[int, ...]] | None = None
        self.events: list[_Event] = []
        # each turn's line as player 0 and as player 1 see it, rendered once
        self._event_lines: list[tuple[str, str]] = []
        self._proposals = _proposal_moves(self.pool.counts)
        return "player_0"

    def _legal_moves(self, agent: str) -> list[str]:
        decisions = (
            ["accept", "reject"] if self.offer is not None and self.offer[0] != self._index(agent) else []
        )
        return [*self._proposals, *decisions, "walk away"]

    def _interpret(self, agent: str, text: str) -> tuple[Reply | None, str]:
        reply = parse_reply(text, self.pool.counts, self.max_message_chars)
        if reply.kind is None:
            return None, reply.error
        if reply.kind in ("accept", "reject") and (self.offer is None or self.offer[0] == self._index(agent)):
            return (
                None,
                f"there is no proposal from the other player to {reply.kind}; propose a split instead",
            )
        return reply, ""

    def _apply_move(self, agent: str, move: Reply) -> GameOver | None:
        me = self._index(agent)
        self.turn += 1
        event = _Event(self.turn, me, move)
        self.events.append(event)
        self._event_lines.append((self._event_text(event, 0), self._event_text(event, 1)))
        if move.kind == "walk":
            return GameOver(self._no_deal(), f"{agent} walked away: no deal.")
        if move.kind == "accept":
            assert self.offer is not None
            proposer, share = self.offer
            rest = tuple(c - s for c, s in zip(self.pool.counts, share, strict=True))
            shares = {proposer: share, 1 - proposer: rest}
            rewards = {self.possible_agents[p]: self._reward(p, shares[p]) for p in (0, 1)}
            return GameOver(
                rewards,
                f"Deal: {self.possible_agents[proposer]} takes {format_split(share)}, "
                f"{self.possible_agents[1 - proposer]} takes {format_split(rest)}.",
            )
        self.offer = (me, move.share) if move.kind == "propose" and move.share is not None else None
        if self.turn >= self.max_turns:
            return GameOver(self._no_deal(), f"No deal within {self.max_turns} turns.")
        return None

    def _forfeit_rewards(self, agent: str) -> dict[str, float]:
        return {a: self.forfeit_penalty if a == agent else self.disagreement for a in self.possible_agents}

    def _reward(self, player: int, share: Sequence[int]) -> float:
        worth = split_value(share, self.pool.values[player])
        return worth / self.pool.worth(player) if self.normalize else float(worth)

    def _no_deal(self) -> dict[str, float]:
        return dict.fromkeys(self.possible_agents, self.disagreement)

    def _index(self, agent: str) -> int:
        return 0 if agent == "player_0" else 1

    # --- what players see -----------------------------------------------------------------

    def _update_infos(self) -> None:
        super()._update_infos()
        for agent, info in self.infos.items():
            me = self._index(agent)
            info["pool"] = dict(zip(ITEMS, self.pool.counts, strict=True))
            info["values"] = dict(zip(ITEMS, self.pool.values[me], strict=True))
            info["turn"] = self.turn
            info["max_turns"] = self.max_turns
            info["offer"] = None
            if self.offer is not None and not self.game_over:
                proposer, share = self.offer
                rest = tuple(c - s for c, s in zip(self.pool.counts, share, strict=True))
                mine, theirs = (share, rest) if proposer == me else (rest, share)
                info["offer"] = {
                    "proposer": self.possible_agents[proposer],
                    "you_get": dict(zip(ITEMS, mine, strict=True)),
                    "they_get": dict(zip(ITEMS, theirs, strict=True)),
                }

    def _observation_text(self, agent: str) -> str:
        me = self._index(agent)
        other = self.possible_agents[1 - me]
        worth = self.pool.worth(me)
        values = format_split(self.pool.values[me])
        reward = (
            f"the worth of your share divided by {worth}" if self.normalize else "the worth of your share"
        )
        lines = [
            f"Negotiation. You are {agent}; you and {other} divide a pool of items. "
            f"Turn {min(self.turn + 1, self.max_turns)} of {self.max_turns}.",
            f"Pool: {format_split(self.pool.counts)}.",
            f"Your private values per item: {values} (the whole pool is worth {worth} to you; "
            f"{other}'s values are hidden from you).",
            f"With a deal your reward is {reward}; with no deal (a walk-away, or none by turn "
            f"{self.max_turns}) both get {self.disagreement:g}.",
        ]
        shown = self._event_lines[-self.history_window :]
        if shown:
            lines.append("Recent turns:")
            lines += [views[me] for views in shown]
        if self.game_over:
            lines.append(f"Game over. {self.result}")
            return "\n".join(lines)
        if self.offer is not None:
            proposer, share = self.offer
            mine = (
                share
                if proposer == me
                else tuple(c - s for c, s in zip(self.pool.counts, share, strict=True))
            )
            whose = "your own proposal" if proposer == me else f"{other}'s proposal"
            lines.append(
                f"On the table: {whose}. You would get {format_split(mine)}, "
                f"worth {split_value(mine, self.pool.values[me])} to you."
            )
        if agent != self.agent_selection:
            lines.append(f"Waiting for {other}.")
            return "\n".join(lines)
        last = (
            " This is the last turn: a new proposal cannot be accepted."
            if self.turn + 1 >= self.max_turns
            else ""
        )
        can_decide = self.offer is not None and self.offer[0] != me
        lines.append(f"Your turn.{last} Answer with one of:")
        lines.append("  propose: books=B hats=H balls=L  (what YOU take; the other player gets the rest)")
        if can_decide:
            lines.append(f"  accept  (take {other}'s proposal: a deal)")
            lines.append("  reject  (turn it down without a counter-proposal)")
        lines.append("  walk away  (end the game with no deal)")
        lines.append("Add a message for the other player in <message>...</message> if you like.")
        return "\n".join(lines)

    def _event_text(self, event: _Event, me: int) -> str:
        who = "you" if event.player == me else self.possible_agents[event.player]
        reply = event.reply
        if reply.kind == "propose" and reply.share is not None:
            did = f"proposed to take {format_split(reply.share)}"
        else:
            did = {"accept": "accepted", "reject": "rejected the proposal", "walk": "walked away"}[
                str(reply.kind)
            ]
        said = f' and said: "{reply.message}"' if reply.message else ""
        return f"  Turn {event.turn}, {who}: {did}{said}"

    def _board_text(self) -> str:
        lines = [
            f"Pool: {format_split(self.pool.counts)}; turn {self.turn} of {self.max_turns}.",
            *(f"{a} values: {format_split(self.pool.values[i])}" for i, a in enumerate(self.possible_agents)),
            *(self._event_text(event, -1) for event in self.events),
        ]
        if self.game_over:
            lines.append(self.result)
        elif self.offer is not None:
            lines.append(
                f"On the table: {self.possible_agents[self.offer[0]]} takes {format_split(self.offer[1])}."
            )
        return "\n".join(lines)


@functools.lru_cache(maxsize=1024)
def _proposal_moves(counts: tuple[int, ...]) -> tuple[str, ...]:
    """Every proposal for a pool, as the legal-move strings (cached: pools repeat)."""
    return tuple(f"propose: {format_split(share)}" for share in all_splits(counts))


def _pool_from_options(options: Mapping[str, Any]) -> Pool:
    counts, values = options.get("counts"), options.get("values")
    n = len(ITEMS)
    ok_counts = isinstance(counts, Sequence) and len(counts) == n and all(_is_count(c, 1) for c in counts)
    if not ok_counts:
        raise ValueError(
            f"Expected options['counts'] to be {n} ints >= 1 ({', '.join(ITEMS)}), got {counts!r}"
        )
    ok_values = (
        isinstance(values, Sequence)
        and len(values) == 2
        and all(
            isinstance(row, Sequence) and len(row) == n and all(_is_count(v, 0) for v in row)
            for row in values
        )
    )
    if not ok_values:
        raise ValueError(f"Expected options['values'] to be two rows of {n} ints >= 0, got {values!r}")
    pool = Pool(tuple(counts), tuple(tuple(row) for row in values))  # type: ignore[arg-type, union-attr]
    if not all(pool.worth(p) > 0 for p in (0, 1)):
        raise ValueError(f"The pool must be worth something to each player, got values {values!r}")
    return pool


def _is_count(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def env(**kwargs: Any) -> AECEnv:
    """Negotiation with PettingZoo's order-enforcing wrapper; ``kwargs`` go to :class:`raw_env`."""
    return turn_based_env(raw_env, **kwargs)


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The turn-based parallel view (only the player to move is played each step)."""
    return turn_based_parallel_env(raw_env, **kwargs)
