"""VLLMSampler: the shared translation to and from vLLM (tested everywhere), the missing-vLLM error, and a GPU run."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace as NS

import pytest

from executors.sampling.common import completion_from_vllm, row_seed, rows_for, vllm_sampling_kwargs
from executors.sampling.vllm import VLLMSampler, VLLMUnavailableError, check_vllm_available
from gym_tinker.policy import SamplingParams


def _vllm_runs() -> bool:
    try:
        check_vllm_available()
    except VLLMUnavailableError:
        return False
    return True


def test_sampling_params_translate_per_row():
    params = SamplingParams(max_tokens=9, temperature=0.5, top_p=0.9, stop=("</answer>",), seed=4)
    rows = rows_for([[1], [1]], params)
    kwargs = [vllm_sampling_kwargs(params, row.seed) for row in rows]
    assert kwargs[0] == {
        "n": 1,
        "max_tokens": 9,
        "temperature": 0.5,
        "top_p": 0.9,
        "stop": ["</answer>"],
        "seed": row_seed(4, 0),
        "logprobs": 0,
        "skip_special_tokens": True,
    }
    assert kwargs[0]["seed"] != kwargs[1]["seed"]
    assert vllm_sampling_kwargs(SamplingParams(logprobs=False), 0)["logprobs"] is None


def test_outputs_translate_to_completions():
    output = NS(
        text="4",
        token_ids=[19, 2],
        finish_reason="stop",
        stop_reason=None,
        logprobs=[{19: NS(logprob=-0.25), 7: NS(logprob=-2.0)}, {2: NS(logprob=-0.5)}],
    )
    c = completion_from_vllm(output, [1, 5], adapter="a")
    assert (c.text, c.token_ids, c.logprobs, c.finish_reason, c.prompt_ids) == (
        "4",
        (19, 2),
        (-0.25, -0.5),
        "stop",
        (1, 5),
    )
    assert c.metadata == {"adapter": "a"}
    cut = completion_from_vllm(
        NS(text="x", token_ids=[3], finish_reason="length", stop_reason=None, logprobs=None), [1]
    )
    assert cut.finish_reason == "length" and cut.logprobs is None
    stopped = completion_from_vllm(
        NS(text="x", token_ids=[3], finish_reason="stop", stop_reason="</a>", logprobs=None), [1]
    )
    assert stopped.metadata == {"stop_reason": "</a>"}
    aborted = completion_from_vllm(
        NS(text="", token_ids=[], finish_reason="abort", stop_reason=None, logprobs=None), [1]
    )
    assert aborted.finish_reason == "error"


@pytest.mark.skipif(_vllm_runs(), reason="vLLM and a GPU are present")
def test_missing_vllm_or_gpu_is_a_clear_error():
    with pytest.raises(VLLMUnavailableError, match="HFSampler"):
        VLLMSampler("tiny-random")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(VLLMUnavailableError, match=r"pip install 'gym-tinker\[vllm\]'"):
            check_vllm_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _vllm_runs(), reason="needs vLLM and a CUDA GPU")
def test_vllm_samples_like_the_contract_says(tmp_path):
    from executors.models.tiny import save_tiny_random

    folder = save_tiny_random(tmp_path / "tiny")
    sampler = VLLMSampler(folder, gpu_memory_utilization=0.2, max_model_len=512, enforce_eager=True)
    params = SamplingParams(max_tokens=8, seed=1)
    out = sampler.generate([[1, 40, 41], [1, 50]], params)
    assert [c.token_ids for c in out] == [
        c.token_ids for c in sampler.generate([[1, 40, 41], [1, 50]], params)
    ]
    assert all(len(c.logprobs) == len(c.token_ids) <= 8 for c in out)
    [chat] = sampler([[{"role": "user", "content": "hi"}]], params=params)
    assert chat.prompt_ids == tuple(sampler.renderer.render([{"role": "user", "content": "hi"}]))
