"""`CodeEnv`: write a Python function from a spec; hidden unit tests run in the sandbox."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from gym_tinker.core import StepResult, TextEnv
from gym_tinker.envs.code.tasks import CodeTask, generate_task
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from gym_tinker.tasks import TaskDataset, check_difficulty
from gym_tinker.tools.function_tests import run_function_tests
from gym_tinker.tools.sandbox import SandboxLimits

__all__ = ["CODE_LIMITS", "CodeEnv", "extract_code", "oracle"]

CODE_LIMITS = SandboxLimits(wall_seconds=5.0, cpu_seconds=4, max_output_bytes=256 * 1024)
"""Default sandbox limits for running one solution against all its hidden tests."""

# The language word after an opening fence (the rest of that line is ignored).
_FENCE_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")
_SYSTEM_PROMPT = (
    "You are a careful Python programmer. Write the function the user asks for and reply with the "
    "complete function in one ```python code block. The function is tested by hidden unit tests "
    "that call it and compare what it returns; it must not read input or print."
)


def extract_code(text: str, entry_point: str | None = None) -> str:
    """The code in a reply: the last fenced block defining ``entry_point``, else the last fenced
    block (``python`` ones preferred), else the whole text.

    Example:
        >>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```\\nDone.")
        'def f():\\n    return 1\\n'
        >>> extract_code("def f():\\n    return 2")
        'def f():\\n    return 2'
    """
    blocks = [(lang.lower(), body) for lang, body in _fenced_blocks(text)]
    if not blocks:
        return text
    if entry_point is not None:
        defines = re.compile(rf"\bdef\s+{re.escape(entry_point)}\s*\(")
        for _, body in reversed(blocks):  # the last block defining it
            if "def" in body and defines.search(body):
                return body
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    return (python or [body for _, body in blocks])[-1]


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced block, in order; a last unclosed block runs to the end.

    A fence opens at a ```` ``` ```` followed later by a newline (the language is the first word
    on that line) and closes at the next ```` ``` ````. One forward pass of ``str.find``: a
    regex with a lazy body rescans the rest of the text from each of a flood of backticks.
    """
    blocks: list[tuple[str, str]] = []
    pos = 0
    while (start := text.find("```", pos)) >= 0:
        newline = text.find("\n", start + 3)
        if newline < 0:
            break
        lang = _FENCE_LANG.match(text, start + 3, newline)
        close = text.find("```", newline + 1)
        if close < 0:
            blocks.append((lang.group(1) if lang else "", text[newline + 1 :]))
            break
        blocks.append((lang.group(1) if lang else "", text[newline + 1 : close]))
        pos = close + 3
    return blocks


def _tests_from_row(index: int, raw: Any) -> tuple[tuple[tuple[Any, ...], Any], ...]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"Code dataset row {index}: `tests` is a string that is not JSON ({err})"
            ) from err
    if not isinstance(raw, list) or not raw:
        raise ValueError(
            f"Code dataset row {index}: `tests` must be a non-empty list of {{'args': [...], 'expected': ...}}"
        )
    tests = []
    for position, test in enumerate(raw):
        if (
            not isinstance(test, dict)
            or "args" not in test
            or "expected" not in test
            or not isinstance(test["args"], list)
        ):
            raise ValueError(
                f"Code dataset row {index}: test {position} must be {{'args': [...], 'expected': ...}}, got {test!r:.100}"
            )
        tests.append((tuple(test["args"]), test["expected"]))
    return tuple(tests)


class CodeEnv(TextEnv):
    """Write a Python function from a spec (single turn); reward = fraction of hidden tests passed.

    Tasks come from seeded function families (``easy``: arithmetic and simple string functions;
    ``medium``: list filters, ciphers, running totals; ``hard``: recurrences, run-length encoding,
    bracket depth...), each with parameters drawn from the seed and hidden tests whose expected
    values come from a reference solution. The agent's code (the last fenced block defining the
    function, else the last fenced block, else the whole message) runs in the sandbox against
    every test. Syntax errors, a missing function, crashes and timeouts give feedback and count as
    failed tests; nothing the code does raises here.

    Dataset columns: ``prompt`` (the spec shown), ``entry_point`` (function name), ``tests`` (a
    list, or its JSON text, of ``{"args": [...], "expected": ...}``); optional ``solution`` (used
    by :func:`oracle`) and ``task_id``.

    Args:
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"``.
        dataset: Tasks to use instead of generated ones.
        max_turns: Must stay 1 (the default); kept for the shared constructor.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer one is cut, with a
            note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).
        limits: Sandbox limits for one run of all hidden tests.
        use_bwrap: Passed to the sandbox (``None``: use bubblewrap when installed).

    Example:
        >>> env = CodeEnv(difficulty="easy")
        >>> obs, info = env.reset(seed=0)
        >>> obs.startswith("Write a Python function")
        True
        >>> _, reward, terminated, _, info = env.step(oracle(env))
        >>> reward, terminated, info["passed"] == info["total"]
        (1.0, True, True)
    """

    description = (
        "Write a Python function from a spec; hidden unit tests run in a sandbox, reward = pass rate."
    )
    default_max_turns: ClassVar[int] = 1

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        dataset: Any = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        limits: SandboxLimits = CODE_LIMITS,
        use_bwrap: bool | None = None,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        super().__init__(max_turns=max_turns, render_mode=render_mode, max_action_chars=max_action_chars)
        self.difficulty = check_difficulty(difficulty)
        if not isinstance(limits, SandboxLimits):
            raise TypeError(f"Expected `limits` to be a SandboxLimits, got {type(limits).__name__}")
        self.limits = limits
        self.use_bwrap = use_bwrap
        self.dataset = (
            None
            if dataset is None
            else TaskDataset(
                dataset,
                required=["prompt", "entry_point", "tests"],
                optional=["solution", "task_id"],
                env_name="Code",
            )
        )
        self.task: CodeTask | None = None

    def _task_from_row(self, index: int, row: dict[str, Any]) -> CodeTask:
        entry_point = row["entry_point"]
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            raise ValueError(
                f"Code dataset row {index}: `entry_point` must be a function name, got {entry_point!r}"
            )
        task_id = str(row.get("task_id") or f"code-row{index}")
        solution = row.get("solution")
        return CodeTask(
            str(row["prompt"]), entry_point, _tests_from_row(index, row["tests"]), task_id, solution
        )

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        if self.dataset is not None:
            self.task = self._task_from_row(*self.dataset.pick(self.np_random, options))
        else:
            self.task = generate_task(self.np_random, self.difficulty)
        info = {
            "system_prompt": _SYSTEM_PROMPT,
            "tools": [],
            "task_id": self.task.task_id,
            "difficulty": self.difficulty,
            "entry_point": self.task.entry_point,
        }
        return self.task.prompt, info

    def _step(self, action: str) -> StepResult:
        assert self.task is not None
        code = extract_code(action, self.task.entry_point)
        report = run_function_tests(
            code, self.task.entry_point, self.task.tests, limits=self.limits, use_bwrap=self.use_bwrap
        )
        info = {
            "passed": report.passed,
            "total": report.total,
            "pass_rate": report.pass_rate,
            "load_error": report.load_error,
            "sandbox_error": report.sandbox.error,
            "isolated": report.sandbox.isolated,
        }
        return report.summary(), float(report.pass_rate), True, False, info


def _lookup_table_solution(task: CodeTask) -> str:
    """A function that returns the expected value for each hidden test's arguments."""
    table = {json.dumps(list(args)): expected for args, expected in task.tests}
    return (
        "import json\n"
        f"_TABLE = json.loads({json.dumps(json.dumps(table))})\n"
        f"def {task.entry_point}(*args):\n"
        "    return json.loads(json.dumps(_TABLE[json.dumps(list(args))]))\n"
    )


def oracle(env: Any) -> str:
    """A reply that passes every hidden test: the task's solution in a ``python`` block.

    Dataset rows without a ``solution`` get a function that looks up the hidden tests' answers.

    Example:
        >>> env = CodeEnv(dataset=[{"prompt": "Double x.", "entry_point": "double",
        ...                         "tests": [{"args": [2], "expected": 4}]}])
        >>> _ = env.reset(seed=0)
        >>> env.step(oracle(env))[1]
        1.0
    """
    task = env.unwrapped.task
    if task is None:
        raise RuntimeError("oracle(env) needs an episode in progress; call env.reset() first")
    code = task.solution if task.solution else _lookup_table_solution(task)
    return f"```python\n{code.rstrip()}\n```"
