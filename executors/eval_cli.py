"""``gym-tinker eval``: a model's success rate on a text env, or its win rate against a bot in a game.

Text envs (``tinker/Math-v0``, ...) run the ``eval`` job body (:mod:`executors.rollout_jobs`):
in this process by default, or as an ``eval`` job on a cluster with ``--address`` (or
``GYM_TINKER_ADDRESS``). Games (``tictactoe_v0`` or ``tinker/tictactoe_v0``; see ``gym-tinker
games``) run in this process: the model takes one seat against a bot, seats alternating game by
game. ``--model`` and ``--adapter`` accept registry names (``run/step``, see ``gym-tinker models``).

Exit codes: 0 ok; 1 the eval job failed; 2 bad input (unknown env, game, bot, model or
adapter, bad ``key=value``); 3 cannot connect to the cluster.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from executors.eval_games import _eval_game, model_policy
from executors.rollout_jobs import wilson_interval

__all__ = ["EvalInputError", "eval_command", "game_id", "model_policy", "parse_env_kwargs", "resolve_model"]

console = Console(width=140)
err = Console(stderr=True, width=140)

EXIT_JOB_FAILED, EXIT_BAD_INPUT, EXIT_CONNECT = 1, 2, 3


class EvalInputError(ValueError):
    """Bad input for ``eval`` or ``play``: the message names the value and what is valid."""


def parse_env_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` strings as keyword arguments; values are read as YAML (numbers, booleans, lists).

    Example:
        >>> parse_env_kwargs(["difficulty=easy", "max_turns=3", "hints=true"])
        {'difficulty': 'easy', 'max_turns': 3, 'hints': True}
        >>> parse_env_kwargs(["difficulty"])
        Traceback (most recent call last):
        ...
        executors.eval_cli.EvalInputError: bad --env-kwarg 'difficulty': expected key=value, e.g. difficulty=easy
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise EvalInputError(f"bad --env-kwarg {pair!r}: expected key=value, e.g. difficulty=easy")
        try:
            out[key] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            out[key] = raw
    return out


def game_id(env_id: str) -> str | None:
    """The ``multiagent`` game id of ``env_id`` (with or without ``tinker/``), or None for a text env.

    Example:
        >>> game_id("tinker/tictactoe_v0"), game_id("tictactoe_v0"), game_id("tinker/Math-v0")
        ('tictactoe_v0', 'tictactoe_v0', None)
    """
    import multiagent

    name = env_id.removeprefix("tinker/")
    return name if name in dict(multiagent.list_games()) else None


def resolve_model(ref: str) -> tuple[str, str | None]:
    """``(base model reference, LoRA adapter folder or None)`` for a model reference or registry name.

    Registry names (``run``, ``run/final``, ``run/<step>``) resolve through
    :func:`executors.registry.resolve`; anything else passes through unchanged.

    Example:
        >>> resolve_model("tiny-random")
        ('tiny-random', None)
    """
    from executors.registry import resolve

    try:
        resolved = resolve(ref)
    except (LookupError, ValueError, OSError) as exc:
        raise EvalInputError(f"unknown model {ref!r}: {exc}") from None
    return str(resolved.base_model), resolved.adapter


def _model_and_adapter(model: str, adapter: str | None) -> tuple[str, str | None]:
    from executors.rollout_jobs import resolve_adapter

    base, model_adapter = resolve_model(model)
    if adapter is not None and model_adapter is not None:
        raise EvalInputError(
            f"--model {model!r} already names a LoRA adapter ({model_adapter}); drop --adapter {adapter!r} "
            "or pass the base model as --model"
        )
    if adapter is not None:
        try:
            model_adapter = resolve_adapter(adapter)
        except ValueError as exc:
            raise EvalInputError(str(exc)) from None
    return base, model_adapter


def _fail(code: int, message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[: limit - tail]} [... {len(text) - limit} characters cut ...] {text[-tail:]}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _rate_line(label: str, count: int, n: int) -> str:
    low, high = wilson_interval(count, n)
    rate = count / n if n else 0.0
    return f"{label:<13}{_pct(rate):>7} ({count}/{n})  95% CI [{_pct(low)}, {_pct(high)}]"


def _check_text_env(env: str, env_kwargs: Mapping[str, Any]) -> None:
    import gymnasium as gym

    import gym_tinker
    import multiagent

    if env not in gym.registry:
        envs = [env_id for env_id, _ in gym_tinker.list_envs()]
        games = [g for g, _ in multiagent.list_games()]
        raise EvalInputError(f"unknown env {env!r}; text envs: {', '.join(envs)}; games: {', '.join(games)}")
    try:  # the env's own check of --env-kwarg values, before any model loads
        gym.make(env, **env_kwargs).close()
    except (TypeError, ValueError) as exc:
        raise EvalInputError(f"bad --env-kwarg for {env} ({dict(env_kwargs)}): {exc}") from None


def eval_command(
    env: Annotated[str, typer.Option("--env", help="Env id (tinker/Math-v0) or game (tictactoe_v0).")],
    model: Annotated[
        str,
        typer.Option("--model", help="Model reference (tiny-random, a folder) or registry name run/step."),
    ],
    episodes: Annotated[int, typer.Option("--episodes", min=1, help="Episodes (games for a game).")],
    adapter: Annotated[
        str | None, typer.Option("--adapter", help="LoRA adapter: a peft folder or a registry name.")
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, max=256, help="Episodes sampled together.")] = 8,
    max_tokens: Annotated[int, typer.Option(min=1, help="Most tokens sampled per turn.")] = 128,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 samples greedily.")] = 0.0,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first episode.")] = 0,
    env_kwarg: Annotated[
        list[str] | None, typer.Option("--env-kwarg", help="key=value for the env (repeatable).")
    ] = None,
    opponent: Annotated[
        str | None, typer.Option(help="Games: the bot the model plays (default random).")
    ] = None,
    out: Annotated[str | None, typer.Option(help="Folder for trajectories.jsonl and summary.json.")] = None,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            "-a",
            envvar="GYM_TINKER_ADDRESS",
            help="Run text envs as an eval job on this cluster.",
        ),
    ] = None,
) -> None:
    """Evaluate a model: success rate on a text env, or win/draw/loss against a bot in a game."""
    try:
        env_kwargs = parse_env_kwargs(env_kwarg or [])
        game = game_id(env)
        if game is None:
            _check_text_env(env, env_kwargs)
            if opponent is not None:
                raise EvalInputError(f"--opponent is for games; {env!r} is a single-agent text env")
        else:
            from multiagent.bots import BOTS

            opponent = opponent or "random"
            if opponent not in BOTS.get(game, {}):
                raise EvalInputError(
                    f"unknown bot {opponent!r} for {game}; its bots are {', '.join(BOTS.get(game, {}))}"
                )
        base, adapter_folder = _model_and_adapter(model, adapter)
    except EvalInputError as exc:
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    settings = {
        "episodes": episodes,
        "batch_size": batch_size,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "seed": seed,
        "env_kwargs": env_kwargs,
    }
    out_dir = Path(out).resolve() if out else None
    try:
        if game is not None:
            if address:
                console.print("games are evaluated in this process; --address is not used")
            summary = _eval_game(game, base, adapter_folder, opponent or "random", settings, out_dir)
        elif address:
            summary = _eval_on_cluster(address, env, base, adapter_folder, settings, out_dir)
        else:
            summary = _eval_local(env, base, adapter_folder, settings, out_dir)
    except EvalInputError as exc:
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        console.print(f"wrote {out_dir / 'summary.json'}", highlight=False)


# --- text envs --------------------------------------------------------------------------------


def _job_spec(
    env: str, base: str, adapter: str | None, settings: dict[str, Any], out_dir: Path | None
) -> Any:
    from executors.errors import SpecError
    from executors.rollout_jobs import RolloutJobParams
    from executors.spec import JobSpec

    params = {**settings, **({"adapter": adapter} if adapter else {})}
    try:
        RolloutJobParams(**params)
        return JobSpec(
            kind="eval", model=base, env=env, params=params, output_dir=str(out_dir) if out_dir else None
        )
    except (SpecError, ValueError) as exc:
        raise EvalInputError(str(exc)) from None


def _eval_local(
    env: str, base: str, adapter: str | None, settings: dict[str, Any], out_dir: Path | None
) -> dict[str, Any]:
    from executors.context import JobContext
    from executors.models import ModelLoadError
    from executors.rollout_jobs import eval_body
    from executors.sampling.hf import AdapterError

    class _PrintingContext(JobContext):
        def log(self, message: str) -> None:
            console.print(message, highlight=False, markup=False)

    with tempfile.TemporaryDirectory(prefix="gym-tinker-eval-") as scratch:
        folder = out_dir or Path(scratch, "out")
        spec = _job_spec(env, base, adapter, settings, folder)
        # A fresh checkpoint folder: a stale one would make this run "resume" an earlier eval.
        ctx = _PrintingContext(spec, 0, 1, Path(scratch, "checkpoint"))
        try:
            result = eval_body(ctx)
        except (ModelLoadError, AdapterError) as exc:
            raise EvalInputError(str(exc)) from None
        shutil.rmtree(folder / "batches", ignore_errors=True)  # merged into trajectories.jsonl
        _print_text_report(result, settings, Path(result["trajectories"]))
        if out_dir is None:
            result["trajectories"] = None
        return dict(result)


def _eval_on_cluster(
    address: str, env: str, base: str, adapter: str | None, settings: dict[str, Any], out_dir: Path | None
) -> dict[str, Any]:
    from executors.client import connect
    from executors.errors import ConnectError, SpecError

    spec = _job_spec(env, base, adapter, settings, out_dir)
    try:
        client = connect(address, timeout=10)
    except ConnectError as exc:
        raise _fail(EXIT_CONNECT, str(exc)) from None
    try:
        try:
            handle = client.submit(spec)
        except SpecError as exc:
            raise EvalInputError(str(exc)) from None
        console.print(f"job {handle.id} (eval) on {address}", highlight=False)
        for event in client.follow(handle.id, poll=0.5):
            if event["type"] == "log":
                console.print(event["payload"]["message"], highlight=False, markup=False)
        state = handle.wait()
        info = handle.info()
    except (OSError, TimeoutError) as exc:
        raise _fail(EXIT_CONNECT, f"lost the scheduler at {address}: {exc}") from None
    finally:
        client.close()
    if state != "succeeded":
        raise _fail(EXIT_JOB_FAILED, f"eval job {handle.id} {state}: {info.get('error') or ''}".rstrip(": "))
    result = dict(info["result"])
    result["job_id"] = handle.id
    path = Path(result["trajectories"])
    _print_text_report(result, settings, path if path.is_file() else None)
    return result


def _print_text_report(
    result: Mapping[str, Any], settings: Mapping[str, Any], trajectories: Path | None
) -> None:
    from gym_tinker.rollout import to_messages
    from gym_tinker.trajectory import load_jsonl

    n = int(result["episodes"])
    successes = round(float(result["success_rate"]) * n)
    temperature = settings["temperature"]
    sampling = "greedy" if temperature == 0 else f"temperature {temperature:g}"
    adapter = f" + adapter {result['adapter']}" if result.get("adapter") else ""
    console.print(f"\n{result['env']}: {result['model']}{adapter}, {n} episodes, {sampling}", highlight=False)
    console.print(_rate_line("success rate", successes, n), highlight=False)
    console.print(f"{'mean reward':<13}{float(result['mean_reward']):>7.3f}", highlight=False)
    console.print(
        f"{'tokens/s':<13}{float(result['tokens_per_s']):>7.1f} ({result['sampled_tokens']} sampled tokens)",
        highlight=False,
    )
    if trajectories is None:
        console.print("(trajectories are on the cluster's disk: no sample transcripts)")
        return
    episodes = load_jsonl(trajectories)
    # One success and one failure when there are both: the contrast is what a reader wants.
    wins = [t for t in episodes if (t.total_reward or 0) > 0]
    losses = [t for t in episodes if (t.total_reward or 0) <= 0]
    samples = (wins[:1] + losses[:1]) if wins and losses else episodes[:2]
    for trajectory in samples:
        console.print(
            f"\n--- sample: seed {trajectory.seed}, reward {trajectory.total_reward or 0:g}, "
            f"{trajectory.stop_reason} ---",
            highlight=False,
        )
        for message in to_messages(trajectory):
            limit = 300 if message["role"] == "system" else 600
            console.print(
                f"[{message['role']}] {_clip(message['content'], limit)}", highlight=False, markup=False
            )
