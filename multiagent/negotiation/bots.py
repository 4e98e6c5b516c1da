"""Negotiation bots: plain callables ``(observation, info) -> reply`` that read ``info``.

They use the player's own ``pool``, ``values``, ``offer``, ``turn`` and ``max_turns`` from
``info`` (never the other player's values, which the env does not reveal). The random bot
is :class:`multiagent.bots.RandomLegalBot` (a uniformly random legal move).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multiagent.negotiation.logic import ITEMS, all_splits, format_split, split_value

__all__ = ["ThresholdNegotiator"]


class ThresholdNegotiator:
    """Asks for a share worth at least a threshold that falls over time, and accepts any offer
    worth at least that threshold.

    The threshold, as a fraction of what the whole pool is worth to the bot, falls linearly
    from ``start`` on the first turn to ``end`` on the last. On its last chance to accept
    (no turn left after its own) it accepts anything worth more than nothing. When proposing it
    picks, among the shares worth at least the threshold that leave the other player at least
    one item, the one leaving the other player the most items, and among those the one worth
    most to the bot: it gives away what it values least.

    Args:
        start: Threshold on the first turn.
        end: Threshold on the last turn.
        seed: Accepted for :func:`~multiagent.bots.get_bot`; the bot is deterministic.

    Example:
        >>> bot = ThresholdNegotiator()
        >>> info = {
        ...     "legal_moves": ["walk away"], "pool": {"books": 2, "hats": 1, "balls": 1},
        ...     "values": {"books": 0, "hats": 4, "balls": 6}, "offer": None, "turn": 0, "max_turns": 10,
        ... }
        >>> bot("", info)
        '<message>I would like hats=1 balls=1; you can have the rest.</message><offer>books=0 hats=1 balls=1</offer>'
    """

    def __init__(self, start: float = 0.8, end: float = 0.4, seed: int | None = None):
        if not 0.0 <= end <= start <= 1.0:
            raise ValueError(f"Expected 0 <= end <= start <= 1, got start={start!r}, end={end!r}")
        self.start = start
        self.end = end

    def threshold(self, turn: int, max_turns: int) -> float:
        """The fraction of the pool's worth asked for on turn ``turn`` (0-based)."""
        progress = turn / (max_turns - 1) if max_turns > 1 else 1.0
        return self.start + (self.end - self.start) * min(progress, 1.0)

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        if not info.get("legal_moves") or "pool" not in info:
            return ""
        counts = tuple(int(info["pool"][item]) for item in ITEMS)
        values = tuple(int(info["values"][item]) for item in ITEMS)
        worth = split_value(counts, values)
        turn, max_turns = int(info["turn"]), int(info["max_turns"])
        target = self.threshold(turn, max_turns) * worth
        offer = info.get("offer")
        if offer is not None and "accept" in info["legal_moves"]:
            mine = split_value([offer["you_get"][item] for item in ITEMS], values)
            last_chance = turn + 1 >= max_turns
            if mine >= target or (last_chance and mine > 0):
                return "<message>That works for me.</message><move>accept</move>"
        total = sum(counts)
        candidates = [s for s in all_splits(counts) if sum(s) < total and split_value(s, values) >= target]
        if not candidates:
            candidates = [s for s in all_splits(counts) if sum(s) < total] or [counts]
            share = max(candidates, key=lambda s: (split_value(s, values), -sum(s)))
        else:
            share = max(candidates, key=lambda s: (-sum(s), split_value(s, values)))
        wanted = " ".join(f"{item}={n}" for item, n in zip(ITEMS, share, strict=True) if n)
        message = f"I would like {wanted or 'nothing'}; you can have the rest."
        return f"<message>{message}</message><offer>{format_split(share)}</offer>"
