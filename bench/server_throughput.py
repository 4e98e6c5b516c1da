"""Throughput of the OpenAI-compatible server with 1, 8 and 32 concurrent clients (requests/s, tokens/s).

The server runs in its own process (``executors.serve.serve``), as in production; the clients
are asyncio tasks sharing one ``httpx.AsyncClient``, each sending chat-completion requests one
after the other. Run::

    python bench/server_throughput.py --model tiny-random --requests 128
    python bench/server_throughput.py --model smollm2-135m-instruct --requests 32

Prints a table and writes ``bench/results/server_throughput_<model>.json``.

``--flood`` measures instead how other clients fare while oversized requests are rejected: one
thread sends 5 MB completion prompts in a loop while another times ``GET /v1/models``, with the
default request cap (the prompts get 413 unread) and with the cap raised above them (they are
parsed and tokenized, then get 400 ``context_length_exceeded``). Prints p50/p99 latencies and
writes ``bench/results/server_flood_<model>.json``::

    python bench/server_throughput.py --flood --model tiny-random
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
import threading
import time
from collections import Counter
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


def _start_server(
    model: str, port: int, threads: int, wait_ms: float, **options: Any
) -> subprocess.Popen[bytes]:
    code = (
        "import json, torch, sys; torch.set_num_threads(int(sys.argv[3])); from executors.serve import serve; "
        "serve(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]), wait_ms=float(sys.argv[4]), "
        "log_level='warning', **json.loads(sys.argv[5]))"
    )
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    env.pop("GYM_TINKER_API_KEY", None)  # the bench's clients send no key
    return subprocess.Popen(
        [sys.executable, "-c", code, model, str(port), str(threads), str(wait_ms), json.dumps(options)],
        env=env,
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


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _flood_round(base_url: str, model: str, prompt_bytes: int | None, seconds: float) -> dict[str, Any]:
    """Time ``GET /v1/models`` for ``seconds`` while one thread sends ``prompt_bytes`` prompts (None: none)."""
    import httpx

    stop = threading.Event()
    statuses: Counter[str] = Counter()
    body = None
    if prompt_bytes is not None:
        words = "word " * (prompt_bytes // 5)
        body = json.dumps({"model": model, "prompt": words, "max_tokens": 1}).encode()

    def flood() -> None:
        with httpx.Client(timeout=600) as http:
            while not stop.is_set():
                try:
                    response = http.post(
                        f"{base_url}/completions", content=body, headers={"content-type": "application/json"}
                    )
                    statuses[str(response.status_code)] += 1
                except httpx.TransportError as err:
                    statuses[type(err).__name__] += 1

    flooder = threading.Thread(target=flood, daemon=True) if body is not None else None
    latencies: list[float] = []
    with httpx.Client(timeout=600) as http:
        http.get(f"{base_url}/models").raise_for_status()
        if flooder is not None:
            flooder.start()
            time.sleep(0.5)  # let the first big request reach the server
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            start = time.perf_counter()
            http.get(f"{base_url}/models").raise_for_status()
            latencies.append(time.perf_counter() - start)
            time.sleep(0.01)
    stop.set()
    if flooder is not None:
        flooder.join(600)
    latencies.sort()
    return {
        "prompt_bytes": prompt_bytes,
        "big_requests": dict(statuses),
        "models_requests": len(latencies),
        "models_p50_ms": round(1000 * _percentile(latencies, 0.50), 1),
        "models_p99_ms": round(1000 * _percentile(latencies, 0.99), 1),
        "models_max_ms": round(1000 * latencies[-1], 1),
    }


def bench_flood(
    model: str = "tiny-random",
    prompt_bytes: int = 5_000_000,
    seconds: float = 20.0,
    threads: int = 1,
    caps: tuple[int | None, ...] = (None, 8 * 1024 * 1024),
) -> list[dict[str, Any]]:
    """``GET /v1/models`` latency while ``prompt_bytes`` prompts are sent in a loop, once per request cap.

    ``caps``: the server's ``max_request_bytes`` per row (None: its default). Each row also has
    a round without the flood, for comparison.
    """
    rows = []
    for cap in caps:
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}/v1"
        options = {} if cap is None else {"max_request_bytes": cap}
        server = _start_server(model, port, threads, 5.0, **options)
        try:
            asyncio.run(_wait_ready(base_url, server))
            quiet = _flood_round(base_url, model, None, min(seconds, 5.0))
            loaded = _flood_round(base_url, model, prompt_bytes, seconds)
        finally:
            server.terminate()
            server.wait(30)
        rows.append({"max_request_bytes": cap or "default", "quiet": quiet, "flood": loaded})
    return rows


def _main_flood(args: argparse.Namespace) -> None:
    caps = tuple(None if c == "default" else int(c) for c in args.caps.split(","))
    rows = bench_flood(args.model, args.prompt_bytes, 5.0 if args.quick else args.seconds, args.threads, caps)
    print(f"model={args.model} prompt_bytes={args.prompt_bytes} threads={args.threads}")
    print(
        f"{'cap':>9} {'big requests':>26} {'GETs':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}  (quiet p50/p99)"
    )
    for r in rows:
        f, q = r["flood"], r["quiet"]
        answers = ", ".join(f"{n}x {status}" for status, n in f["big_requests"].items())
        print(
            f"{r['max_request_bytes']!s:>9} {answers:>26} {f['models_requests']:>6} {f['models_p50_ms']:>7} "
            f"{f['models_p99_ms']:>7} {f['models_max_ms']:>7}  ({q['models_p50_ms']}/{q['models_p99_ms']})"
        )
    output = args.output or Path(__file__).parent / "results" / f"server_flood_{Path(args.model).stem}.json"
    _write_report(output, "server_flood", args, rows)


def _write_report(output: Path, name: str, args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    report = {
        "benchmark": name,
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
    parser.add_argument(
        "--flood", action="store_true", help="time GET /v1/models while oversized prompts are rejected"
    )
    parser.add_argument("--prompt-bytes", type=int, default=5_000_000, help="--flood: size of each prompt")
    parser.add_argument("--seconds", type=float, default=20.0, help="--flood: how long each round lasts")
    parser.add_argument(
        "--caps",
        default="default,8388608",
        help="--flood: the server's request caps in bytes, 'default' or a number",
    )
    args = parser.parse_args()
    if args.flood:
        _main_flood(args)
        return
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
    _write_report(output, "server_throughput", args, rows)


if __name__ == "__main__":
    main()
