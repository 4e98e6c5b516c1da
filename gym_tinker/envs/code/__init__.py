"""Code: write a Python function from a spec; hidden unit tests run in the sandbox (single turn).

Rules
    Each episode draws a function family for the difficulty and its parameters from the seed,
    e.g. "return the items of xs divisible by 3 and greater than -5". The prompt gives the
    signature, the behaviour and two examples; 8 (easy), 10 (medium) or 12 (hard) hidden tests
    check the function.

Action
    Any text; the code is the last fenced block that defines the function (else the last fenced
    block, else the whole message).

Observation
    How many tests passed and the first failure (or why the code could not be loaded).

Reward
    The fraction of hidden tests passed, in ``[0, 1]``. Syntax errors, crashes, timeouts and
    resource limits give feedback and count as failures. Always terminated after one step.
"""

from gym_tinker.envs.code.env import CODE_LIMITS, CodeEnv, extract_code, oracle
from gym_tinker.envs.code.tasks import FAMILIES, CodeTask, generate_task

__all__ = ["CODE_LIMITS", "FAMILIES", "CodeEnv", "CodeTask", "extract_code", "generate_task", "oracle"]
