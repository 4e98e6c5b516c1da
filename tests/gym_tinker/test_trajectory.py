"""Tests for gym_tinker.trajectory: validation, dict/JSONL round trips, pickling, bad files."""

from __future__ import annotations

import json
import pickle

import pytest

from gym_tinker.trajectory import Trajectory, TrajectoryFormatError, Turn, load_jsonl, save_jsonl


def _trajectory(**overrides):
    turns = (
        Turn("Round 1. Your move.", "rock", 0.0, {"legal_moves": ["rock", "paper", "scissors"]}),
        Turn(
            "Round 2 — ünïcode \u2028 line separator",
            "<move>paper</move>",
            1.0,
            {"error": None},
            prompt_ids=(1, 2, 3),
            completion_ids=(4, 5),
            completion_logprobs=(-0.5, -0.25),
            env_mask=(1, 1),
        ),
    )
    fields = dict(
        turns=turns,
        env_id="rock_paper_scissors_v0",
        seed=3,
        agent="player_1",
        stop_reason="truncated",
        metadata={"policy": "frequency", "opponent": "random"},
    )
    fields.update(overrides)
    return Trajectory(**fields)


def test_total_reward_defaults_to_sum_and_can_be_given():
    assert _trajectory().total_reward == 1.0
    assert _trajectory(total_reward=-2).total_reward == -2.0


def test_dict_round_trip_keeps_every_field():
    traj = _trajectory()
    data = traj.to_dict()
    assert data["turns"][1]["completion_ids"] == [4, 5]
    assert "prompt_ids" not in data["turns"][0]
    back = Trajectory.from_dict(json.loads(json.dumps(data)))
    assert back == traj
    assert back.turns[1].completion_logprobs == (-0.5, -0.25)


def test_jsonl_round_trip(tmp_path):
    path = tmp_path / "trajs.jsonl"
    trajectories = [_trajectory(seed=s) for s in range(3)]
    assert save_jsonl(path, trajectories) == 3
    assert load_jsonl(path) == trajectories
    assert len(path.read_text(encoding="utf-8").strip().split("\n")) == 3


def test_pickles():
    traj = _trajectory()
    assert pickle.loads(pickle.dumps(traj)) == traj


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(stop_reason="done"), "stop_reason"),
        (dict(seed="3"), "seed"),
        (dict(turns=("rock",)), "Turn"),
        (dict(env_id=None), "env_id"),
    ],
)
def test_bad_trajectory_fields_are_named(kwargs, message):
    with pytest.raises(TrajectoryFormatError, match=message):
        _trajectory(**kwargs)


def test_bad_turn_fields_are_named():
    with pytest.raises(TrajectoryFormatError, match="align with `completion_ids`"):
        Turn("o", "a", completion_ids=(1, 2), completion_logprobs=(-1.0,))
    with pytest.raises(TrajectoryFormatError, match="env_mask"):
        Turn("o", "a", env_mask=(1,))
    with pytest.raises(TrajectoryFormatError, match="reward"):
        Turn("o", "a", reward="1")
    with pytest.raises(TrajectoryFormatError, match="prompt_ids"):
        Turn("o", "a", prompt_ids=(1, 2.5))


def test_bad_files_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(_trajectory().to_dict())
    path.write_text(good + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"bad\.jsonl:3: not valid JSON"):
        load_jsonl(path)
    path.write_text(good + "\n" + json.dumps({"turns": []}) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"bad\.jsonl:2: .*missing field.*env_id"):
        load_jsonl(path)
    path.write_text(json.dumps({**_trajectory().to_dict(), "colour": "red"}) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r":1: .*unknown field.*colour"):
        load_jsonl(path)
    path.write_text(json.dumps([1, 2]) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r":1: .*JSON object"):
        load_jsonl(path)
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TrajectoryFormatError, match="not a UTF-8 text file"):
        load_jsonl(path)
    with pytest.raises(FileNotFoundError):
        load_jsonl(tmp_path / "missing.jsonl")


def test_save_rejects_unserialisable_info(tmp_path):
    traj = _trajectory(metadata={"policy": object()})
    with pytest.raises(TrajectoryFormatError, match="not JSON-serialisable"):
        save_jsonl(tmp_path / "x.jsonl", [traj])
    with pytest.raises(TypeError, match="Trajectory objects"):
        save_jsonl(tmp_path / "x.jsonl", [traj.to_dict()])
