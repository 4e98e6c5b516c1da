"""The action size cap: how much of one agent message an env or a game reads and keeps.

Every env and game reads at most ``max_action_chars`` characters of an action (default
:data:`DEFAULT_MAX_ACTION_CHARS`). A longer action is cut to that length, the agent is told so in
its next observation, and only the cut text is parsed and kept in histories and transcripts, so
a 1 MB message costs no more than a 32 KB one and never fills memory.

The cap is a safety net, not a parsing limit: every parser is linear in its input, so
``max_action_chars=None`` (no cap) is safe too, only slower and hungrier on huge messages.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_MAX_ACTION_CHARS", "action_as_read", "cap_action", "check_max_action_chars"]

#: Characters of one action an env or game reads by default: about 8,000 tokens, far beyond any
#: answer our tasks need, and small enough that parsing it takes well under a millisecond.
DEFAULT_MAX_ACTION_CHARS = 32_768


def check_max_action_chars(value: Any) -> int | None:
    """Validate a ``max_action_chars`` argument: ``None`` (no cap) or an int >= 1.

    Example:
        >>> check_max_action_chars(100)
        100
        >>> check_max_action_chars(0)
        Traceback (most recent call last):
        ...
        ValueError: Expected `max_action_chars` to be None (no cap) or an int >= 1, got 0
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Expected `max_action_chars` to be None (no cap) or an int >= 1, got {value!r}")
    return value


def cap_action(action: str, limit: int | None) -> tuple[str, str]:
    """Cut ``action`` to ``limit`` characters: ``(text to read, note for the agent)``.

    The note is ``""`` when nothing was cut; otherwise one sentence saying how long the message
    was and how much of it was read.

    Example:
        >>> cap_action("hello", 10)
        ('hello', '')
        >>> cap_action("x" * 50_000, 32_768)[1]
        'Your message was 50,000 characters long; only the first 32,768 were read.'
    """
    if limit is None or len(action) <= limit:
        return action, ""
    return action[
        :limit
    ], f"Your message was {len(action):,} characters long; only the first {limit:,} were read."


def action_as_read(env: Any, action: Any) -> Any:
    """``action`` as the env under ``env`` (wrappers and all) reads it: cut to its ``max_action_chars``.

    What a wrapper that keeps a history (:class:`~gym_tinker.wrappers.ChatHistory`,
    :class:`~gym_tinker.wrappers.EpisodeRecorder`) stores, so that no history holds megabytes.
    Non-strings and envs without a cap come back unchanged.

    Example:
        >>> from gym_tinker.envs.math import MathEnv
        >>> len(action_as_read(MathEnv(max_action_chars=10), "x" * 100))
        10
    """
    if not isinstance(action, str):
        return action
    limit = getattr(getattr(env, "unwrapped", env), "max_action_chars", None)
    return cap_action(action, limit if isinstance(limit, int) else None)[0]
