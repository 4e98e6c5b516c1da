"""ToolUse: answer questions about a seeded fictional world by calling tools (multi-turn).

Rules
    Each episode generates a knowledge base from the seed (products with prices and stock,
    companies with share prices, cities with pairwise distances, people with ages, salaries
    and home cities; all names made of random syllables) and asks one question about it.
    ``easy`` questions need one lookup, ``medium`` two lookups and arithmetic, ``hard`` three
    or four calls.

Tools
    ``lookup(entity, attribute)``, ``search(query)``, ``calculator(expression)`` and
    ``python(code)`` (sandboxed). Their OpenAI schemas are in the reset ``info["tools"]``; the
    system prompt (``info["system_prompt"]``) lists them with the call and answer formats.

Action
    Any text: tool calls (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), or a
    final answer (``<answer>...</answer>`` or ``\\boxed{...}``).

Observation
    Tool results, one ``<tool_response>`` block per call (``info["observation_role"] ==
    "tool"``), including ``Error: ...`` blocks for malformed calls, unknown tools and bad
    arguments; or short feedback when the message had neither calls nor an answer.

Reward
    1.0 for a correct final answer, else 0.0; optional bounded shaping per successful tool call
    (``tool_call_bonus``, off by default). Terminated on the answer; truncated after
    ``max_turns`` messages (default 8).
"""

from gym_tinker.envs.tool_use.env import MAX_TOTAL_BONUS, ToolUseEnv, oracle
from gym_tinker.envs.tool_use.tasks import TEMPLATES, ToolUseTask, generate_task

__all__ = ["MAX_TOTAL_BONUS", "TEMPLATES", "ToolUseEnv", "ToolUseTask", "generate_task", "oracle"]
