"""A gym_tinker env as TRL's ``environment_factory``: tool methods that step the env, its reward as ``get_reward``.

TRL's ``GRPOTrainer(environment_factory=...)`` (TRL >= 1.14, transformers >= 5.2) creates one
instance per rollout, calls ``reset(**row)`` with the dataset row (its string return is appended
to the prompt), exposes every public method other than ``reset`` and ``get_reward`` as a tool
(schemas from type hints and Google-style docstrings), runs its own tool-calling loop, and
scores each rollout with ``get_reward()``.

Here every tool call becomes one env step, so the env's turn limit, rewards and termination
apply unchanged:

* every env gets an ``answer(answer)`` tool: the agent's final answer (or move, or guess) sent
  to the env as ``<answer>...</answer>``;
* ``tinker/ToolUse-v0`` also gets ``lookup``, ``search``, ``calculator`` and ``python``, each
  sent to the env as one ``<tool_call>`` message.

This is the ``rollout: trl_env`` path; the default GRPO path (:mod:`executors.training.grpo`)
runs our own rollout engine, which is token-exact for any env and batches all episodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

__all__ = ["TRLEnvironment", "ToolUseTRLEnvironment", "tool_calling_tokenizer", "trl_environment_factory"]

_EPISODE_OVER = "The episode is over; no further actions are taken."


class TRLEnvironment:
    """One gym_tinker episode behind TRL's environment contract (``reset``, tools, ``get_reward``).

    Subclasses set :attr:`env_id` and :attr:`env_kwargs` (see :func:`trl_environment_factory`).

    Example:
        >>> Env = trl_environment_factory("tinker/GuessNumber-v0", max_turns=2)
        >>> env = Env()
        >>> env.reset(seed=0).startswith("I'm thinking of a whole number")
        True
        >>> env.answer("50")
        '50 is too low. The number is higher. 1 guess left.'
        >>> env.answer("75"), env.done, env.get_reward()
        ('75 is too low. The number is higher. Out of guesses. The number was 86.', True, 0.0)
        >>> env.answer("86")
        'The episode is over; no further actions are taken.'
    """

    env_id: ClassVar[str] = ""
    """The registered env id this class runs."""
    env_kwargs: ClassVar[Mapping[str, Any]] = {}
    """Keyword arguments for ``gym.make``."""

    # Every public method other than `reset` and `get_reward` becomes a tool for TRL: helpers stay private.

    def __init__(self) -> None:
        import gymnasium as gym

        import gym_tinker  # noqa: F401  (registers the envs)

        if not self.env_id:
            raise ValueError(
                f"{type(self).__name__} has no env_id; make the class with trl_environment_factory(env_id)"
            )
        self.env = gym.make(self.env_id, **dict(self.env_kwargs))
        self.reward = 0.0
        self.done = True
        self.steps = 0
        self.seed: int | None = None
        """The seed of the current episode."""
        self.info: dict[str, Any] = {}

    def reset(self, **kwargs: Any) -> str | None:
        """Start an episode from the dataset row's ``seed`` (any other columns are ignored); return its first observation."""
        seed = kwargs.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"Expected the row's `seed` to be an int >= 0 or absent, got {seed!r}")
        observation, self.info = self.env.reset(seed=seed)
        self.seed = seed
        self.reward, self.done, self.steps = 0.0, False, 0
        return f"{observation}\n\nSubmit your final answer with the `answer` tool."

    def get_reward(self) -> float:
        """The episode's total env reward so far."""
        return self.reward

    def _step(self, action: str) -> str:
        """One env step with ``action``; the env's observation is the tool's result."""
        if self.done:
            return _EPISODE_OVER
        observation, reward, terminated, truncated, self.info = self.env.step(action)
        self.reward += float(reward)
        self.steps += 1
        self.done = bool(terminated or truncated)
        return str(observation)

    def answer(self, answer: str) -> str:
        """Submit an answer, a guess or a move to the task.

        Args:
            answer: The answer, exactly as it should be graded (a number, a word, a move).

        Returns:
            The task's reply: feedback, or the result when the episode ends.
        """
        return self._step(f"<answer>{answer}</answer>")


class ToolUseTRLEnvironment(TRLEnvironment):
    """``tinker/ToolUse-v0`` with its four tools as methods; each call is one env step.

    Example:
        >>> env = trl_environment_factory("tinker/ToolUse-v0", difficulty="easy")()
        >>> "Question:" in env.reset(seed=0)
        True
        >>> env.calculator("6 * 7")
        '<tool_response name="calculator">\\n42\\n</tool_response>'
    """

    env_id: ClassVar[str] = "tinker/ToolUse-v0"

    def _call(self, name: str, **arguments: str) -> str:
        call = json.dumps({"name": name, "arguments": arguments})
        return self._step(f"<tool_call>{call}</tool_call>")

    def lookup(self, entity: str, attribute: str) -> str:
        """Look up one fact: an attribute of a named entity in the task's fictional world.

        Args:
            entity: Exact name, e.g. 'Zorvak lamp'.
            attribute: The attribute, e.g. 'price' or 'distance to Doravel'.

        Returns:
            The fact, or an error naming what exists.
        """
        return self._call("lookup", entity=entity, attribute=attribute)

    def search(self, query: str) -> str:
        """Search the fictional world's documents by keywords.

        Args:
            query: Keywords, e.g. 'Zorvak lamp' or 'companies'.

        Returns:
            The matching entries.
        """
        return self._call("search", query=query)

    def calculator(self, expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: The expression, e.g. '2 + 3 * 4'.

        Returns:
            The value.
        """
        return self._call("calculator", expression=expression)

    def python(self, code: str) -> str:
        """Run Python code in a sandbox and return what it prints.

        Args:
            code: The Python source to run.

        Returns:
            The printed output, or the error.
        """
        return self._call("python", code=code)


_CLASSES: dict[str, type[TRLEnvironment]] = {"tinker/ToolUse-v0": ToolUseTRLEnvironment}


def trl_environment_factory(env_id: str, **env_kwargs: Any) -> Callable[[], TRLEnvironment]:
    """A class TRL accepts as ``environment_factory``: each instance runs ``gym.make(env_id, **env_kwargs)``.

    ``tinker/ToolUse-v0`` gets its tools as methods; every other env gets the ``answer`` tool only.

    Raises:
        gymnasium.error.Error: ``env_id`` is not registered (raised when the first instance is made).

    Example:
        >>> Env = trl_environment_factory("tinker/Math-v0", difficulty="easy")
        >>> Env.__name__, Env.env_kwargs
        ('TRLEnvironment_Math_v0', {'difficulty': 'easy'})
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"Expected a registered env id such as 'tinker/Math-v0', got {env_id!r}")
    base = _CLASSES.get(env_id, TRLEnvironment)
    name = base.__name__ + "_" + env_id.rsplit("/", 1)[-1].replace("-", "_")
    return type(name, (base,), {"env_id": env_id, "env_kwargs": dict(env_kwargs), "__module__": __name__})


def tool_calling_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` with a chat template TRL can parse tool calls from (its Qwen3 template when TRL knows none).

    TRL's tool loop needs a response parser for the model's chat template
    (``trl.chat_template_utils.add_response_schema``), which exists only for templates TRL
    ships. A tokenizer whose template TRL does not recognise (our ChatML-with-tools template,
    SmolLM2's template without tools) gets TRL's Qwen3 template, a ChatML dialect with tool
    calls in ``<tool_call>`` tags. The tokenizer is changed in place and returned.

    Example:
        >>> from executors.models.tiny import tiny_tokenizer
        >>> tok = tool_calling_tokenizer(tiny_tokenizer())
        >>> "<tool_call>" in tok.chat_template
        True
    """
    from trl.chat_template_utils import add_response_schema, qwen3_chat_template

    try:
        return add_response_schema(tokenizer)
    except ValueError:  # "Unrecognized chat template"
        tokenizer.chat_template = qwen3_chat_template
        return add_response_schema(tokenizer)
