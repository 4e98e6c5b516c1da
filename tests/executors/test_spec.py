"""Job specs: validation with field-naming errors, file loading, and the kind registry."""

from __future__ import annotations

import json
import pickle

import pytest

from executors import JobCancelled, JobPreempted, JobSpec, LoraConfig, SpecError, job_kinds, register_job_kind
from executors.kinds import body_ref_for, resolve_body


def test_full_spec_round_trips_through_yaml(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "kind: grpo\nname: math-grpo\nmodel: tiny-llama\nadapter: {r: 16, alpha: 32, target_modules: [q_proj]}\n"
        "env: tinker/Math-v0\nparams: {lr: 1.0e-5, steps: 10}\nresources: {GPU: 0.5}\npriority: 7\n"
        "preemptible: false\nmax_attempts: 2\noutput_dir: /tmp/out\n"
    )
    spec = JobSpec.from_file(path)
    assert spec.kind == "grpo" and spec.priority == 7 and not spec.preemptible
    assert spec.adapter == LoraConfig(r=16, alpha=32, target_modules=["q_proj"])
    assert spec.resources == {"GPU": 0.5} and spec.params["steps"] == 10
    json_path = tmp_path / "job.json"
    json_path.write_text(spec.model_dump_json())
    assert JobSpec.from_file(json_path) == spec


def test_full_adapter_and_defaults():
    spec = JobSpec(kind="sft", adapter="full")
    assert spec.adapter == "full" and spec.priority == 0 and spec.max_attempts == 3 and spec.preemptible


@pytest.mark.parametrize(
    ("fields", "named", "value"),
    [
        ({"kind": "steps", "priority": "high"}, "priority", "'high'"),
        ({"kind": "steps", "resources": {"GPU": -1}}, "resources", "-1"),
        ({"kind": "steps", "resources": {"_slots": 1}}, "resources", "'_slots'"),
        ({"kind": "steps", "max_attempts": 0}, "max_attempts", "0"),
        ({"kind": "steps", "adapter": {"r": 0}}, "adapter.LoraConfig.r", "0"),
        ({"kind": "steps", "adapter": "half"}, "adapter", "'half'"),
        ({"kind": "Steps Job"}, "kind", "'Steps Job'"),
        ({"kind": "steps", "learning_rate": 1e-5}, "learning_rate", "1e-05"),
        ({"kind": "steps", "params": {"f": object()}}, "params", "JSON"),
        ({"priority": 1}, "kind", "Field required"),
    ],
)
def test_invalid_specs_name_field_and_value(fields, named, value):
    with pytest.raises(SpecError) as info:
        JobSpec(**fields)
    message = str(info.value)
    assert f"  {named}" in message and value in message, message


def test_file_errors_name_the_file(tmp_path):
    with pytest.raises(SpecError, match="cannot read job spec"):
        JobSpec.from_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(SpecError, match="cannot parse"):
        JobSpec.from_file(bad)
    listed = tmp_path / "list.yaml"
    listed.write_text("- kind: steps\n")
    with pytest.raises(SpecError, match="must be a mapping"):
        JobSpec.from_file(listed)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("kind: steps\npriorty: 3\n")
    with pytest.raises(SpecError, match=r"priorty: Extra inputs are not permitted.*wrong.yaml"):
        JobSpec.from_file(wrong)


def test_coerce_rejects_other_types():
    with pytest.raises(SpecError, match="got int"):
        JobSpec.coerce(3)  # type: ignore[arg-type]


def test_register_kind_by_object_path_and_value():
    from executors.bodies import steps_body

    assert register_job_kind("spec-test-steps", steps_body) == "executors.bodies:steps_body"

    def local_body(ctx):
        return {"local": True}

    ref = register_job_kind("spec-test-local", local_body)
    assert ref.startswith("pickle:") and job_kinds()["spec-test-local"] == "pickle:<by value>"
    assert resolve_body(body_ref_for("spec-test-local"))(None) == {"local": True}

    class ClassBody:
        def run(self, ctx):
            return "ran"

    register_job_kind("spec-test-class", ClassBody)
    assert resolve_body(body_ref_for("spec-test-class"))(None) == "ran"


@pytest.mark.parametrize(
    ("name", "body", "match"),
    [
        ("Bad Name", "executors.bodies:noop_body", "job kind names"),
        ("ok-name", "executors.bodies:nope", "cannot import job body"),
        ("ok-name", "no_colon", "looks like 'package.module:function'"),
        ("ok-name", 42, "must be a callable"),
    ],
)
def test_register_kind_errors(name, body, match):
    with pytest.raises(SpecError, match=match):
        register_job_kind(name, body)


def test_control_exceptions_pickle():
    for exc in (JobPreempted(), JobCancelled()):
        assert type(pickle.loads(pickle.dumps(exc))) is type(exc)


def test_spec_params_must_be_json():
    spec = JobSpec(kind="steps", params={"nested": {"a": [1, 2.5, "x"]}})
    assert json.loads(json.dumps(spec.params)) == spec.params
