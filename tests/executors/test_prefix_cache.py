"""Prefix KV-cache reuse in HFSampler: same completions and log-probs as without it, bounded, invalidated."""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.sampling.common import RowRequest  # noqa: E402
from executors.sampling.hf import HFSampler  # noqa: E402
from executors.sampling.prefix_cache import PrefixCache  # noqa: E402
from gym_tinker.policy import SamplingParams  # noqa: E402

torch.set_num_threads(1)

PROMPTS = [[1, 40, 41, 42], [1, 50, 51, 52, 53, 54, 55, 56, 57], [1, 60]]
GREEDY = SamplingParams(max_tokens=10, temperature=0.0)
SEEDED = SamplingParams(max_tokens=10, temperature=0.9, top_p=0.9, seed=5)


def assert_same(got, want):
    for a, b in zip(got, want, strict=True):
        assert a.token_ids == b.token_ids
        assert a.finish_reason == b.finish_reason and a.text == b.text
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def extend(prompts, completions, turn):
    # An env's reply after each completion: the next turn's prompt only grows.
    return [list(p) + list(c.token_ids) + [7, 8 + turn, 9] for p, c in zip(prompts, completions, strict=True)]


def pair(**kwargs):
    model, tokenizer = tiny_random_model(seed=0)
    return HFSampler((model, tokenizer), **kwargs), HFSampler((model, tokenizer), prefix_cache=False)


@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_multi_turn_matches_the_uncached_sampler_and_reuses_the_prefix(params):
    cached, plain = pair()
    prompts = [list(p) for p in PROMPTS]
    previous: list[list[int]] = []
    for turn in range(4):
        reused = cached.prefix_cache.reused_tokens
        got = cached.generate(prompts, params)
        assert_same(got, plain.generate(prompts, params))
        if turn:
            # Every row reuses at least its whole previous prompt.
            assert cached.prefix_cache.reused_tokens - reused >= sum(map(len, previous))
        previous = prompts
        prompts = extend(prompts, got, turn)
    # Each turn's entry replaces the one it extends: one entry per conversation.
    assert len(cached.prefix_cache) == len(PROMPTS)


def test_a_batch_mixing_hits_misses_and_row_parameters():
    cached, plain = pair()
    first = cached.generate(PROMPTS, GREEDY)
    plain.generate(PROMPTS, GREEDY)
    grown = extend(PROMPTS, first, 0)
    prompts = [grown[0], [2, 70, 71, 72, 73], grown[2], list(PROMPTS[1]), [1, 40, 41, 99, 98]]
    rows = [
        RowRequest(tuple(p), params, seed=i)
        for i, (p, params) in enumerate(zip(prompts, [GREEDY, SEEDED, SEEDED, GREEDY, SEEDED], strict=True))
    ]
    hits = cached.prefix_cache.hits
    assert_same(cached.generate_rows(rows), plain.generate_rows(rows))
    # Rows 0 and 2 extend finished rows, row 3 repeats a prompt, row 4 shares [1, 40, 41]; row 1 misses.
    assert cached.prefix_cache.hits - hits == 4


def test_batches_split_by_max_batch_size_reuse_across_chunks():
    cached, plain = pair(max_batch_size=2)
    prompts = [list(p) for p in PROMPTS]
    for turn in range(3):
        got = cached.generate(prompts, SEEDED)
        assert_same(got, plain.generate(prompts, SEEDED))
        prompts = extend(prompts, got, turn)
    assert cached.prefix_cache.hits >= 2 * len(PROMPTS)


def _save_lora(tmp_path, name, seed):
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_random_model(seed=0)
    torch.manual_seed(seed)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(tmp_path / name)
    return tmp_path / name


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
def test_entries_belong_to_one_adapter_and_loading_an_adapter_clears_them(tmp_path):
    cached, plain = pair()
    base = cached.generate(PROMPTS, GREEDY)
    assert len(cached.prefix_cache) == len(PROMPTS)
    cached.load_adapter("a", _save_lora(tmp_path, "a", 1))
    cached.load_adapter("b", _save_lora(tmp_path, "b", 2))
    prompts = extend(PROMPTS, base, 0)
    for step, adapter in enumerate(("a", "b", None, "a")):
        # The same prompts through each adapter in turn: a hit from another adapter would show.
        got = cached.generate(prompts, SEEDED, adapter=adapter)
        assert_same(got, plain.generate(prompts, SEEDED, adapter=adapter))
        if step == 0:
            # The first call after the loads found the base model's entries gone.
            assert {name for name, _ in cached.prefix_cache._entries} == {"a"}
        # Only the last call finds entries of its own adapter.
        assert cached.prefix_cache.hits == (len(PROMPTS) if step == 3 else 0)
    assert {adapter for adapter, _ in cached.prefix_cache._entries} == {"a", "b", None}


def test_an_in_place_weight_update_clears_the_cache():
    cached, plain = pair()
    first = cached.generate(PROMPTS, GREEDY)
    with torch.no_grad():
        for p in cached.model.parameters():
            p.mul_(1.5)
    prompts = extend(PROMPTS, first, 0)
    hits = cached.prefix_cache.hits
    assert_same(cached.generate(prompts, GREEDY), plain.generate(prompts, GREEDY))
    assert cached.prefix_cache.hits == hits


def test_concurrent_callers_get_their_own_results():
    cached, plain = pair()
    prompts = [extend(PROMPTS, plain.generate(PROMPTS, GREEDY), 0)[i : i + 1] for i in range(3)]
    want = [plain.generate(p, SEEDED) for p in prompts]
    results: dict[int, list] = {}

    def worker(i):
        for _ in range(2):
            results[i] = cached.generate(prompts[i], SEEDED)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(3):
        assert_same(results[i], want[i])


def _kv(n, fill=0.0):
    return [(torch.full((2, n, 4), fill), torch.full((2, n, 4), fill))]


def test_lookup_finds_the_longest_common_prefix_and_leaves_a_token_to_run():
    cache = PrefixCache(max_bytes=1 << 20, max_entries=8)
    cache.store(None, [1, 2, 3, 4], _kv(4, 1.0))
    cache.store(None, [1, 2, 9], _kv(3, 2.0))
    hit = cache.lookup(None, [1, 2, 3, 7])
    assert hit.length == 3 and hit.kv[0][0].shape == (2, 3, 4) and float(hit.kv[0][0][0, 0, 0]) == 1.0
    assert cache.lookup(None, [1, 2, 9, 5]).kv[0][0][0, 0, 0] == 2.0
    assert cache.lookup(None, [1, 2, 3, 4]).length == 3
    assert cache.lookup(None, [5, 1, 2]).length == 0 and cache.lookup("x", [1, 2, 3, 7]).length == 0
    # A sequence extending an entry replaces it.
    cache.store(None, [1, 2, 3, 4, 5], _kv(5))
    assert len(cache) == 2 and cache.nbytes == 2 * 4 * (5 + 3) * 8


def test_bounds_evict_the_least_recently_used():
    entry = 2 * 2 * 4 * 4 * 4  # keys + values, 2 heads x 4 tokens x 4 dims of float32
    cache = PrefixCache(max_bytes=2 * entry, max_entries=8)
    for first in (10, 20, 30):
        cache.store(None, [first, 1, 2, 3], _kv(4))
    assert len(cache) == 2 and cache.nbytes == 2 * entry
    assert cache.lookup(None, [10, 1, 2]).length == 0
    assert cache.lookup(None, [20, 1, 2]).length == 2  # now the most recently used
    cache.store(None, [40, 1, 2, 3], _kv(4))
    assert cache.lookup(None, [20, 1, 2]).length == 2 and cache.lookup(None, [30, 1, 2]).length == 0
    few = PrefixCache(max_bytes=1 << 20, max_entries=1)
    few.store(None, [1, 2], _kv(2))
    few.store(None, [3, 4], _kv(2))
    assert len(few) == 1 and few.lookup(None, [1, 2]).length == 0
    few.store(None, [1] * 100_000, _kv(100_000))  # larger than the whole bound: not kept
    assert len(few) == 1
    few.clear()
    assert len(few) == 0 and few.nbytes == 0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"max_bytes.*got 0"):
        PrefixCache(max_bytes=0, max_entries=1)
    with pytest.raises(ValueError, match=r"max_entries.*got 'many'"):
        PrefixCache(max_bytes=1, max_entries="many")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keys and values for 3 tokens"):
        PrefixCache(max_bytes=1 << 20, max_entries=1).store(None, [1, 2, 3], _kv(2))
    model, tokenizer = tiny_random_model(seed=0)
    with pytest.raises(ValueError, match="max_bytes"):
        HFSampler((model, tokenizer), prefix_cache_bytes=-1)
    assert HFSampler((model, tokenizer), prefix_cache=False).prefix_cache is None
