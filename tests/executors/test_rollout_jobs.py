"""The ``eval`` and ``sample`` job bodies: real rollouts with the tiny model, checkpoint/resume, and a real cluster."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from executors.context import JobContext, deliver_signal
from executors.errors import JobPreempted
from executors.rollout_jobs import RolloutJobParams, eval_body, sample_body, wilson_interval
from executors.spec import JobSpec
from gym_tinker.trajectory import load_jsonl

SPEC = {
    "kind": "eval",
    "model": "tiny-random",
    "env": "tinker/Math-v0",
    "params": {"episodes": 4, "batch_size": 2, "max_tokens": 8, "threads": 1},
}


class PreemptAfterFirstBatch(JobContext):
    """A context whose scheduler asks the job to yield right after its first report."""

    def report(self, step=None, **metrics):
        super().report(step, **metrics)
        if self.attempt == 1:
            deliver_signal(self.key, "preempt")


def test_eval_body_runs_episodes_and_writes_trajectories(tmp_path):
    ctx = JobContext(JobSpec(**SPEC), 1, 1, tmp_path)
    result = eval_body(ctx)
    assert result["episodes"] == 4
    assert 0.0 <= result["success_rate"] <= 1.0
    low, high = result["success_ci95"]
    assert low <= result["success_rate"] <= high
    trajectories = load_jsonl(result["trajectories"])
    assert [t.seed for t in trajectories] == [0, 1, 2, 3]
    assert all(t.turns[0].completion_ids for t in trajectories), "token-exact rollouts record sampled ids"
    metrics = [e for e in ctx.events if e.get("type") == "metric"]
    assert [m["step"] for m in metrics] == [2, 4]


def test_eval_resumes_after_preemption_without_repeating_a_batch(tmp_path):
    uninterrupted = eval_body(JobContext(JobSpec(**SPEC), 1, 1, tmp_path / "a"))

    first = PreemptAfterFirstBatch(JobSpec(**SPEC), 2, 1, tmp_path / "b")
    with pytest.raises(JobPreempted):
        eval_body(first)
    assert first.load_checkpoint()["done"] == 2
    second = JobContext(JobSpec(**SPEC), 2, 2, tmp_path / "b")
    resumed = eval_body(second)

    assert [m["step"] for m in second.events if m.get("type") == "metric"] == [4]
    assert resumed["mean_reward"] == uninterrupted["mean_reward"]
    actions = [t.turns[0].action for t in load_jsonl(resumed["trajectories"])]
    assert actions == [t.turns[0].action for t in load_jsonl(uninterrupted["trajectories"])]


def test_sample_body_samples_at_temperature_one_by_default(tmp_path):
    spec = JobSpec(**{**SPEC, "kind": "sample", "params": {**SPEC["params"], "episodes": 2}})
    result = sample_body(JobContext(spec, 1, 1, tmp_path))
    assert result["episodes"] == 2


@pytest.mark.parametrize(
    ("params", "message"),
    [({"episodes": 0}, "episodes"), ({"batch_sise": 2}, "batch_sise")],
)
def test_bad_params_fail_with_the_field_named(tmp_path, params, message):
    with pytest.raises(ValueError, match=message):
        eval_body(JobContext(JobSpec(**{**SPEC, "params": params}), 1, 1, tmp_path))


def test_missing_env_is_a_clear_error(tmp_path):
    spec = JobSpec(kind="eval", model="tiny-random", params={"episodes": 1})
    with pytest.raises(ValueError, match="needs `env`"):
        eval_body(JobContext(spec, 1, 1, tmp_path))


def test_wilson_interval_contains_the_rate():
    assert RolloutJobParams().episodes == 32
    low, high = wilson_interval(3, 4)
    assert low < 0.75 < high


def test_eval_job_through_the_embedded_cluster(make_client, tmp_path):
    client = make_client()
    job = client.submit({**SPEC, "output_dir": str(tmp_path)})
    result = job.result(timeout=240)
    assert result["episodes"] == 4
    assert (tmp_path / "trajectories.jsonl").is_file()
    assert [m["step"] for m in job.metrics()] == [2, 4]
