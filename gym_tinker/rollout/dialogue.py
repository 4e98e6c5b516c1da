"""One agent's side of an episode as the rollout engine sees it: its messages, its token ids, its turns.

A :class:`Dialogue` is built from an env's first message and reset info, then grows one turn at
a time. With a token sampler it keeps the exact id sequence the model has seen: the first
prompt is rendered once with the chat template; after that, each turn appends the sampled ids
verbatim (mask 1) and then the env's reply rendered as a continuation (mask 0). Nothing that
was sampled is ever decoded and re-encoded.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from gym_tinker.policy import ChatRenderer, Completion, Conversation, ToolSchemas
from gym_tinker.trajectory import Turn

__all__ = ["Dialogue", "jsonable", "messages_for_reply"]


def jsonable(value: Any) -> Any:
    """``value`` made JSON-serialisable: numpy scalars and arrays to Python, tuples to lists, others to ``repr``.

    Example:
        >>> import numpy as np
        >>> jsonable({"a": np.int64(3), "b": (1, 2.5), "c": {1}})
        {'a': 3, 'b': [1, 2.5], 'c': '{1}'}
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return jsonable(tolist())
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def messages_for_reply(observation: str, info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chat message(s) an env's reply becomes.

    When ``info["observation_role"] == "tool"``, the reply answers tool calls: one ``tool``
    message per entry of ``info["tool_results"]`` (its ``content``, with ``name`` and
    ``tool_call_id`` when given), so the chat template formats each result; without
    ``tool_results``, one ``tool`` message holding the whole observation. Otherwise a ``user``
    message (or ``system``, if the env says so).

    Example:
        >>> messages_for_reply("42", {"observation_role": "tool", "tool_results": [{"name": "calculator", "content": "42"}]})
        [{'role': 'tool', 'content': '42', 'name': 'calculator'}]
        >>> messages_for_reply("Higher.", {})
        [{'role': 'user', 'content': 'Higher.'}]
    """
    role = info.get("observation_role", "user")
    if role == "tool":
        results = info.get("tool_results")
        if not isinstance(results, Sequence) or isinstance(results, str) or not results:
            results = [{"content": observation}]
        messages = []
        for result in results:
            result = result if isinstance(result, Mapping) else {"content": result}
            message: dict[str, Any] = {"role": "tool", "content": str(result.get("content", ""))}
            if result.get("tool_call_id"):
                message["tool_call_id"] = str(result["tool_call_id"])
            if result.get("name"):
                message["name"] = str(result["name"])
            messages.append(message)
        return messages
    return [{"role": role if role in ("user", "system") else "user", "content": str(observation)}]


class Dialogue:
    """One agent's conversation with an env, as text and (with a renderer) as exact token ids.

    Args:
        observation: The env's first message.
        system_prompt: System prompt from the reset info (omitted when empty).
        tools: Tool schemas from the reset info (``None`` or empty for none).
        renderer: The token sampler's renderer; ``None`` for text-only rollouts.

    Example:
        >>> from gym_tinker.policy import Completion
        >>> d = Dialogue("Guess 1-10.", system_prompt="Play.", tools=None, renderer=None)
        >>> d.act(Completion("5"))
        >>> d.end_turn(0.0, {}, reply="Higher.")
        >>> [m["role"] for m in d.messages], d.turns[0].observation, d.observation
        (['system', 'user', 'assistant', 'user'], 'Guess 1-10.', 'Higher.')
    """

    def __init__(
        self,
        observation: str,
        *,
        system_prompt: str = "",
        tools: ToolSchemas | None = None,
        renderer: ChatRenderer | None = None,
    ):
        self.messages: list[dict[str, Any]] = []
        if system_prompt:
            self.messages.append({"role": "system", "content": str(system_prompt)})
        self.messages.append({"role": "user", "content": str(observation)})
        self.tools: list[dict[str, Any]] | None = [dict(t) for t in tools] if tools else None
        self.renderer = renderer
        self.observation = str(observation)
        """The env message the agent is answering now."""
        self.turns: list[Turn] = []
        self.generated_tokens = 0
        """Tokens sampled so far (``len(token_ids)`` of every completion)."""
        self.ids: list[int] | None = None
        if renderer is not None:
            self.ids = list(renderer.render(self.messages, tools=self.tools, add_generation_prompt=True))
        self._pending: tuple[Completion, tuple[int, ...] | None] | None = None

    @property
    def token_exact(self) -> bool:
        """Whether the dialogue keeps exact token ids (it has a renderer)."""
        return self.ids is not None

    @property
    def has_open_turn(self) -> bool:
        """Whether :meth:`act` recorded a completion whose turn :meth:`end_turn` has not closed."""
        return self._pending is not None

    def prompt_ids(self) -> list[int]:
        """The ids to sample the next completion from (the whole sequence so far)."""
        if self.ids is None:
            raise RuntimeError("This dialogue is text-only (no renderer); it has no token ids")
        return list(self.ids)

    def sequence_length(self) -> int:
        """Tokens so far: the whole id sequence when token-exact, else the sampled tokens."""
        return len(self.ids) if self.ids is not None else self.generated_tokens

    def act(self, completion: Completion) -> None:
        """Record the agent's completion (the turn ends with :meth:`end_turn`)."""
        if self._pending is not None:
            raise RuntimeError("act() called twice without end_turn()")
        prompt = tuple(self.ids) if self.ids is not None else completion.prompt_ids
        if self.ids is not None:
            if not completion.token_ids:
                raise ValueError(
                    "A token-exact rollout needs the completion's token_ids; the sampler returned none"
                )
            if completion.prompt_ids is not None and tuple(completion.prompt_ids) != prompt:
                raise ValueError(
                    f"The sampler reports a different prompt ({len(completion.prompt_ids)} ids) from the one "
                    f"it was given ({len(self.ids)} ids); its completion does not continue this dialogue"
                )
            self.ids.extend(completion.token_ids)
        self.generated_tokens += len(completion.token_ids)
        self.messages.append({"role": "assistant", "content": completion.text})
        self._pending = (completion, prompt)

    def reply_ids(self, reply_messages: Conversation) -> list[int]:
        """Ids that close the agent's last turn and add ``reply_messages`` plus the next prompt."""
        if self.renderer is None or self._pending is None:
            raise RuntimeError("reply_ids() needs a renderer and a completion recorded with act()")
        completion = self._pending[0]
        close = getattr(self.renderer, "close_assistant_turn", None)
        ids = list(close(completion.token_ids)) if callable(close) else []
        history = self.messages
        return ids + list(self.renderer.render_continuation(history, reply_messages, tools=self.tools))

    def end_turn(
        self,
        reward: float,
        info: Mapping[str, Any],
        *,
        reply: str | None = None,
        reply_ids: Sequence[int] | None = None,
    ) -> None:
        """Finish the turn begun by :meth:`act` with its reward.

        Args:
            reward: Reward for the action.
            info: The env's info after the action (stored, made JSON-safe, on the turn).
            reply: The env's next message when the episode goes on; ``None`` when it ended.
            reply_ids: Token ids of the reply (from :meth:`reply_ids`); computed when omitted
                in a token-exact dialogue that continues.
        """
        if self._pending is None:
            raise RuntimeError("end_turn() called without act()")
        completion, prompt = self._pending
        sampled = tuple(completion.token_ids)
        new_messages = messages_for_reply(reply, info) if reply is not None else []
        env_ids: list[int] = []
        if self.ids is not None and reply is not None:
            env_ids = list(reply_ids) if reply_ids is not None else self.reply_ids(new_messages)
            self.ids.extend(env_ids)
        logprobs = completion.logprobs
        token_fields: dict[str, Any] = {}
        if self.ids is not None:
            token_fields = {
                "prompt_ids": prompt,
                "completion_ids": sampled + tuple(env_ids),
                "env_mask": (1,) * len(sampled) + (0,) * len(env_ids),
                "completion_logprobs": None if logprobs is None else tuple(logprobs) + (0.0,) * len(env_ids),
            }
        elif sampled:
            token_fields = {"prompt_ids": prompt, "completion_ids": sampled, "completion_logprobs": logprobs}
        self.turns.append(
            Turn(
                observation=self.observation,
                action=completion.text,
                reward=float(reward),
                info=jsonable(dict(info)),
                **token_fields,
            )
        )
        self.messages.extend(new_messages)
        if reply is not None:
            self.observation = str(reply)
        self._pending = None
