"""Wrappers for text envs: the chat conversation view, format shaping, and JSONL episode recording.

Convention for env authors: when a step's observation is a tool's output (rather than a message
from the user or the environment), set ``info["observation_role"] = "tool"`` (and, where known,
``info["tool_call_id"]`` and ``info["tool_name"]``; for several calls in one step, list them as
``info["tool_results"] = [{"content", "name", "tool_call_id"}, ...]``). :class:`ChatHistory` then
adds them to the conversation as ``tool``-role messages; any other observation becomes a
``user`` message.
"""

from gym_tinker.wrappers.chat import (
    OBSERVATION_ROLE,
    TOOL_RESULTS,
    ChatHistory,
    ChatSpace,
    tools_system_prompt,
)
from gym_tinker.wrappers.format_reward import FormatReward
from gym_tinker.wrappers.recorder import EpisodeRecorder

__all__ = [
    "OBSERVATION_ROLE",
    "TOOL_RESULTS",
    "ChatHistory",
    "ChatSpace",
    "EpisodeRecorder",
    "FormatReward",
    "tools_system_prompt",
]
