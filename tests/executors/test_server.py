"""The OpenAI-compatible server over real HTTP on loopback: the openai client, streaming, batching, 400s."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

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
from executors.serve import parse_adapter_specs, serving  # noqa: E402
from executors.server import create_app  # noqa: E402
from executors.server.responses import chat_message  # noqa: E402
from gym_tinker.policy import SamplingParams  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
MODEL = "tiny"


@pytest.fixture(scope="module")
def adapter_path(tmp_path_factory):
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_random_model(seed=0)
    torch.manual_seed(1)
    peft_model = get_peft_model(
        model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    path = tmp_path_factory.mktemp("lora") / "a"
    peft_model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def sampler(adapter_path):
    sampler = HFSampler(tiny_random_model(seed=0))
    sampler.load_adapter("lora-a", adapter_path)
    return sampler


@pytest.fixture(scope="module")
def server(sampler):
    app = create_app(sampler, model_name=MODEL, wait_ms=20)
    with serving(app) as base_url:
        yield base_url, app


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server[0], api_key="unused", max_retries=0) as client:
        yield client


def test_models_lists_the_base_and_its_adapters(client):
    models = {m.id: m for m in client.models.list().data}
    assert set(models) == {MODEL, "lora-a"}
    assert models["lora-a"].model_extra["parent"] == MODEL


def test_completion_with_text_prompt_and_logprobs(client, sampler):
    r = client.completions.create(model=MODEL, prompt="What is 2+3?", max_tokens=6, temperature=0, logprobs=0)
    choice = r.choices[0]
    prompt = sampler.tokenizer("What is 2+3?")["input_ids"]
    [local] = sampler.generate([prompt], SamplingParams(max_tokens=6, temperature=0.0))
    assert choice.text == local.text
    assert choice.logprobs.token_logprobs == pytest.approx(local.logprobs, abs=1e-4)
    assert r.usage.prompt_tokens == len(prompt) and r.usage.completion_tokens == len(local.token_ids)


def test_completion_with_token_ids_returns_token_ids(server, sampler):
    body = {
        "model": MODEL,
        "prompt": [[1, 40, 41], [1, 50]],
        "max_tokens": 5,
        "temperature": 0,
        "return_token_ids": True,
    }
    r = httpx.post(f"{server[0]}/completions", json=body)
    assert r.status_code == 200, r.text
    local = sampler.generate([[1, 40, 41], [1, 50]], SamplingParams(max_tokens=5, temperature=0.0))
    for choice, c in zip(r.json()["choices"], local, strict=True):
        assert choice["token_ids"] == list(c.token_ids)
        assert choice["prompt_token_ids"] == list(c.prompt_ids)


def test_model_field_selects_the_adapter(client, sampler):
    ask = dict(prompt=[1, 40, 41, 42], max_tokens=8, temperature=0, extra_body={"return_token_ids": True})
    base = client.completions.create(model=MODEL, **ask).choices[0].model_extra["token_ids"]
    tuned = client.completions.create(model="lora-a", **ask).choices[0].model_extra["token_ids"]
    [local] = sampler.generate(
        [[1, 40, 41, 42]], SamplingParams(max_tokens=8, temperature=0.0), adapter="lora-a"
    )
    assert tuned == list(local.token_ids) and tuned != base


def test_chat_completion_with_tools_and_seed(client, sampler):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Math.",
                "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
            },
        }
    ]
    messages = [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "2+3?"}]
    ask = dict(model=MODEL, messages=messages, tools=tools, max_tokens=8, seed=7, logprobs=True)
    first, again = client.chat.completions.create(**ask), client.chat.completions.create(**ask)
    assert first.choices[0].message.content == again.choices[0].message.content
    assert first.choices[0].message.role == "assistant"
    assert len(first.choices[0].logprobs.content) == first.usage.completion_tokens
    assert first.usage.prompt_tokens == len(sampler.renderer.render(messages, tools=tools))


def test_tool_calls_are_parsed_into_openai_form():
    text = 'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+3"}}\n</tool_call>'
    message, called = chat_message(text, parse_tools=True)
    assert called and message["content"] == "Let me compute."
    [call] = message["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call-")
    assert json.loads(call["function"]["arguments"]) == {"expression": "2+3"}
    assert chat_message(text, parse_tools=False) == ({"role": "assistant", "content": text}, False)


def test_streaming_gives_the_same_text_as_a_plain_request(client):
    ask = dict(model=MODEL, prompt="Guess a number", max_tokens=12, seed=3)
    plain = client.completions.create(**ask).choices[0]
    chunks = list(client.completions.create(stream=True, **ask))
    assert "".join(c.choices[0].text for c in chunks) == plain.text
    assert chunks[-1].choices[0].finish_reason == plain.finish_reason
    chat = dict(model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=12, seed=3)
    plain_chat = client.chat.completions.create(**chat).choices[0].message.content
    streamed = [c for c in client.chat.completions.create(stream=True, **chat)]
    assert streamed[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == plain_chat


def test_streaming_never_sends_the_stop_string(client):
    ask = dict(model=MODEL, prompt=[1, 50, 51, 52], max_tokens=24, temperature=0)
    full = client.completions.create(**ask).choices[0].text
    at = next(
        k for k in range(3, len(full) - 3) if full[k : k + 3].isascii() and full[k : k + 3].isprintable()
    )
    stop = full[at : at + 3]
    plain = client.completions.create(stop=[stop], **ask).choices[0]
    streamed = "".join(c.choices[0].text for c in client.completions.create(stop=[stop], stream=True, **ask))
    assert plain.finish_reason == "stop"
    assert plain.text == full[: full.find(stop)] == streamed


def test_streaming_with_tools_holds_text_for_the_final_chunk_and_reports_usage(client):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "description": "F.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    ask = dict(model=MODEL, messages=[{"role": "user", "content": "Hi"}], tools=tools, max_tokens=10, seed=4)
    plain = client.chat.completions.create(logprobs=True, **ask).choices[0]
    chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **ask))
    with_choices = [c for c in chunks if c.choices]
    assert [c.choices[0].delta.content for c in with_choices[:-1]] == [""]
    assert with_choices[-1].choices[0].delta.content == plain.message.content
    assert with_choices[-1].choices[0].finish_reason == plain.finish_reason
    assert chunks[-1].usage.completion_tokens == len(plain.logprobs.content)


def test_n_completions_per_prompt(server):
    body = {
        "model": MODEL,
        "prompt": ["a", "b"],
        "n": 3,
        "max_tokens": 5,
        "seed": 1,
        "return_token_ids": True,
    }
    choices = httpx.post(f"{server[0]}/completions", json=body).json()["choices"]
    assert [c["index"] for c in choices] == list(range(6))
    assert len({tuple(c["token_ids"]) for c in choices[:3]}) == 3
    assert choices[0]["prompt_token_ids"] != choices[3]["prompt_token_ids"]


def test_concurrent_clients_are_batched(client, server):
    engine = server[1].state.engine
    before_batches, before_requests = engine.batches, engine.requests

    def ask(i: int) -> str:
        return (
            client.completions.create(model=MODEL, prompt=f"Player {i} moves", max_tokens=16, seed=i)
            .choices[0]
            .text
        )

    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(ask, range(16)))
    assert len(texts) == 16
    assert engine.requests - before_requests == 16
    assert engine.batches - before_batches < 16


BAD_REQUESTS = [
    ("completions", b"{not json", None),
    ("completions", b"[1, 2]", None),
    ("completions", b'{"model": "tiny"}', "prompt"),
    ("completions", b'{"prompt": "x"}', "model"),
    ("completions", b'{"model": "tiny", "prompt": "x", "max_tokens": "5"}', "max_tokens"),
    ("completions", b'{"model": "tiny", "prompt": "x", "temperature": -1}', "temperature"),
    ("completions", b'{"model": "tiny", "prompt": [1, 100000]}', "prompt"),
    ("completions", b'{"model": "tiny", "prompt": ""}', "prompt"),
    ("completions", b'{"model": "nope", "prompt": "x"}', "model"),
    ("completions", b'{"model": "tiny", "prompt": "x", "max_tokens": 5000}', "max_tokens"),
    ("completions", b'{"model": "tiny", "prompt": "x", "top_p": NaN}', "top_p"),
    ("completions", b'{"model": "tiny", "prompt": "x", "temperature": Infinity}', "temperature"),
    ("completions", b'{"model": "tiny", "prompt": [[1], []]}', "prompt"),
    ("completions", b'{"model": "tiny", "prompt": "x", "logprobs": 5}', "logprobs"),
    ("chat/completions", b'{"model": "tiny", "messages": []}', "messages"),
    (
        "chat/completions",
        b'{"model": "tiny", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
        "messages",
    ),
    ("chat/completions", b'{"model": "tiny", "messages": [{"role": "wizard", "content": "x"}]}', "messages"),
    (
        "chat/completions",
        b'{"model": "tiny", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}',
        "tools",
    ),
]


@pytest.mark.parametrize(("path", "body", "param"), BAD_REQUESTS)
def test_bad_requests_get_400_with_an_openai_error_body(server, path, body, param):
    r = httpx.post(f"{server[0]}/{path}", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["message"]
    assert error["param"] == param


_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 70000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
_KEYS = st.sampled_from(["role", "content", "type", "text", "function", "name", "tool_calls", "arguments"])
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=8,
)
_FIELDS = [
    "prompt",
    "messages",
    "temperature",
    "top_p",
    "n",
    "stop",
    "seed",
    "stream",
    "logprobs",
    "tools",
    "tool_choice",
    "return_token_ids",
    "top_logprobs",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(["completions", "chat/completions"]),
    extra=st.dictionaries(st.sampled_from(_FIELDS), _VALUE, max_size=4),
    valid_base=st.booleans(),
)
def test_arbitrary_json_fields_get_200_or_400_never_500(server, path, extra, valid_base):
    body = {"model": MODEL, "max_tokens": 2}
    if valid_base:
        body |= {"prompt": "hi", "messages": [{"role": "user", "content": "hi"}]}
    body |= extra
    response = httpx.post(f"{server[0]}/{path}", json=body, timeout=60)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_over_long_prompt_is_a_400_that_says_so(client):
    prompt = [1] * 4096
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt=prompt, max_tokens=4)
    assert "maximum context length is 4096 tokens" in str(info.value)
    assert info.value.code == "context_length_exceeded"


def test_adapter_specs():
    assert parse_adapter_specs(["a=/x", "b=/y=z"]) == {"a": "/x", "b": "/y=z"}
    with pytest.raises(ValueError, match="given twice"):
        parse_adapter_specs(["a=/x", "a=/y"])


def _serve_cli():
    import typer

    from executors.serve import serve_command

    app = typer.Typer()
    app.command("serve")(serve_command)
    app.command("other")(lambda: None)  # a second command keeps `serve` a subcommand, as in gym-tinker
    return app


def test_serve_command_rejects_bad_input_before_loading_anything(tmp_path):
    from typer.testing import CliRunner

    runner = CliRunner()
    result = runner.invoke(_serve_cli(), ["serve", "--model", "tiny-random", "--adapter", "no-equals"])
    assert result.exit_code == 2 and "NAME=PATH" in result.output
    result = runner.invoke(_serve_cli(), ["serve", "--model", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "Unknown model reference" in result.output


def test_serve_runs_as_a_process(tmp_path, adapter_path):
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [
        sys.executable,
        "-m",
        "executors.serve",
        "--model",
        "tiny-random",
        "--port",
        str(port),
        "--threads",
        "1",
    ]
    cmd += ["--adapter", f"tuned={adapter_path}"]
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read().decode()
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        assert [m["id"] for m in models["data"]] == ["tiny-random", "tuned"]
        body = {"model": "tuned", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60)
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] <= 3
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()
