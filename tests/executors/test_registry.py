"""Runs' models by name: listing (`gym-tinker models`), resolving `<run>/<step>`, and serving adapters by name."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from typer.testing import CliRunner  # noqa: E402

from executors.models.tiny import save_tiny_random, tiny_random_model  # noqa: E402
from executors.registry import (  # noqa: E402
    RUNS_DIR_ENV,
    ModelNotFoundError,
    RegistryError,
    list_models,
    resolve,
    runs_dir,
    same_base_model,
)
from executors.serve import build_app, plan_serving, serving  # noqa: E402
from executors.spec import JobSpec  # noqa: E402
from executors.training.common import RunFolder  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")

LORA_NAMES = ["lora-run/5", "lora-run/10", "lora-run/final"]
FULL_NAMES = ["full-run/3", "full-run/final"]


def _lora_model(seed: int):
    from peft import LoraConfig, get_peft_model

    model, tok = tiny_random_model(seed=0)
    torch.manual_seed(seed)
    # init_lora_weights=False draws B at random too, so the adapter changes the outputs.
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    return get_peft_model(model, config), tok


def _scale_lora_b(peft_model, factor: float) -> None:
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.mul_(factor)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A runs folder: a finished LoRA run (snapshots 5, 10, final), a full run (3, final), a run with nothing saved."""
    root = tmp_path_factory.mktemp("runs")
    lora = RunFolder(root / "lora-run")
    lora.write_info(
        JobSpec(kind="grpo", model="tiny-random", adapter={"r": 4}, env="tinker/Math-v0", name="lora-run")
    )
    peft_model, tok = _lora_model(seed=1)
    lora.save_snapshot(5, peft_model, tok)
    _scale_lora_b(peft_model, 3.0)
    lora.save_snapshot(10, peft_model, tok)
    lora.save_final(peft_model, tok)

    full = RunFolder(root / "full-run")
    full.write_info(JobSpec(kind="sft", model="tiny-random", adapter="full", env="tinker/ToolUse-v0"))
    model, tok = tiny_random_model(seed=2)
    full.save_snapshot(3, model, tok)
    full.save_final(model, tok)

    RunFolder(root / "empty-run").write_info(JobSpec(kind="ppo", model="tiny-random"))
    (root / "notes").mkdir()  # not a run: ignored
    return root


# --- listing ---------------------------------------------------------------------------------------


def test_list_models_names_every_snapshot_and_final_model(runs):
    entries = list_models(runs)
    assert [e.name for e in entries] == FULL_NAMES + LORA_NAMES
    by_name = {e.name: e for e in entries}
    lora = by_name["lora-run/10"]
    assert (lora.run, lora.step, lora.kind, lora.trainer) == ("lora-run", 10, "lora", "grpo")
    assert (lora.base_model, lora.env) == ("tiny-random", "tinker/Math-v0")
    assert lora.path == str((runs / "lora-run/snapshots/step-000010").resolve())
    assert by_name["lora-run/final"].step is None
    assert by_name["lora-run/final"].path == str((runs / "lora-run/adapter").resolve())
    full = by_name["full-run/final"]
    assert (full.kind, full.trainer, full.path) == ("full", "sft", str((runs / "full-run/model").resolve()))
    # A full model folder holds all the weights; an adapter only the LoRA matrices.
    assert full.size > 10 * by_name["lora-run/final"].size > 0
    assert all(e.created > 0 for e in entries)


def test_list_models_of_missing_or_empty_folder_is_empty(tmp_path):
    assert list_models(tmp_path / "missing") == []
    assert list_models(tmp_path) == []


def test_incomplete_snapshots_are_not_listed(runs, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(runs / "lora-run", root / "lora-run")
    (root / "lora-run/snapshots/.step-000015-tmp").mkdir()  # a save in progress
    (root / "lora-run/snapshots/step-000020").mkdir()  # no weights
    assert [e.name for e in list_models(root)] == LORA_NAMES


def test_runs_dir_from_argument_env_or_default(monkeypatch, tmp_path, runs):
    monkeypatch.delenv(RUNS_DIR_ENV, raising=False)
    assert runs_dir() == runs_dir(None) and str(runs_dir()) == "runs"
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs))
    assert runs_dir() == runs and runs_dir(tmp_path) == tmp_path
    assert [e.name for e in list_models()] == FULL_NAMES + LORA_NAMES
    assert resolve("lora-run/5").step == 5
    monkeypatch.delenv(RUNS_DIR_ENV)
    monkeypatch.chdir(runs.parent)
    shutil.copytree(runs / "full-run", runs.parent / "runs" / "full-run", dirs_exist_ok=True)
    assert resolve("full-run/3").run == "full-run"


# --- resolving -------------------------------------------------------------------------------------


def test_resolve_lora_names(runs):
    final = resolve("lora-run", runs)
    assert final == resolve("lora-run/final", runs)
    assert (final.name, final.base_model, final.step, final.run) == (
        "lora-run/final",
        "tiny-random",
        None,
        "lora-run",
    )
    assert final.adapter == final.path == str((runs / "lora-run/adapter").resolve())
    snap = resolve("lora-run/10", runs)
    assert (snap.name, snap.step, snap.base_model) == ("lora-run/10", 10, "tiny-random")
    assert snap.adapter == str((runs / "lora-run/snapshots/step-000010").resolve())
    assert resolve("lora-run/000010", runs) == resolve("lora-run/step-10", runs) == snap


def test_run_without_final_model_resolves_to_its_newest_snapshot(runs, tmp_path):
    shutil.copytree(runs / "lora-run", tmp_path / "unfinished")
    shutil.rmtree(tmp_path / "unfinished/adapter")
    found = resolve("unfinished", tmp_path)
    assert (found.name, found.step) == ("unfinished/10", 10)


def test_resolve_full_parameter_names(runs):
    snap = resolve("full-run/3", runs)
    folder = str((runs / "full-run/snapshots/step-000003").resolve())
    assert (snap.base_model, snap.adapter, snap.path, snap.step) == (folder, None, folder, 3)
    final = resolve("full-run", runs)
    assert (final.name, final.adapter) == ("full-run/final", None)
    assert final.base_model == str((runs / "full-run/model").resolve())


def test_resolve_folder_paths(runs, tmp_path):
    # An adapter folder inside a run: the base model comes from its run.json.
    for folder, step in ((runs / "lora-run/snapshots/step-000005", 5), (runs / "lora-run/adapter", None)):
        found = resolve(str(folder), tmp_path / "elsewhere")
        assert (found.base_model, found.adapter, found.run, found.step) == (
            "tiny-random",
            str(folder.resolve()),
            "lora-run",
            step,
        )
    # A run folder by path is its `<run>` model.
    assert resolve(str(runs / "lora-run")).name == "lora-run/final"
    # A loose adapter: its adapter_config.json names the base model, or nothing does.
    loose = tmp_path / "loose"
    shutil.copytree(runs / "lora-run/adapter", loose)
    with pytest.raises(RegistryError, match="does not say which base model"):
        resolve(str(loose))
    config = json.loads((loose / "adapter_config.json").read_text())
    (loose / "adapter_config.json").write_text(
        json.dumps({**config, "base_model_name_or_path": "tiny-random"})
    )
    found = resolve(str(loose))
    assert (found.base_model, found.adapter, found.run) == ("tiny-random", str(loose.resolve()), None)


def test_model_references_pass_through(tmp_path):
    assert resolve("tiny-random") == resolve("tiny-random", tmp_path / "missing")
    named = resolve("smollm2-135m-instruct")
    assert (named.base_model, named.adapter, named.run) == ("smollm2-135m-instruct", None, None)
    folder = save_tiny_random(tmp_path / "model", seed=3)
    found = resolve(str(folder))
    assert (found.base_model, found.adapter, found.run) == (str(folder.resolve()), None, None)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve(str(gguf)).base_model == str(gguf.resolve())


def test_unknown_names_say_what_exists(runs, tmp_path):
    with pytest.raises(
        ModelNotFoundError, match=r"no model 'lora-run/7'; it has: lora-run/5, lora-run/10, lora-run/final"
    ):
        resolve("lora-run/7", runs)
    with pytest.raises(ModelNotFoundError, match=r"integer step, got 'lora-run/best'"):
        resolve("lora-run/best", runs)
    with pytest.raises(
        ModelNotFoundError, match=r"has no run 'nope'; runs found: empty-run, full-run, lora-run"
    ):
        resolve("nope/3", runs)
    with pytest.raises(ModelNotFoundError, match=r"'empty-run' .* has no snapshot or final model yet"):
        resolve("empty-run", runs)
    with pytest.raises(ModelNotFoundError, match=r"runs folder .*missing does not exist"):
        resolve("lora-run", tmp_path / "missing")
    with pytest.raises(ModelNotFoundError, match=r"no .gguf file, model folder or adapter folder at"):
        resolve(str(tmp_path / "no/such/folder"), runs)
    with pytest.raises(ValueError, match="empty string"):
        resolve("", runs)
    assert issubclass(ModelNotFoundError, ValueError)


def test_errors_survive_pickling():
    import pickle

    err = pickle.loads(pickle.dumps(ModelNotFoundError("Run 'x' has no model 'x/7'")))
    assert isinstance(err, ModelNotFoundError) and str(err) == "Run 'x' has no model 'x/7'"


def test_same_base_model(tmp_path):
    assert same_base_model(str(tmp_path / "a" / ".." / "b"), str(tmp_path / "b"))
    assert not same_base_model("tiny-random", str(tmp_path / "tiny-random"))


# --- gym-tinker models ---------------------------------------------------------------------------------


def _models_cli():
    import typer

    from executors.models_cli import models_command

    app = typer.Typer()
    app.command("models")(models_command)
    app.command("other")(lambda: None)  # a second command keeps `models` a subcommand, as in gym-tinker
    return app


def test_models_command_prints_a_table(runs):
    result = CliRunner().invoke(_models_cli(), ["models", "--runs-dir", str(runs)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    first_cells = [line.split("│")[1].strip() for line in lines if line.count("│") > 2]
    assert first_cells == [*FULL_NAMES, *LORA_NAMES]
    assert "┃ name " in result.output
    row = next(line for line in lines if " lora-run/10 " in line)
    assert "grpo lora" in row and "tiny-random" in row and "tinker/Math-v0" in row and " 10 " in row
    assert "sft full" in next(line for line in lines if " full-run/final " in line)


def test_models_command_json_lines(runs, monkeypatch):
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs))
    result = CliRunner().invoke(_models_cli(), ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["name"] for r in rows] == FULL_NAMES + LORA_NAMES
    assert rows[2] == {**rows[2], "kind": "lora", "step": 5, "base_model": "tiny-random", "trainer": "grpo"}
    assert rows[2]["path"].endswith("step-000005") and rows[2]["size"] > 0


@pytest.mark.parametrize("make", [False, True])
def test_models_command_without_runs_says_so(tmp_path, make):
    folder = tmp_path / "runs"
    if make:
        folder.mkdir()
    result = CliRunner().invoke(_models_cli(), ["models", "--runs-dir", str(folder)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "No models" in result.output and ("has no runs" if make else "does not exist") in result.output


# --- serving by name -------------------------------------------------------------------------------------


def test_plan_serving_by_names(runs):
    plan = plan_serving(None, ["lora-run/10", "early=lora-run/5"], runs_dir=runs)
    assert plan.model == "tiny-random" and plan.served_name is None
    assert plan.adapters == {
        "lora-run/10": str((runs / "lora-run/snapshots/step-000010").resolve()),
        "early": str((runs / "lora-run/snapshots/step-000005").resolve()),
    }
    plan = plan_serving("lora-run", [], runs_dir=runs)
    assert (plan.model, list(plan.adapters)) == ("tiny-random", ["lora-run"])
    # A full-parameter run's model is served as itself, under its name.
    plan = plan_serving("full-run/3", None, runs_dir=runs)
    assert plan.model == str((runs / "full-run/snapshots/step-000003").resolve())
    assert (plan.served_name, plan.adapters) == ("full-run/3", {})
    # Adapter folders by path still load as given.
    path = str(runs / "lora-run/adapter")
    assert plan_serving("tiny-random", [f"tuned={path}"], runs_dir=runs).adapters == {"tuned": path}


def test_plan_serving_rejects_mixed_base_models_and_full_adapters(runs, tmp_path):
    other = tmp_path / "other-run"
    shutil.copytree(runs / "lora-run", other)
    info = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**info, "model": "smollm2-135m-instruct"}))
    with pytest.raises(RegistryError, match=r"share one base model.*'smollm2-135m-instruct'.*'tiny-random'"):
        plan_serving(None, ["lora-run/5", f"o={other / 'adapter'}"], runs_dir=runs)
    with pytest.raises(RegistryError, match="share one base model"):
        plan_serving("full-run/3", ["lora-run/5"], runs_dir=runs)
    with pytest.raises(RegistryError, match=r"is a full model .* not a LoRA adapter"):
        plan_serving("tiny-random", ["full=full-run/final"], runs_dir=runs)
    with pytest.raises(ModelNotFoundError, match="NAME=PATH or a run's model name"):
        plan_serving("tiny-random", ["lora-run/99"], runs_dir=runs)
    with pytest.raises(ValueError, match="given twice"):
        plan_serving("lora-run/5", ["lora-run/5=lora-run/10"], runs_dir=runs)


def _chat(base_url: str, model: str) -> tuple[str, list[float]]:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "What is 2+3?"}],
        "max_tokens": 8,
        "temperature": 0,
        "logprobs": True,
    }
    reply = httpx.post(f"{base_url}/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    return choice["message"]["content"], [t["logprob"] for t in choice["logprobs"]["content"]]


def test_server_serves_adapters_by_run_step_name(runs):
    plan = plan_serving(None, ["lora-run/10", "lora-run/5"], runs_dir=runs)
    app = build_app(plan.model, plan.adapters, served_name=plan.served_name, wait_ms=1)
    try:
        with serving(app) as base_url:
            models = {m["id"]: m for m in httpx.get(f"{base_url}/models").json()["data"]}
            # Other tests in this process may have loaded adapters on the shared cached model too.
            assert {"tiny-random", "lora-run/10", "lora-run/5"} <= set(models)
            assert models["lora-run/10"]["parent"] == "tiny-random"
            base, step5, step10 = (
                _chat(base_url, name) for name in ("tiny-random", "lora-run/5", "lora-run/10")
            )
            # The snapshots' LoRA matrices are not zero and differ (B was scaled between them).
            assert base != step5 and base != step10 and step5 != step10
            assert base[0] != step10[0]
            unknown = httpx.post(
                f"{base_url}/chat/completions",
                json={"model": "lora-run/7", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert unknown.status_code in (400, 404) and "lora-run/10" in unknown.text
    finally:
        app.state.engine.close()


def test_server_serves_a_full_run_by_name(runs):
    plan = plan_serving("full-run/final", None, runs_dir=runs)
    app = build_app(plan.model, plan.adapters, served_name=plan.served_name, wait_ms=1)
    try:
        with serving(app) as base_url:
            assert [m["id"] for m in httpx.get(f"{base_url}/models").json()["data"]] == ["full-run/final"]
            _, logprobs = _chat(base_url, "full-run/final")
            assert len(logprobs) >= 1
    finally:
        app.state.engine.close()


def _serve_cli():
    import typer

    from executors.serve import serve_command

    app = typer.Typer()
    app.command("serve")(serve_command)
    app.command("other")(lambda: None)
    return app


def test_serve_command_reports_unknown_names_before_loading(runs):
    runner = CliRunner()
    args = ["serve", "--runs-dir", str(runs)]
    result = runner.invoke(_serve_cli(), [*args, "--model", "lora-run/7"])
    assert result.exit_code == 2 and "it has: lora-run/5, lora-run/10, lora-run/final" in result.output
    result = runner.invoke(
        _serve_cli(), [*args, "--model", "smollm2-135m-instruct", "--adapter", "lora-run/5"]
    )
    assert result.exit_code == 2 and "share one base model" in result.output
    result = runner.invoke(_serve_cli(), args)
    assert result.exit_code == 2 and "Expected --model" in result.output


def test_serve_command_serves_a_run_adapter_as_a_process(runs):
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "executors.serve", "--adapter", "lora-run/10", "--port", str(port)]
    cmd += ["--runs-dir", str(runs), "--threads", "1"]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read().decode()
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        assert [m["id"] for m in models["data"]] == ["tiny-random", "lora-run/10"]
        body = {"model": "lora-run/10", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60)
        assert reply.status_code == 200 and reply.json()["model"] == "lora-run/10"
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()
