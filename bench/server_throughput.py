"""Throughput of the OpenAI-compatible server with 1, 8 and 32 concurrent clients (requests/s, tokens/s).

The server runs in its own process (``executors.serve.serve``), as in production; the clients
are asyncio tasks sharing one ``httpx.AsyncClient``, each sending chat-completion requests one
after the other. Run::

    python bench/server_throughput.py --model tiny-random --requests 128
    python bench/server_throughput.py --model smollm2-135m-instruct --requests 32

Prints a table and writes ``bench/results/server_throughput_<model>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

QUESTIONS = (
    "What is 23 + 45?",
    "Name a prime number larger than 10.",
    "Guess a number between 1 and 100.",
    "What is the capital of France?",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(model: str, port: int, threads: int, wait_ms: float) -> subprocess.Popen[bytes]:
    code = (
        "import torch, sys; torch.set_num_threads(int(sys.argv[3])); from executors.serve import serve; "
        "serve(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]), wait_ms=float(sys.argv[4]), log_level='warning')"
    )
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(
        [sys.executable, "-c", code, model, str(port), str(threads), str(wait_ms)], env=env
    )


async def _wait_ready(base_url: str, server: subprocess.Popen[bytes], timeout: float = 300.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise RuntimeError(f"The server exited with code {server.returncode}")
            try:
                if (await client.get(f"{base_url}/models")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"The server at {base_url} was not ready within {timeout} s")


async def _run_clients(
    base_url: str, model: str, clients: int, total: int, max_tokens: int
) -> dict[str, Any]:
    import httpx

    latencies: list[float] = []
    tokens = 0
    next_request = 0

    async def client_loop(http: httpx.AsyncClient) -> None:
        nonlocal tokens, next_request
        while next_request < total:
            i = next_request
            next_request += 1
            body = {
                "model": model,
                "messages": [{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}],
                "max_tokens": max_tokens,
                "temperature": 1.0,
                "seed": i,
            }
            start = time.perf_counter()
            response = await http.post(f"{base_url}/chat/completions", json=body)
            response.raise_for_status()
            latencies.append(time.perf_counter() - start)
            tokens += response.json()["usage"]["completion_tokens"]

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client_loop(http) for _ in range(clients)))
        wall = time.perf_counter() - start
    latencies.sort()
    return {
        "clients": clients,
        "requests": total,
        "seconds": round(wall, 2),
        "requests_per_s": round(total / wall, 2),
        "tokens_per_s": round(tokens / wall, 1),
        "p50_latency_s": round(latencies[len(latencies) // 2], 3),
    }


def bench_server(
    model: str = "tiny-random",
    clients: tuple[int, ...] = (1, 8, 32),
    requests: int = 64,
    max_tokens: int = 32,
    threads: int = 1,
    wait_ms: float = 5.0,
) -> list[dict[str, Any]]:
    """Serve ``model`` in a subprocess and measure it under each client count; return one row per count.

    Each row: ``clients``, ``requests`` (``requests`` in all, at least one per client),
    ``seconds``, ``requests_per_s``, ``tokens_per_s`` (generated tokens), ``p50_latency_s``.
    """
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    server = _start_server(model, port, threads, wait_ms)
    try:
        asyncio.run(_wait_ready(base_url, server))
        served = "tiny-random" if model == "tiny-random" else model
        # One warm-up request so first-call costs do not land in the 1-client figure.
        asyncio.run(_run_clients(base_url, served, 1, 1, 4))
        return [asyncio.run(_run_clients(base_url, served, n, max(requests, n), max_tokens)) for n in clients]
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 requests per client count")
    parser.add_argument("--model", default="tiny-random")
    parser.add_argument("--clients", default="1,8,32", help="comma-separated client counts")
    parser.add_argument("--requests", type=int, default=64, help="requests per client count")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch threads in the server")
    parser.add_argument("--wait-ms", type=float, default=5.0, help="batch collection window")
    parser.add_argument("--output", type=Path, default=None, help="JSON results file")
    args = parser.parse_args()
    rows = bench_server(
        args.model,
        tuple(int(c) for c in args.clients.split(",")),
        16 if args.quick else args.requests,
        args.max_tokens,
        args.threads,
        args.wait_ms,
    )
    print(f"model={args.model} max_tokens={args.max_tokens} threads={args.threads} wait_ms={args.wait_ms}")
    print(f"{'clients':>7} {'requests':>8} {'seconds':>8} {'req/s':>8} {'tok/s':>8} {'p50 s':>8}")
    for r in rows:
        print(
            f"{r['clients']:>7} {r['requests']:>8} {r['seconds']:>8} {r['requests_per_s']:>8} "
            f"{r['tokens_per_s']:>8} {r['p50_latency_s']:>8}"
        )
    output = (
        args.output or Path(__file__).parent / "results" / f"server_throughput_{Path(args.model).stem}.json"
    )
    report = {
        "benchmark": "server_throughput",
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1min_at_end": os.getloadavg()[0],
        },
        "rows": rows,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
