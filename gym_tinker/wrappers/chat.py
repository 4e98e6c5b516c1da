"""`ChatHistory`: present a text env's episode as the full chat conversation, for chat-template policies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Space

from gym_tinker.limits import action_as_read
from gym_tinker.messages import ROLES, Message, assistant_message, system_message, tool_message, user_message
from gym_tinker.spaces import TextSpace

__all__ = ["OBSERVATION_ROLE", "TOOL_RESULTS", "ChatHistory", "ChatSpace", "tools_system_prompt"]

OBSERVATION_ROLE = "observation_role"
"""Info key by which an env marks a step's observation as tool output (value ``"tool"``)."""
TOOL_RESULTS = "tool_results"
"""Optional info key: one ``{"content", "name", "tool_call_id"}`` dict per tool call answered."""

_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})


def tools_system_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool section of a system prompt, in the Hermes/Qwen form models are trained on.

    Lists each schema as one JSON line inside ``<tools></tools>`` and says how to call one
    (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, which
    :func:`gym_tinker.parsing.parse_tool_calls` reads). Empty for no tools.

    Example:
        >>> from gym_tinker.tools.calculator import CALCULATOR_SCHEMA
        >>> text = tools_system_prompt([CALCULATOR_SCHEMA])
        >>> text.splitlines()[0], '"name": "calculator"' in text
        ('# Tools', True)
        >>> tools_system_prompt([])
        ''
    """
    if not tools:
        return ""
    listed = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{listed}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


class ChatSpace(Space[list[Message]]):
    """The space of chat conversations: lists of message dicts (see :class:`gym_tinker.messages.Message`).

    ``contains`` checks each message: a ``dict`` with a ``role`` among ``system user assistant
    tool``, a ``str`` ``content``, and no keys beyond ``tool_calls`` (a list), ``tool_call_id``
    and ``name`` (strs).

    Example:
        >>> space = ChatSpace(seed=0)
        >>> space.contains([{"role": "user", "content": "hi"}]), space.contains([{"role": "bot", "content": "hi"}])
        (True, False)
        >>> space.contains(space.sample())
        True
    """

    def __init__(self, max_sample_messages: int = 4, seed: int | np.random.Generator | None = None):
        if not isinstance(max_sample_messages, int) or max_sample_messages < 0:
            raise ValueError(f"Expected `max_sample_messages` to be an int >= 0, got {max_sample_messages!r}")
        self.max_sample_messages = max_sample_messages
        super().__init__(shape=None, dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Conversations have no fixed-size numeric form."""
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> list[Message]:
        """A random conversation: random roles (no tool fields) with random text."""
        if mask is not None or probability is not None:
            raise NotImplementedError("ChatSpace.sample() takes no mask or probability")
        text = TextSpace(max_sample_length=32, seed=int(self.np_random.integers(2**31)))
        length = int(self.np_random.integers(0, self.max_sample_messages + 1))
        return [
            {"role": ROLES[int(self.np_random.integers(len(ROLES)))], "content": text.sample()}
            for _ in range(length)
        ]

    def contains(self, x: Any) -> bool:
        """True for a list of well-formed message dicts."""
        return isinstance(x, list) and all(_is_message(m) for m in x)

    def __repr__(self) -> str:
        return "ChatSpace()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatSpace)

    def __hash__(self) -> int:
        return hash(ChatSpace)

    def to_jsonable(self, sample_n: Iterable[list[Message]]) -> list[list[dict[str, Any]]]:
        """Conversations are already JSON."""
        return [[dict(m) for m in conversation] for conversation in sample_n]

    def from_jsonable(self, sample_n: list[Any]) -> list[list[Message]]:
        """Conversations are already JSON."""
        return [list(conversation) for conversation in sample_n]


def _is_message(message: Any) -> bool:
    if not isinstance(message, dict) or not _MESSAGE_KEYS.issuperset(message):
        return False
    if message.get("role") not in ROLES or not isinstance(message.get("content"), str):
        return False
    if "tool_calls" in message and not isinstance(message["tool_calls"], list):
        return False
    return all(isinstance(message[key], str) for key in ("tool_call_id", "name") if key in message)


# Gymnasium annotates `Wrapper.env` with the wrapper's own types, so the inner types are left as Any.
class ChatHistory(gym.Wrapper[Any, str, Any, Any]):
    """Observations become the whole conversation so far, as chat messages.

    After ``reset`` the observation is ``[system, user]``: the env's ``info["system_prompt"]``
    (followed, when the env has tools and ``tools_in_system_prompt``, by the tool schemas in the
    Hermes/Qwen form of :func:`tools_system_prompt`) and the env's first observation. Each
    ``step(action)`` appends the action as an ``assistant`` message, with its exact text (no
    re-rendering of tool calls, so a policy's tokens match what it produced; an action longer
    than the env's ``max_action_chars`` is kept as the env read it, cut), then the env's
    observation: ``tool`` messages if the env set ``info["observation_role"] == "tool"`` (one
    per entry of ``info["tool_results"]`` when the env lists its results there, each
    ``{"content", "name", "tool_call_id"}``; else one holding the observation, with
    ``info["tool_call_id"]``/``info["tool_name"]`` when given), otherwise a ``user`` message.
    An empty observation (e.g. after the final answer) adds no message.

    Observations are fresh lists of fresh dicts: changing one does not change the history.

    Args:
        env: A text env (observations and actions are ``str``).
        system_prompt: Replace the env's system prompt (``None`` keeps it).
        tools_in_system_prompt: Describe the env's tools in the system message. Turn off when the
            policy passes :attr:`tools` to a chat template that renders tools itself.

    Example:
        >>> from gym_tinker.envs.math import MathEnv
        >>> env = ChatHistory(MathEnv())
        >>> messages, info = env.reset(seed=0)
        >>> [m["role"] for m in messages]
        ['system', 'user']
        >>> messages, reward, terminated, truncated, info = env.step("<answer>63</answer>")
        >>> [m["role"] for m in messages], reward
        (['system', 'user', 'assistant', 'user'], 1.0)
    """

    def __init__(
        self, env: gym.Env[str, str], *, system_prompt: str | None = None, tools_in_system_prompt: bool = True
    ):
        super().__init__(env)
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(
                f"Expected `system_prompt` to be a str or None, got {type(system_prompt).__name__}"
            )
        self.system_prompt_override = system_prompt
        self.tools_in_system_prompt = bool(tools_in_system_prompt)
        self.observation_space = ChatSpace()
        self.tools: list[dict[str, Any]] = []
        self._messages: list[Message] = []

    @property
    def messages(self) -> list[Message]:
        """A copy of the conversation so far."""
        return [dict(m) for m in self._messages]  # type: ignore[misc]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Reset the env; the observation is ``[system, user]`` (no system message if it would be empty)."""
        observation, info = self.env.reset(seed=seed, options=options)
        self.tools = [dict(tool) for tool in info.get("tools", [])]
        base = (
            info.get("system_prompt", "")
            if self.system_prompt_override is None
            else self.system_prompt_override
        )
        parts = [base.strip()] if base and base.strip() else []
        if self.tools_in_system_prompt and self.tools:
            parts.append(tools_system_prompt(self.tools))
        self._messages = [system_message("\n\n".join(parts))] if parts else []
        self._messages.append(user_message(observation))
        return self.messages, info

    def step(self, action: str) -> tuple[list[Message], SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env, then append the action and the env's reply to the conversation."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._messages.append(assistant_message(action_as_read(self.env, action)))
        if info.get(OBSERVATION_ROLE) == "tool":
            self._messages += _tool_messages(observation, info)
        elif observation:
            self._messages.append(user_message(observation))
        return self.messages, reward, terminated, truncated, info


def _tool_messages(observation: str, info: dict[str, Any]) -> list[Message]:
    """One ``tool`` message per entry of ``info["tool_results"]``, else one for the observation."""
    results = info.get(TOOL_RESULTS)
    if isinstance(results, list) and results and all(isinstance(r, dict) and "content" in r for r in results):
        return [
            tool_message(
                str(r["content"]),
                tool_call_id=str(r.get("tool_call_id") or ""),
                name=str(r.get("name") or ""),
            )
            for r in results
        ]
    if not observation:
        return []
    return [
        tool_message(
            observation, tool_call_id=str(info.get("tool_call_id", "")), name=str(info.get("tool_name", ""))
        )
    ]
