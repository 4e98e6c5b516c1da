"""``gym-tinker train CONFIG.yaml [key=value ...]``: validate a training job, run it on a cluster, show live progress.

Without ``--address`` (or ``GYM_TINKER_ADDRESS``) the job runs on an embedded Dask cluster in
this process (one worker process); with one, on that cluster, and Ctrl-C offers to cancel the
job or to detach and leave it running. The run folder (``--output-dir``, default
``runs/<name>``) receives ``metrics.jsonl``, transcripts, checkpoints, the reward-curve PNG and
the final adapter.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from executors.errors import ConnectError, SpecError

__all__ = ["load_train_spec", "train_command"]

console = Console(width=140)
err = Console(stderr=True, width=140)


def load_train_spec(
    config: str | Path, overrides: list[str] | None = None, output_dir: str | None = None
) -> Any:
    """Read a job file, apply ``key=value`` overrides and validate spec and training params.

    Returns the validated :class:`~executors.spec.JobSpec`, with ``output_dir`` set (default
    ``runs/<name>``, absolute).

    Raises:
        SpecError: unreadable file, bad override, invalid spec or params.

    Example:
        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "job.yaml")
        ...     _ = Path(path).write_text("kind: grpo\\nname: demo\\nenv: tinker/Math-v0\\nparams: {steps: 50}\\n")
        ...     spec = load_train_spec(path, ["steps=3", "group_size=4"], output_dir=d)
        >>> spec.params, spec.output_dir == d
        ({'steps': 3, 'group_size': 4}, True)
    """
    from executors.spec import JobSpec
    from executors.training.config import PARAMS_BY_KIND, apply_overrides, parse_params

    path = Path(config)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SpecError(f"cannot read training config {str(path)!r}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"cannot parse training config {str(path)!r}: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(
            f"training config {str(path)!r} must be a mapping of job fields, got {type(data).__name__}"
        )
    data = apply_overrides(data, list(overrides or []))
    if output_dir is not None:
        data["output_dir"] = output_dir
    if not data.get("output_dir"):
        name = data.get("name") or f"{data.get('kind', 'job')}-{dt.datetime.now():%Y%m%d-%H%M%S}"
        data["output_dir"] = str(Path("runs", str(name)).resolve())
    spec = JobSpec(**data)
    if spec.kind in PARAMS_BY_KIND:
        parse_params(spec.kind, spec.params)
    return spec


def train_command(
    config: Annotated[
        str, typer.Argument(help="Job file (YAML): kind grpo/ppo/sft, model, adapter, env, params.")
    ],
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="key=value overrides, e.g. steps=20 adapter.r=16 env=tinker/Math-v0."),
    ] = None,
    output_dir: Annotated[str | None, typer.Option(help="Run folder (default runs/<name>).")] = None,
    address: Annotated[
        str | None,
        typer.Option(
            "--address", "-a", envvar="GYM_TINKER_ADDRESS", help="Dask scheduler; default: embedded."
        ),
    ] = None,
    detach: Annotated[
        bool, typer.Option(help="Submit, print the job id and return (needs --address).")
    ] = False,
) -> None:
    """Train: validate the config, submit it to the scheduler, follow it with live progress."""
    from executors.client import connect

    try:
        spec = load_train_spec(config, overrides, output_dir)
    except SpecError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    if detach and address is None:
        err.print("[red]error:[/red] --detach needs --address: the embedded cluster ends with this command")
        raise typer.Exit(2)
    try:
        client = connect(address) if address else connect(n_workers=1, threads_per_worker=1)
    except ConnectError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(3) from None
    try:
        handle = client.submit(spec)
        where = address or "the embedded cluster"
        console.print(
            f"job {handle.id} ({spec.kind}) on {where}; run folder {spec.output_dir}", highlight=False
        )
        if detach:
            console.print(f"follow it with: gym-tinker logs -f {handle.id}")
            return
        state = _follow(client, handle, spec, embedded=address is None)
        info = handle.info()
        if info["result"]:
            console.print(yaml.safe_dump(info["result"], sort_keys=False).rstrip(), highlight=False)
        if info["error"]:
            err.print(f"[red]error:[/red] {info['error']}", highlight=False)
        console.print(f"job {handle.id} {state}")
        if state not in ("succeeded", "detached"):
            raise typer.Exit(1)
    finally:
        client.close()


def _follow(client: Any, handle: Any, spec: Any, *, embedded: bool) -> str:
    from executors.progress import TrainingProgress

    total = spec.params.get("steps")
    if total is None and spec.kind in ("grpo", "ppo", "sft"):
        from executors.training.config import parse_params

        total = parse_params(spec.kind, spec.params).steps
    while True:
        try:
            with TrainingProgress(total, console=console, title=spec.name or spec.kind) as progress:
                for event in client.follow(handle.id, poll=0.5):
                    progress.update(event)
            return str(handle.wait())
        except KeyboardInterrupt:
            if not sys.stdin.isatty():
                handle.cancel()
                return str(handle.wait())
            if embedded:
                question = "Cancel the job? (the embedded cluster cannot outlive this command) [y/N] "
            else:
                question = "Cancel the job (y), or detach and leave it running (N)? [y/N] "
            answer = typer.prompt(question, default="n", show_default=False).strip().lower()
            if answer.startswith("y"):
                console.print(f"cancelling job {handle.id} at its next step boundary")
                handle.cancel()
                return str(handle.wait())
            if not embedded:
                console.print(f"detached; job {handle.id} keeps running (gym-tinker logs -f {handle.id})")
                return "detached"
