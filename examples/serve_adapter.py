"""Serve a trained LoRA adapter with ``gym-tinker serve`` and call it with the OpenAI client.

``gym-tinker serve --model BASE --adapter NAME=PATH`` loads the base model once and serves each
adapter under its own name through an OpenAI-compatible API (``/v1/models``,
``/v1/completions``, ``/v1/chat/completions``); a request picks the adapter with
``model=NAME``, or the base model with its own name. ``PATH`` is an adapter folder (a run's
``adapter/`` or ``snapshots/step-N/``) or a run's model name as ``gym-tinker models`` lists it
(``<run>/<step>``, ``<run>/final``).

This script starts the server as a subprocess on a free port, waits until it answers, asks
the adapter one Math-v0-style question with ``openai.OpenAI(...).chat.completions.create``, prints the
reply and stops the server.

Run::

    python examples/grpo_math.py --out runs/grpo-math        # train an adapter first, then:
    python examples/serve_adapter.py --adapter runs/grpo-math/adapter
    python examples/serve_adapter.py --adapter grpo-math/final     # by name, from ./runs
    python examples/serve_adapter.py --quick    # trains a 2-step tiny GRPO adapter first (the test)

The same server from a shell::

    gym-tinker serve --model smollm2-135m-instruct --adapter math=runs/grpo-math/adapter --port 8000
    curl localhost:8000/v1/chat/completions -H 'content-type: application/json' \\
         -d '{"model": "math", "messages": [{"role": "user", "content": "What is 7 * 6?"}]}'
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import executors

QUESTION = "What is 17 + 25? Give the final answer as <answer>...</answer>."


def train_tiny_adapter(folder: Path) -> Path:
    """A 2-step GRPO job with LoRA on the tiny random model, on the embedded cluster; returns ``adapter/``."""
    params = {"steps": 2, "prompts_per_step": 2, "group_size": 2, "max_tokens": 8, "eval_episodes": 0}
    spec = {
        "kind": "grpo",
        "name": "serve-demo",
        "model": "tiny-random",
        "adapter": {"r": 4, "dropout": 0.0},
        "env": "tinker/Math-v0",
        "output_dir": str(folder),
        "params": {**params, "report_to": "none", "threads": 1},
    }
    with executors.connect(n_workers=1, threads_per_worker=1) as client:
        result = client.submit(spec).result()
    print(f"trained a {result.get('steps', 2)}-step GRPO adapter: {folder / 'adapter'}")
    return folder / "adapter"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_serving(base_url: str, server: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            raise SystemExit(
                f"gym-tinker serve exited with code {server.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(
                f"gym-tinker serve did not answer within {timeout} s:\n{log.read_text()[-3000:]}"
            )
        time.sleep(0.25)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None, help="adapter folder, or a run's model name (run/step)")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="the adapter's base model")
    parser.add_argument("--name", default="math", help="the adapter's name in the API")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="train a tiny adapter first (for the test)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="serve-adapter-"))
    if args.quick:
        args.model, args.max_tokens = "tiny-random", 8
        args.adapter = args.adapter or str(train_tiny_adapter(work / "run"))
    if args.adapter is None:
        parser.error("give --adapter FOLDER_OR_RUN_NAME (train one with examples/grpo_math.py), or --quick")

    from openai import OpenAI

    gym_tinker = Path(sys.executable).parent / "gym-tinker"
    command = str(gym_tinker) if gym_tinker.exists() else shutil.which("gym-tinker") or "gym-tinker"
    port = free_port()
    log = work / "serve.log"
    server = subprocess.Popen(
        [
            command,
            "serve",
            "--model",
            args.model,
            "--adapter",
            f"{args.name}={args.adapter}",
            "--port",
            str(port),
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_serving(base_url, server, log, timeout=180)
        print(f"gym-tinker serve (pid {server.pid}) is up at {base_url}")
        client = OpenAI(base_url=base_url, api_key="not-needed")
        print("models:", [model.id for model in client.models.list().data])
        reply = client.chat.completions.create(
            model=args.name,  # the adapter; the base model's name would skip it
            messages=[{"role": "user", "content": QUESTION}],
            max_tokens=args.max_tokens,
            temperature=0.0,
        )
        text = reply.choices[0].message.content or ""
        tokens = reply.usage.completion_tokens if reply.usage else "?"
        print(f"user: {QUESTION}\n{args.name}: {text!r}  ({tokens} tokens)")
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        print("server stopped")
    return text


if __name__ == "__main__":
    main()
