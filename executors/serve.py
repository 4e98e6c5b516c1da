"""``gym-tinker serve``: run the OpenAI-compatible server over a model and its LoRA adapters."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["build_app", "parse_adapter_specs", "serve", "serve_command", "serving"]


def parse_adapter_specs(specs: Sequence[str]) -> dict[str, str]:
    """``["NAME=PATH", ...]`` (the ``--adapter`` options) as ``{name: path}``.

    Raises:
        ValueError: A spec without ``=``, with an empty name or path, or a name given twice.

    Example:
        >>> parse_adapter_specs(["math=/tmp/a", "games=/tmp/b"])
        {'math': '/tmp/a', 'games': '/tmp/b'}
        >>> parse_adapter_specs(["nopath"])
        Traceback (most recent call last):
        ...
        ValueError: Expected --adapter NAME=PATH, got 'nopath'
    """
    adapters: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"Expected --adapter NAME=PATH, got {spec!r}")
        if name.strip() in adapters:
            raise ValueError(f"Adapter name {name.strip()!r} is given twice")
        adapters[name.strip()] = path.strip()
    return adapters


def build_app(
    model: str,
    adapters: Mapping[str, str | os.PathLike[str]] | None = None,
    *,
    device: str = "cpu",
    dtype: str | None = None,
    served_name: str | None = None,
    max_batch_rows: int = 64,
    wait_ms: float = 5.0,
    default_max_tokens: int = 256,
) -> Any:
    """Load ``model`` and ``adapters`` into an :class:`~executors.sampling.HFSampler` and wrap it in the server app.

    Args:
        model: A model reference (see :func:`executors.models.load_model`).
        adapters: LoRA adapters to load, ``{name: folder}``; requests pick one with ``model=name``.
        device: Torch device.
        dtype: Torch dtype name, or None for the device's default.
        served_name: The base model's name in the API (default: ``model``).
        max_batch_rows: Most rows sampled in one batch.
        wait_ms: How long the batcher collects requests after the first one.
        default_max_tokens: ``max_tokens`` of chat requests that give none.

    Example:
        >>> app = build_app("tiny-random")
        >>> app.state.sampler.adapters()
        []
        >>> app.state.engine.close()
    """
    from executors.sampling.hf import HFSampler
    from executors.server.app import create_app

    sampler = HFSampler(model, device=device, dtype=dtype, max_batch_size=max_batch_rows)
    for name, path in (adapters or {}).items():
        sampler.load_adapter(name, path)
    name = served_name or (
        model if model in ("tiny-random", "smollm2-135m-instruct") else Path(model).name or model
    )
    return create_app(
        sampler,
        model_name=name,
        max_batch_rows=max_batch_rows,
        wait_ms=wait_ms,
        default_max_tokens=default_max_tokens,
    )


def serve(
    model: str,
    adapters: Mapping[str, str | os.PathLike[str]] | Sequence[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    device: str = "cpu",
    dtype: str | None = None,
    served_name: str | None = None,
    max_batch_rows: int = 64,
    wait_ms: float = 5.0,
    log_level: str = "info",
) -> None:
    """Serve ``model`` (and ``adapters``) over HTTP until interrupted. Blocks.

    ``adapters`` is ``{name: path}`` or a list of ``"NAME=PATH"`` strings (the CLI's form).
    """
    import uvicorn

    if isinstance(adapters, str):
        raise TypeError(
            f"Expected `adapters` as {{name: path}} or a list of 'NAME=PATH', got the str {adapters!r}"
        )
    named = parse_adapter_specs(adapters) if isinstance(adapters, Sequence) else adapters
    if not isinstance(port, int) or not 0 <= port < 65536:
        raise ValueError(f"Expected `port` in [0, 65535], got {port!r}")
    app = build_app(
        model,
        named,
        device=device,
        dtype=dtype,
        served_name=served_name,
        max_batch_rows=max_batch_rows,
        wait_ms=wait_ms,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level)


@contextmanager
def serving(app: Any, host: str = "127.0.0.1", port: int = 0, *, timeout: float = 30.0) -> Iterator[str]:
    """Run ``app`` with uvicorn on a background thread; yield its base URL (``http://host:port/v1``).

    ``port=0`` takes a free port. The server stops when the block ends.

    Example:
        >>> import httpx
        >>> with serving(build_app("tiny-random")) as base_url:
        ...     httpx.get(f"{base_url}/models").json()["data"][0]["id"]
        'tiny-random'
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="gym-tinker-server", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"The server on {host}:{bound_port} did not start within {timeout} s")
            time.sleep(0.01)
        yield f"http://{host}:{bound_port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


def serve_command(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="tiny-random, smollm2-135m-instruct, a .gguf file or a Hugging Face model folder.",
        ),
    ],
    adapter: Annotated[
        list[str] | None, typer.Option("--adapter", help="A LoRA adapter as NAME=PATH (repeatable).")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    device: Annotated[str, typer.Option(help="Torch device, e.g. cpu or cuda.")] = "cpu",
    dtype: Annotated[str | None, typer.Option(help="Torch dtype, e.g. float32 or bfloat16.")] = None,
    served_name: Annotated[str | None, typer.Option(help="The base model's name in the API.")] = None,
    wait_ms: Annotated[
        float, typer.Option(help="How long to collect concurrent requests into a batch.")
    ] = 5.0,
    max_batch_rows: Annotated[int, typer.Option(help="Most sequences sampled in one batch.")] = 64,
    threads: Annotated[int | None, typer.Option(help="Torch CPU threads (default: torch's choice).")] = None,
) -> None:
    """Serve a model and its LoRA adapters with an OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions)."""
    from executors.models import ModelLoadError
    from executors.sampling.hf import AdapterError

    try:
        adapters = parse_adapter_specs(adapter or [])
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--adapter") from None
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    try:
        serve(
            model,
            adapters,
            host,
            port,
            device=device,
            dtype=dtype,
            served_name=served_name,
            max_batch_rows=max_batch_rows,
            wait_ms=wait_ms,
        )
    except (ModelLoadError, AdapterError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    typer.run(serve_command)
