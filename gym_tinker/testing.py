"""Conformance checks for text envs: run them on your own env to know it behaves like ours.

Each check takes an env id (``"tinker/Wordle-v0"``, made with ``gym.make``) or a factory (a
zero-argument callable returning a fresh env) and raises ``AssertionError`` naming the check and
what went wrong. :func:`check_text_env` runs them all; :data:`CHECKS` maps each check's name to
its function so a test suite can parametrize over them::

    @pytest.mark.parametrize("check", gym_tinker.testing.CHECKS.values())
    def test_my_env(check):
        check(MyEnv)
"""

from __future__ import annotations

import contextlib
import io
import math
import pickle
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers.vector import DictInfoToList

from gym_tinker.spaces import TextSpace

__all__ = [
    "ADVERSARIAL_ACTIONS",
    "CHECKS",
    "EnvSource",
    "check_action_type",
    "check_env_checker",
    "check_pickle",
    "check_reset_needed",
    "check_robust_actions",
    "check_same_seed_same_episode",
    "check_seeds_differ",
    "check_text_env",
    "check_vector_async",
    "check_vector_entry_point",
    "check_vector_sync",
]

EnvSource = str | Callable[[], gym.Env]
"""A registered env id, or a zero-argument callable returning a fresh env."""

ADVERSARIAL_ACTIONS: tuple[str, ...] = (
    "",
    " \n\t ",
    "\x00\x01\x7f",
    "\ud800 lone surrogate \udfff",
    "\u202eright-to-left override \u200b\u00a0",
    "éßøЖ中文日本語한국어 ٣٤ ²³ ½ € → ∑ 🙂" * 3,
    "a" * 1_000_000,
    "9" * 1_000_000,
    "<answer>" + "9" * 5000 + "</answer>",
    "<answer>1e999999</answer>",
    "<answer>nan</answer> <answer>inf</answer> <answer>-0</answer>",
    "<answer>1/0</answer>",
    "\\boxed{\\frac{1}{0}}",
    "<answer>",
    "<answer><answer></answer>",
    "\\boxed{" * 1000,
    "\\boxed{\\boxed{\\boxed{42}}}",
    "<tool_call>" * 10_000,
    '<tool_call>{"name": "calculator", "arguments": {"expression": "1+"}}</tool_call>',
    '<tool_call>{"name": "calculator", "arguments": {"expression": "1+"}}',
    '<tool_call>{"name": "calculator", "arguments": {"expression": "9**9**9**9"}}</tool_call>',
    '<tool_call>{"name": "calculator", "arguments": {"expression": "(" * 100}}</tool_call>',
    '<tool_call>{"name": "python", "arguments": {"code": "print(1/0)"}}</tool_call>',
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": "not an object"}</tool_call>',
    '<tool_call>{"name": null, "arguments": null}</tool_call>',
    "<tool_call>[1, 2, 3]</tool_call><tool_call>null</tool_call>",
    '```json\n{"name": "calculator", "arguments": {"expression": "2*3"}\n```',
    '{"tool_calls": [{"type": "function", "function": {"name": "calculator", "arguments": "{\\"expression\\": 1"}}]}',
    '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "[" * 100_000 + "]" * 100_000,
    "```python\ndef f(:\n```",
    "```python\n" + "x = 1\n" * 10_000 + "```",
)
"""Actions that break naive parsers: unicode, control and lone-surrogate characters, 1 MB
strings, huge numbers, unclosed tags, near-miss tool calls, deeply nested JSON."""


def _factory(env: EnvSource) -> Callable[[], gym.Env]:
    if isinstance(env, str):
        env_id = env
        return lambda: gym.make(env_id)
    if callable(env):
        return env
    raise TypeError(
        f"Expected an env id (str) or a zero-argument env factory, got {type(env).__name__}: {env!r:.80}"
    )


def _label(env: EnvSource) -> str:
    return env if isinstance(env, str) else getattr(env, "__name__", repr(env))


def _fail(check: str, env: EnvSource, why: str) -> AssertionError:
    return AssertionError(f"{check} failed for {_label(env)}: {why}")


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (ValueError, TypeError):  # numpy arrays inside info dicts
        return repr(a) == repr(b)


def _actions(seed: int, n: int) -> list[str]:
    space = TextSpace(seed=seed)
    return [space.sample() for _ in range(n)]


def _rollout(
    env: gym.Env, actions: Sequence[str], first: tuple[str, dict[str, Any]] | None = None
) -> list[tuple[Any, ...]]:
    """Steps through ``actions``, resetting (without a seed) whenever an episode ends."""
    record: list[tuple[Any, ...]] = [] if first is None else [("reset", *first)]
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        record.append((observation, float(reward), bool(terminated), bool(truncated), info))
        if terminated or truncated:
            record.append(("reset", *env.reset()))
    return record


def _compare(check: str, env: EnvSource, a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> None:
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not _equal(x, y):
            raise _fail(check, env, f"the runs diverge at record {i}: {x!r:.300} != {y!r:.300}")


def check_env_checker(env: EnvSource, *, seed: int = 0) -> None:
    """Gymnasium's ``check_env`` on the unwrapped env passes, with every warning an error.

    Its render check (each render mode through ``gym.make``) needs the env's spec, so it runs
    for env ids and is skipped for factories; what ``"human"`` rendering prints is discarded.

    Example:
        >>> check_env_checker("tinker/GuessNumber-v0")
    """
    instance = _factory(env)()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("error")
            check_env(instance.unwrapped, skip_render_check=instance.unwrapped.spec is None)
    except Exception as e:
        raise _fail("check_env_checker", env, f"gymnasium's check_env raised {type(e).__name__}: {e}") from e
    finally:
        instance.close()


def check_same_seed_same_episode(env: EnvSource, *, seed: int = 0, steps: int = 50) -> None:
    """Two instances reset with the same seed give identical runs under the same random actions.

    Actions come from a seeded :class:`~gym_tinker.spaces.TextSpace`; episodes that end are reset
    without a seed, so the env's own random stream must be deterministic too. Every observation
    must be in the observation space.

    Example:
        >>> check_same_seed_same_episode("tinker/GuessNumber-v0", steps=20)
    """
    check = "check_same_seed_same_episode"
    actions = _actions(seed, steps)
    runs = []
    for _ in range(2):
        instance = _factory(env)()
        try:
            runs.append(_rollout(instance, actions, instance.reset(seed=seed)))
            space = instance.observation_space
        finally:
            instance.close()
        for record in runs[-1]:
            observation = record[1] if record[0] == "reset" else record[0]
            if not space.contains(observation):
                raise _fail(check, env, f"observation {observation!r:.100} is not in {space}")
    _compare(check, env, *runs)


def check_seeds_differ(env: EnvSource, *, seed: int = 0, num_seeds: int = 5) -> None:
    """Different seeds give different tasks: over ``num_seeds`` consecutive seeds, more than half of
    the (first observation, ``info["task_id"]``) pairs are distinct.

    Example:
        >>> check_seeds_differ("tinker/Wordle-v0")
    """
    instance = _factory(env)()
    try:
        tasks = set()
        for s in range(seed, seed + num_seeds):
            observation, info = instance.reset(seed=s)
            tasks.add((observation, repr(info.get("task_id"))))
    finally:
        instance.close()
    if len(tasks) <= num_seeds // 2:
        raise _fail(
            "check_seeds_differ",
            env,
            f"seeds {seed}..{seed + num_seeds - 1} gave only {len(tasks)} distinct tasks",
        )


def check_pickle(env: EnvSource, *, seed: int = 0, steps: int = 50) -> None:
    """An env pickled mid-episode and restored continues exactly like the original.

    Example:
        >>> check_pickle("tinker/GuessNumber-v0", steps=20)
    """
    check = "check_pickle"
    original = _factory(env)()
    actions = _actions(seed + 1, steps + 2)
    try:
        original.reset(seed=seed)
        done = False
        for action in actions[:2]:  # into the episode, without ending it if we can help it
            if done:
                break
            _, _, terminated, truncated, _ = original.step(action)
            done = terminated or truncated
        if done:
            original.reset()
        try:
            restored = pickle.loads(pickle.dumps(original))
        except Exception as e:
            raise _fail(check, env, f"pickling mid-episode raised {type(e).__name__}: {e}") from e
        try:
            runs = [_rollout(instance, actions[2:]) for instance in (original, restored)]
        finally:
            restored.close()
    finally:
        original.close()
    _compare(check, env, *runs)


def _check_vector(env: EnvSource, mode: str, seed: int, num_envs: int, steps: int) -> None:
    check = f"check_vector_{mode}"
    if isinstance(env, str):
        vector = gym.make_vec(env, num_envs=num_envs, vectorization_mode=mode)
    else:
        vector_cls = gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv
        vector = vector_cls([env] * num_envs)
    space = TextSpace(seed=seed)
    try:
        observations, _ = vector.reset(seed=seed)
        for step in range(steps + 1):
            if len(observations) != num_envs or not all(isinstance(o, str) for o in observations):
                raise _fail(check, env, f"expected {num_envs} str observations, got {observations!r:.200}")
            if step == steps:
                break
            actions = tuple(space.sample() for _ in range(num_envs))
            observations, rewards, terminated, truncated, _ = vector.step(actions)
            for name, array in (("rewards", rewards), ("terminated", terminated), ("truncated", truncated)):
                if np.shape(array) != (num_envs,):
                    raise _fail(check, env, f"expected {name} of shape ({num_envs},), got {np.shape(array)}")
    except AssertionError:
        raise
    except Exception as e:
        raise _fail(check, env, f"{type(e).__name__}: {e}") from e
    finally:
        vector.close()


def check_vector_sync(env: EnvSource, *, seed: int = 0, num_envs: int = 4, steps: int = 5) -> None:
    """``gym.make_vec(id, num_envs=4, vectorization_mode="sync")`` (or a ``SyncVectorEnv`` over
    the factory) resets and steps.

    Example:
        >>> check_vector_sync("tinker/GuessNumber-v0")
    """
    _check_vector(env, "sync", seed, num_envs, steps)


def check_vector_async(env: EnvSource, *, seed: int = 0, num_envs: int = 4, steps: int = 5) -> None:
    """``gym.make_vec(id, num_envs=4, vectorization_mode="async")`` with default arguments (shared
    memory on), or an ``AsyncVectorEnv`` over the factory, resets and steps.

    Example:
        >>> check_vector_async("tinker/GuessNumber-v0", num_envs=2, steps=2)
    """
    _check_vector(env, "async", seed, num_envs, steps)


def _same_batch(a: Any, b: Any) -> bool:
    """Equal vector results: same keys, and arrays of the same dtype, shape and items."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
            and all(_same_batch(a[key], b[key]) for key in a)
        )  # fmt: skip
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        return all(_same_batch(x, y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_batch(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and _equal(a, b)


def check_vector_entry_point(env: EnvSource, *, seed: int = 0, num_envs: int = 3, steps: int = 16) -> None:
    """``gym.make_vec(id, num_envs=3)`` (the env's registered ``vector_entry_point``), in process and
    with ``workers=2``, gives exactly what Gymnasium's ``SyncVectorEnv`` gives: observations,
    rewards, flags and info dicts, step for step over random actions, in the next-step and
    same-step autoreset modes; and with ``info_format="list"``, the infos that Gymnasium's
    ``DictInfoToList`` wrapper gives (values as the env reported them where it has numpy scalars).

    It applies to env ids registered with a ``vector_entry_point`` (every gym_tinker env); for
    factories and other ids there is no second vector env to compare, and it returns.

    Example:
        >>> check_vector_entry_point("tinker/GuessNumber-v0")
    """
    check = "check_vector_entry_point"
    if not isinstance(env, str) or gym.spec(env).vector_entry_point is None:
        return
    actions = [tuple(TextSpace(seed=seed + 1 + k).sample() for _ in range(num_envs)) for k in range(steps)]
    for autoreset_mode in (gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP):
        references = {
            info_format: gym.make_vec(
                env,
                num_envs=num_envs,
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": autoreset_mode},
            )
            for info_format in ("dict", "list")
        }
        references["list"] = DictInfoToList(references["list"])
        vectors = {
            (f"{where}, info_format={info_format!r}", info_format): gym.make_vec(
                env, num_envs=num_envs, autoreset_mode=autoreset_mode, info_format=info_format, **workers
            )
            for where, workers in (("in process", _NO_KWARGS), ("workers=2", {"workers": 2}))
            for info_format in ("dict", "list")
        }
        try:
            expected: dict[str, tuple[Any, ...]] = {
                info_format: reference.reset(seed=seed) for info_format, reference in references.items()
            }
            results: dict[tuple[str, str], tuple[Any, ...]] = {
                name: vector.reset(seed=seed) for name, vector in vectors.items()
            }
            for step in range(steps + 1):
                for (name, info_format), result in results.items():
                    if not _same_vector_result(result, expected[info_format]):
                        raise _fail(
                            check,
                            env,
                            f"{name}, {autoreset_mode.value}, step {step}: "
                            f"{result!r:.300} != {expected[info_format]!r:.300}",
                        )
                if step < steps:
                    expected = {name: reference.step(actions[step]) for name, reference in references.items()}
                    results = {name: vector.step(actions[step]) for name, vector in vectors.items()}
        finally:
            for vector in (*references.values(), *vectors.values()):
                vector.close()


_NO_KWARGS: dict[str, Any] = {}


def _same_vector_result(result: tuple[Any, ...], expected: tuple[Any, ...]) -> bool:
    """A vector reset's or step's results equal, the infos as a dict of arrays or as a list of dicts."""
    *arrays, infos = result
    *expected_arrays, expected_infos = expected
    if isinstance(expected_infos, list):
        return _same_batch(arrays, expected_arrays) and _same_listed(infos, expected_infos)
    return _same_batch(result, expected)


def _same_listed(value: Any, expected: Any) -> bool:
    """Equal list-format infos: ``DictInfoToList`` gives numpy scalars where the env reported
    Python numbers; those compare by value and Python type."""
    if isinstance(expected, dict):
        return (
            isinstance(value, dict) and value.keys() == expected.keys()
            and all(_same_listed(value[key], expected[key]) for key in value)
        )  # fmt: skip
    if isinstance(expected, list):
        return (
            isinstance(value, list) and len(value) == len(expected)
            and all(_same_listed(v, e) for v, e in zip(value, expected, strict=True))
        )  # fmt: skip
    if isinstance(expected, np.generic) and not isinstance(value, np.generic):
        expected = expected.item()
    return _same_batch(value, expected)


def check_action_type(env: EnvSource, *, seed: int = 0) -> None:
    """Non-string actions raise a ``TypeError`` whose message says a ``str`` was expected.

    Example:
        >>> check_action_type("tinker/GuessNumber-v0")
    """
    instance = _factory(env)()
    try:
        for action in (42, None, b"bytes", ["a list"], np.array(["text"])):
            instance.reset(seed=seed)
            try:
                instance.step(action)
            except TypeError as e:
                if "str" in str(e):
                    continue
                why = f"the TypeError for {action!r} does not say a str was expected: {e}"
            except Exception as e:
                why = f"action {action!r} raised {type(e).__name__}, not TypeError: {e}"
            else:
                why = f"action {action!r} of type {type(action).__name__} was accepted"
            raise _fail("check_action_type", env, why)
    finally:
        instance.close()


def check_reset_needed(env: EnvSource, *, seed: int = 0, max_steps: int = 1000) -> None:
    """Stepping after the episode ended raises :class:`gymnasium.error.ResetNeeded`.

    Random actions are taken until the episode ends, which must happen within ``max_steps``.

    Example:
        >>> check_reset_needed("tinker/Wordle-v0")
    """
    check = "check_reset_needed"
    instance = _factory(env)()
    try:
        instance.reset(seed=seed)
        for action in _actions(seed, max_steps):
            _, _, terminated, truncated, _ = instance.step(action)
            if terminated or truncated:
                break
        else:
            raise _fail(check, env, f"the episode did not end within {max_steps} random actions")
        try:
            instance.step("one more")
        except ResetNeeded:
            return
        except Exception as e:
            raise _fail(
                check, env, f"stepping after the end raised {type(e).__name__}, not ResetNeeded: {e}"
            ) from e
        raise _fail(check, env, "stepping after the episode ended did not raise ResetNeeded")
    finally:
        instance.close()


def check_robust_actions(
    env: EnvSource, *, seed: int = 0, actions: Sequence[str] = ADVERSARIAL_ACTIONS
) -> None:
    """Every action in ``actions`` (default :data:`ADVERSARIAL_ACTIONS`) is answered, never raised.

    Each is sent as the first action of an episode and, where the episode goes on, again as the
    second; the step must return a ``str`` observation in the space, a finite float reward,
    ``bool`` flags and an info ``dict``.

    Example:
        >>> check_robust_actions("tinker/GuessNumber-v0", actions=["", "<answer>", "9" * 10_000])
    """
    check = "check_robust_actions"
    instance = _factory(env)()
    try:
        for action in actions:
            instance.reset(seed=seed)
            for _ in range(2):
                try:
                    observation, reward, terminated, truncated, info = instance.step(action)
                except Exception as e:
                    raise _fail(check, env, f"action {action!r:.80} raised {type(e).__name__}: {e}") from e
                if not (isinstance(observation, str) and instance.observation_space.contains(observation)):
                    raise _fail(check, env, f"action {action!r:.80} gave observation {observation!r:.80}")
                flags_ok = isinstance(terminated, bool) and isinstance(truncated, bool)
                if not (flags_ok and isinstance(info, dict) and math.isfinite(float(reward))):
                    raise _fail(
                        check,
                        env,
                        f"action {action!r:.80} gave reward {reward!r}, flags {terminated!r}, {truncated!r} "
                        f"and info of type {type(info).__name__}",
                    )
                if terminated or truncated:
                    break
    finally:
        instance.close()


CHECKS: dict[str, Callable[..., None]] = {
    "env_checker": check_env_checker,
    "same_seed_same_episode": check_same_seed_same_episode,
    "seeds_differ": check_seeds_differ,
    "pickle": check_pickle,
    "vector_sync": check_vector_sync,
    "vector_async": check_vector_async,
    "vector_entry_point": check_vector_entry_point,
    "action_type": check_action_type,
    "reset_needed": check_reset_needed,
    "robust_actions": check_robust_actions,
}
"""Every check by name; each takes the env (id or factory) and ``seed=``."""


def check_text_env(env: EnvSource, *, seed: int = 0, steps: int = 50) -> None:
    """Run every conformance check on a text env; raise ``AssertionError`` on the first failure.

    Args:
        env: A registered env id, or a zero-argument callable returning a fresh env.
        seed: Seed for the env and for the random actions.
        steps: Steps in the determinism and pickle runs.

    Example:
        >>> from gym_tinker.envs.wordle import WordleEnv
        >>> check_text_env("tinker/GuessNumber-v0")
        >>> check_text_env(lambda: WordleEnv(difficulty="hard"), steps=20)

        A (deliberately broken) env whose task ignores the seed:

        >>> from gym_tinker import TextEnv
        >>> class AlwaysHi(TextEnv):
        ...     def _reset(self, options):
        ...         return "Say hi.", {}
        ...     def _step(self, action):
        ...         return "Bye.", float(action == "hi"), True, False, {}
        >>> check_seeds_differ(AlwaysHi)
        Traceback (most recent call last):
        ...
        AssertionError: check_seeds_differ failed for AlwaysHi: seeds 0..4 gave only 1 distinct tasks
    """
    for name, check in CHECKS.items():
        if name in ("same_seed_same_episode", "pickle"):
            check(env, seed=seed, steps=steps)
        else:
            check(env, seed=seed)
