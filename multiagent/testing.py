"""`check_game`: every conformance check a text game must pass, for our games and for yours.

Runs PettingZoo's own tests (``api_test``, ``seed_test``, ``render_test``,
``parallel_api_test``, ``max_cycles_test``) and the checks they leave out: determinism over
whole games in the parallel API (PettingZoo's ``parallel_seed_test`` stops after one step) and
across resets of one env, exact truncation at ``max_cycles``, and fuzzing with arbitrary
unicode answers (no exception may escape for any string).
:func:`check_game_linear_step` checks that a game's step takes time linear in the action's
length on adversarial answers of growing size (floods of tags, brackets, digits...).

PettingZoo's tests emit advisory warnings that do not apply to text games (observations are not
numpy arrays, spaces are not ``Box``/``Discrete``); those are collected in the report. Any other
warning is a failure unless ``strict=False``.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test
from pettingzoo.utils.conversions import aec_to_parallel

from gym_tinker.adversarial import check_linear_time

__all__ = ["ADVISORY_WARNINGS", "GameCheckReport", "check_game", "check_game_linear_step"]

#: Warnings from PettingZoo's tests that are expected for text games (matched by prefix).
ADVISORY_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
    "Action space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
)


@dataclass
class GameCheckReport:
    """What :func:`check_game` ran."""

    passed: list[str] = field(default_factory=list)
    """Names of the checks that ran and passed, in order."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Check name -> why it did not apply."""
    advisories: list[str] = field(default_factory=list)
    """Distinct advisory warnings PettingZoo's tests emitted (see :data:`ADVISORY_WARNINGS`)."""


def check_game(
    env_fn: Callable[..., AECEnv],
    parallel_env_fn: Callable[..., ParallelEnv] | None = None,
    *,
    module: ModuleType | Any | None = None,
    num_cycles: int = 200,
    seed: int = 42,
    stall_action: str = "",
    stall_kwargs: Mapping[str, Any] | None = None,
    fuzz_examples: int = 50,
    strict: bool = True,
) -> GameCheckReport:
    """Run every conformance check on a game; raise ``AssertionError`` naming the first failure.

    Args:
        env_fn: Builds the AEC env; must accept ``render_mode=`` and ``max_cycles=``.
        parallel_env_fn: Builds the parallel env (same keywords), if the game has one.
        module: The game's module (``env``, ``parallel_env``, ``max_cycles``) for PettingZoo's
            ``max_cycles_test``. That test asserts every agent is stepped exactly
            ``max_cycles + 1`` times, which a turn-based game cannot promise (a retry gives one
            agent an extra step; tic-tac-toe or a poker hand may end sooner), so it runs only
            for games whose metadata says ``is_parallelizable`` (all agents act every cycle).
            Every game gets the exact ``truncation`` check.
        num_cycles: Cycles for PettingZoo's play tests.
        seed: Seed for the determinism checks.
        stall_action: An answer that is never a legal move, for the truncation check.
        stall_kwargs: Keywords that make the game accept ``stall_action`` forever (no forfeit);
            the default ``{"max_retries": None}`` fits games built on
            :class:`~multiagent.core.TurnBasedTextGame`.
        fuzz_examples: Hypothesis examples of arbitrary-unicode games (0 to skip).
        strict: Fail on warnings other than :data:`ADVISORY_WARNINGS`.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> report = check_game(tictactoe_v0.env, tictactoe_v0.parallel_env, module=tictactoe_v0, fuzz_examples=5)
        >>> report.passed[:3]
        ['api_test', 'seed_test', 'render_test']
    """
    if not isinstance(num_cycles, int) or num_cycles < 1:
        raise ValueError(f"Expected `num_cycles` to be an int >= 1, got {num_cycles!r}")
    if not isinstance(fuzz_examples, int) or fuzz_examples < 0:
        raise ValueError(f"Expected `fuzz_examples` to be an int >= 0, got {fuzz_examples!r}")
    if not isinstance(stall_action, str):
        raise TypeError(f"Expected `stall_action` to be a str, got {type(stall_action).__name__}")
    stall = dict({"max_retries": None} if stall_kwargs is None else stall_kwargs)
    report = GameCheckReport()
    probe = env_fn()
    parallelizable = bool(probe.metadata.get("is_parallelizable", False))
    probe.close()

    checks: list[tuple[str, Callable[[], None] | str]] = [
        ("api_test", lambda: api_test(env_fn(), num_cycles=num_cycles)),
        ("seed_test", lambda: seed_test(env_fn, num_cycles=num_cycles)),
        ("render_test", lambda: render_test(env_fn)),
        ("reset_determinism", lambda: _check_reset_determinism(env_fn, seed, num_cycles)),
        ("truncation", lambda: _check_truncation(env_fn, parallel_env_fn, stall_action, stall, seed)),
    ]
    if parallel_env_fn is None:
        checks.append(("parallel_api_test", "no parallel_env_fn given"))
        checks.append(("parallel_determinism", "no parallel_env_fn given"))
    else:
        checks.append(
            ("parallel_api_test", lambda: parallel_api_test(parallel_env_fn(), num_cycles=num_cycles))
        )
        checks.append(
            ("parallel_determinism", lambda: _check_parallel_determinism(parallel_env_fn, seed, num_cycles))
        )
    if parallelizable:
        checks.append(
            ("aec_to_parallel_api_test", lambda: parallel_api_test(aec_to_parallel(env_fn()), num_cycles))
        )
    else:
        checks.append(("aec_to_parallel_api_test", "turn-based game: agents do not all act every cycle"))
    if module is None:
        checks.append(("max_cycles_test", "no module given"))
    elif not parallelizable:
        checks.append(
            ("max_cycles_test", "turn-based game: agents do not all act every cycle (see 'truncation')")
        )
    else:
        proxy = SimpleNamespace(
            env=lambda **kw: module.env(**stall, **kw),
            parallel_env=lambda **kw: module.parallel_env(**stall, **kw),
            max_cycles=module.max_cycles,
        )
        checks.append(("max_cycles_test", lambda: max_cycles_test(proxy)))
    if fuzz_examples > 0:
        checks.append(("fuzz", lambda: _fuzz(env_fn, fuzz_examples)))
    else:
        checks.append(("fuzz", "fuzz_examples=0"))

    for name, check in checks:
        if isinstance(check, str):
            report.skipped[name] = check
            continue
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("always")
            try:
                check()
            except Exception as error:
                raise AssertionError(f"check_game: {name} failed: {type(error).__name__}: {error}") from error
        for w in caught:
            message = str(w.message)
            if message.startswith(ADVISORY_WARNINGS):
                if message not in report.advisories:
                    report.advisories.append(message)
            elif strict:
                raise AssertionError(f"check_game: {name} warned: {w.category.__name__}: {message}")
        report.passed.append(name)
    return report


def _seed_spaces(env: Any, seed: int) -> None:
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)


def _pick(env: Any, agent: str, info: Mapping[str, Any], rng: np.random.Generator) -> str:
    """A legal move half the time (so games get deep), else random text from the action space."""
    legal = info.get("legal_moves") or []
    if legal and rng.random() < 0.5:
        return str(legal[int(rng.integers(len(legal)))])
    return env.action_space(agent).sample()  # type: ignore[no-any-return]


def _play_aec(env: AECEnv, seed: int, num_cycles: int) -> list[tuple[Any, ...]]:
    """One game with seeded actions (see :func:`_pick`); every step's data."""
    env.reset(seed=seed)
    _seed_spaces(env, seed)
    rng = np.random.default_rng(seed)
    record: list[tuple[Any, ...]] = []
    for agent in env.agent_iter(num_cycles * len(env.possible_agents)):
        obs, reward, terminated, truncated, info = env.last()
        record.append((agent, str(obs), reward, terminated, truncated, info))
        env.step(None if terminated or truncated else _pick(env, agent, info, rng))
    return record


def _check_reset_determinism(env_fn: Callable[..., AECEnv], seed: int, num_cycles: int) -> None:
    # One env reused across games must not carry anything over (a history that grows, a stale rng).
    env = env_fn()
    first = _play_aec(env, seed, num_cycles)
    _play_aec(env, seed + 1, num_cycles)
    again = _play_aec(env, seed, num_cycles)
    fresh = _play_aec(env_fn(), seed, num_cycles)
    for name, other in (("after another game", again), ("in a new env", fresh)):
        assert len(first) == len(other), f"the game with seed {seed} took a different length {name}"
        for step, (a, b) in enumerate(zip(first, other, strict=True)):
            assert data_equivalence(a, b), (
                f"the game with seed {seed} differs at step {step} {name}: {a} != {b}"
            )


def _check_parallel_determinism(
    parallel_env_fn: Callable[..., ParallelEnv], seed: int, num_cycles: int
) -> None:
    envs = (parallel_env_fn(), parallel_env_fn())
    results = [env.reset(seed=seed) for env in envs]
    assert data_equivalence(results[0], results[1]), "reset(seed) gave different observations or infos"
    infos = [results[0][1], results[1][1]]
    rngs = [np.random.default_rng(seed), np.random.default_rng(seed)]
    for env in envs:
        _seed_spaces(env, seed)
    for step in range(num_cycles):
        if not envs[0].agents:
            break
        out = []
        for i, env in enumerate(envs):
            actions = {agent: _pick(env, agent, infos[i].get(agent, {}), rngs[i]) for agent in env.agents}
            result = env.step(actions)
            infos[i] = result[4]
            out.append((actions, *result))
        assert data_equivalence(out[0], out[1]), f"parallel games with seed {seed} differ at step {step}"
        assert envs[0].agents == envs[1].agents, f"live agents differ at step {step}"


def _check_truncation(
    env_fn: Callable[..., AECEnv],
    parallel_env_fn: Callable[..., ParallelEnv] | None,
    stall_action: str,
    stall: dict[str, Any],
    seed: int,
    max_cycles: int = 4,
) -> None:
    env = env_fn(max_cycles=max_cycles, **stall)
    env.reset(seed=seed)
    expected = max_cycles * len(env.possible_agents)
    live_steps = 0
    for agent in env.agent_iter(10 * expected):
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            assert truncated and not terminated, f"{agent} terminated while every answer was {stall_action!r}"
            env.step(None)
            continue
        env.step(stall_action)
        live_steps += 1
    assert not env.agents, (
        f"agents {env.agents} still live after {live_steps} steps with max_cycles={max_cycles}"
    )
    assert live_steps == expected, (
        f"AEC game truncated after {live_steps} live steps; max_cycles={max_cycles} with "
        f"{len(env.possible_agents)} agents means {expected}"
    )
    if parallel_env_fn is None:
        return
    par = parallel_env_fn(max_cycles=max_cycles, **stall)
    par.reset(seed=seed)
    steps = 0
    truncations: dict[str, bool] = {}
    terminations: dict[str, bool] = {}
    while par.agents and steps < 10 * max_cycles:
        _, _, terminations, truncations, _ = par.step(dict.fromkeys(par.agents, stall_action))
        steps += 1
    assert steps == max_cycles, f"parallel game ended after {steps} steps, expected max_cycles={max_cycles}"
    assert all(truncations.values()) and not any(terminations.values()), (
        f"parallel game did not end by truncation: terminations {terminations}, truncations {truncations}"
    )


def _fuzz(env_fn: Callable[..., AECEnv], examples: int) -> None:
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError as error:  # hypothesis is a test extra, not a dependency
        raise AssertionError("fuzzing needs hypothesis: pip install hypothesis") from error

    answers = st.lists(st.tuples(st.text(max_size=80), st.booleans()), max_size=30)

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(answers=answers, seed=st.integers(0, 2**16))
    def play(answers: list[tuple[str, bool]], seed: int) -> None:
        env = env_fn()
        env.reset(seed=seed)
        moves = iter(answers)
        for agent in env.agent_iter(200):
            obs, reward, terminated, truncated, info = env.last()
            assert isinstance(obs, str), f"observation of {agent} is {type(obs).__name__}, not str"
            assert math.isfinite(float(reward)), f"reward of {agent} is {reward}"
            if terminated or truncated:
                env.step(None)
                continue
            text, legal = next(moves, ("", True))
            legal_moves = info.get("legal_moves") or []
            # Half the answers wrap a legal move in the noise, so games get past the first turn.
            env.step(f"{text} {legal_moves[len(text) % len(legal_moves)]}" if legal and legal_moves else text)
            assert set(env.agents) <= set(env.possible_agents)

    play()


def check_game_linear_step(
    env_fn: Callable[..., AECEnv | ParallelEnv], *, seed: int = 0, **kwargs: Any
) -> dict[str, tuple[float, float]]:
    """Check that a game's step takes time linear in the length of the answers it is given.

    :func:`gym_tinker.adversarial.check_linear_time` on a fresh game each time, made with
    ``env_fn(max_action_chars=None)`` (so the parsers see the whole answer) and reset with
    ``seed``. ``env_fn`` may build either form of a game:

    * an AEC env: one cycle is timed, each live agent answering in turn with the same text
      (so the AEC form of a parallel game, which reads the answers once all are in, is timed
      too);
    * a parallel env: one ``step`` in which every live agent sends the text.

    ``kwargs`` go to :func:`~gym_tinker.adversarial.check_linear_time` (``patterns``, ``size``,
    ``factor``, ``label``...).

    Returns:
        ``{pattern name: (seconds at size, seconds at size * factor)}``.

    Raises:
        AssertionError: naming every pattern on which the step grew faster than linearly.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> times = check_game_linear_step(tictactoe_v0.env, size=256, factor=4)
        >>> "move tags" in times
        True
        >>> _ = check_game_linear_step(tictactoe_v0.parallel_env, size=256, factor=4)
    """

    def prepare() -> Callable[[str], Any]:
        env = env_fn(max_action_chars=None)
        env.reset(seed=seed)
        if isinstance(env, AECEnv):
            aec = env
            turns = len(aec.possible_agents)

            def cycle(action: str) -> None:
                for _ in range(turns):
                    agent = aec.agent_selection if aec.agents else None
                    if agent is None or aec.terminations[agent] or aec.truncations[agent]:
                        return
                    aec.step(action)

            return cycle
        return lambda action: env.step({agent: action for agent in env.agents})

    probe = env_fn(max_action_chars=None)
    name = probe.metadata.get("name", type(probe).__name__)
    form = "AEC" if isinstance(probe, AECEnv) else "parallel"
    probe.close()
    kwargs.setdefault("label", f"{name} ({form}) step")
    return check_linear_time(prepare, **kwargs)
