"""The ``gym-tinker`` command line: run a cluster, submit and watch jobs, list envs and games.

Exit codes: 0 ok; 1 the job failed or was cancelled (``submit --wait``, ``logs -f``); 2 bad
input (invalid spec, bad option); 3 cannot connect to the scheduler; 4 no such job.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
import time
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from executors.errors import ConnectError, JobNotFoundError, SpecError

__all__ = ["EXIT_BAD_INPUT", "EXIT_CONNECT", "EXIT_JOB_FAILED", "EXIT_NOT_FOUND", "app"]

EXIT_JOB_FAILED, EXIT_BAD_INPUT, EXIT_CONNECT, EXIT_NOT_FOUND = 1, 2, 3, 4

app = typer.Typer(help="gym-tinker: RL for LLM agents on a Dask cluster.", no_args_is_help=True)
cluster_app = typer.Typer(help="Run a gym-tinker cluster.", no_args_is_help=True)
app.add_typer(cluster_app, name="cluster")
console = Console(width=140)
err = Console(stderr=True, width=140)

Address = Annotated[
    str | None, typer.Option("--address", "-a", envvar="GYM_TINKER_ADDRESS", help="Dask scheduler address.")
]
TLSCa = Annotated[
    str | None, typer.Option("--tls-ca-file", envvar="GYM_TINKER_TLS_CA_FILE", help="CA (PEM).")
]
TLSCert = Annotated[
    str | None, typer.Option("--tls-cert", envvar="GYM_TINKER_TLS_CERT", help="Certificate (PEM).")
]
TLSKey = Annotated[
    str | None, typer.Option("--tls-key", envvar="GYM_TINKER_TLS_KEY", help="Private key (PEM).")
]


def _fail(code: int, message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", markup=True, highlight=False)
    return typer.Exit(code)


@contextlib.contextmanager
def _client(address: str | None, ca: str | None, cert: str | None, key: str | None) -> Iterator[Any]:
    """Connect, and turn our errors into the documented exit codes."""
    from executors.client import connect

    if not address:
        raise _fail(EXIT_CONNECT, "no scheduler address: pass --address or set GYM_TINKER_ADDRESS")
    security = None
    if ca or cert or key:
        if not (ca and cert and key):
            raise _fail(EXIT_BAD_INPUT, "TLS needs all of --tls-ca-file, --tls-cert and --tls-key")
        from distributed import Security

        security = Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True)
    try:
        client = connect(address, security=security, timeout=10)
    except ConnectError as exc:
        raise _fail(EXIT_CONNECT, str(exc)) from None
    try:
        yield client
    except SpecError as exc:
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    except JobNotFoundError as exc:
        raise _fail(EXIT_NOT_FOUND, str(exc)) from None
    except (OSError, TimeoutError) as exc:
        raise _fail(EXIT_CONNECT, f"lost the scheduler at {address}: {exc}") from None
    finally:
        client.dask.close()


def _ts(value: float | None) -> str:
    return dt.datetime.fromtimestamp(value).strftime("%H:%M:%S") if value else "-"


_STATE_STYLE = {
    "succeeded": "green",
    "failed": "red",
    "cancelled": "yellow",
    "running": "cyan",
    "preempted": "magenta",
}


@app.command()
def submit(
    spec_file: Annotated[str, typer.Argument(help="Job spec, YAML or JSON.")],
    priority: Annotated[int | None, typer.Option(help="Override the spec's priority.")] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait for the job; exit 1 unless it succeeds.")
    ] = False,
    address: Address = None,
    tls_ca_file: TLSCa = None,
    tls_cert: TLSCert = None,
    tls_key: TLSKey = None,
) -> None:
    """Queue a job; prints its id."""
    from executors.spec import JobSpec

    try:
        spec = JobSpec.from_file(spec_file)
    except SpecError as exc:
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    with _client(address, tls_ca_file, tls_cert, tls_key) as client:
        handle = client.submit(spec, priority=priority)
        console.print(handle.id)
        if wait:
            state = handle.wait()
            console.print(state)
            if state != "succeeded":
                raise typer.Exit(EXIT_JOB_FAILED)


@app.command()
def jobs(
    state: Annotated[str | None, typer.Option(help="Only jobs in this state.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this user's jobs.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many.")] = None,
    address: Address = None,
    tls_ca_file: TLSCa = None,
    tls_cert: TLSCert = None,
    tls_key: TLSKey = None,
) -> None:
    """List jobs, oldest first."""
    with _client(address, tls_ca_file, tls_cert, tls_key) as client:
        rows = client.jobs(state=state, user=user, limit=limit)
    table = Table("id", "name", "kind", "user", "priority", "state", "attempts", "submitted", "finished")
    for job in rows:
        style = _STATE_STYLE.get(job["state"], "")
        table.add_row(
            str(job["id"]), job["name"] or "-", job["kind"], job["user"] or "-", str(job["priority"]),
            f"[{style}]{job['state']}[/{style}]" if style else job["state"], str(job["attempts"]),
            _ts(job["submitted"]), _ts(job["finished"]),
        )  # fmt: skip
    console.print(table)


@app.command()
def status(
    job_id: Annotated[int, typer.Argument(help="Job id.")],
    address: Address = None,
    tls_ca_file: TLSCa = None,
    tls_cert: TLSCert = None,
    tls_key: TLSKey = None,
) -> None:
    """Show one job: state, attempts, result or error, and every transition."""
    with _client(address, tls_ca_file, tls_cert, tls_key) as client:
        info = client.job(job_id).info()
    console.print(
        f"job {info['id']} ({info['kind']}{', ' + info['name'] if info['name'] else ''}): [bold]{info['state']}[/bold]"
    )
    console.print(
        f"priority {info['priority']}, attempts {info['attempts']}, preemptions {info['preemptions']}, "
        f"worker deaths {info['crashes']}, worker {info.get('worker') or '-'}"
    )
    if info.get("waiting_reason"):
        console.print(f"waiting: {info['waiting_reason']}")
    if info["result"] is not None:
        console.print(f"result: {info['result']}")
    if info["error"]:
        console.print(f"[red]error:[/red] {info['error']}")
    table = Table("time", "from", "to", "reason")
    for t in info["transitions"]:
        table.add_row(_ts(t["ts"]), t["from_state"] or "-", t["to_state"], t["reason"] or "")
    console.print(table)
    if info["traceback"]:
        console.print(info["traceback"], highlight=False, markup=False)


@app.command()
def logs(
    job_id: Annotated[int, typer.Argument(help="Job id.")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing until the job ends.")] = False,
    address: Address = None,
    tls_ca_file: TLSCa = None,
    tls_cert: TLSCert = None,
    tls_key: TLSKey = None,
) -> None:
    """Print a job's log lines (and, with -f, its metrics as they arrive)."""
    with _client(address, tls_ca_file, tls_cert, tls_key) as client:
        handle = client.job(job_id)
        if not follow:
            for line in handle.logs():
                console.print(line, highlight=False, markup=False)
            return
        for event in client.follow(job_id, poll=0.5):
            if event["type"] == "log":
                console.print(event["payload"]["message"], highlight=False, markup=False)
            elif event["type"] == "metric":
                values = " ".join(f"{k}={v:g}" for k, v in event["payload"].items())
                console.print(f"step {event['step']}: {values}", highlight=False, markup=False)
        state = handle.status()
        console.print(f"job {job_id} {state}")
        if state != "succeeded":
            raise typer.Exit(EXIT_JOB_FAILED)


@app.command()
def cancel(
    job_id: Annotated[int, typer.Argument(help="Job id.")],
    address: Address = None,
    tls_ca_file: TLSCa = None,
    tls_cert: TLSCert = None,
    tls_key: TLSKey = None,
) -> None:
    """Cancel a job: at once if queued, at its next step boundary if running."""
    with _client(address, tls_ca_file, tls_cert, tls_key) as client:
        console.print(f"job {job_id}: {client.job(job_id).cancel()}")


@app.command()
def envs() -> None:
    """List the registered gym_tinker text environments."""
    import gym_tinker

    table = Table("id", "description")
    for env_id, description in gym_tinker.list_envs():
        table.add_row(env_id, description)
    console.print(table)


@app.command()
def games() -> None:
    """List the multiagent text games."""
    try:
        import multiagent

        rows = multiagent.list_games()
    except (ImportError, AttributeError) as exc:
        raise _fail(
            EXIT_BAD_INPUT, f"the multiagent games are not available in this install ({exc})"
        ) from None
    table = Table("id", "description")
    for game_id, description in rows:
        table.add_row(game_id, description)
    console.print(table)


@cluster_app.command("up")
def cluster_up(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Scheduler port (0: any free port).")] = 8786,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    threads: Annotated[int, typer.Option(help="Threads (job slots) per worker.")] = 1,
    resources: Annotated[
        str | None, typer.Option(help='Per-worker resources, e.g. "GPU=1 MEMORY=16e9".')
    ] = None,
    journal: Annotated[
        str | None, typer.Option(help="Journal path (default ~/.gym_tinker/journal.sqlite).")
    ] = None,
    state_dir: Annotated[str | None, typer.Option(help="State directory (default ~/.gym_tinker).")] = None,
    max_bypass: Annotated[int, typer.Option(help="Passes-over before a waiting job reserves room.")] = 16,
    aging: Annotated[float | None, typer.Option(help="Seconds of waiting worth one priority point.")] = None,
    tls_ca_file: TLSCa = None,
    tls_cert: TLSCert = None,
    tls_key: TLSKey = None,
) -> None:
    """Run a scheduler with the gym-tinker plugin plus workers, in the foreground (Ctrl-C stops)."""
    from executors.cluster import ClusterProcesses, TLSFiles

    tls = None
    if tls_ca_file or tls_cert or tls_key:
        if not (tls_ca_file and tls_cert and tls_key):
            raise _fail(EXIT_BAD_INPUT, "TLS needs all of --tls-ca-file, --tls-cert and --tls-key")
        tls = TLSFiles(tls_ca_file, tls_cert, tls_key)
    cluster = ClusterProcesses(
        host, port, workers, threads, resources, journal, state_dir, tls, max_bypass=max_bypass, aging=aging
    )
    stop = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        address = cluster.start()
        console.print(f"gym-tinker cluster at [bold]{address}[/bold] ({workers} workers); Ctrl-C stops it")
        console.print(f"  export GYM_TINKER_ADDRESS={address}", highlight=False)
        console.file.flush()  # scripts read the address from a pipe
        while not stop:
            if cluster.scheduler is not None and cluster.scheduler.poll() is not None:
                raise _fail(EXIT_CONNECT, f"the scheduler exited with code {cluster.scheduler.returncode}")
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    except (RuntimeError, TimeoutError) as exc:
        raise _fail(EXIT_CONNECT, str(exc)) from None
    finally:
        console.print("stopping the cluster")
        cluster.stop()
        signal.signal(signal.SIGTERM, previous)


# `gym-tinker serve`: the OpenAI-compatible server (options and help live in executors.serve).
from executors.serve import serve_command  # noqa: E402  (typer only; torch loads when serving starts)

app.command("serve")(serve_command)

# `gym-tinker train`: submit a training job and follow it (executors.train_cli).
from executors.train_cli import train_command  # noqa: E402

app.command("train")(train_command)

# `gym-tinker eval`, `play` and `models` (executors.eval_cli, play_cli, models_cli).
from executors.eval_cli import eval_command  # noqa: E402
from executors.models_cli import models_command  # noqa: E402
from executors.play_cli import play_command  # noqa: E402

app.command("eval")(eval_command)
app.command("play")(play_command)
app.command("models")(models_command)


if __name__ == "__main__":
    app()
