"""VLLMSampler: in-process vLLM on a GPU, with multi-LoRA; the translation to and from vLLM lives in ``common``."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

from executors.sampling.common import (
    RenderingPolicy,
    check_prompt_ids,
    completion_from_vllm,
    rows_for,
    vllm_sampling_kwargs,
)
from gym_tinker.policy import ChatRenderer, Completion, SamplingParams

__all__ = ["VLLMSampler", "VLLMUnavailableError", "check_vllm_available"]


class VLLMUnavailableError(RuntimeError):
    """vLLM is not installed, or there is no CUDA GPU for it to run on."""


def check_vllm_available() -> None:
    """Raise :class:`VLLMUnavailableError` (saying what is missing and what to use instead) unless vLLM can run.

    Example:
        >>> try:
        ...     check_vllm_available()
        ... except VLLMUnavailableError as err:
        ...     print("vLLM" in str(err))
        ... else:
        ...     print(True)
        True
    """
    if importlib.util.find_spec("vllm") is None:
        raise VLLMUnavailableError(
            "VLLMSampler needs vLLM, which is not installed (pip install 'gym-tinker[vllm]' on a machine with a "
            "CUDA GPU). Without it, use HFSampler, or OpenAISampler against a `vllm serve` endpoint."
        )
    import torch

    if not torch.cuda.is_available():
        raise VLLMUnavailableError(
            "VLLMSampler needs a CUDA GPU, and torch sees none. Use HFSampler on CPU, or OpenAISampler "
            "against a vLLM server running elsewhere."
        )


class VLLMSampler(RenderingPolicy):
    """Sample with an in-process ``vllm.LLM``; LoRA adapters by name through ``LoRARequest``.

    Same contract as :class:`~executors.sampling.HFSampler`: per-row seeds
    (:func:`~executors.sampling.common.row_seed`), token ids including a final EOS, log-probs of
    the sampled tokens under the raw model (vLLM's default ``raw_logprobs`` mode).

    Args:
        model: A Hugging Face folder or hub id vLLM can load, or one of our references
            (``tiny-random``, ``smollm2-135m-instruct``, a ``.gguf`` file), converted once to a
            folder by :func:`executors.models.model_folder`.
        renderer: Chat renderer; default :class:`executors.chat.HFChatRenderer` over vLLM's tokenizer.
        max_loras: Most adapters vLLM keeps on the GPU at once.
        max_lora_rank: Largest LoRA rank accepted.
        **llm_kwargs: Passed to ``vllm.LLM`` (``gpu_memory_utilization``, ``max_model_len``, ...).

    Raises:
        VLLMUnavailableError: vLLM or a CUDA GPU is missing.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        renderer: ChatRenderer | None = None,
        *,
        max_loras: int = 4,
        max_lora_rank: int = 64,
        **llm_kwargs: Any,
    ) -> None:
        check_vllm_available()
        from vllm import LLM

        from executors.models import NAMED_MODELS, model_folder

        ref = os.fspath(model)
        if ref in NAMED_MODELS or ref.lower().endswith(".gguf"):
            ref = str(model_folder(ref))  # vLLM wants a plain folder; convert once, as load_model does
        self.llm = LLM(
            model=ref,
            enable_lora=True,
            max_loras=max_loras,
            max_lora_rank=max_lora_rank,
            **llm_kwargs,
        )
        self.tokenizer = self.llm.get_tokenizer()
        if renderer is None:
            from executors.chat import HFChatRenderer

            renderer = HFChatRenderer(self.tokenizer)
        self.renderer = renderer
        self._adapters: dict[str, tuple[int, str]] = {}

    def adapters(self) -> list[str]:
        """Names of the registered LoRA adapters."""
        return list(self._adapters)

    def load_adapter(self, name: str, path: str | os.PathLike[str]) -> None:
        """Register a peft LoRA adapter folder under ``name`` (vLLM loads it on first use)."""
        if not isinstance(name, str) or not name or name in self._adapters:
            raise ValueError(
                f"Expected a new, non-empty adapter name, got {name!r} (loaded: {self.adapters()})"
            )
        folder = os.fspath(path)
        if not os.path.isfile(os.path.join(folder, "adapter_config.json")):
            raise ValueError(f"Adapter {name!r}: {folder} has no adapter_config.json")
        self._adapters[name] = (len(self._adapters) + 1, folder)

    def generate(
        self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams, *, adapter: str | None = None
    ) -> list[Completion]:
        """Complete token-id prompts, through ``adapter`` when given."""
        from vllm import SamplingParams as VLLMParams
        from vllm.inputs import TokensPrompt
        from vllm.lora.request import LoRARequest

        prompts = check_prompt_ids(prompt_ids)
        lora = None
        if adapter is not None:
            if adapter not in self._adapters:
                raise ValueError(f"Unknown adapter {adapter!r}; loaded adapters: {self.adapters() or 'none'}")
            lora_id, folder = self._adapters[adapter]
            lora = LoRARequest(adapter, lora_id, folder)
        rows = rows_for(prompts, params)
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=list(ids)) for ids in prompts],
            sampling_params=[VLLMParams(**vllm_sampling_kwargs(params, row.seed)) for row in rows],
            lora_request=lora,
            use_tqdm=False,
        )
        return [
            completion_from_vllm(out.outputs[0], ids, adapter=adapter, seed=row.seed)
            for out, ids, row in zip(outputs, prompts, rows, strict=True)
        ]
