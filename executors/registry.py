"""Versioned models of training runs: name every run's checkpoints ``<run>/<step>`` and resolve those names.

Every training job leaves a run folder (``runs/<run>/`` by default, see
:class:`~executors.training.common.RunFolder`)::

    runs/<run>/run.json                     # kind, base model, "lora" | "full", env, created
    runs/<run>/snapshots/step-000020/       # a peft adapter folder (LoRA) or a model folder (full)
    runs/<run>/adapter/  or  runs/<run>/model/   # the final adapter (LoRA) or weights (full)

Names (what ``gym-tinker models`` lists and ``gym-tinker serve`` / ``eval`` accept):

* ``<run>/<step>``: the snapshot saved at that step;
* ``<run>/final``: the final adapter or model;
* ``<run>``: the final one when the run has finished, else its newest snapshot.

:func:`resolve` also passes plain model references through (``tiny-random``,
``smollm2-135m-instruct``, a model folder, a ``.gguf`` file) and takes adapter folders by path.
The runs folder is ``runs_dir`` when given, else ``$GYM_TINKER_RUNS``, else ``./runs``.
Nothing here imports torch.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "RUNS_DIR_ENV",
    "ModelEntry",
    "ModelNotFoundError",
    "RegistryError",
    "ResolvedModel",
    "list_models",
    "resolve",
    "runs_dir",
    "same_base_model",
]

RUNS_DIR_ENV = "GYM_TINKER_RUNS"
"""Environment variable naming the runs folder (default ``./runs``)."""

FINAL = "final"
_NAMED_MODELS = ("smollm2-135m-instruct", "tiny-random")  # as executors.models.NAMED_MODELS, torch-free
_SNAPSHOT_RE = re.compile(r"^step-(\d+)$")
_STEP_RE = re.compile(r"^(?:step-)?(\d+)$")


class RegistryError(ValueError):
    """A model name or folder that cannot be turned into something to load. The message says why."""


class ModelNotFoundError(RegistryError):
    """No model by that name: the message lists the runs found, or the models of the named run."""


@dataclass(frozen=True)
class ResolvedModel:
    """What to load for a model name: a base model reference and, for LoRA, the adapter folder on top of it."""

    name: str
    """The canonical name: ``<run>/<step>`` or ``<run>/final`` for runs' models, else the reference as given."""
    base_model: str
    """A :func:`executors.models.load_model` reference (for a full-parameter run's model: its folder)."""
    adapter: str | None
    """The peft adapter folder to load on ``base_model``; None when there is no adapter."""
    path: str
    """The folder (or file) holding the weights; for a named model, the name itself."""
    step: int | None = None
    """The training step of a snapshot; None for final models and for references outside runs."""
    run: str | None = None
    """The run the model belongs to; None for references outside runs."""


@dataclass(frozen=True)
class ModelEntry:
    """One servable model of a run, as listed by :func:`list_models` and ``gym-tinker models``."""

    name: str
    """``<run>/<step>`` or ``<run>/final``."""
    run: str
    step: int | None
    """The snapshot's training step; None for the final model."""
    kind: Literal["lora", "full"]
    """``lora``: a peft adapter folder; ``full``: a complete model folder."""
    trainer: str | None
    """The job kind that trained it (``grpo``, ``ppo``, ``sft``), from ``run.json``."""
    base_model: str | None
    """The model the run started from (``run.json``'s ``model``, else the adapter's own record)."""
    env: str | None
    """The env it was trained on, from ``run.json``."""
    created: float
    """When the folder was written (Unix time)."""
    path: str
    """The adapter or model folder."""
    size: int
    """Bytes on disk."""


def runs_dir(default: str | os.PathLike[str] | None = None) -> Path:
    """The runs folder: ``default`` when given, else ``$GYM_TINKER_RUNS``, else ``./runs``.

    Example:
        >>> str(runs_dir("/data/runs"))
        '/data/runs'
        >>> os.environ[RUNS_DIR_ENV] = "/srv/runs"
        >>> str(runs_dir())
        '/srv/runs'
        >>> del os.environ[RUNS_DIR_ENV]
        >>> str(runs_dir())
        'runs'
    """
    if default is not None:
        return Path(default).expanduser()
    return Path(os.environ.get(RUNS_DIR_ENV) or "runs").expanduser()


_runs_root = runs_dir  # the public name is shadowed by the `runs_dir` arguments below


# --- reading run folders -----------------------------------------------------------------------


def _read_run_info(run: Path) -> dict[str, Any]:
    try:
        info = json.loads((run / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _weights_kind(folder: Path) -> Literal["lora", "full"] | None:
    if (folder / "adapter_config.json").is_file():
        return "lora"
    if (folder / "config.json").is_file():
        return "full"
    return None


def _adapter_base(folder: Path) -> str | None:
    try:
        config = json.loads((folder / "adapter_config.json").read_text())
    except (OSError, ValueError):
        return None
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    return base if isinstance(base, str) and base else None


def _is_run(folder: Path) -> bool:
    return folder.is_dir() and any(
        (folder / part).exists() for part in ("run.json", "snapshots", "adapter", "model")
    )


def _snapshots(run: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    snapshots = run / "snapshots"
    if snapshots.is_dir():
        for child in snapshots.iterdir():
            match = _SNAPSHOT_RE.match(child.name)
            if match and child.is_dir() and _weights_kind(child) is not None:
                found[int(match.group(1))] = child
    return dict(sorted(found.items()))


def _final(run: Path, info: dict[str, Any]) -> Path | None:
    order = ("model", "adapter") if info.get("adapter") == "full" else ("adapter", "model")
    for part in order:
        if _weights_kind(run / part) is not None:
            return run / part
    return None


def _run_models(run: Path) -> dict[str, Path]:
    """``{"<step>": folder, ..., "final": folder}`` in step order, final last."""
    models = {str(step): folder for step, folder in _snapshots(run).items()}
    final = _final(run, _read_run_info(run))
    if final is not None:
        models[FINAL] = final
    return models


def _runs(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted((child for child in root.iterdir() if _is_run(child)), key=lambda p: p.name)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --- listing --------------------------------------------------------------------------------------


def list_models(runs_dir: str | os.PathLike[str] | None = None) -> list[ModelEntry]:
    """Every run's snapshots and final model, by run name, then step, final last.

    A missing or empty runs folder gives an empty list.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "math/snapshots/step-000010").mkdir(parents=True)
        >>> _ = (root / "math/snapshots/step-000010/adapter_config.json").write_text("{}")
        >>> _ = (root / "math/run.json").write_text('{"kind": "grpo", "model": "tiny-random", "env": "tinker/Math-v0"}')
        >>> [(e.name, e.kind, e.step, e.base_model) for e in list_models(root)]
        [('math/10', 'lora', 10, 'tiny-random')]
        >>> list_models(root / "missing")
        []
    """
    entries = []
    for run in _runs(_runs_root(runs_dir)):
        info = _read_run_info(run)
        for label, folder in _run_models(run).items():
            kind = _weights_kind(folder) or "full"
            base = info.get("model") or (_adapter_base(folder) if kind == "lora" else None)
            entries.append(
                ModelEntry(
                    name=f"{run.name}/{label}",
                    run=run.name,
                    step=None if label == FINAL else int(label),
                    kind=kind,
                    trainer=info.get("kind"),
                    base_model=base,
                    env=info.get("env"),
                    created=folder.stat().st_mtime,
                    path=str(folder.resolve()),
                    size=_size(folder),
                )
            )
    return entries


# --- resolving ------------------------------------------------------------------------------------


def _from_folder(name: str, folder: Path, run: Path | None, step: int | None) -> ResolvedModel:
    """A run's snapshot or final folder, or a loose adapter/model folder, as a ResolvedModel."""
    folder = folder.resolve()
    info = _read_run_info(run) if run is not None else {}
    run_name = run.name if run is not None and (run / "run.json").is_file() else None
    if _weights_kind(folder) == "full":
        return ResolvedModel(name, str(folder), None, str(folder), step, run_name)
    base = info.get("model") or _adapter_base(folder)
    if not base:
        raise RegistryError(
            f"Adapter folder {folder} does not say which base model it adapts: no run.json above it and no "
            "base_model_name_or_path in its adapter_config.json. Serve it on an explicit base model "
            f"(gym-tinker serve --model BASE --adapter NAME={folder})"
        )
    return ResolvedModel(name, str(base), str(folder), str(folder), step, run_name)


def _enclosing_run(folder: Path) -> tuple[Path | None, int | None]:
    """For ``<run>/adapter`` or ``<run>/snapshots/step-N``: the run folder and step; else (None, None)."""
    folder = folder.resolve()
    if (folder.parent / "run.json").is_file():
        return folder.parent, None
    match = _SNAPSHOT_RE.match(folder.name)
    if folder.parent.name == "snapshots" and (folder.parent.parent / "run.json").is_file():
        return folder.parent.parent, int(match.group(1)) if match else None
    return None, None


def _resolve_in_run(name: str, run: Path, label: str | None) -> ResolvedModel:
    models = _run_models(run)
    listed = ", ".join(f"{run.name}/{key}" for key in models) or "nothing saved yet"
    if label is None:  # `<run>`: the final model, else the newest snapshot
        if not models:
            raise ModelNotFoundError(f"Run {run.name!r} ({run}) has no snapshot or final model yet")
        label = FINAL if FINAL in models else list(models)[-1]
    elif label != FINAL:
        match = _STEP_RE.match(label)
        if match is None:
            raise ModelNotFoundError(
                f"Expected <run>, <run>/final or <run>/<step> with an integer step, got {name!r}; "
                f"run {run.name!r} has: {listed}"
            )
        label = str(int(match.group(1)))
    if label not in models:
        raise ModelNotFoundError(f"Run {run.name!r} has no model {name!r}; it has: {listed}")
    step = None if label == FINAL else int(label)
    return _from_folder(f"{run.name}/{label}", models[label], run, step)


def _looks_like_path(ref: str) -> bool:
    return (
        ref.startswith(("/", "~", ".")) or ref.count("/") > 1 or ref.lower().endswith(".gguf") or "\\" in ref
    )


def resolve(
    name_or_path: str | os.PathLike[str], runs_dir: str | os.PathLike[str] | None = None
) -> ResolvedModel:
    """What to load for a model name, a run's model name or a folder.

    In order:

    1. a named model (``tiny-random``, ``smollm2-135m-instruct``) passes through;
    2. an existing path: a ``.gguf`` file or a model folder passes through; an adapter folder
       (``adapter_config.json``) gives that adapter on the base model named by the ``run.json``
       of its run (when it lies in one), else by its ``adapter_config.json``; a run folder is
       that run's ``<run>`` model;
    3. ``<run>``, ``<run>/final`` or ``<run>/<step>`` in the runs folder (see :func:`runs_dir`).

    A full-parameter run's snapshots and final model are model folders: they resolve to
    ``base_model=<folder>`` with no adapter.

    Raises:
        ModelNotFoundError: Nothing by that name; the message lists the runs found, or what
            the named run has.
        RegistryError: An adapter folder that names no base model.

    Example:
        >>> resolve("tiny-random")
        ResolvedModel(name='tiny-random', base_model='tiny-random', adapter=None, path='tiny-random', step=None, run=None)
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> for step in (5, 10):
        ...     (root / f"math/snapshots/step-{step:06d}").mkdir(parents=True)
        ...     _ = (root / f"math/snapshots/step-{step:06d}/adapter_config.json").write_text("{}")
        >>> _ = (root / "math/run.json").write_text('{"model": "tiny-random", "adapter": "lora"}')
        >>> found = resolve("math", runs_dir=root)
        >>> found.name, found.base_model, found.step, Path(found.adapter).name
        ('math/10', 'tiny-random', 10, 'step-000010')
        >>> resolve("math/7", runs_dir=root)
        Traceback (most recent call last):
        ...
        executors.registry.ModelNotFoundError: Run 'math' has no model 'math/7'; it has: math/5, math/10
    """
    if not isinstance(name_or_path, str | os.PathLike):
        raise TypeError(
            f"Expected a model name or path (str), got {type(name_or_path).__name__}: {name_or_path!r}"
        )
    ref = os.fspath(name_or_path)
    if not ref.strip():
        raise ModelNotFoundError("Expected a model name or path, got an empty string")
    if ref in _NAMED_MODELS:
        return ResolvedModel(ref, ref, None, ref)

    path = Path(ref).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return ResolvedModel(ref, str(path.resolve()), None, str(path.resolve()))
    if path.is_dir():
        if (path / "adapter_config.json").is_file() or (path / "config.json").is_file():
            run, step = _enclosing_run(path)
            return _from_folder(ref, path, run, step)
        if (path / "run.json").is_file():
            return _resolve_in_run(path.resolve().name, path.resolve(), None)

    root = _runs_root(runs_dir)
    if _looks_like_path(ref):
        raise ModelNotFoundError(
            f"Unknown model reference {ref!r}: not a named model ({', '.join(_NAMED_MODELS)}), and there is "
            f"no .gguf file, model folder or adapter folder at {path.resolve()}"
        )
    run_name, _, label = ref.partition("/")
    run = root / run_name
    if not _is_run(run):
        runs = [p.name for p in _runs(root)]
        where = (
            f"the runs folder {root.resolve()} has no run {run_name!r}; runs found: {', '.join(runs) or 'none'}"
            if root.is_dir()
            else f"the runs folder {root.resolve()} does not exist (set --runs-dir or {RUNS_DIR_ENV})"
        )
        raise ModelNotFoundError(
            f"Unknown model reference {ref!r}: not a named model ({', '.join(_NAMED_MODELS)}), not a "
            f"model or adapter folder, and {where}"
        )
    return _resolve_in_run(ref, run, label or None)


def same_base_model(a: str, b: str) -> bool:
    """Whether two :func:`executors.models.load_model` references name the same model (paths compared resolved).

    Example:
        >>> same_base_model("tiny-random", "tiny-random"), same_base_model("/m/x/../y", "/m/y")
        (True, True)
        >>> same_base_model("tiny-random", "smollm2-135m-instruct")
        False
    """
    if a in _NAMED_MODELS or b in _NAMED_MODELS:
        return a == b
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
