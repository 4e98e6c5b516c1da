"""HFSampler with the tiny random model: shapes, log-probs, seeds, padding, stop strings, EOS, adapters."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.sampling.hf import AdapterError, HFSampler  # noqa: E402
from gym_tinker.policy import ChatPolicy, SamplingParams, TokenSampler  # noqa: E402

torch.set_num_threads(1)

PROMPTS = [[1, 40, 41, 42], [1, 50, 51, 52, 53, 54, 55, 56, 57], [1, 60]]


@pytest.fixture(scope="module")
def sampler() -> HFSampler:
    return HFSampler(tiny_random_model(seed=0))


def forward_logprobs(model, prompt, tokens):
    ids = torch.tensor([list(prompt) + list(tokens)])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    positions = range(len(prompt) - 1, len(prompt) + len(tokens) - 1)
    return [logprobs[p, t].item() for p, t in zip(positions, tokens, strict=True)]


def test_implements_the_policy_protocols(sampler):
    assert isinstance(sampler, ChatPolicy)
    assert isinstance(sampler, TokenSampler)


def test_shapes_and_fields(sampler):
    out = sampler.generate(PROMPTS, SamplingParams(max_tokens=7, seed=1))
    assert len(out) == len(PROMPTS)
    for prompt, c in zip(PROMPTS, out, strict=True):
        assert 1 <= len(c.token_ids) <= 7
        assert c.logprobs is not None and len(c.logprobs) == len(c.token_ids)
        assert all(lp <= 0 for lp in c.logprobs)
        assert c.prompt_ids == tuple(prompt)
        assert c.finish_reason == ("length" if len(c.token_ids) == 7 else "stop")
        assert sampler.tokenizer.pad_token_id not in c.token_ids[:-1] or c.finish_reason == "length"
    assert sampler.generate(PROMPTS[:1], SamplingParams(max_tokens=3, logprobs=False))[0].logprobs is None


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(max_tokens=12, seed=3),
        SamplingParams(max_tokens=12, temperature=0.7, top_p=0.8, seed=4),
        SamplingParams(max_tokens=12, temperature=0.0),
    ],
)
def test_logprobs_equal_a_forward_pass_of_the_sampled_tokens(sampler, params):
    for prompt, c in zip(PROMPTS, sampler.generate(PROMPTS, params), strict=True):
        expected = forward_logprobs(sampler.model, prompt, c.token_ids)
        assert c.logprobs == pytest.approx(expected, abs=1e-4)


def test_same_seed_same_completions_and_rows_have_their_own_streams(sampler):
    params = SamplingParams(max_tokens=10, seed=11)
    first = sampler.generate(PROMPTS, params)
    again = sampler.generate(PROMPTS, params)
    assert [c.token_ids for c in first] == [c.token_ids for c in again]
    other = sampler.generate(PROMPTS, SamplingParams(max_tokens=10, seed=12))
    assert [c.token_ids for c in first] != [c.token_ids for c in other]
    # A GRPO group: the same prompt four times gets four different completions.
    group = sampler.generate([PROMPTS[0]] * 4, params)
    assert len({c.token_ids for c in group}) == 4


def test_a_rows_completion_does_not_depend_on_the_rest_of_the_batch(sampler):
    params = SamplingParams(max_tokens=10, seed=5)
    with_long = sampler.generate([PROMPTS[0], PROMPTS[1]], params)
    with_short = sampler.generate([PROMPTS[0], PROMPTS[2]], params)
    alone = sampler.generate([PROMPTS[0]], params)
    assert with_long[0].token_ids == with_short[0].token_ids == alone[0].token_ids


def test_left_padding_does_not_change_greedy_results(sampler):
    params = SamplingParams(max_tokens=10, temperature=0.0)
    batch = sampler.generate(PROMPTS, params)
    for prompt, c in zip(PROMPTS, batch, strict=True):
        [single] = sampler.generate([prompt], params)
        assert c.token_ids == single.token_ids
        assert c.logprobs == pytest.approx(single.logprobs, abs=1e-4)


def test_stop_strings_cut_text_and_tokens(sampler):
    [full] = sampler.generate([PROMPTS[1]], SamplingParams(max_tokens=24, temperature=0.0))
    text = full.text
    at = next(
        k for k in range(3, len(text) - 2) if text[k : k + 2].isascii() and text[k : k + 2].isprintable()
    )
    stop = text[at : at + 2]
    [cut] = sampler.generate(
        [PROMPTS[1]], SamplingParams(max_tokens=24, temperature=0.0, stop=(stop, "never-seen"))
    )
    assert cut.finish_reason == "stop"
    assert cut.text == text[: text.find(stop)]
    assert full.token_ids[: len(cut.token_ids)] == cut.token_ids
    assert stop in sampler.tokenizer.decode(cut.token_ids) and len(cut.token_ids) < len(full.token_ids)


def test_eos_ends_a_completion_and_stays_in_its_token_ids():
    model, tokenizer = tiny_random_model(seed=0)
    [full] = HFSampler((model, tokenizer)).generate(
        [PROMPTS[0]], SamplingParams(max_tokens=10, temperature=0.0)
    )
    eos = full.token_ids[3]
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, eos]
    [ended] = HFSampler((model, tokenizer)).generate(
        [PROMPTS[0]], SamplingParams(max_tokens=10, temperature=0.0)
    )
    first = full.token_ids.index(eos)
    assert ended.token_ids == full.token_ids[: first + 1]
    assert ended.finish_reason == "stop"
    assert ended.text == tokenizer.decode(full.token_ids[:first], skip_special_tokens=True)


def test_chat_call_renders_with_tools(sampler):
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
    conversation = [{"role": "user", "content": "What is 2+3?"}]
    [c] = sampler([conversation], tools=[tools], params=SamplingParams(max_tokens=4, seed=0))
    assert c.prompt_ids == tuple(sampler.renderer.render(conversation, tools=tools))
    assert "calculator" in sampler.renderer.decode(c.prompt_ids)


def test_bad_input_is_a_clear_error(sampler):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        sampler.generate([[1, 10**6]], SamplingParams())
    with pytest.raises(ValueError, match="empty"):
        sampler.generate([[]], SamplingParams())
    with pytest.raises(TypeError, match="SamplingParams"):
        sampler.generate([[1]], {"max_tokens": 3})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="over the model's context of 4096"):
        sampler.generate([[1] * 4000], SamplingParams(max_tokens=100))
    with pytest.raises(AdapterError, match="Unknown adapter 'nope'"):
        sampler.generate([[1]], SamplingParams(), adapter="nope")


def _save_lora(tmp_path, name, seed):
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_random_model(seed=0)
    torch.manual_seed(seed)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft_model = get_peft_model(model, config)
    peft_model.save_pretrained(tmp_path / name)
    return tmp_path / name


# peft reads transformers' deprecated `is_gradient_checkpointing` when wrapping a model.
@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
def test_adapters_switch_per_request_and_match_a_single_adapter_model(tmp_path):
    from peft import PeftModel

    paths = {"a": _save_lora(tmp_path, "a", 1), "b": _save_lora(tmp_path, "b", 2)}
    sampler = HFSampler(tiny_random_model(seed=0))
    greedy = SamplingParams(max_tokens=8, temperature=0.0)
    base_before = sampler.generate(PROMPTS, greedy)
    for name, path in paths.items():
        sampler.load_adapter(name, path)
    assert sampler.adapters() == ["a", "b"]
    outputs = {name: sampler.generate(PROMPTS, greedy, adapter=name) for name in (None, "a", "b")}
    assert [c.token_ids for c in outputs[None]] == [c.token_ids for c in base_before]
    assert len({tuple(c.token_ids for c in out) for out in outputs.values()}) == 3
    for name, path in paths.items():
        model, tokenizer = tiny_random_model(seed=0)
        single = HFSampler((PeftModel.from_pretrained(model, path).merge_and_unload(), tokenizer))
        expected = single.generate(PROMPTS, greedy)
        assert [c.token_ids for c in outputs[name]] == [c.token_ids for c in expected]
        for got, want in zip(outputs[name], expected, strict=True):
            assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)
            assert got.metadata["adapter"] == name
    # A view bound to an adapter is a policy of its own.
    view = sampler.with_adapter("b")
    assert [c.token_ids for c in view.generate(PROMPTS, greedy)] == [c.token_ids for c in outputs["b"]]
    with pytest.raises(AdapterError, match="already loaded"):
        sampler.load_adapter("a", paths["b"])
    with pytest.raises(AdapterError, match=r"no adapter_config\.json"):
        sampler.load_adapter("c", tmp_path)


def test_rows_with_their_own_parameters_share_a_batch(sampler):
    from executors.sampling.common import RowRequest

    greedy = [SamplingParams(max_tokens=n, temperature=0.0) for n in (3, 9, 6)]
    rows = [RowRequest(tuple(p), params, seed=0) for p, params in zip(PROMPTS, greedy, strict=True)]
    seen: list[tuple[int, int]] = []
    batch = sampler.generate_rows(rows, on_token=lambda row, token: seen.append((row, token)))
    # Rows finish at different steps and leave the batch; the rest go on unchanged.
    for prompt, params, got in zip(PROMPTS, greedy, batch, strict=True):
        [alone] = sampler.generate([prompt], params)
        assert got.token_ids == alone.token_ids and len(got.token_ids) == params.max_tokens
        assert got.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
        assert tuple(t for r, t in seen if r == batch.index(got)) == got.token_ids


def test_max_batch_size_splits_without_changing_results():
    model, tokenizer = tiny_random_model(seed=0)
    params = SamplingParams(max_tokens=6, seed=9)
    whole = HFSampler((model, tokenizer)).generate(PROMPTS, params)
    split = HFSampler((model, tokenizer), max_batch_size=1).generate(PROMPTS, params)
    assert [c.token_ids for c in whole] == [c.token_ids for c in split]
