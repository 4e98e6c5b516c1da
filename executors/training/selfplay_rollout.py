"""Self-play rollouts: TRL's ``rollout_func`` playing each GRPO group against an opponent of the league."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.training.config import OPPONENT_CATEGORIES, SelfPlayParams
from executors.training.grpo_rollout import rollout_seed, seed_of_prompt
from executors.training.selfplay_league import (
    LEARNER,
    AdapterSeat,
    BotSeat,
    InfoTap,
    forfeited,
    game_name,
    outcome_score,
    pick_opponent,
    snapshot_pool,
)

if TYPE_CHECKING:
    from gym_tinker.trajectory import Trajectory

__all__ = ["LEARNER", "SelfPlayRollout", "game_name", "outcome_score", "pick_opponent", "snapshot_pool"]

logger = logging.getLogger(__name__)

# --- the rollout function --------------------------------------------------------------------


class SelfPlayRollout:
    """TRL's ``rollout_func`` for self-play: each group plays games against an opponent from the league.

    Call it as TRL does, ``rollout(prompts, trainer)``; returns one completion per prompt
    (``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask``, ``env_reward``). After each
    call :attr:`last_metrics` holds the step's numbers (``reward_mean``, ``win_rate``,
    ``draw_rate``, ``loss_rate``, ``forfeit_rate``, ``zero_variance_fraction``,
    ``opponent_<category>`` shares, ``idle_seats``, ``dropped``, ...), :attr:`last_opponents`
    the ``(category, name)`` of each group and :attr:`last_trajectories` the learner's episodes.

    Args:
        game: Game id (``tictactoe_v0`` or ``tinker/tictactoe_v0``).
        tokenizer: The policy's tokenizer.
        params: The job's params.
        run_root: The run folder; snapshots are saved under ``snapshots/`` there (LoRA runs).
        base_model: Model reference of the frozen base that snapshot adapters load onto.
        retries: Restarts of a failed game from its seed before it is dropped.
    """

    def __init__(
        self,
        game: str,
        tokenizer: Any,
        params: SelfPlayParams,
        *,
        run_root: str | Path | None = None,
        base_model: str | None = None,
        retries: int = 1,
    ) -> None:
        from multiagent import GAMES
        from multiagent.bots import BOTS

        self.game = game_name(game)
        self.module = importlib.import_module(GAMES[self.game][0])
        self.tokenizer, self.params, self.retries = tokenizer, params, retries
        self.run_root = None if run_root is None else Path(run_root)
        self.base_model = base_model
        probe = self.module.env(**params.env_kwargs)
        self.agents: list[str] = list(probe.possible_agents)
        probe.close()
        if len(self.agents) != 2:
            raise ValueError(f"Self-play needs a two-player game; {self.game} has agents {self.agents}")
        known = list(BOTS.get(self.game, {}))
        self.bots = self._check_bots(params.opponent_bots, known, "opponent_bots")
        self.eval_bots = self._check_bots(params.eval_bots, known, "eval_bots")
        available = {"latest": True, "snapshots": self.lora, "bots": bool(self.bots)}
        if not any(available[c] and params.opponents.get(c, 0.0) > 0 for c in OPPONENT_CATEGORIES):
            raise ValueError(
                f"opponents {params.opponents} give no weight to an available category {available} "
                "(snapshot opponents need a LoRA run)"
            )
        self.last_metrics: dict[str, float] = {}
        self.last_trajectories: list[Trajectory] = []
        self.last_opponents: list[tuple[str, str]] = []
        self.history: list[dict[str, float]] = []
        self._sampler: Any = None
        self._opponent_sampler: Any = None

    def _check_bots(self, names: list[str] | None, known: list[str], field: str) -> list[str]:
        if names is None:
            return known
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"{field}: no bot {unknown} for {self.game}; its bots are {known}")
        return list(names)

    # -- policies ---------------------------------------------------------------------------

    def sampler(self, model: Any) -> Any:
        """The :class:`HFSampler` over the live model (made once; its prefix cache emptied per call)."""
        from executors.training.common import make_sampler

        target = model.get_base_model() if hasattr(model, "get_base_model") else model
        if self._sampler is None or self._sampler.model is not target:
            self._sampler = make_sampler(target, self.tokenizer)
        else:
            self._sampler.invalidate_cache()  # fused AdamW changes weights without a version bump
        return self._sampler

    @property
    def lora(self) -> bool:
        return self.run_root is not None and self.base_model is not None

    def snapshots(self, step: int, *, before: bool = False) -> list[str]:
        """Names (``step-NNNNNN``) of the snapshots in the opponent pool at ``step`` (``before``: older only)."""
        if not self.lora:
            return []
        assert self.run_root is not None
        folder = self.run_root / "snapshots"
        existing = (
            [int(p.name[5:]) for p in folder.glob("step-*") if p.name[5:].isdigit()]
            if folder.is_dir()
            else []
        )
        limit = step - 1 if before else step
        if limit < 0:
            return []
        pool = snapshot_pool(limit, self.params.snapshot_every, self.params.max_snapshots, existing)
        return [f"step-{s:06d}" for s in pool]

    def _snapshot_seat(self, name: str) -> AdapterSeat:
        if self._opponent_sampler is None:
            from executors.models import load_model
            from executors.sampling import HFSampler

            model, tokenizer = load_model(str(self.base_model), device=self.params.device, cache=False)
            self._opponent_sampler = HFSampler((model, tokenizer))
        if name not in self._opponent_sampler.adapters():
            assert self.run_root is not None
            self._opponent_sampler.load_adapter(name, self.run_root / "snapshots" / name)
        return AdapterSeat(self._opponent_sampler, name)

    def _save_snapshot(self, step: int, model: Any) -> None:
        from executors.training.common import RunFolder

        if not self.lora or step % self.params.snapshot_every:
            return
        assert self.run_root is not None
        if not (self.run_root / "snapshots" / f"step-{step:06d}" / "adapter_config.json").exists():
            RunFolder(self.run_root).save_snapshot(step, model, self.tokenizer)

    def _opponent(self, category: str, name: str, tap: InfoTap, seed: int) -> Any:
        from multiagent.bots import get_bot

        if category == "bots":
            return BotSeat(get_bot(self.game, name, seed=seed), tap)
        return self._snapshot_seat(name)

    # -- playing ----------------------------------------------------------------------------

    def play(
        self,
        learner: Any,
        opponent: Any,
        learner_seat: str | None,
        seeds: Sequence[int],
        tap: InfoTap,
        sampling: Any,
    ) -> list[list[tuple[Trajectory | None, float]] | None]:
        """Play one game per seed; ``learner_seat`` None means the learner plays every seat.

        Returns, per game, ``(trajectory, score)`` for each learner seat in seat order (both
        seats in self-play); the trajectory carries ``metadata["score"]`` and is ``None`` for a
        seat that never moved (its opponent forfeited first: a win). ``None`` for a game
        dropped after its retries.
        """
        from gym_tinker.rollout import rollout_games

        policies: Any = (
            learner
            if learner_seat is None
            else {agent: learner if agent == learner_seat else opponent for agent in self.agents}
        )
        result = rollout_games(
            tap,
            policies,
            seeds=list(seeds),
            params=sampling,
            max_turns=self.params.max_turns,
            token_budget=self.params.token_budget,
            retries=self.retries,
        )
        for failure in result.stats.failures:
            logger.warning("self-play %s: %s", self.game, failure)
        by_game: dict[int, dict[str, Trajectory]] = {}
        for trajectory in result:
            by_game.setdefault(int(trajectory.metadata["episode"]), {})[str(trajectory.agent)] = trajectory
        out: list[list[tuple[Trajectory | None, float]] | None] = []
        for index in range(len(seeds)):
            seats = by_game.get(index)
            if not seats:
                out.append(None)
                continue
            played: list[tuple[Trajectory | None, float]] = []
            for agent in self.agents if learner_seat is None else [learner_seat]:
                others = [t for a, t in seats.items() if a != agent]
                if agent in seats:
                    score = outcome_score(seats[agent], others)
                    played.append((_tag(seats[agent], score), score))
                else:  # two players: the seat's score is the complement of the one that moved
                    played.append((None, 1.0 - outcome_score(others[0], [])))
            out.append(played)
        return out

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, list[Any]]:
        import time

        from executors.training.common import sampling_mode
        from gym_tinker.policy import SamplingParams
        from gym_tinker.rollout import flatten

        seeds = [seed_of_prompt(p) for p in prompts]
        step = int(trainer.state.global_step)
        model = trainer.model
        accelerator = getattr(trainer, "accelerator", None)
        if accelerator is not None:
            model = accelerator.unwrap_model(model)
        self._save_snapshot(step, model)
        p = self.params
        groups = _group_indices(seeds, getattr(trainer, "num_generations", None))
        snapshots = self.snapshots(step)
        self.last_opponents = [
            pick_opponent(p.opponents, snapshots, self.bots, seed=p.seed, step=step, group=seeds[g[0]])
            for g in groups
        ]
        # Batch games by (opponent, learner seat): one rollout_games call each.
        calls: dict[tuple[str, str, str | None], list[tuple[int, list[int]]]] = {}
        for members, (category, name) in zip(groups, self.last_opponents, strict=True):
            seed = seeds[members[0]]
            if category == "latest":
                for j in range(0, len(members), 2):
                    calls.setdefault((category, name, None), []).append((seed, members[j : j + 2]))
            else:
                for j, member in enumerate(members):
                    calls.setdefault((category, name, self.agents[j % 2]), []).append((seed, [member]))
        began = time.perf_counter()
        samples: dict[int, Trajectory] = {}
        dropped = idle = 0
        with sampling_mode(model):
            learner = self.sampler(model)
            for k, ((category, name, seat), games) in enumerate(
                sorted(calls.items(), key=lambda kv: str(kv[0]))
            ):
                call_seed = (rollout_seed(p.seed, step) + 104_729 * k) % (1 << 62)
                sampling = SamplingParams(
                    max_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p, seed=call_seed
                )
                tap = InfoTap(self.module, p.env_kwargs, self.game)
                opponent = None if seat is None else self._opponent(category, name, tap, call_seed)
                played = self.play(learner, opponent, seat, [s for s, _ in games], tap, sampling)
                for (_, members), trajectories in zip(games, played, strict=True):
                    for position, member in enumerate(members):
                        trajectory = None if trajectories is None else trajectories[position][0]
                        if trajectory is not None:
                            samples[member] = trajectory
                        elif trajectories is None:
                            dropped += 1
                        else:  # a seat that never moved (the opponent forfeited first): nothing to train
                            idle += 1
        seconds = time.perf_counter() - began
        if not samples and seeds:
            raise RuntimeError(f"self-play step {step}: all {len(seeds)} games of {self.game} failed")
        eos = int(self.tokenizer.eos_token_id)
        out: dict[str, list[Any]] = {
            k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward")
        }
        for index in range(len(seeds)):
            trajectory = samples.get(index)
            if trajectory is None:  # dropped: trains nothing and stays out of its group's baseline
                group = next(g for g in groups if index in g)
                same = next((samples[i] for i in group if i in samples), None)
                out["prompt_ids"].append(list(flatten(same).prompt_ids) if same else [eos])
                out["completion_ids"].append([eos])
                out["logprobs"].append([0.0])
                out["env_mask"].append([0])
                out["env_reward"].append(None)
                continue
            flat = flatten(trajectory)
            out["prompt_ids"].append(list(flat.prompt_ids))
            out["completion_ids"].append(list(flat.completion_ids))
            out["logprobs"].append(
                list(flat.logprobs) if flat.logprobs is not None else [0.0] * len(flat.env_mask)
            )
            out["env_mask"].append(list(flat.env_mask))
            out["env_reward"].append(float(trajectory.metadata["score"]))
        metrics = self._metrics(groups, samples, dropped, seconds)
        metrics["idle_seats"] = float(idle)
        self.last_metrics = metrics
        self.last_trajectories = [samples[i] for i in sorted(samples)]
        self.history.append({"step": float(step + 1), **metrics})
        out["rollout_metrics"] = [dict(metrics) for _ in seeds]
        return out

    def _metrics(
        self, groups: list[list[int]], samples: Mapping[int, Trajectory], dropped: int, seconds: float
    ) -> dict[str, float]:
        scores = [float(t.metadata["score"]) for t in samples.values()]
        n = len(scores) or 1
        flat = [len({samples[i].metadata["score"] for i in g if i in samples}) <= 1 for g in groups]
        mean = sum(scores) / n
        metrics = {
            "reward_mean": mean,
            "reward_std": math.sqrt(sum((s - mean) ** 2 for s in scores) / n),
            "win_rate": scores.count(1.0) / n,
            "draw_rate": scores.count(0.5) / n,
            "loss_rate": scores.count(0.0) / n,
            "forfeit_rate": sum(forfeited(t) for t in samples.values()) / n,
            "zero_variance_fraction": sum(flat) / len(flat) if flat else 0.0,
            "rollout_seconds": seconds,
            "dropped": float(dropped),
            "episodes": float(len(samples)),
        }
        for category in OPPONENT_CATEGORIES:
            share = sum(c == category for c, _ in self.last_opponents) / max(1, len(self.last_opponents))
            metrics[f"opponent_{category}"] = share
        return metrics

    def trajectories(self) -> list[Trajectory]:
        """The last step's learner trajectories, for ``JobCallback(transcripts=...)``."""
        return list(self.last_trajectories)

    # -- evaluation -------------------------------------------------------------------------

    def evaluate(self, model: Any, step: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """Greedy games against the eval bots and the pool's snapshots: metrics and the games for Elo.

        Returns ``(metrics, games)``: ``vs_<bot>/{win,draw,loss,forfeit}_rate`` and
        ``heldout_accuracy`` (mean score against the bots), and one ``{"a", "b", "score"}`` per game.
        """
        from executors.training.common import sampling_mode
        from gym_tinker.policy import SamplingParams

        p = self.params
        greedy = SamplingParams(max_tokens=p.max_tokens, temperature=0.0, seed=0)
        metrics: dict[str, float] = {}
        games: list[dict[str, Any]] = []
        bot_scores: list[float] = []
        opponents = [("bots", b, p.eval_games) for b in self.eval_bots]
        opponents += [("snapshots", s, p.eval_snapshot_games) for s in self.snapshots(step, before=True)]
        with sampling_mode(model):
            learner = self.sampler(model)
            for category, name, count in opponents:
                if count == 0:
                    continue
                seeds = [p.eval_seed + i for i in range(math.ceil(count / 2))]
                scores: list[float] = []
                forfeits = 0
                for seat in self.agents:
                    tap = InfoTap(self.module, p.env_kwargs, self.game)
                    opponent = self._opponent(category, name, tap, p.eval_seed)
                    for played in self.play(learner, opponent, seat, seeds, tap, greedy):
                        if played is None:
                            continue  # a game that failed after its retries counts for nobody
                        ((t, score),) = played
                        scores.append(score)
                        forfeits += t is not None and forfeited(t)
                games += [{"a": LEARNER, "b": name, "score": s} for s in scores]
                if category == "bots" and scores:
                    n = len(scores)
                    metrics[f"vs_{name}/win_rate"] = scores.count(1.0) / n
                    metrics[f"vs_{name}/draw_rate"] = scores.count(0.5) / n
                    metrics[f"vs_{name}/loss_rate"] = scores.count(0.0) / n
                    metrics[f"vs_{name}/forfeit_rate"] = forfeits / n
                    bot_scores += scores
        if bot_scores:
            metrics["heldout_accuracy"] = sum(bot_scores) / len(bot_scores)
        return metrics, games


def _tag(trajectory: Trajectory, score: float) -> Trajectory:
    return dataclasses.replace(trajectory, metadata={**trajectory.metadata, "score": score})


def _group_indices(seeds: Sequence[int], size: int | None) -> list[list[int]]:
    """Prompt indices per GRPO group: ``size`` consecutive prompts (TRL's repeats), else runs of one seed."""
    if isinstance(size, int) and size >= 1 and len(seeds) % size == 0:
        return [list(range(i, i + size)) for i in range(0, len(seeds), size)]
    groups: list[list[int]] = []
    for index, seed in enumerate(seeds):
        if not groups or seeds[groups[-1][0]] != seed:
            groups.append([])
        groups[-1].append(index)
    return groups
