"""``gym-tinker serve``: run the OpenAI-compatible server over a model and its LoRA adapters.

Models and adapters may be named as in ``gym-tinker models`` (``<run>/<step>``, ``<run>/final``,
``<run>``; see :mod:`executors.registry`): a client then picks one with ``model="<run>/<step>"``.

With ``--api-key`` (or ``$GYM_TINKER_API_KEY``) clients must send ``Authorization: Bearer <key>``
(the OpenAI client's ``api_key``). The server binds 127.0.0.1 by default; to reach it from other
machines, put it behind a reverse proxy that terminates TLS, with a key.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from executors.server.guard import API_KEY_ENV, DEFAULT_MAX_REQUEST_BYTES

__all__ = [
    "ServingPlan",
    "build_app",
    "parse_adapter_specs",
    "plan_serving",
    "serve",
    "serve_command",
    "serving",
]


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


@dataclass(frozen=True)
class ServingPlan:
    """What a server loads: a base model reference, its name in the API and the adapters on top of it."""

    model: str
    """The base model, a :func:`executors.models.load_model` reference."""
    served_name: str | None
    """The base model's name in the API (None: derived from ``model`` by :func:`build_app`)."""
    adapters: dict[str, str] = field(default_factory=dict)
    """LoRA adapters, ``{name in the API: folder}``."""


def _adapter_items(
    adapters: Mapping[str, str | os.PathLike[str]] | Sequence[str] | None,
) -> list[tuple[str, str, bool]]:
    """``(name, value, bare)`` per adapter; ``bare`` for a spec without ``NAME=`` (a run's model name)."""
    if adapters is None:
        return []
    if isinstance(adapters, str):
        raise TypeError(
            f"Expected `adapters` as {{name: path}} or a list of 'NAME=PATH', got the str {adapters!r}"
        )
    if isinstance(adapters, Mapping):
        return [(str(name), os.fspath(value), False) for name, value in adapters.items()]
    items = []
    for spec in adapters:
        if "=" in spec:
            [(name, value)] = parse_adapter_specs([spec]).items()
            items.append((name, value, False))
        elif spec.strip():
            items.append((spec.strip(), spec.strip(), True))
        else:
            raise ValueError(
                f"Expected --adapter NAME=PATH or a run's model name such as myrun/20, got {spec!r}"
            )
    return items


def plan_serving(
    model: str | None,
    adapters: Mapping[str, str | os.PathLike[str]] | Sequence[str] | None = None,
    *,
    runs_dir: str | os.PathLike[str] | None = None,
    served_name: str | None = None,
) -> ServingPlan:
    """Resolve ``--model`` and ``--adapter`` values, which may name runs' models, into what to load.

    * ``model``: a model reference, or a run's model name (:func:`executors.registry.resolve`).
      A LoRA run's name serves its base model plus the adapter under the name as given; a
      full-parameter run's name serves that model folder under the name as given.
    * ``adapters``: ``{name: value}`` or ``"NAME=VALUE"`` / ``"VALUE"`` strings. A value that is an
      existing path is an adapter folder, loaded as given; otherwise it is a run's model name
      (which must be a LoRA adapter). A bare ``"VALUE"`` is served under that name.
    * Without ``model``, the base model is the one the named adapters were trained on.

    Every adapter whose run is known must adapt the same base model.

    Raises:
        ValueError: Bad specs, an unknown name (:class:`~executors.registry.ModelNotFoundError`),
            adapters of different base models, a full-parameter model given as an adapter, or
            neither ``model`` nor a run's adapter to take the base model from.

    Example:
        >>> import json, tempfile
        >>> runs = Path(tempfile.mkdtemp())
        >>> (runs / "math/snapshots/step-000020").mkdir(parents=True)
        >>> _ = (runs / "math/snapshots/step-000020/adapter_config.json").write_text("{}")
        >>> _ = (runs / "math/run.json").write_text(json.dumps({"model": "tiny-random", "adapter": "lora"}))
        >>> plan = plan_serving(None, ["math/20"], runs_dir=runs)
        >>> plan.model, {name: Path(folder).name for name, folder in plan.adapters.items()}
        ('tiny-random', {'math/20': 'step-000020'})
        >>> plan_serving("smollm2-135m-instruct", ["math/20"], runs_dir=runs)
        Traceback (most recent call last):
        ...
        executors.registry.RegistryError: Adapters must share one base model: --adapter math/20 was trained on 'tiny-random', but --model smollm2-135m-instruct serves 'smollm2-135m-instruct'
        >>> plan_serving(None, [])
        Traceback (most recent call last):
        ...
        ValueError: Expected --model (a model reference or a run's model name) or an --adapter naming a run's model
    """
    from executors.registry import RegistryError, resolve, same_base_model

    base: str | None = None
    base_from = ""
    loaded: dict[str, str] = {}
    if model is not None:
        found = resolve(model, runs_dir)
        base, base_from = found.base_model, f"--model {model}"
        if found.adapter is not None:
            loaded[model] = found.adapter
        elif found.run is not None and served_name is None and not Path(model).expanduser().exists():
            served_name = model  # a full-parameter run's model, served by its name rather than its folder's
    for name, value, bare in _adapter_items(adapters):
        adapter_base: str | None = None
        if not bare and Path(value).expanduser().exists():
            folder = value  # a folder path, loaded as given; its run (if any) says its base model
            try:
                found = resolve(value, runs_dir)
                adapter_base = found.base_model if found.run is not None and found.adapter else None
            except RegistryError:
                adapter_base = None
        else:
            try:
                found = resolve(value, runs_dir)
            except RegistryError as err:
                if bare:  # keeps the error's class (ModelNotFoundError stays one)
                    raise type(err)(
                        f"Expected --adapter NAME=PATH or a run's model name such as myrun/20, got {value!r}: {err}"
                    ) from None
                raise
            if found.adapter is None:
                raise RegistryError(
                    f"--adapter {name}={value}: {value!r} is a full model ({found.path}), not a LoRA adapter; "
                    f"serve it on its own with --model {value}"
                )
            if bare and found.run is None:
                raise RegistryError(
                    f"Expected --adapter NAME=PATH or a run's model name such as myrun/20, got the folder {value!r}"
                )
            folder, adapter_base = found.adapter, found.base_model
        if name in loaded:
            raise ValueError(f"Adapter name {name!r} is given twice")
        if adapter_base is not None:
            if base is None:
                base, base_from = adapter_base, f"--adapter {value}"
            elif not same_base_model(base, adapter_base):
                raise RegistryError(
                    f"Adapters must share one base model: --adapter {value} was trained on {adapter_base!r}, "
                    f"but {base_from} serves {base!r}"
                )
        loaded[name] = folder
    if base is None:
        raise ValueError(
            "Expected --model (a model reference or a run's model name) or an --adapter naming a run's model"
        )
    return ServingPlan(model=base, served_name=served_name, adapters=loaded)


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
    api_key: str | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
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
        api_key: Bearer key clients must send, or None for none (see :func:`executors.server.create_app`).
        max_request_bytes: Largest request body accepted; larger ones get 413.

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
        api_key=api_key,
        max_request_bytes=max_request_bytes,
    )


def serve(
    model: str | None,
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
    runs_dir: str | os.PathLike[str] | None = None,
    api_key: str | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> None:
    """Serve ``model`` (and ``adapters``) over HTTP until interrupted. Blocks.

    ``adapters`` is ``{name: path}`` or a list of ``"NAME=PATH"`` strings (the CLI's form).
    ``model`` and the adapters may name runs' models (``<run>/<step>``), see :func:`plan_serving`.
    ``api_key`` defaults to ``$GYM_TINKER_API_KEY`` when that is set and not empty.
    """
    import uvicorn

    plan = plan_serving(model, adapters, runs_dir=runs_dir, served_name=served_name)
    if not isinstance(port, int) or not 0 <= port < 65536:
        raise ValueError(f"Expected `port` in [0, 65535], got {port!r}")
    if api_key is None:
        api_key = os.environ.get(API_KEY_ENV) or None
    app = build_app(
        plan.model,
        plan.adapters,
        device=device,
        dtype=dtype,
        served_name=plan.served_name,
        max_batch_rows=max_batch_rows,
        wait_ms=wait_ms,
        api_key=api_key,
        max_request_bytes=max_request_bytes,
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
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="tiny-random, smollm2-135m-instruct, a .gguf file, a Hugging Face model folder, or a run's "
            "model name as listed by `gym-tinker models` (<run>/<step>, <run>/final, <run>). "
            "Default: the base model of the run adapters given.",
            show_default=False,
        ),
    ] = None,
    adapter: Annotated[
        list[str] | None,
        typer.Option(
            "--adapter",
            help="A LoRA adapter as NAME=PATH, NAME=<run>/<step>, or just <run>/<step> (served under that name). "
            "Repeatable.",
        ),
    ] = None,
    runs_dir: Annotated[
        str | None,
        typer.Option(
            "--runs-dir", help="Where runs' models are looked up (default: $GYM_TINKER_RUNS, else ./runs)."
        ),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            help="Interface to listen on. The default takes connections from this machine only; to serve "
            "a network, set --api-key and put a TLS-terminating reverse proxy in front."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    device: Annotated[str, typer.Option(help="Torch device, e.g. cpu or cuda.")] = "cpu",
    dtype: Annotated[str | None, typer.Option(help="Torch dtype, e.g. float32 or bfloat16.")] = None,
    served_name: Annotated[str | None, typer.Option(help="The base model's name in the API.")] = None,
    wait_ms: Annotated[
        float, typer.Option(help="How long to collect concurrent requests into a batch.")
    ] = 5.0,
    max_batch_rows: Annotated[int, typer.Option(help="Most sequences sampled in one batch.")] = 64,
    threads: Annotated[int | None, typer.Option(help="Torch CPU threads (default: torch's choice).")] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar=API_KEY_ENV,
            show_envvar=True,
            help="Require `Authorization: Bearer <key>` on every request but /health (the OpenAI "
            "client's api_key); others get 401.",
            show_default=False,
        ),
    ] = None,
    max_request_bytes: Annotated[
        int, typer.Option(help="Largest request body in bytes; larger ones get 413 without being parsed.")
    ] = DEFAULT_MAX_REQUEST_BYTES,
) -> None:
    """Serve a model and its LoRA adapters with an OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions).

    Runs' models are served by their names: `gym-tinker serve --adapter myrun/20` lets a client ask for
    model="myrun/20".
    """
    from executors.models import ModelLoadError
    from executors.sampling.hf import AdapterError

    try:
        plan = plan_serving(model, adapter or [], runs_dir=runs_dir, served_name=served_name)
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    if api_key == "":
        typer.echo(
            "error: --api-key is empty; give a key, or leave the option out to serve without one", err=True
        )
        raise typer.Exit(2)
    if max_request_bytes < 1:
        typer.echo(f"error: expected --max-request-bytes >= 1, got {max_request_bytes}", err=True)
        raise typer.Exit(2)
    names = ", ".join(f"{name} ({folder})" for name, folder in plan.adapters.items()) or "none"
    typer.echo(f"serving {plan.model} with adapters: {names}", err=True)
    if api_key is None and host not in ("127.0.0.1", "localhost", "::1"):
        typer.echo(
            f"warning: serving on {host} without --api-key: anyone who can reach this port can use the models",
            err=True,
        )
    try:
        serve(
            plan.model,
            plan.adapters,
            host,
            port,
            device=device,
            dtype=dtype,
            served_name=plan.served_name,
            max_batch_rows=max_batch_rows,
            wait_ms=wait_ms,
            api_key=api_key,
            max_request_bytes=max_request_bytes,
        )
    except (ModelLoadError, AdapterError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    typer.run(serve_command)
