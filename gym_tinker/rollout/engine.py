"""The batched rollout loop for single-agent text envs: many episodes, one policy call per turn, failures retried.

See :func:`rollout` and :func:`rollout_groups`. Nothing here imports torch: the policy may be a
torch sampler from ``executors.sampling``, but the engine only calls it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from gym_tinker.policy import SamplingParams
from gym_tinker.rollout.backends import EnvBackend, make_backend
from gym_tinker.rollout.dialogue import Dialogue, jsonable, messages_for_reply
from gym_tinker.rollout.results import RolloutGroups, RolloutResult, RolloutStats, check_limits, check_seeds
from gym_tinker.rollout.sampling import PolicyCallError, PolicyRunner
from gym_tinker.trajectory import StopReason, Trajectory

__all__ = ["rollout", "rollout_groups"]

logger = logging.getLogger(__name__)

# Reset-info keys stored apart in trajectory metadata; the rest goes into metadata["reset_info"].
_CONVERSATION_KEYS = frozenset({"system_prompt", "tools", "turn"})


@dataclass
class _Episode:
    index: int
    seed: int
    attempt: int
    slot: int
    dialogue: Dialogue
    reset_info: dict[str, Any]
    turns_taken: int = 0
    final_observation: str = ""


class _SingleAgentRollout:
    def __init__(
        self,
        backend: EnvBackend,
        runner: PolicyRunner,
        seeds: list[int],
        *,
        max_turns: int | None,
        token_budget: int | None,
        retries: int,
        keep_failed: bool,
        metadata: Mapping[str, Any],
    ):
        self.backend, self.runner, self.seeds = backend, runner, seeds
        self.max_turns, self.token_budget, self.retries = max_turns, token_budget, retries
        self.keep_failed, self.metadata = keep_failed, dict(metadata)
        self.stats = RolloutStats(episodes=len(seeds))
        self.queue: deque[int] = deque(range(len(seeds)))
        self.attempts = [0] * len(seeds)
        self.slots: list[_Episode | None] = [None] * backend.num_envs
        self.results: dict[int, Trajectory] = {}

    def run(self) -> RolloutResult:
        start = time.perf_counter()
        while self.queue or any(self.slots):
            self._fill_slots()
            acting = self._sample()
            self._step(acting)
        self.stats.wall_seconds = time.perf_counter() - start
        self.stats.policy_calls = self.runner.calls
        return RolloutResult([self.results[i] for i in sorted(self.results)], self.stats)

    def _fill_slots(self) -> None:
        free = [slot for slot, episode in enumerate(self.slots) if episode is None]
        starts = [(slot, self.queue.popleft()) for slot in free[: len(self.queue)]]
        if not starts:
            return
        began = time.perf_counter()
        outcomes = self.backend.reset([slot for slot, _ in starts], [self.seeds[i] for _, i in starts])
        self.stats.env_seconds += time.perf_counter() - began
        for (slot, index), outcome in zip(starts, outcomes, strict=True):
            if isinstance(outcome, Exception):
                self._fail(index, f"env reset raised {type(outcome).__name__}: {outcome}")
                continue
            observation, info = outcome
            try:
                dialogue = Dialogue(
                    str(observation),
                    system_prompt=str(info.get("system_prompt") or ""),
                    tools=info.get("tools") or None,
                    renderer=self.runner.renderer,
                )
            except Exception as error:  # a template that cannot render this env's messages
                self._fail(index, f"rendering the first prompt raised {type(error).__name__}: {error}")
                continue
            self.slots[slot] = _Episode(index, self.seeds[index], self.attempts[index], slot, dialogue, info)

    def _sample(self) -> list[tuple[_Episode, str]]:
        by_cap: dict[int, list[_Episode]] = {}
        for episode in self.slots:
            if episode is None:
                continue
            cap = self.runner.params.max_tokens
            if self.token_budget is not None:
                remaining = self.token_budget - episode.dialogue.sequence_length()
                if remaining < 1:
                    self._finish(episode, "token_budget")
                    continue
                cap = min(cap, remaining)
            by_cap.setdefault(cap, []).append(episode)
        acting: list[tuple[_Episode, str]] = []
        # Usually one batch; episodes near their token budget are sampled with fewer max_tokens.
        for cap, episodes in by_cap.items():
            began = time.perf_counter()
            completions = self.runner.sample([e.dialogue for e in episodes], cap)
            self.stats.policy_seconds += time.perf_counter() - began
            for episode, completion in zip(episodes, completions, strict=True):
                if isinstance(completion, PolicyCallError):
                    self._fail_episode(episode, str(completion))
                    continue
                try:
                    episode.dialogue.act(completion)
                except Exception as error:
                    self._fail_episode(episode, f"{type(error).__name__}: {error}")
                    continue
                self.stats.sampled_tokens += len(completion.token_ids)
                acting.append((episode, completion.text))
        return acting

    def _step(self, acting: list[tuple[_Episode, str]]) -> None:
        if not acting:
            return
        began = time.perf_counter()
        outcomes = self.backend.step([e.slot for e, _ in acting], [text for _, text in acting])
        self.stats.env_seconds += time.perf_counter() - began
        for (episode, _), outcome in zip(acting, outcomes, strict=True):
            if isinstance(outcome, Exception):
                self._fail_episode(episode, f"env step raised {type(outcome).__name__}: {outcome}")
                continue
            observation, reward, terminated, truncated, info = outcome
            episode.turns_taken += 1
            episode.final_observation = observation
            dialogue = episode.dialogue
            stop: StopReason | None = None
            if terminated:
                stop = "terminated"
            elif truncated or (self.max_turns is not None and episode.turns_taken >= self.max_turns):
                stop = "truncated"
            if stop is not None:
                dialogue.end_turn(reward, info)
                self._finish(episode, stop)
                continue
            if not dialogue.token_exact:
                dialogue.end_turn(reward, info, reply=observation)
                continue
            try:
                reply_ids = dialogue.reply_ids(messages_for_reply(observation, info))
            except Exception as error:
                self._fail_episode(
                    episode, f"rendering the env's reply raised {type(error).__name__}: {error}"
                )
                continue
            if (
                self.token_budget is not None
                and dialogue.sequence_length() + len(reply_ids) >= self.token_budget
            ):
                dialogue.end_turn(reward, info)  # no room left to sample after the reply
                self._finish(episode, "token_budget")
                continue
            dialogue.end_turn(reward, info, reply=observation, reply_ids=reply_ids)

    def _trajectory(self, episode: _Episode, stop: StopReason, **extra: Any) -> Trajectory:
        info = {k: v for k, v in episode.reset_info.items() if k not in _CONVERSATION_KEYS}
        metadata = {
            **self.metadata,
            "episode": episode.index,
            "attempt": episode.attempt,
            "task_id": info.pop("task_id", ""),
            "system_prompt": episode.dialogue.messages[0]["content"]
            if episode.dialogue.messages[0]["role"] == "system"
            else "",
            "tools": episode.dialogue.tools or [],
            "reset_info": info,
            "final_observation": episode.final_observation,
            "token_exact": episode.dialogue.token_exact,
            **extra,
        }
        return Trajectory(
            turns=tuple(episode.dialogue.turns),
            env_id=self.backend.env_id,
            seed=episode.seed,
            stop_reason=stop,
            metadata=jsonable(metadata),
        )

    def _finish(self, episode: _Episode, stop: StopReason) -> None:
        self.slots[episode.slot] = None
        self.backend.release(episode.slot)
        self.results[episode.index] = self._trajectory(episode, stop)
        self.stats.completed += 1

    def _fail_episode(self, episode: _Episode, reason: str) -> None:
        self.slots[episode.slot] = None
        self.backend.release(episode.slot)
        self._fail(episode.index, reason, episode)

    def _fail(self, index: int, reason: str, episode: _Episode | None = None) -> None:
        line = f"episode {index} (seed {self.seeds[index]}, attempt {self.attempts[index]}): {reason}"
        self.stats.failures.append(line)
        logger.warning("rollout failure: %s", line)
        self.attempts[index] += 1
        if self.attempts[index] <= self.retries:
            self.stats.retried += 1
            self.queue.appendleft(index)  # restart from its seed, before new episodes
            return
        self.stats.dropped += 1
        if self.keep_failed and episode is not None:
            self.results[index] = self._trajectory(episode, "error", error=reason)


def rollout(
    envs: Any,
    policy: Any,
    *,
    seeds: Sequence[int],
    max_turns: int | None = None,
    token_budget: int | None = None,
    params: SamplingParams | None = None,
    retries: int = 1,
    token_exact: bool | None = None,
    timeout: float | None = None,
    adapter: str | None = None,
    keep_failed: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> RolloutResult:
    """Run one episode per seed on ``envs`` with ``policy``, sampling all active conversations in one batch per turn.

    Each env slot runs one episode at a time; with more seeds than envs, a slot takes the next
    seed when its episode ends. Each turn, every active conversation goes to the policy in one
    batch call (episodes close to their token budget go in a second call with a smaller
    ``max_tokens``), then every env is stepped with its answer; finished episodes drop out.

    The conversation is the env's ``system_prompt`` (with its ``tools``) from the reset info,
    then the observations as user messages (``tool`` messages when
    ``info["observation_role"] == "tool"``) and the policy's answers as assistant messages.
    With a token sampler the rollout is token-exact: each turn's prompt is the previous
    sequence plus the sampled ids plus the env's reply rendered as a continuation, and each
    :class:`~gym_tinker.trajectory.Turn` holds ``prompt_ids``, ``completion_ids`` (sampled ids,
    then the env's ids), ``env_mask`` (1 sampled, 0 env) and ``completion_logprobs`` (0.0 for
    env ids). With a chat policy or a callable, turns hold text only.

    A failed attempt (the policy call raised, timed out or returned an error completion; the
    env's reset or step raised) restarts the episode from its seed, up to ``retries`` times;
    then the episode is dropped and counted in ``result.stats``.

    Args:
        envs: A list of Gymnasium text envs (e.g. from ``gym.make``), one env, or a Gymnasium
            vector env (``gym.make_vec``).
        policy: A :class:`~gym_tinker.policy.TokenSampler`, a :class:`~gym_tinker.policy.ChatPolicy`,
            or a callable ``f(conversations) -> list[str | Completion]``.
        seeds: One seed per episode; the same seed gives the same task.
        max_turns: Most agent turns per episode (then ``"truncated"``); ``None``: the env's limit.
        token_budget: Most tokens per episode (then ``"token_budget"``). Token-exact: the whole
            sequence (prompt, sampled and env tokens) never exceeds it. Text-only: sampled
            tokens, counted only when the policy reports them.
        params: Sampling parameters; a seed in them is varied per call, reproducibly.
        retries: Restarts allowed per episode after a failure.
        token_exact: ``False`` to sample a token sampler through text only.
        timeout: Seconds a batched policy call may take before its episodes fail.
        adapter: LoRA adapter name for a token sampler.
        keep_failed: Also return dropped episodes, with ``stop_reason="error"``.
        metadata: Added to every trajectory's metadata.

    Returns:
        The trajectories in seed order, with ``.stats`` (:class:`RolloutStats`).

    Example:
        >>> import gymnasium as gym, gym_tinker
        >>> envs = [gym.make("tinker/GuessNumber-v0") for _ in range(2)]
        >>> def halving(conversations):
        ...     return ["<answer>50</answer>" for _ in conversations]
        >>> result = rollout(envs, halving, seeds=[0, 1, 2], max_turns=2)
        >>> [t.stop_reason for t in result], [len(t) for t in result], result.stats.dropped
        (['truncated', 'truncated', 'truncated'], [2, 2, 2], 0)
    """
    seed_list = check_seeds(seeds)
    check_limits(max_turns, token_budget, retries)
    backend = make_backend(envs)
    runner = PolicyRunner(policy, params, token_exact=token_exact, timeout=timeout, adapter=adapter)
    engine = _SingleAgentRollout(
        backend,
        runner,
        seed_list,
        max_turns=max_turns,
        token_budget=token_budget,
        retries=retries,
        keep_failed=keep_failed,
        metadata=metadata or {},
    )
    return engine.run()


def rollout_groups(
    env: str | Callable[[], gym.Env[Any, Any]],
    policy: Any,
    seeds: Sequence[int],
    *,
    group_size: int,
    num_envs: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    **rollout_kwargs: Any,
) -> RolloutGroups:
    """GRPO groups: ``group_size`` rollouts of every seed, so every member of a group sees the same task.

    Args:
        env: A registered env id (made with ``gym.make(env, **env_kwargs)``) or a factory.
        policy: As for :func:`rollout`.
        seeds: One seed per group.
        group_size: Rollouts per seed (``G``).
        num_envs: Envs to run at once; default one per rollout (``len(seeds) * group_size``).
        env_kwargs: Keyword arguments for ``gym.make``.
        **rollout_kwargs: Passed to :func:`rollout` (``max_turns``, ``params``, ``retries``, ...).

    Returns:
        One list per seed (its members' trajectories, each with ``metadata["group"]`` and
        ``metadata["member"]``), with ``.stats``.

    Example:
        >>> import gym_tinker
        >>> groups = rollout_groups("tinker/Math-v0", lambda convs: ["<answer>0</answer>"] * len(convs),
        ...                         seeds=[3, 4], group_size=2)
        >>> [[t.metadata["task_id"] == g[0].metadata["task_id"] for t in g] for g in groups]
        [[True, True], [True, True]]
    """
    seed_list = check_seeds(seeds)
    if not isinstance(group_size, int) or isinstance(group_size, bool) or group_size < 1:
        raise ValueError(f"Expected `group_size` to be an int >= 1, got {group_size!r}")
    total = len(seed_list) * group_size
    count = total if num_envs is None else num_envs
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"Expected `num_envs` to be an int >= 1 or None, got {num_envs!r}")
    count = max(1, min(count, total))
    if isinstance(env, str):
        envs = [gym.make(env, **(env_kwargs or {})) for _ in range(count)]
    elif callable(env):
        envs = [env() for _ in range(count)]
    else:
        raise TypeError(f"Expected an env id or an env factory, got {type(env).__name__}")
    try:
        result = rollout(
            envs, policy, seeds=[s for s in seed_list for _ in range(group_size)], **rollout_kwargs
        )
    finally:
        for made in envs:
            made.close()
    groups: list[list[Trajectory]] = [[] for _ in seed_list]
    for trajectory in result:
        episode = int(trajectory.metadata["episode"])
        group, member = divmod(episode, group_size)
        extra = {"group": group, "member": member}
        groups[group].append(dataclasses.replace(trajectory, metadata={**trajectory.metadata, **extra}))
    return RolloutGroups(groups, result.stats)
