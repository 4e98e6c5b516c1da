"""Tests for the tiny random test model and its tokenizer."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from executors.models.tiny import save_tiny_random, tiny_random_model, tiny_tokenizer  # noqa: E402

torch.set_num_threads(1)


def test_same_seed_same_weights_and_global_rng_untouched():
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    model_a, _ = tiny_random_model(seed=3)
    assert torch.equal(torch.rand(1), expected_next)  # building the model did not consume the global RNG
    model_b, _ = tiny_random_model(seed=3)
    model_c, _ = tiny_random_model(seed=4)
    for (name, a), b in zip(model_a.state_dict().items(), model_b.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    weight = "model.embed_tokens.weight"
    assert not torch.equal(model_a.state_dict()[weight], model_c.state_dict()[weight])


def test_shapes_and_special_tokens():
    model, tok = tiny_random_model(layers=3, hidden=32, vocab=400)
    assert model.config.num_hidden_layers == 3
    assert model.config.hidden_size == 32
    assert len(tok) <= 400
    assert model.config.vocab_size == len(tok)
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    ids = torch.tensor([tok.encode("What is 2 + 2?")])
    logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], len(tok))


@pytest.mark.parametrize(
    "text", ["plain ascii", "unicode: héllo wörld ✓ 日本語", "<tool_call>\n{}\n</tool_call>", ""]
)
def test_tokenizer_round_trips_any_text(text):
    tok = tiny_tokenizer()
    assert tok.decode(tok.encode(text)) == text


def test_special_tokens_are_single_ids():
    tok = tiny_tokenizer()
    ids = tok.encode("<|im_start|>user\nhi<|im_end|>")
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")
    assert ids[-1] == tok.eos_token_id


def test_chat_template_renders_tools():
    tok = tiny_tokenizer()
    tools = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tools=tools, tokenize=False)
    assert '"name": "calculator"' in text
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n") or "<|im_start|>user\nhi<|im_end|>\n" in text


def test_save_and_load_from_folder(tmp_path):
    folder = save_tiny_random(tmp_path / "tiny", seed=5)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    original, original_tok = tiny_random_model(seed=5)
    assert tok.chat_template == original_tok.chat_template
    assert tok.encode("hello world") == original_tok.encode("hello world")
    ids = torch.tensor([tok.encode("Guess a number")])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, original(ids).logits, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden": 30}, "multiple of 4"),
        ({"layers": 0}, "`layers`"),
        ({"vocab": 100}, "`vocab`"),
        ({"seed": -1}, "`seed`"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tiny_random_model(**kwargs)
