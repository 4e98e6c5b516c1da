"""``gym-tinker eval`` and ``gym-tinker play``: real runs with the tiny model, real games, real bots."""

from __future__ import annotations

import json
import re
import warnings

import pytest

pytest.importorskip("torch")

from typer.testing import CliRunner

from executors.cli import app
from gym_tinker.trajectory import load_jsonl

ENV = {"COLUMNS": "200", "GYM_TINKER_ADDRESS": ""}
FAST = ["--model", "tiny-random", "--max-tokens", "8"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), input=input, env={**ENV, **(env or {})})


def make_adapter(folder):
    """A LoRA adapter on the tiny model whose B matrices are random, so it changes the outputs."""
    from peft import LoraConfig, get_peft_model

    from executors.models.tiny import tiny_random_model

    model, tokenizer = tiny_random_model(seed=0)
    config = LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    with warnings.catch_warnings():
        # peft reads transformers' deprecated `is_gradient_checkpointing`; not ours to fix.
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        peft_model = get_peft_model(model, config)
    peft_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_eval_help_lists_the_options():
    result = invoke("eval", "--help")
    assert result.exit_code == 0
    for option in (
        "--env", "--model", "--adapter", "--episodes", "--batch-size", "--max-tokens", "--temperature",
        "--seed", "--env-kwarg", "--opponent", "--out", "--address",
    ):  # fmt: skip
        assert option in result.output


def test_eval_text_env_prints_a_success_rate_and_writes_files(tmp_path):
    out = tmp_path / "eval"
    result = invoke(
        "eval", "--env", "tinker/Math-v0", *FAST, "--episodes", "3", "--batch-size", "2",
        "--env-kwarg", "difficulty=easy", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    line = re.search(r"success rate\s+([\d.]+)% \((\d)/3\)\s+95% CI \[([\d.]+)%, ([\d.]+)%\]", result.output)
    assert line, result.output
    rate, low, high = float(line[1]), float(line[3]), float(line[4])
    assert low <= rate <= high
    assert "tokens/s" in result.output and "[user] " in result.output  # a sample transcript
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 3 and summary["adapter"] is None
    assert [t.seed for t in load_jsonl(out / "trajectories.jsonl")] == [0, 1, 2]
    assert not (out / "batches").exists()


def test_eval_with_an_adapter_folder_samples_through_it(tmp_path):
    adapter = make_adapter(tmp_path / "adapter")
    args = ["eval", "--env", "tinker/Math-v0", *FAST, "--episodes", "2"]
    base = invoke(*args, "--out", str(tmp_path / "base"))
    tuned = invoke(*args, "--adapter", str(adapter), "--out", str(tmp_path / "tuned"))
    assert base.exit_code == 0 and tuned.exit_code == 0, tuned.output
    summary = json.loads((tmp_path / "tuned" / "summary.json").read_text())
    assert summary["adapter"] == str(adapter.resolve())
    actions = [
        [t.turns[0].action for t in load_jsonl(tmp_path / d / "trajectories.jsonl")]
        for d in ("base", "tuned")
    ]
    assert actions[0] != actions[1], "the adapter's weights must change what the model says"


def test_eval_accepts_a_registry_name_for_a_run_snapshot(tmp_path):
    run = tmp_path / "runs" / "math"
    make_adapter(run / "snapshots" / "step-000002")
    (run / "run.json").write_text(
        json.dumps({"name": "math", "kind": "grpo", "model": "tiny-random", "adapter": "lora"})
    )
    result = invoke(
        "eval", "--env", "tinker/Math-v0", "--model", "math/2", "--max-tokens", "8", "--episodes", "1",
        "--out", str(tmp_path / "out"), env={"GYM_TINKER_RUNS": str(tmp_path / "runs")},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["model"] == "tiny-random"
    assert summary["adapter"] == str((run / "snapshots" / "step-000002").resolve())


def test_eval_game_against_the_random_bot_counts_every_game(tmp_path):
    result = invoke(
        "eval",
        "--env",
        "tictactoe_v0",
        *FAST,
        "--episodes",
        "4",
        "--opponent",
        "random",
        "--out",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    counts = {
        label: int(n)
        for label, n in re.findall(r"^(win|draw|loss)\s+[\d.]+% \((\d+)/4\)", result.output, re.M)
    }
    assert set(counts) == {"win", "draw", "loss"} and sum(counts.values()) == 4
    assert "sample game: seed 0" in result.output and ">>> player_" in result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["wins"] + summary["draws"] + summary["losses"] == 4
    assert {seat: sum(c) for seat, c in summary["per_seat"].items()} == {"player_0": 2, "player_1": 2}
    assert len(load_jsonl(tmp_path / "trajectories.jsonl")) == 4  # one per game: the model's seat


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--env", "tinker/Nope-v0"], ["'tinker/Nope-v0'", "tinker/Math-v0", "tictactoe_v0"]),
        (["--env", "tictactoe_v0", "--opponent", "oracle"], ["'oracle'", "minimax"]),
        (["--env", "tinker/Math-v0", "--opponent", "random"], ["--opponent"]),
        (["--env", "tinker/Math-v0", "--env-kwarg", "difficulty"], ["'difficulty'", "key=value"]),
        (["--env", "tinker/Math-v0", "--env-kwarg", "colour=red"], ["colour"]),
        (["--env", "tinker/Math-v0", "--adapter", "./no/such/adapter"], ["'./no/such/adapter'"]),
    ],
)
def test_eval_bad_input_exits_2_naming_the_value(args, named):
    result = invoke("eval", *args, "--model", "tiny-random", "--episodes", "1")
    assert result.exit_code == 2, result.output
    for text in named:
        assert text in result.output


def test_eval_unknown_model_exits_2(tmp_path):
    result = invoke(
        "eval", "--env", "tinker/Math-v0", "--model", "nosuchrun/3", "--episodes", "1",
        env={"GYM_TINKER_RUNS": str(tmp_path)},
    )  # fmt: skip
    assert result.exit_code == 2 and "'nosuchrun/3'" in result.output


def test_eval_cannot_connect_exits_3():
    result = invoke(
        "eval", "--env", "tinker/Math-v0", *FAST, "--episodes", "1", "--address", "tcp://127.0.0.1:9"
    )
    assert result.exit_code == 3, result.output


def test_eval_on_a_cluster_runs_an_eval_job(make_client, tmp_path):
    client = make_client()
    result = invoke(
        "eval", "--env", "tinker/Math-v0", *FAST, "--episodes", "2", "--address", client.address,
        "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert re.search(r"job \d+ \(eval\)", result.output) and "success rate" in result.output
    job = json.loads((tmp_path / "summary.json").read_text())["job_id"]
    assert client.job(job).status() == "succeeded"
    assert len(load_jsonl(tmp_path / "trajectories.jsonl")) == 2


def test_play_tictactoe_against_minimax_to_a_loss():
    # Deterministic: minimax answers the centre with a corner, then blocks and wins on the bottom row.
    result = invoke("play", "tictactoe_v0", "--opponent", "minimax", "--seed", "0", input="5\nfoo\n1\n9\n3\n")
    assert result.exit_code == 0, result.output
    assert "Legal moves: 1, 2, 3, 4, 5, 6, 7, 8, 9." in result.output  # the board as the model sees it
    assert ">>> player_1 (bot minimax) plays: '9'" in result.output
    assert "'foo' was not accepted" in result.output and "square 9 is already taken" in result.output
    assert "O (player_1) wins with three in a row." in result.output
    assert "result: loss (player_0 -1, player_1 1)" in result.output


def test_play_second_seat_against_a_model_plays_to_the_end():
    moves = "".join(f"{square}\n" for square in range(1, 10)) * 2
    result = invoke(
        "play", "tinker/tictactoe_v0", "--opponent", "model:tiny-random", "--seat", "second", input=moves
    )
    assert result.exit_code == 0, result.output
    assert "you are player_1" in result.output and ">>> player_0 (model tiny-random) plays:" in result.output
    assert re.search(r"^result: (win|draw|loss) \(player_0 ", result.output, re.M), result.output


@pytest.mark.parametrize("lines", ["quit\n", "5\nQuit\n", ""])
def test_play_quit_or_end_of_input_ends_cleanly(lines):
    result = invoke("play", "tictactoe_v0", "--opponent", "random", input=lines)
    assert result.exit_code == 0, result.output
    assert "game abandoned" in result.output and "result:" not in result.output


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["chess"], ["'chess'", "tictactoe_v0"]),
        (["tictactoe_v0", "--opponent", "stockfish"], ["'stockfish'", "minimax", "model:REF"]),
        (["tictactoe_v0", "--seat", "3"], ["'3'", "first"]),
    ],
)
def test_play_bad_input_exits_2(args, named):
    result = invoke("play", *args)
    assert result.exit_code == 2, result.output
    for text in named:
        assert text in result.output
