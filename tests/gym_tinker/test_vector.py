"""`gym.make_vec(id)` gives a `TextVectorEnv` that behaves exactly like Gymnasium's `SyncVectorEnv`."""

from __future__ import annotations

import json
import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import DictInfoToList
from hypothesis import given, settings
from hypothesis import strategies as st

import gym_tinker
from gym_tinker import testing, vector
from gym_tinker.vector import TextVectorEnv, batch_infos

GUESS = "tinker/GuessNumber-v0"


@pytest.mark.parametrize("entry", gym_tinker.ENV_ENTRIES, ids=lambda entry: entry.name)
def test_make_vec_default_is_the_vector_entry_point(entry):
    envs = gym.make_vec(entry.id, num_envs=2)
    try:
        assert type(envs) is TextVectorEnv and isinstance(envs, SyncVectorEnv)
        assert envs.spec.kwargs["vectorization_mode"] == "vector_entry_point"
        assert json.loads(gym.spec(entry.id).to_json())["vector_entry_point"] == entry.vector_entry_point
    finally:
        envs.close()
    for mode, cls in (("sync", gym.vector.SyncVectorEnv), ("async", gym.vector.AsyncVectorEnv)):
        envs = gym.make_vec(entry.id, num_envs=1, vectorization_mode=mode)
        assert type(envs) is cls
        envs.close()


def _broken_batch_infos(infos, num_envs):
    batched = batch_infos(infos, num_envs)
    if "turn" in batched:
        batched["turn"] = batched["turn"].astype(np.float64)  # the right numbers, the wrong dtype
    return batched


def test_the_comparison_catches_a_difference(monkeypatch):
    testing.check_vector_entry_point(GUESS)
    monkeypatch.setattr(vector.sync, "batch_infos", _broken_batch_infos)
    with pytest.raises(
        AssertionError,
        match=r"check_vector_entry_point failed for tinker/GuessNumber-v0: "
        r"in process, info_format='dict', NextStep, step 0",
    ):
        testing.check_vector_entry_point(GUESS)


def test_the_comparison_catches_a_difference_in_list_infos(monkeypatch):
    finish_step = vector.sync.TextVectorBase._finish_step

    def turn_as_float(self, stepped):  # the right numbers, the wrong type
        rewards, terminated, truncated, infos = finish_step(self, stepped)
        if self.info_format == "list":
            infos = [{**info, "turn": float(info["turn"])} for info in infos]
        return rewards, terminated, truncated, infos

    monkeypatch.setattr(vector.sync.TextVectorBase, "_finish_step", turn_as_float)
    with pytest.raises(
        AssertionError,
        match=r"check_vector_entry_point failed for tinker/GuessNumber-v0: "
        r"in process, info_format='list', NextStep, step 1",
    ):
        testing.check_vector_entry_point(GUESS)


def _reference(env_id, info_format, **kwargs):
    """Gymnasium's own sync vector env, in `DictInfoToList` for list infos."""
    reference = gym.make_vec(env_id, vectorization_mode="sync", **kwargs)
    return DictInfoToList(reference) if info_format == "list" else reference


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("info_format", ["dict", "list"])
def test_reset_mask_and_disabled_autoreset_match_sync(info_format, workers):
    kwargs = {"autoreset_mode": AutoresetMode.DISABLED}
    ours = gym.make_vec(GUESS, num_envs=3, max_turns=2, info_format=info_format, workers=workers, **kwargs)
    reference = _reference(GUESS, info_format, num_envs=3, vector_kwargs=kwargs, max_turns=2)
    actions = ("\\boxed{5}", "\\boxed{3}", "\\boxed{9}")
    try:
        results = [v.reset(seed=7) for v in (ours, reference)]
        assert testing._same_vector_result(*results)
        for _ in range(2):
            results = [v.step(actions) for v in (ours, reference)]
            assert testing._same_vector_result(*results)
        done = results[0][2] | results[0][3]
        assert done.all()  # two turns each
        with pytest.raises(AssertionError):
            ours.step(actions)  # Disabled: the user must reset finished envs first
        mask = np.array([True, False, True])
        results = [v.reset(options={"reset_mask": mask.copy()}) for v in (ours, reference)]
        assert testing._same_vector_result(*results)
        infos = results[0][1]
        if info_format == "dict":
            assert infos["_task_id"].tolist() == [True, False, True]
        else:
            assert ["task_id" in info for info in infos] == [True, False, True]
    finally:
        ours.close()
        reference.close()


def test_wrong_number_of_actions_is_a_clear_error():
    envs = gym.make_vec(GUESS, num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"expected a sequence of 2 actions \(one str per env\), got \('5',\)"
    ):
        envs.step(("5",))
    with pytest.raises(ValueError, match="got '5'"):
        envs.step("5")
    envs.close()
    with pytest.raises(ValueError, match="num_envs must be a positive int, got 0"):
        gym.make_vec(GUESS, num_envs=0)
    with pytest.raises(ValueError, match="workers must be an int >= 0, got -1"):
        gym.make_vec(GUESS, num_envs=2, workers=-1)
    for workers in (0, 1):
        with pytest.raises(ValueError, match="info_format must be 'dict' or 'list', got 'lists'"):
            gym.make_vec(GUESS, num_envs=2, workers=workers, info_format="lists")


def test_same_step_autoreset_with_an_info_key_named_final_obs_merges_as_gymnasium():
    class Odd(gym_tinker.TextEnv):
        default_max_turns = 2

        def _reset(self, options):
            return "go", {"final_obs": "mine"}

        def _step(self, action):
            return "ok", 0.0, action == "end", False, {"final_obs": action}

    gym.register("test/OddInfo-v0", entry_point=Odd)
    try:
        kwargs = {"autoreset_mode": AutoresetMode.SAME_STEP}
        for info_format in ("dict", "list"):
            ours = TextVectorEnv("test/OddInfo-v0", 2, info_format=info_format, **kwargs)
            reference = _reference("test/OddInfo-v0", info_format, num_envs=2, vector_kwargs=kwargs)
            assert testing._same_vector_result(ours.reset(seed=0), reference.reset(seed=0))
            for actions in (["a", "end"], ["end", "b"], ["c", "d"]):
                assert testing._same_vector_result(ours.step(actions), reference.step(actions))
    finally:
        del gym.registry["test/OddInfo-v0"]


def test_same_step_autoreset_reports_final_observations():
    envs = gym.make_vec(GUESS, num_envs=2, max_turns=1, autoreset_mode="SameStep")
    envs.reset(seed=0)
    _, _, terminated, truncated, infos = envs.step(["1", "2"])
    assert (terminated | truncated).all()
    assert infos["_final_obs"].tolist() == [True, True]
    assert all(isinstance(o, str) for o in infos["final_obs"])
    assert infos["final_info"]["_turn"].tolist() == [True, True]
    assert "_task_id" in infos  # the reset's info, as Gymnasium reports it
    envs.close()


# --- batch_infos against Gymnasium's env-by-env `_add_info` ------------------------------------------

_KINDS = [
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, width=64),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(0, 3), max_size=3),
    st.builds(np.float32, st.floats(-1e3, 1e3, width=32)),
    st.builds(lambda xs: np.array(xs, dtype=np.int64), st.lists(st.integers(0, 9), min_size=2, max_size=2)),
]


def _info_lists(depth=0):
    """Lists of info dicts where each key holds one kind of value (what `_add_info` assumes)."""

    @st.composite
    def draw(data_draw):
        kinds = {}
        for key in data_draw(
            st.lists(st.sampled_from(["turn", "feedback", "task_id", "score", "final_obs"]), unique=True)
        ):
            if depth == 0 and data_draw(st.booleans()) and data_draw(st.booleans()):
                kinds[key] = None  # a nested dict
            else:
                kinds[key] = data_draw(st.sampled_from(_KINDS))
        num_envs = data_draw(st.integers(1, 9))  # both sides of `_TRANSPOSE_FROM`
        every_env = data_draw(st.booleans())  # the same keys everywhere (the batched transpose)
        infos = [{} for _ in range(num_envs)]
        for key, kind in kinds.items():
            present = [True] * num_envs
            if not every_env:
                present = data_draw(st.lists(st.booleans(), min_size=num_envs, max_size=num_envs))
            if kind is None:
                nested = data_draw(_info_lists(depth + 1).filter(lambda lists: len(lists) >= num_envs))
                values = nested[:num_envs]
            else:
                values = [data_draw(kind) for _ in range(num_envs)]
            for info, here, value in zip(infos, present, values, strict=True):
                if here:
                    info[key] = value
        # Envs may report the same keys in different orders.
        return [dict(data_draw(st.permutations(list(info.items())))) for info in infos]

    return draw()


@settings(max_examples=300, deadline=None)
@given(_info_lists())
def test_batch_infos_equals_gymnasium_add_info(infos):
    expected: dict = {}
    reference = SyncVectorEnv.__new__(SyncVectorEnv)
    reference.num_envs = len(infos)
    for i, info in enumerate(infos):
        expected = reference._add_info(expected, info, i)
    assert testing._same_batch(batch_infos(infos, len(infos)), expected)
    assert testing._same_batch(batch_infos(infos, len(infos)), expected)  # again: a cached plan


def test_batch_infos_refuses_a_key_that_is_a_dict_only_sometimes():
    with pytest.raises(TypeError, match="info key 'x' is a dict for some envs and not for others"):
        batch_infos([{"x": {"a": 1}}, {"x": 2}], 2)


# --- ProcessTextVectorEnv: the sub-envs in worker processes ------------------------------------------


def test_workers_split_the_envs_and_forward_attributes():
    envs = gym.make_vec(GUESS, num_envs=5, workers=2, max_turns=3)
    try:
        assert type(envs) is vector.ProcessTextVectorEnv
        assert len(envs._processes) == 2 and envs._starts == [0, 2, 5]
        assert envs.get_attr("max_turns") == (3,) * 5
        envs.set_attr("max_turns", [1, 2, 3, 4, 5])
        assert envs.call("__getattribute__", "max_turns") == (1, 2, 3, 4, 5)
        envs.set_attr("max_turns", 2)
        assert envs.get_attr("max_turns") == (2,) * 5
        with pytest.raises(ValueError, match="expected 5 values for 'max_turns', got 2"):
            envs.set_attr("max_turns", [1, 2])
        envs.reset(seed=3)
        envs.step_async(["5"] * 5)
        with pytest.raises(RuntimeError, match="step_async was called twice"):
            envs.step_async(["5"] * 5)
        observations, *_ = envs.step_wait()
        assert len(observations) == 5
    finally:
        envs.close()
    assert not any(process.is_alive() for process in envs._processes)


def test_more_workers_than_envs_and_the_same_results_as_in_process():
    kwargs = {"num_envs": 3, "max_turns": 2}
    ours, reference = gym.make_vec(GUESS, workers=8, **kwargs), gym.make_vec(GUESS, **kwargs)
    try:
        assert len(ours._processes) == 3
        assert testing._same_batch(ours.reset(seed=1), reference.reset(seed=1))
        for k in range(5):
            actions = [f"\\boxed{{{(7 * k + i) % 10 + 1}}}" for i in range(3)]
            assert testing._same_batch(ours.step(actions), reference.step(actions))
        mask = np.array([False, True, False])
        assert testing._same_batch(
            ours.reset(seed=[None, 9, None], options={"reset_mask": mask}),
            reference.reset(seed=[None, 9, None], options={"reset_mask": mask.copy()}),
        )
    finally:
        ours.close()
        reference.close()


def test_a_workers_exception_reaches_the_caller_and_the_env_stays_usable(monkeypatch):
    env_class = type(gym.make(GUESS).unwrapped)
    monkeypatch.setattr(env_class, "a_lock", property(lambda env: threading.Lock()), raising=False)
    envs = gym.make_vec(GUESS, num_envs=2, workers=2, context="fork")  # the workers see the patch
    try:
        envs.reset(seed=0)
        with pytest.raises(TypeError, match="str"):
            envs.step([42, "5"])  # worker 0 fails; worker 1's reply must still be read
        envs.reset(seed=0)
        _, rewards, *_ = envs.step(["5", "6"])
        assert rewards.shape == (2,)
        with pytest.raises(AttributeError, match="no_such_attribute"):
            envs.get_attr("no_such_attribute")
        with pytest.raises(TypeError, match=r"cannot pickle '_thread\.lock' object"):
            envs.get_attr("a_lock")  # a reply that cannot be sent back is that command's error...
        assert envs.get_attr("turn") == (1, 1)  # ...and the workers live on
    finally:
        envs.close()


def test_a_dead_worker_is_a_clear_error():
    envs = gym.make_vec(GUESS, num_envs=2, workers=2)
    try:
        envs.reset(seed=0)
        envs._processes[1].kill()
        envs._processes[1].join()
        with pytest.raises(RuntimeError, match=r"worker 1 of ProcessTextVectorEnv died \(exit code -9\)"):
            envs.step(["5", "6"])
    finally:
        envs.close()


def test_bad_worker_arguments_are_refused():
    with pytest.raises(ValueError, match="workers must be a positive int, got 0"):
        vector.ProcessTextVectorEnv(GUESS, 2, workers=0)
    with pytest.raises(ValueError, match="reset_mask"):
        envs = gym.make_vec(GUESS, num_envs=2, workers=1)
        try:
            envs.reset(options={"reset_mask": np.array([False, False])})
        finally:
            envs.close()
