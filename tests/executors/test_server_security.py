"""The server on a network: API keys, size caps, tokenizing off the event loop, OpenAI error bodies, a fuzzer."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.sampling.hf import HFSampler  # noqa: E402
from executors.serve import serving  # noqa: E402
from executors.server import create_app  # noqa: E402
from executors.server.guard import DRAIN_BYTES  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
MODEL = "tiny"
ADAPTER = "myrun/20"  # a run's model name: the slash must survive GET /v1/models/{id}
KEY = "sk-test-0123456789"
CAP = 64 * 1024  # the test server's --max-request-bytes
AUTH = {"authorization": f"Bearer {KEY}"}
ERROR_KEYS = {"message", "type", "param", "code"}


def error_of(response: Any) -> dict[str, Any]:
    """The ``error`` object of an OpenAI-style error body (fails the test for any other body)."""
    body = response.json()
    assert set(body) == {"error"}, response.text
    assert set(body["error"]) == ERROR_KEYS, response.text
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_random_model(seed=0)
    peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    path = tmp_path_factory.mktemp("lora") / "a"
    peft_model.save_pretrained(path)
    sampler = HFSampler(tiny_random_model(seed=0))
    sampler.load_adapter(ADAPTER, path)
    return sampler


@pytest.fixture(scope="module")
def base_url(sampler):
    app = create_app(sampler, model_name=MODEL, api_key=KEY, max_request_bytes=CAP, default_max_tokens=4)
    with serving(app) as url:
        yield url


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def client(base_url):
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=30) as client:
        yield client


def test_the_right_key_is_served_and_a_wrong_or_missing_one_gets_401(base_url, client):
    assert {m.id for m in client.models.list().data} == {MODEL, ADAPTER}
    with openai.OpenAI(base_url=base_url, api_key="sk-wrong", max_retries=0) as wrong:
        with pytest.raises(openai.AuthenticationError) as info:
            wrong.completions.create(model=MODEL, prompt="hi", max_tokens=1)
    assert info.value.code == "invalid_api_key"
    for headers in (
        {},
        {"authorization": KEY},
        {"authorization": f"Basic {KEY}"},
        {"authorization": "Bearer"},
    ):
        for method, path in (("GET", "/models"), ("POST", "/chat/completions"), ("GET", "/nope")):
            response = httpx.request(method, f"{base_url}{path}", headers=headers, json={}, timeout=30)
            assert response.status_code == 401, (headers, path, response.text)
            assert error_of(response)["code"] == "invalid_api_key"
            assert KEY not in response.text
    assert httpx.get(f"{base_url.removesuffix('/v1')}/health", timeout=30).status_code == 200


def test_models_retrieve_gives_the_model_or_a_404(client):
    assert client.models.retrieve(MODEL).id == MODEL
    adapter = client.models.retrieve(ADAPTER)
    assert adapter.id == ADAPTER and adapter.model_extra["parent"] == MODEL
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("no-such-model")
    assert info.value.code == "model_not_found" and "no-such-model" in info.value.message


MALFORMED = [
    # (method, path, headers, body, status, what the message says)
    ("POST", "/completions", {}, b"\xff\xfe{not utf-8", 400, "not valid UTF-8"),
    ("POST", "/completions", {}, b"[" * 5000 + b"]" * 5000, 400, "nested too deeply"),
    (
        "POST",
        "/completions",
        {},
        b'{"model": "tiny", "prompt": "x", "tools": ' + b"[" * 100 + b"]" * 100 + b"}",
        400,
        "nested too deeply",
    ),
    ("POST", "/completions", {}, b'{"model": "tiny", "prompt": "\\ud800 lone"}', 400, "not valid Unicode"),
    (
        "POST",
        "/completions",
        {},
        b'{"model": "tiny", "prompt": "x", "seed": ' + b"9" * 5000 + b"}",
        400,
        "not valid JSON",
    ),
    ("POST", "/completions", {}, b"", 400, "not valid JSON"),
    (
        "POST",
        "/completions",
        {"content-type": "text/plain"},
        b'{"model": "tiny", "prompt": "x"}',
        415,
        "application/json",
    ),
    (
        "POST",
        "/chat/completions",
        {"content-type": "application/x-www-form-urlencoded"},
        b"model=tiny",
        415,
        "application/json",
    ),
    ("GET", "/no/such/route", {}, b"", 404, "Unknown URL"),
    ("DELETE", "/models", {}, b"", 405, "not allowed"),
    ("GET", "/completions", {}, b"", 405, "not allowed"),
]


@pytest.mark.parametrize(("method", "path", "headers", "body", "status", "says"), MALFORMED)
def test_malformed_requests_get_openai_error_bodies(http, method, path, headers, body, status, says):
    headers = {"content-type": "application/json", **headers, **AUTH}
    response = http.request(method, path, content=body, headers=headers)
    assert response.status_code == status, response.text
    error = error_of(response)
    assert says in error["message"] and error["type"] == "invalid_request_error"


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, **extra}


TOOLS = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
INVALID_VALUES = [
    (chat(seed=-1), "seed", "[0, 2**63 - 1]"),
    (chat(seed=2**200), "seed", "[0, 2**63 - 1]"),
    (chat(seed=2**63), "seed", "9223372036854775808"),
    (chat(stop=[""]), "stop", "non-empty"),
    (chat(stop=["ok", ""]), "stop", "non-empty"),
    (chat(stop=""), "stop", "non-empty"),
    (
        chat(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "search"}}),
        "tool_choice",
        "'search'",
    ),
    (chat(tool_choice="required"), "tool_choice", "no tools"),
    (chat(tools=TOOLS, tool_choice={"type": "function"}), "tool_choice", "expected 'none'"),
    (chat(response_format="x"), "response_format", "valid dictionary, got 'x'"),
    (chat(response_format={"type": "xml"}), "response_format", "'json_schema'"),
    (chat(response_format={"type": "json_schema"}), "response_format", "'json_schema' object"),
]


@pytest.mark.parametrize(("body", "param", "says"), INVALID_VALUES)
def test_invalid_values_get_400_naming_the_field_and_the_value(client, body, param, says):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**body)
    assert info.value.param == param
    assert says in info.value.message


NAMED = {"type": "function", "function": {"name": "calculator"}}
EDGES = [
    # (served, rejected): the last valid value beside the first invalid one
    (chat(seed=2**63 - 1), chat(seed=2**63)),
    (chat(seed=0), chat(seed=-1)),
    (chat(stop=["\n\n"]), chat(stop=["\n\n", ""])),
    (chat(tools=TOOLS, tool_choice=NAMED), chat(tool_choice=NAMED)),
    (chat(tools=TOOLS, tool_choice="required"), chat(tools=[], tool_choice="required")),
    (chat(tool_choice="none"), chat(tool_choice="auto")),
    (
        chat(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}),
        chat(response_format={"type": "json_schema", "schema": {}}),
    ),
    (chat(response_format={"type": "json_object"}), chat(response_format={"type": "json"})),
]


@pytest.mark.parametrize(("served", "rejected"), EDGES)
def test_the_last_valid_value_is_served_and_the_first_invalid_one_rejected(client, served, rejected):
    assert client.chat.completions.create(**served).choices[0].message.role == "assistant"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(**rejected)


def test_a_body_over_the_cap_gets_413_whether_its_length_is_declared_or_not(client, http):
    body = chat(messages=[{"role": "user", "content": "x" * CAP}])
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(**body)
    assert info.value.status_code == 413 and str(CAP) in info.value.message

    def chunks():
        # Valid JSON, padded past the cap: only the size is wrong.
        yield json.dumps(chat()).encode()
        for _ in range(4):
            yield b" " * (CAP // 2)

    response = http.post("/chat/completions", content=chunks(), headers=AUTH)
    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert response.status_code == 413
    assert error_of(response)["type"] == "invalid_request_error"
    assert http.post("/chat/completions", json=chat(), headers=AUTH).status_code == 200


def test_an_endless_body_is_cut_off_not_read_to_its_end(http):
    sent = 0

    def endless():
        nonlocal sent
        while sent < 2 * DRAIN_BYTES:  # a bound, so that a server that reads it all fails rather than hangs
            sent += 1 << 20
            yield b" " * (1 << 20)

    try:
        status = http.post("/completions", content=endless(), headers=AUTH).status_code
    except httpx.TransportError:
        status = None  # the server closed the connection; the 413 may be lost with it
    assert status in (413, None)
    assert sent < 2 * DRAIN_BYTES
    assert http.get("/models", headers=AUTH).status_code == 200


@pytest.mark.parametrize("key", [KEY, "sk-wrong"])
def test_a_client_waiting_for_100_continue_is_answered_before_it_sends_the_body(base_url, key):
    import socket

    url = httpx.URL(base_url)
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: {url.host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {100 * CAP}\r\nExpect: 100-continue\r\n\r\n"
    )
    with socket.create_connection((url.host, url.port), timeout=30) as sock:
        sock.sendall(head.encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            assert chunk, f"the server closed the connection without answering: {answer!r}"
            answer += chunk
    status = answer.split(b" ", 2)[1]
    assert status == (b"413" if key == KEY else b"401"), answer


class _Gate:
    """Blocks the wrapped call until released, so a test can hold one request mid-tokenizing."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        assert self.release.wait(60), "the test never released the gate"
        return self.inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _GatedSampler:
    """The sampler, with its tokenizer's ``__call__`` and its renderer's ``render`` behind gates."""

    def __init__(self, sampler: Any) -> None:
        self._sampler = sampler
        self.tokenizer = _Gate(sampler.tokenizer)
        self.renderer = type("Renderer", (), {"render": staticmethod(_Gate(sampler.renderer.render))})()
        self.gates = {"completions": self.tokenizer, "chat/completions": self.renderer.render}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sampler, name)


@pytest.mark.parametrize("path", ["completions", "chat/completions"])
def test_a_prompt_being_tokenized_does_not_hold_up_other_clients(sampler, path):
    gated = _GatedSampler(sampler)
    gate = gated.gates[path]
    long_text = "many words " * 3000  # over the 4096-token context
    body = {"model": MODEL, "prompt": long_text, "messages": [{"role": "user", "content": long_text}]}
    with serving(create_app(gated, model_name=MODEL)) as url, ThreadPoolExecutor(1) as pool:
        pending = pool.submit(httpx.post, f"{url}/{path}", json=body, timeout=60)
        try:
            assert gate.entered.wait(30)
            # The event loop must answer while the prompt's tokenizing is blocked on its thread.
            models = httpx.get(f"{url}/models", timeout=10)
            assert models.status_code == 200
        finally:
            gate.release.set()
        response = pending.result(60)
    assert response.status_code == 400
    assert error_of(response)["code"] == "context_length_exceeded"


class _BrokenSampler:
    def __init__(self, sampler: Any) -> None:
        self._sampler = sampler

    def generate_rows(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret detail at /srv/internal/weights.bin")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sampler, name)


def test_an_internal_error_is_a_generic_500_that_reveals_nothing(sampler, caplog):
    with serving(create_app(_BrokenSampler(sampler), model_name=MODEL)) as url:
        response = httpx.post(f"{url}/chat/completions", json=chat(), timeout=30)
    assert response.status_code == 500
    error = error_of(response)
    assert error["type"] == "server_error"
    assert "secret" not in response.text and "RuntimeError" not in response.text
    assert "error id" in error["message"]
    logged = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert "secret detail" in logged


def _serve_cli():
    import typer

    from executors.serve import serve_command

    app = typer.Typer()
    app.command("serve")(serve_command)
    app.command("other")(lambda: None)
    return app


@pytest.mark.parametrize(
    ("args", "env", "key"),
    [
        ([], {"GYM_TINKER_API_KEY": "sk-env"}, "sk-env"),
        (["--api-key", "sk-flag"], {"GYM_TINKER_API_KEY": "sk-env"}, "sk-flag"),
    ],
)
def test_serve_command_takes_the_key_and_the_cap_from_flags_or_the_environment(monkeypatch, args, env, key):
    import uvicorn
    from typer.testing import CliRunner

    apps = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: apps.append(app))
    argv = ["serve", "--model", "tiny-random", "--max-request-bytes", "2000", *args]
    result = CliRunner().invoke(_serve_cli(), argv, env=env)
    assert result.exit_code == 0, result.output
    [app] = apps
    with serving(app) as url:
        assert httpx.get(f"{url}/models", timeout=30).status_code == 401
        assert (
            httpx.get(f"{url}/models", headers={"authorization": "Bearer sk-env-x"}, timeout=30).status_code
            == 401
        )
        assert (
            httpx.get(f"{url}/models", headers={"authorization": f"Bearer {key}"}, timeout=30).status_code
            == 200
        )
        big = httpx.post(
            f"{url}/completions",
            json={"model": "tiny-random", "prompt": "x" * 3000},
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert big.status_code == 413


# The fuzzer: whole requests, mostly hostile, against the keyed server; none may get a 5xx or hang.

_HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([-1, 0, 1, 3, 2**31, 2**63, -(2**63) - 1, 2**200, 1e308, -0.0, 0.5]),
    st.sampled_from(["", "\ud800", "\x00", "tiny", "auto", "none", "required", "x" * 5000]),
    st.text(max_size=20),
    st.lists(st.sampled_from(["", "a", 1, None, "\udfff"]), max_size=5),
    st.dictionaries(
        st.sampled_from(["type", "function", "name", "json_schema", "include_usage"]), st.text(max_size=5)
    ),
    st.integers(1, 5).map(lambda depth: json.loads("[" * depth * 20 + "]" * depth * 20)),
)
_FIELDS = [
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stop",
    "seed", "stream", "stream_options", "logprobs", "top_logprobs", "echo", "tools", "tool_choice",
    "response_format", "return_token_ids",
]  # fmt: skip


@st.composite
def _json_body(draw: Any) -> bytes:
    base: dict[str, Any] = {"model": draw(st.sampled_from([MODEL, ADAPTER])), "max_tokens": 2}
    if draw(st.booleans()):
        base |= {"prompt": "hi", "messages": [{"role": "user", "content": "hi"}]}
    base |= draw(st.dictionaries(st.sampled_from(_FIELDS), _HOSTILE, max_size=3))
    return json.dumps(base).encode()


_BODIES = st.one_of(
    _json_body(),
    st.binary(max_size=300),
    st.integers(1, 6000).map(lambda d: b"[" * d + b"]" * d),
    st.integers(1, 6000).map(lambda d: b'{"a":' * d),
    st.integers(CAP - 100, CAP + 100).map(lambda n: json.dumps({"model": MODEL, "prompt": "x" * n}).encode()),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=10,
    ).map(lambda value: json.dumps(value).encode()),
)
_PATHS = st.one_of(
    st.sampled_from(
        ["/completions", "/chat/completions", "/models", f"/models/{MODEL}", "/models/x/y", "/models/", "/"]
    ),
    # One random segment; "/" and "\\" are left out so that httpx never reads it as another host.
    st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/\\?#%"), max_size=20).map(
        lambda s: "/" + s
    ),
)
_HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30).map(str.strip)
_HEADERS = st.fixed_dictionaries(
    {
        "authorization": st.sampled_from(
            [f"Bearer {KEY}"] * 6 + ["", "Bearer", f"bearer {KEY}x", f"Basic {KEY}"]
        ),
        "content-type": st.sampled_from(
            ["application/json"] * 4
            + ["", "text/plain", "application/json; charset=latin-1", "multipart/form-data"]
        ),
    },
    optional={
        name: _HEADER_TEXT
        for name in ("accept", "accept-encoding", "user-agent", "openai-organization", "x-request-id", "x-a")
    },
)


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    method=st.sampled_from(["POST"] * 6 + ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    path=_PATHS,
    headers=_HEADERS,
    body=_BODIES,
)
def test_fuzzed_requests_never_get_a_5xx_or_hang_and_errors_have_the_openai_shape(
    http, method, path, headers, body
):
    headers = {name: value for name, value in headers.items() if value}
    try:
        response = http.request(method, path, content=body, headers=headers)
    except httpx.TimeoutException:
        pytest.fail(f"no answer within 30 s to {method} {path}")
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        error_of(response)
