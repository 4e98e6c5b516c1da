"""OpenAISampler over real HTTP: against our server, and against a scripted server for retries and limits."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.sampling.hf import HFSampler  # noqa: E402
from executors.sampling.openai_http import OpenAIRequestError, OpenAISampler  # noqa: E402
from executors.serve import serving  # noqa: E402
from executors.server import create_app  # noqa: E402
from gym_tinker.policy import ChatPolicy, SamplingParams  # noqa: E402

torch.set_num_threads(1)
PROMPTS = [[1, 40, 41, 42], [1, 50, 51, 52, 53], [1, 60]]
OK_BODY = {
    "choices": [
        {
            "index": 0,
            "text": "fine",
            "finish_reason": "stop",
            "token_ids": [7, 2],
            "logprobs": {"tokens": ["fine", "<e>"], "token_logprobs": [-0.5, -0.25]},
        }
    ]
}


@pytest.fixture(scope="module")
def local():
    return HFSampler(tiny_random_model(seed=0))


@pytest.fixture(scope="module")
def remote(local):
    with (
        serving(create_app(local, model_name="tiny")) as base_url,
        OpenAISampler(base_url, "tiny") as sampler,
    ):
        yield sampler


def test_token_prompts_match_the_local_sampler(remote, local):
    greedy = SamplingParams(max_tokens=8, temperature=0.0)
    got, want = remote.generate(PROMPTS, greedy), local.generate(PROMPTS, greedy)
    for g, w in zip(got, want, strict=True):
        assert g.token_ids == w.token_ids and g.text == w.text and g.finish_reason == w.finish_reason
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-4)
        assert g.prompt_ids == w.prompt_ids


def test_chat_with_tools_and_seeds(remote):
    assert isinstance(remote, ChatPolicy)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Math.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    conversations = [[{"role": "user", "content": "2+3?"}], [{"role": "user", "content": "Guess."}]]
    params = SamplingParams(max_tokens=6, seed=5)
    first = remote(conversations, tools=[tools, None], params=params)
    again = remote(conversations, tools=[tools, None], params=params)
    assert [c.text for c in first] == [c.text for c in again]
    assert all(1 <= len(c.token_ids) <= 6 and len(c.logprobs) == len(c.token_ids) for c in first)
    assert first[0].prompt_ids != first[1].prompt_ids


def test_without_return_token_ids_the_text_and_logprobs_still_come_back(remote):
    plain = OpenAISampler(remote.base_url, "tiny", return_token_ids=False)
    try:
        [c] = plain.generate([PROMPTS[0]], SamplingParams(max_tokens=4, temperature=0.0))
        [want] = remote.generate([PROMPTS[0]], SamplingParams(max_tokens=4, temperature=0.0))
    finally:
        plain.close()
    assert c.token_ids == () and c.text == want.text
    assert c.logprobs == pytest.approx(want.logprobs, abs=1e-6)


def test_adapter_names_an_unknown_model_and_fails_without_retry(remote):
    attempts = remote.attempts
    with pytest.raises(OpenAIRequestError, match=r"HTTP 400.*'nope' does not exist"):
        remote.generate([[1, 2]], SamplingParams(max_tokens=2), adapter="nope")
    assert remote.attempts == attempts + 1


class Scripted:
    """A tiny HTTP server answering POSTs with scripted statuses, recording concurrency."""

    def __init__(self, statuses, delay=0.0, body=None):
        self.statuses = list(statuses)
        self.body = body or OK_BODY
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        script = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with script.lock:
                    status = script.statuses[min(script.calls, len(script.statuses) - 1)]
                    script.calls += 1
                    script.in_flight += 1
                    script.max_in_flight = max(script.max_in_flight, script.in_flight)
                time.sleep(script.delay)
                body = (
                    script.body
                    if status == 200
                    else {
                        "error": {"message": f"scripted {status}", "type": "x", "param": None, "code": None}
                    }
                )
                data = json.dumps(body).encode()
                # Leave the count before answering: once the client has the answer it may send its
                # next request, which must not overlap this one in the count.
                with script.lock:
                    script.in_flight -= 1
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_retries_429_and_5xx_then_succeeds():
    with (
        Scripted([429, 500, 503, 200]) as server,
        OpenAISampler(server.url, "m", retries=3, backoff=0.01) as sampler,
    ):
        [c] = sampler.generate([[1, 2]], SamplingParams(max_tokens=2))
    assert server.calls == 4
    assert (c.text, c.token_ids, c.logprobs, c.finish_reason) == ("fine", (7, 2), (-0.5, -0.25), "stop")


def test_gives_up_after_the_retries_with_the_last_error():
    with Scripted([502]) as server, OpenAISampler(server.url, "m", retries=2, backoff=0.01) as sampler:
        with pytest.raises(OpenAIRequestError, match="after 3 attempts; last error: HTTP 502: scripted 502"):
            sampler.generate([[1]], SamplingParams(max_tokens=2))
    assert server.calls == 3


def test_no_retry_on_other_4xx():
    with Scripted([400, 200]) as server, OpenAISampler(server.url, "m", retries=3, backoff=0.01) as sampler:
        with pytest.raises(OpenAIRequestError, match="HTTP 400: scripted 400"):
            sampler([[{"role": "user", "content": "hi"}]])
    assert server.calls == 1


def test_failed_rows_can_be_error_completions():
    with Scripted([404]) as server, OpenAISampler(server.url, "m", raise_on_error=False) as sampler:
        [c] = sampler.generate([[1]], SamplingParams(max_tokens=2))
    assert c.finish_reason == "error" and "HTTP 404" in c.metadata["error"]


def test_connection_errors_are_retried():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sampler = OpenAISampler(f"http://127.0.0.1:{port}/v1", "m", retries=2, backoff=0.01)
    with pytest.raises(OpenAIRequestError, match="after 3 attempts; last error: ConnectError"):
        sampler.generate([[1]], SamplingParams(max_tokens=2))
    assert sampler.attempts == 3
    sampler.close()


def test_tool_calls_parsed_by_the_server_stay_in_the_text():
    from gym_tinker.parsing import parse_tool_calls

    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "calculator", "arguments": '{"expression": "2+3"}'},
    }
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ]
    }
    with Scripted([200], body=body) as server, OpenAISampler(server.url, "m") as sampler:
        [c] = sampler([[{"role": "user", "content": "2+3?"}]])
    calls, errors = parse_tool_calls(c.text)
    assert [(x.name, x.arguments) for x in calls] == [("calculator", {"expression": "2+3"})] and not errors
    assert c.metadata["tool_calls"] == [call] and c.finish_reason == "stop"


def test_concurrency_is_limited():
    with Scripted([200], delay=0.05) as server, OpenAISampler(server.url, "m", max_concurrency=2) as sampler:
        out = sampler.generate([[1]] * 6, SamplingParams(max_tokens=2))
    assert len(out) == 6 and server.calls == 6
    assert server.max_in_flight == 2


def test_bad_arguments():
    with pytest.raises(ValueError, match="http"):
        OpenAISampler("localhost:8000", "m")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAISampler("http://x/v1", "m", max_concurrency=0)
