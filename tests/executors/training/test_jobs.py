"""Training jobs on real clusters: the same results on the embedded cluster and on a separate ``dask worker``,
resume after a worker is killed, ``gym-tinker train``, and outputs other tools load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from executors import connect
from executors.cli import app
from executors.context import JobContext
from executors.spec import JobSpec
from executors.training.grpo import grpo_body
from tests.executors.training.helpers import PreemptAtStep2
from tests.executors.training.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[3]
DASK = str(Path(sys.executable).parent / "dask")
# Wall-clock figures differ between runs; everything else must not.
TIMING = ("time", "seconds", "per_second", "tokens_per_s", "runtime", "step_time")

PARAMS: dict[str, dict[str, Any]] = {
    "grpo": {"steps": 3, "prompts_per_step": 2, "group_size": 4, "learning_rate": 1e-2},
    "ppo": {"steps": 3, "episodes_per_step": 6, "minibatch_size": 3, "learning_rate": 1e-2},
    "sft": {"steps": 3, "source": "rollouts", "rollout_episodes": 12, "keep": "all", "learning_rate": 1e-2},
}


def job(kind: str, output_dir: Path, **params: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "model": "tiny-random",
        "adapter": {"r": 4, "dropout": 0.0},
        "env": ENV_ID,
        "output_dir": str(output_dir),
        "params": {
            "max_tokens": 4, "eval_episodes": 6, "eval_every": 2, "checkpoint_every": 1, "threads": 1,
            "report_to": "none", **PARAMS[kind], **params,
        },
    }  # fmt: skip


def metrics(run: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if not any(t in k for t in TIMING)} for row in rows]


def adapter(run: Path) -> dict[str, torch.Tensor]:
    return load_file(run / "adapter" / "adapter_model.safetensors")


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys() and a
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)


@pytest.fixture(scope="module")
def worker_cluster(tmp_path_factory):
    """``dask scheduler --preload executors.plugin`` and one ``dask worker`` process (the toy env on its path)."""
    tmp = tmp_path_factory.mktemp("training-cluster")
    scheduler_file = tmp / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    scheduler = subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
         "--scheduler-file", str(scheduler_file), "--preload", "executors.plugin",
         "--gym-tinker-journal", str(tmp / "journal.sqlite"), "--gym-tinker-state-dir", str(tmp / "state")],
        env=env,
    )  # fmt: skip
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert scheduler.poll() is None and time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.05)
        time.sleep(0.05)
        address = json.loads(scheduler_file.read_text())["address"]
        worker = subprocess.Popen(
            [DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
             "--local-directory", str(tmp)],
            env=env,
        )  # fmt: skip
        with connect(address) as client:
            deadline = time.monotonic() + 60
            while not client.dask.scheduler_info()["workers"]:
                assert time.monotonic() < deadline, "dask worker did not register"
                time.sleep(0.1)
        yield address
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.mark.parametrize("kind", ["grpo", "ppo", "sft"])
def test_same_job_same_results_on_embedded_cluster_and_separate_worker(
    kind, make_client, worker_cluster, tmp_path
):
    embedded = make_client()
    first = embedded.submit(job(kind, tmp_path / "embedded"))
    with connect(worker_cluster) as client:
        second = client.submit(job(kind, tmp_path / "worker"))
        assert second.wait(timeout=240) == "succeeded", second.info()["error"]
    assert first.wait(timeout=240) == "succeeded", first.info()["error"]
    rows = metrics(tmp_path / "embedded")
    assert rows == metrics(tmp_path / "worker")
    assert {row["step"] for row in rows} >= {0, 1, 2, 3}
    assert_same_weights(adapter(tmp_path / "embedded"), adapter(tmp_path / "worker"))


def test_grpo_job_resumes_after_its_worker_is_killed(make_client, wait_until, tmp_path):
    client = make_client()
    handle = client.submit({**job("grpo", tmp_path / "killed", steps=30, eval_every=0), "max_attempts": 3})
    wait_until(lambda: any(m["step"] and m["step"] >= 3 for m in handle.metrics()), timeout=120)
    events = client._call("events", job_id=handle.id, type="start")["events"]
    os.kill(events[0]["payload"]["pid"], signal.SIGKILL)
    assert handle.wait(timeout=240) == "succeeded", handle.info()["error"]
    info = handle.info()
    assert info["crashes"] == 1 and info["attempts"] == 2
    # The uninterrupted run, in this process.
    grpo_body(
        JobContext(
            JobSpec(**job("grpo", tmp_path / "straight", steps=30, eval_every=0)), 1, 1, tmp_path / "ck"
        )
    )
    assert [r["step"] for r in metrics(tmp_path / "killed")] == [
        r["step"] for r in metrics(tmp_path / "straight")
    ]
    assert metrics(tmp_path / "killed") == metrics(tmp_path / "straight")
    assert_same_weights(adapter(tmp_path / "killed"), adapter(tmp_path / "straight"))


def test_gym_tinker_train_runs_a_config_on_the_embedded_cluster(tmp_path, monkeypatch):
    monkeypatch.delenv("GYM_TINKER_ADDRESS", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    config = tmp_path / "grpo.yaml"
    config.write_text(
        f"kind: grpo\nname: cli-grpo\nmodel: tiny-random\nadapter: {{r: 4, dropout: 0.0}}\nenv: {ENV_ID}\n"
        "params: {steps: 50, prompts_per_step: 2, group_size: 4, max_tokens: 4, eval_episodes: 4, report_to: none}\n"
    )
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["train", str(config), "steps=2", "eval_every=1", "--output-dir", str(run)]
    )
    assert result.exit_code == 0, result.output
    assert "succeeded" in result.output and "heldout_accuracy_after" in result.output
    assert [r["step"] for r in metrics(run) if "reward" in r] == [1, 2]
    assert (run / "reward_curve.png").stat().st_size > 0
    assert (run / "adapter" / "adapter_config.json").exists()


def test_gym_tinker_train_rejects_a_bad_override_before_submitting(tmp_path):
    config = tmp_path / "grpo.yaml"
    config.write_text(f"kind: grpo\nmodel: tiny-random\nenv: {ENV_ID}\nparams: {{steps: 2}}\n")
    result = CliRunner().invoke(
        app, ["train", str(config), "group_sise=4", "--output-dir", str(tmp_path / "r")]
    )
    assert result.exit_code == 2
    assert "group_sise" in result.output and "Extra inputs are not permitted" in result.output
    assert not (tmp_path / "r").exists()


# peft reads transformers' deprecated `is_gradient_checkpointing` when it loads an adapter; not ours to fix.
@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
def test_saved_adapter_loads_in_peft_and_the_sampler_and_merges_to_the_same_model(tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from executors.models.tiny import tiny_random_model
    from executors.sampling import HFSampler
    from gym_tinker.policy import SamplingParams

    run = tmp_path / "run"
    grpo_body(JobContext(JobSpec(**job("grpo", run, steps=2, merge=True)), 1, 1, tmp_path / "ck"))
    ids = torch.tensor([[1, 5, 6, 7, 8]])
    base, _ = tiny_random_model()
    peft_model = PeftModel.from_pretrained(base, run / "adapter").eval()
    merged = AutoModelForCausalLM.from_pretrained(run / "merged").eval()
    with torch.no_grad():
        adapted_logits = peft_model(input_ids=ids).logits
        torch.testing.assert_close(merged(input_ids=ids).logits, adapted_logits, rtol=1e-4, atol=1e-4)
    with torch.no_grad(), peft_model.disable_adapter():
        assert not torch.allclose(peft_model(input_ids=ids).logits, adapted_logits)  # the adapter did train
    sampler = HFSampler(tiny_random_model())
    sampler.load_adapter("trained", run / "adapter")
    params = SamplingParams(max_tokens=4, temperature=0.0, seed=0)
    [with_adapter] = sampler.generate([[1, 5, 6]], params, adapter="trained")
    assert len(with_adapter.token_ids) >= 1 and sampler.adapters() == ["trained"]


def test_grpo_step_split_into_loss_batches_still_rolls_out_once_per_step_and_resumes_exactly(tmp_path):
    from executors.errors import JobPreempted

    split = {"steps": 3, "prompts_per_step": 2, "group_size": 4, "loss_batch_groups": 1, "eval_episodes": 0}
    straight = tmp_path / "straight"
    grpo_body(JobContext(JobSpec(**job("grpo", straight, **split)), 1, 1, tmp_path / "ck-straight"))
    rows = [r for r in metrics(straight) if "rollout/episodes" in r]
    # One rollout of every group per step; the loss ran in two slices of one group.
    assert [r["step"] for r in rows] == [1, 2, 3] and {r["rollout/episodes"] for r in rows} == {8.0}

    resumed = tmp_path / "resumed"
    spec = JobSpec(**job("grpo", resumed, **split))
    with pytest.raises(JobPreempted):
        grpo_body(PreemptAtStep2(spec, 7, 1, tmp_path / "ck-resumed"))
    grpo_body(JobContext(spec, 7, 2, tmp_path / "ck-resumed"))
    assert metrics(resumed) == metrics(straight)
    assert_same_weights(adapter(resumed), adapter(straight))
