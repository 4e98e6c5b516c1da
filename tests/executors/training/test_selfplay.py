"""Self-play GRPO on tic-tac-toe: the rollout_func contract, the opponent mixture, evaluation and Elo, resume."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.executors.training.helpers import PreemptAtStep2

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from executors.context import JobContext  # noqa: E402
from executors.errors import JobPreempted, SpecError  # noqa: E402
from executors.spec import JobSpec  # noqa: E402
from executors.training.common import load_policy, seed_everything  # noqa: E402
from executors.training.grpo_rollout import seed_prompt  # noqa: E402
from executors.training.selfplay import (  # noqa: E402
    SelfPlayParams,
    SelfPlayRollout,
    pick_opponent,
    selfplay_body,
)
from gym_tinker.rollout import flatten  # noqa: E402

GAME = "tinker/tictactoe_v0"
LORA = {"r": 4, "dropout": 0.0}


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _params(**overrides: Any) -> SelfPlayParams:
    base: dict[str, Any] = {
        "steps": 1,
        "prompts_per_step": 2,
        "group_size": 2,
        "max_tokens": 6,
        "learning_rate": 1e-2,
        "report_to": "none",
        "eval_games": 2,
        "eval_bots": ["random"],
        "opponent_bots": ["random"],
    }
    return SelfPlayParams(**{**base, **overrides})


def _policy() -> Any:
    seed_everything(0)
    return load_policy(JobSpec(kind="grpo", model="tiny-random", adapter=LORA), _params())


def _trainer(policy: Any, step: int, group_size: int) -> Any:
    return SimpleNamespace(
        model=policy.model, state=SimpleNamespace(global_step=step), num_generations=group_size
    )


def test_rollout_func_one_completion_per_prompt_with_opponent_and_board_tokens_masked() -> None:
    policy = _policy()
    params = _params(opponents={"latest": 1.0, "bots": 1.0}, max_tokens=8)
    rollout = SelfPlayRollout(GAME, policy.tokenizer, params)
    prompts = [seed_prompt(s) for s in (3, 5, 7, 9, 11, 13) for _ in range(4)]  # 6 groups of 4
    out = rollout(prompts, _trainer(policy, 0, 4))
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward")
    assert {len(out[k]) for k in keys} == {len(prompts)}
    assert policy.model.training  # back in train mode after sampling
    categories = {c for c, _ in rollout.last_opponents}
    assert categories == {"latest", "bots"}, rollout.last_opponents  # both kinds present in this draw
    tokenizer = policy.tokenizer
    opponent_moves_seen = 0
    for trajectory in rollout.last_trajectories:
        flat = flatten(trajectory)
        expected: list[int] = []
        for turn in trajectory.turns:
            sampled = len(turn.completion_ids) - turn.env_mask.count(0)
            assert turn.env_mask == (1,) * sampled + (0,) * (len(turn.env_mask) - sampled)
            expected += list(turn.env_mask)
        assert list(flat.env_mask) == expected
        env_ids = [t for t, m in zip(flat.completion_ids, flat.env_mask, strict=True) if m == 0]
        if len(trajectory.turns) > 1:  # the board (and any opponent move) comes back as env tokens
            assert "Tic-tac-toe. You are" in tokenizer.decode(env_ids)
        mine = trajectory.agent
        other = "player_1" if mine == "player_0" else "player_0"
        if f"({other}) played" in tokenizer.decode(env_ids):
            opponent_moves_seen += 1
        sampled_text = tokenizer.decode(
            [t for t, m in zip(flat.completion_ids, flat.env_mask, strict=True) if m == 1]
        )
        assert "Tic-tac-toe" not in sampled_text
    assert opponent_moves_seen > 0, "some learner made a legal move and saw the reply as env tokens"
    # Rewards: the learner's outcome; a forfeit is a loss.
    for trajectory in rollout.last_trajectories:
        result = trajectory.metadata["result"]
        if f"{trajectory.agent} forfeits" in result:
            assert trajectory.metadata["score"] == 0.0
        assert trajectory.metadata["score"] in (0.0, 0.5, 1.0)
    assert set(out["env_reward"]) <= {0.0, 0.5, 1.0, None}
    # A bot group alternates the learner's seat; a self-play group trains both seats of each game.
    by_seed: dict[int, list[Any]] = {}
    for trajectory in rollout.last_trajectories:
        by_seed.setdefault(int(trajectory.seed), []).append(trajectory.agent)
    for (category, _), seed in zip(rollout.last_opponents, (3, 5, 7, 9, 11, 13), strict=True):
        agents = by_seed.get(seed, [])
        if category == "bots" and len(agents) == 4:
            assert agents == ["player_0", "player_1"] * 2
        if category == "latest":
            assert Counter(agents) <= Counter({"player_0": 2, "player_1": 2})
    assert rollout.last_metrics["win_rate"] + rollout.last_metrics["draw_rate"] + rollout.last_metrics[
        "loss_rate"
    ] == pytest.approx(1.0)


def test_self_play_group_of_odd_size_plays_both_seats_of_each_game() -> None:
    policy = _policy()
    rollout = SelfPlayRollout(GAME, policy.tokenizer, _params(opponents={"latest": 1.0}, max_tokens=8))
    out = rollout([seed_prompt(4)] * 3, _trainer(policy, 0, 3))  # ceil(3 / 2) = 2 games, one seat unused
    assert len(out["completion_ids"]) == 3
    assert rollout.last_opponents == [("latest", "learner")]
    assert [t.agent for t in rollout.last_trajectories] == ["player_0", "player_1", "player_0"]
    assert out["env_reward"][0] + out["env_reward"][1] == 1.0  # the two seats of one game: W+L or D+D


def test_opponents_are_drawn_from_the_mixture_deterministically() -> None:
    weights = {"latest": 1.0, "snapshots": 1.0, "bots": 2.0}
    draws = [
        pick_opponent(weights, ["step-000000"], ["random", "minimax"], seed=0, step=s, group=g)
        for s in range(20)
        for g in range(20)
    ]
    again = [
        pick_opponent(weights, ["step-000000"], ["random", "minimax"], seed=0, step=s, group=g)
        for s in range(20)
        for g in range(20)
    ]
    assert draws == again
    shares = Counter(c for c, _ in draws)
    assert 0.4 < shares["bots"] / len(draws) < 0.6
    assert 0.15 < shares["latest"] / len(draws) < 0.35
    assert {n for c, n in draws if c == "bots"} == {"random", "minimax"}
    other_seed = [
        pick_opponent(weights, ["step-000000"], ["random", "minimax"], seed=1, step=s, group=0)
        for s in range(20)
    ]
    assert other_seed != draws[::20]  # the job seed matters
    # An empty category is skipped and the others renormalised.
    assert {pick_opponent(weights, [], [], seed=0, step=s, group=0) for s in range(10)} == {
        ("latest", "learner")
    }
    with pytest.raises(ValueError, match="No opponent"):
        pick_opponent({"snapshots": 1.0}, [], ["random"], seed=0, step=0, group=0)


def test_snapshot_opponents_load_saved_adapters(tmp_path: Path) -> None:
    policy = _policy()
    params = _params(opponents={"snapshots": 1.0}, snapshot_every=2)
    rollout = SelfPlayRollout(GAME, policy.tokenizer, params, run_root=tmp_path, base_model="tiny-random")
    prompts = [seed_prompt(s) for s in (1, 2) for _ in range(2)]
    first = rollout(prompts, _trainer(policy, 0, 2))
    assert (tmp_path / "snapshots" / "step-000000" / "adapter_config.json").exists()
    assert rollout.last_opponents == [("snapshots", "step-000000")] * 2
    assert len(first["completion_ids"]) == 4
    rollout(prompts, _trainer(policy, 1, 2))  # step 1: no new snapshot (every 2)
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == ["step-000000"]
    assert rollout._opponent_sampler.adapters() == ["step-000000"]
    assert rollout.snapshots(4) == ["step-000000"]  # step-2 and step-4 were never saved


def test_body_logs_win_draw_loss_and_elo(tmp_path: Path) -> None:
    params = _params(steps=2, eval_every=1, checkpoint_every=5, snapshot_every=1, eval_snapshot_games=2)
    params_dict = {**params.model_dump(), "opponents": {"latest": 1.0, "snapshots": 1.0, "bots": 1.0}}
    spec = JobSpec(kind="selfplay", model="tiny-random", adapter=LORA, env=GAME, params=params_dict)
    ctx = JobContext(spec, 1, 1, tmp_path / "ckpt")
    result = selfplay_body(ctx)
    assert result["steps"] == 2
    assert Path(result["saved"]["adapter"], "adapter_config.json").exists()
    assert json.loads((tmp_path / "run.json").read_text())["kind"] == "selfplay"
    reported = [e for e in ctx.events if e["type"] == "metric" and "elo" in e["metrics"]]
    assert [e["step"] for e in reported] == [0, 1, 2]
    assert "vs_random/win_rate" in reported[-1]["metrics"]
    rows = [r for r in map(json.loads, (tmp_path / "metrics.jsonl").read_text().splitlines()) if "elo" in r]
    assert [r["step"] for r in rows] == [0, 1, 2]
    for row in rows:
        rates = [row[f"vs_random/{k}_rate"] for k in ("win", "draw", "loss")]
        assert sum(rates) == pytest.approx(1.0)
        assert row["elo_low"] < row["elo"] < row["elo_high"]
    league = [json.loads(line) for line in (tmp_path / "league.jsonl").read_text().splitlines()]
    games = [r for r in league if "score" in r]
    assert len([g for g in games if g["b"] == "random"]) == 3 * 2  # eval_games at steps 0, 1, 2
    assert {r["snapshot"] for r in league if "snapshot" in r} == {"step-000000", "step-000001"}
    assert any(g["b"] == "step-000000" for g in games)  # the learner is rated against its snapshots
    assert result["elo"] == pytest.approx(rows[-1]["elo"])
    assert (tmp_path / "reward_curve.png").exists()


def test_bad_params_name_the_field(tmp_path: Path) -> None:
    spec = JobSpec(kind="selfplay", model="tiny-random", env=GAME, params={"opponents": {"others": 1}})
    with pytest.raises(SpecError, match="unknown opponent categories"):
        selfplay_body(JobContext(spec, 1, 1, tmp_path / "ckpt"))
    spec = JobSpec(
        kind="selfplay", model="tiny-random", adapter="full", env=GAME, params={"opponents": {"snapshots": 1}}
    )
    with pytest.raises(SpecError, match="snapshot opponents need a LoRA run"):
        selfplay_body(JobContext(spec, 1, 1, tmp_path / "ckpt"))
    spec = JobSpec(kind="selfplay", model="tiny-random", env="tinker/Math-v0", params={})
    with pytest.raises(SpecError, match="Unknown game"):
        selfplay_body(JobContext(spec, 1, 1, tmp_path / "ckpt"))


def test_preempted_job_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    params = _params(
        steps=3,
        checkpoint_every=2,
        snapshot_every=1,
        eval_every=0,
        prompts_per_step=1,
        group_size=4,
        max_tokens=8,
    )
    params_dict = {**params.model_dump(), "opponents": {"latest": 1.0, "snapshots": 1.0, "bots": 1.0}}
    spec = JobSpec(kind="selfplay", model="tiny-random", adapter=LORA, env=GAME, params=params_dict)
    straight = selfplay_body(JobContext(spec, 1, 1, tmp_path / "straight" / "ckpt"))

    with pytest.raises(JobPreempted):
        selfplay_body(PreemptAtStep2(spec, 2, 1, tmp_path / "resumed" / "ckpt"))
    resumed = selfplay_body(JobContext(spec, 2, 2, tmp_path / "resumed" / "ckpt"))
    assert resumed["resumed_from"] is not None and resumed["resumed_from"].endswith("checkpoint-2")

    from safetensors.torch import load_file

    a = load_file(Path(straight["saved"]["adapter"]) / "adapter_model.safetensors")
    b = load_file(Path(resumed["saved"]["adapter"]) / "adapter_model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-6, rtol=0)
    assert any(not torch.equal(t, torch.zeros_like(t)) for n, t in a.items() if "lora_B" in n)  # it trained
    for folder in ("straight", "resumed"):
        assert (tmp_path / folder / "league.jsonl").exists()
    league = [(tmp_path / f / "league.jsonl").read_text() for f in ("straight", "resumed")]
    assert league[0] == league[1]
    steps = [
        [json.loads(line)["step"] for line in (tmp_path / f / "metrics.jsonl").read_text().splitlines()]
        for f in ("straight", "resumed")
    ]
    assert steps[0] == steps[1]
    assert straight["final_metrics"]["rollout/reward_mean"] == resumed["final_metrics"]["rollout/reward_mean"]
