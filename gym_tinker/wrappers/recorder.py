"""`EpisodeRecorder`: append each finished episode to a JSONL file, one transcript per line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from gym_tinker.limits import action_as_read

__all__ = ["EpisodeRecorder"]


def _jsonable(value: Any) -> Any:
    """Fallback for ``json.dumps``: numpy scalars and arrays as Python values, anything else as text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


class EpisodeRecorder(gym.Wrapper[Any, Any, Any, Any]):
    """Write every finished episode as one JSON line to ``path``.

    A line holds ``env_id``, ``seed`` (as passed to ``reset``; ``None`` when not given),
    ``task_id`` and ``difficulty`` (from the reset info), ``initial_observation``, ``turns`` (a
    list of ``{"action", "observation", "reward", "terminated", "truncated"}``, plus ``"info"``
    when ``include_info``; each action as the env read it, cut to its ``max_action_chars``), ``num_turns``, ``total_reward``, ``terminated`` and ``truncated``.
    The file is opened, appended to and closed once per episode, so each finished episode is on
    disk when ``step`` returns and the wrapper holds no open file (it pickles). An episode cut
    short by a new ``reset`` is not written.

    .. warning::
        Several processes may append to one file (lines are written with one ``write`` in append
        mode), but on network file systems give each process its own path.

    Args:
        env: Any env whose observations and actions are JSON-serialisable (strings, message lists).
        path: The JSONL file; parent folders are created, the file too if missing.
        include_info: Also record each step's ``info`` dict.

    Raises:
        ValueError: If ``path`` cannot be written (a folder, no permission, ...).

    Example:
        >>> import json, tempfile, os
        >>> from pathlib import Path
        >>> from gym_tinker.envs.math import MathEnv
        >>> path = os.path.join(tempfile.mkdtemp(), "runs", "episodes.jsonl")
        >>> env = EpisodeRecorder(MathEnv(), path)
        >>> _ = env.reset(seed=0)
        >>> _ = env.step("<answer>63</answer>")
        >>> record = json.loads(Path(path).read_text().splitlines()[0])
        >>> record["seed"], record["total_reward"], record["turns"][0]["action"]
        (0, 1.0, '<answer>63</answer>')
    """

    def __init__(self, env: gym.Env[Any, Any], path: str | os.PathLike[str], *, include_info: bool = False):
        super().__init__(env)
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ValueError(f"Expected `path` to be a file path (str or os.PathLike), got {path!r}")
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8"):
                pass
        except OSError as err:
            raise ValueError(
                f"EpisodeRecorder cannot write to {str(path)!r} ({err.strerror or err}); "
                "expected a writable file path"
            ) from err
        self.include_info = bool(include_info)
        self.episodes_written = 0
        self._episode: dict[str, Any] | None = None

    def _env_id(self) -> str:
        spec = self.env.spec
        return spec.id if spec is not None else type(self.env.unwrapped).__name__

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env and start recording a new episode."""
        observation, info = self.env.reset(seed=seed, options=options)
        self._episode = {
            "env_id": self._env_id(),
            "seed": seed,
            "task_id": info.get("task_id"),
            "difficulty": info.get("difficulty"),
            "initial_observation": observation,
            "turns": [],
        }
        return observation, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env, record the turn, and write the episode out when it ends."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self._episode is not None:
            turn: dict[str, Any] = {
                "action": action_as_read(self.env, action),
                "observation": observation,
                "reward": float(reward),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            }
            if self.include_info:
                turn["info"] = dict(info)
            self._episode["turns"].append(turn)
            if terminated or truncated:
                self._write(bool(terminated), bool(truncated))
        return observation, reward, terminated, truncated, info

    def _write(self, terminated: bool, truncated: bool) -> None:
        assert self._episode is not None
        record = self._episode
        self._episode = None
        record["num_turns"] = len(record["turns"])
        record["total_reward"] = sum(turn["reward"] for turn in record["turns"])
        record["terminated"], record["truncated"] = terminated, truncated
        line = json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
        self.episodes_written += 1
