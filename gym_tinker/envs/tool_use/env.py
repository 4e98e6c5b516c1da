"""`ToolUseEnv`: multi-turn question answering with calculator, sandboxed Python, search and lookup."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from gym_tinker.answers import answers_match
from gym_tinker.core import StepResult, TextEnv
from gym_tinker.envs.tool_use.tasks import ToolUseTask, generate_task, make_task_id
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from gym_tinker.messages import ToolCall
from gym_tinker.parsing import extract_answer, parse_tool_calls
from gym_tinker.tasks import TaskDataset, check_difficulty
from gym_tinker.tools.base import Tool, ToolOutput, ToolRegistry
from gym_tinker.tools.calculator import CALCULATOR_SCHEMA, calculator_tool
from gym_tinker.tools.knowledge_base import knowledge_base
from gym_tinker.tools.python_tool import PYTHON_TOOL_LIMITS, make_python_tool
from gym_tinker.tools.sandbox import SandboxLimits

__all__ = ["MAX_TOTAL_BONUS", "ToolUseEnv", "oracle"]

MAX_TOTAL_BONUS = 0.5
"""Cap on the shaping bonus of one episode: always below the reward of a correct answer."""

_CALL_FORMAT = (
    '<tool_call>{"name": "lookup", "arguments": {"entity": "Zorvak lamp", "attribute": "price"}}</tool_call>'
)
_NEITHER = (
    "No tool call or final answer found in your message. To call a tool, write for example\n"
    f"{_CALL_FORMAT}\n"
    "To give your final answer, write <answer>your answer</answer>."
)


def _system_prompt(tools: list[dict[str, Any]], max_calls: int) -> str:
    lines = [
        "You answer questions about a fictional world. Its facts are not common knowledge: use the tools "
        "to look them up and to compute.",
        "",
        "Tools:",
    ]
    for schema in tools:
        function = schema["function"]
        arguments = ", ".join(function["parameters"].get("properties", {}))
        lines.append(f"- {function['name']}({arguments}): {function['description']}")
    lines += [
        "",
        "To call a tool, write the call as JSON inside tool_call tags, exactly like this:",
        _CALL_FORMAT,
        f"You may make up to {max_calls} calls in one message; the results come back in the next message.",
        "",
        "When you know the answer, write it inside answer tags: <answer>42.5</answer>. Give numbers "
        "without units (money in USD, rounded to cents; distances in km), or a name when asked for one.",
    ]
    return "\n".join(lines)


class ToolUseEnv(TextEnv):
    """Answer questions about a seeded fictional world by calling tools (multi-turn).

    Every episode draws a knowledge base (products, companies, cities, people with made-up names
    and facts) and a question about it. Tools: ``lookup(entity, attribute)``, ``search(query)``,
    ``calculator(expression)`` and ``python(code)`` (run in the sandbox).

    Difficulty: ``easy`` needs one lookup ("What is the price of the Zorvak lamp?"); ``medium``
    two lookups and arithmetic (the total cost of 3 of X and 2 of Y); ``hard`` three or four
    calls (differences of distances, averages, comparisons, multi-hop lookups).

    Each step, the agent's message is read as follows:

    * tool calls (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, or the other
      formats :func:`~gym_tinker.parsing.parse_tool_calls` reads) are run, and the next
      observation holds one ``<tool_response name="...">...</tool_response>`` block per call, in
      order, with ``info["observation_role"] == "tool"`` and the results also in
      ``info["tool_results"]``. Malformed calls, unknown tools and bad arguments come back the
      same way as ``Error: ...`` blocks. At most ``max_calls_per_turn`` calls run per message.
    * otherwise a final answer (``<answer>...</answer>`` or ``\\boxed{...}``) ends the episode:
      reward 1.0 if it matches (numbers within ``abs_tol`` 0.01 or ``rel_tol`` 1e-6), else 0.0.
    * otherwise the observation explains the two formats (``observation_role == "user"``).

    A message holding both tool calls and an answer counts as tool calls: the agent cannot
    know the results yet, so its answer is not graded.

    Shaping (off by default): ``tool_call_bonus`` is added for each successful call that is not a
    repeat of an earlier one in the episode, up to :data:`MAX_TOTAL_BONUS` per episode, so a
    correct answer always earns more than any amount of tool use.

    Dataset columns: ``question`` and ``answer`` (required); ``kb_seed`` (the knowledge base the
    question is about, default 0) and ``task_id`` (optional).

    Args:
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"``.
        dataset: Questions to use instead of generated ones (JSONL path, ``datasets.Dataset`` or
            a sequence of dicts).
        max_turns: Messages per episode before truncation (default 8).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer one is cut, with a
            note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).
        tool_call_bonus: Shaping reward per new successful tool call, in ``[0, 0.1]``.
        max_calls_per_turn: Most tool calls run from one message.
        python_limits: Sandbox limits of the ``python`` tool.
        use_bwrap: Passed to the sandbox (``None``: use bubblewrap when installed).

    Example:
        >>> env = ToolUseEnv(difficulty="easy")
        >>> obs, info = env.reset(seed=0)
        >>> sorted(tool["function"]["name"] for tool in info["tools"])
        ['calculator', 'lookup', 'python', 'search']
        >>> obs, reward, terminated, truncated, info = env.step(oracle(env))
        >>> info["observation_role"], reward, terminated
        ('tool', 0.0, False)
        >>> env.step(oracle(env))[1:3]
        (1.0, True)
    """

    description = (
        "Answer questions about a seeded fictional world using lookup, search, calculator and python tools."
    )
    default_max_turns: ClassVar[int] = 8
    rel_tol: ClassVar[float] = 1e-6
    abs_tol: ClassVar[float] = 0.01

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        dataset: Any = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        tool_call_bonus: float = 0.0,
        max_calls_per_turn: int = 4,
        python_limits: SandboxLimits = PYTHON_TOOL_LIMITS,
        use_bwrap: bool | None = None,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        super().__init__(max_turns=max_turns, render_mode=render_mode, max_action_chars=max_action_chars)
        self.difficulty = check_difficulty(difficulty)
        if (
            isinstance(tool_call_bonus, bool)
            or not isinstance(tool_call_bonus, int | float)
            or not 0 <= tool_call_bonus <= 0.1
        ):
            raise ValueError(
                f"Expected `tool_call_bonus` to be a number in [0, 0.1], got {tool_call_bonus!r}"
            )
        if (
            isinstance(max_calls_per_turn, bool)
            or not isinstance(max_calls_per_turn, int)
            or max_calls_per_turn < 1
        ):
            raise ValueError(f"Expected `max_calls_per_turn` to be an int >= 1, got {max_calls_per_turn!r}")
        self.tool_call_bonus = float(tool_call_bonus)
        self.max_calls_per_turn = max_calls_per_turn
        self.dataset = (
            None
            if dataset is None
            else TaskDataset(
                dataset, required=["question", "answer"], optional=["kb_seed", "task_id"], env_name="ToolUse"
            )
        )
        self._static_tools = [
            Tool.from_schema(CALCULATOR_SCHEMA, calculator_tool),
            make_python_tool(python_limits, use_bwrap),
        ]
        self.task: ToolUseTask | None = None
        self.registry = ToolRegistry(self._static_tools)
        self.bonus_total = 0.0
        self._rewarded_calls: set[str] = set()

    # --- episode --------------------------------------------------------------------------

    def _task_from_row(self, index: int, row: dict[str, Any]) -> ToolUseTask:
        kb_seed = row.get("kb_seed", 0)
        if isinstance(kb_seed, bool) or not isinstance(kb_seed, int) or kb_seed < 0:
            raise ValueError(
                f"ToolUse dataset row {index}: `kb_seed` must be a non-negative int, got {kb_seed!r}"
            )
        question = str(row["question"])
        task_id = str(row.get("task_id") or make_task_id(self.difficulty, f"row{index}", kb_seed, question))
        return ToolUseTask(question, row["answer"], kb_seed, task_id)

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        if self.dataset is not None:
            self.task = self._task_from_row(*self.dataset.pick(self.np_random, options))
        else:
            self.task = generate_task(self.np_random, self.difficulty)
        self.registry = ToolRegistry([*self._static_tools, *knowledge_base(self.task.kb_seed).tools()])
        self.bonus_total = 0.0
        self._rewarded_calls = set()
        tools = self.registry.schemas()
        observation = (
            f"Question: {self.task.question}\n"
            "Use the tools to find the facts, then give the final answer as <answer>...</answer>."
        )
        info = {
            "system_prompt": _system_prompt(tools, self.max_calls_per_turn),
            "tools": tools,
            "task_id": self.task.task_id,
            "difficulty": self.difficulty,
            "kb_seed": self.task.kb_seed,
        }
        return observation, info

    def _step(self, action: str) -> StepResult:
        assert self.task is not None
        calls, errors = parse_tool_calls(action)
        if calls or errors:
            return self._run_tools(calls, errors)
        answer = extract_answer(action, fallback_last_number=False)
        if answer is None:
            return _NEITHER, 0.0, False, False, {"observation_role": "user"}
        correct = answers_match(answer, self.task.answer, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        observation = "Correct." if correct else "Incorrect."
        info = {"observation_role": "user", "correct": correct, "parsed_answer": answer}
        return observation, 1.0 if correct else 0.0, True, False, info

    def _run_tools(self, calls: list[ToolCall], errors: list[str]) -> StepResult:
        outputs = [
            ToolOutput("", error if error.startswith("Error") else f"Error: {error}", False)
            for error in errors
        ]
        for position, call in enumerate(calls):
            if position >= self.max_calls_per_turn:
                text = f"Error: at most {self.max_calls_per_turn} tool calls run per message; this call was skipped."
                outputs.append(ToolOutput(call.name, text, False, call.id))
            else:
                outputs.append(self.registry.run(call))
        reward = 0.0
        if self.tool_call_bonus:
            for call, output in zip(calls, outputs[len(errors) :], strict=False):
                key = json.dumps([call.name, call.arguments], sort_keys=True, default=str)
                if output.ok and key not in self._rewarded_calls:
                    self._rewarded_calls.add(key)
                    bonus = min(self.tool_call_bonus, MAX_TOTAL_BONUS - self.bonus_total)
                    self.bonus_total += bonus
                    reward += bonus
        blocks = [
            f'<tool_response name="{output.name}">\n{output.content}\n</tool_response>'
            if output.name
            else f"<tool_response>\n{output.content}\n</tool_response>"
            for output in outputs
        ]
        info = {
            "observation_role": "tool",
            "tool_results": [
                {"name": o.name, "tool_call_id": o.call_id, "content": o.content, "ok": o.ok} for o in outputs
            ],
        }
        return "\n".join(blocks), reward, False, False, info


def oracle(env: Any) -> str:
    """The next message of a perfect agent: the next planned tool call, then the answer.

    Counts the tool calls already made this episode (one per turn) to know where it is in the
    task's plan. Dataset questions have no plan, so the oracle answers them directly.

    Example:
        >>> env = ToolUseEnv(difficulty="hard")
        >>> _ = env.reset(seed=3)
        >>> done = False
        >>> while not done:
        ...     _, reward, done, _, _ = env.step(oracle(env))
        >>> reward
        1.0
    """
    inner = env.unwrapped
    task = inner.task
    if task is None:
        raise RuntimeError("oracle(env) needs an episode in progress; call env.reset() first")
    made = inner.turn
    if made < len(task.plan):
        call = task.plan[made]
        return f"<tool_call>{json.dumps({'name': call.name, 'arguments': call.arguments})}</tool_call>"
    answer = task.answer
    text = f"{answer:.2f}" if isinstance(answer, float) else str(answer)
    return f"<answer>{text}</answer>"
