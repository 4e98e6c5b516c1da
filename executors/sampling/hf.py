"""HFSampler: batched sampling with a transformers causal LM, with several LoRA adapters on one base model.

The decoding loop is our own (rather than ``model.generate``) so that every row of a batch
has its own parameters, random stream and stop condition; that is what lets the server batch
requests from different clients, and what makes a row's result independent of its neighbours.
"""

from __future__ import annotations

import inspect
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from executors.sampling.common import RenderingPolicy, RowRequest, check_prompt_ids, find_stop, rows_for
from executors.sampling.prefix_cache import Hit, PrefixCache, assemble_batch, row_keys_values, weights_version
from gym_tinker.policy import ChatRenderer, Completion, FinishReason, SamplingParams

__all__ = ["AdapterError", "HFSampler", "TokenCallback"]

TokenCallback = Callable[[int, int], None]
"""Called as ``callback(row_index, token_id)`` after each sampled token (for streaming)."""


class AdapterError(ValueError):
    """An unknown adapter name, a name already in use, or an adapter folder that does not load."""


@dataclass
class _ModelState:
    """What every sampler over one model object shares: a lock, the peft wrapper, adapter paths."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    peft_model: Any = None
    adapters: dict[str, str] = field(default_factory=dict)
    loads: int = 0


# Keyed by the model object: peft injects LoRA layers into the model in place, so two samplers
# over the same model must agree on which adapter is active; they share this state.
_states: weakref.WeakKeyDictionary[Any, _ModelState] = weakref.WeakKeyDictionary()
_states_guard = threading.Lock()


def _state_for(model: Any) -> _ModelState:
    with _states_guard:
        state = _states.get(model)
        if state is None:
            state = _states[model] = _ModelState()
        return state


@dataclass
class _Row:
    request: RowRequest
    generator: Any
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: FinishReason | None = None
    text: str | None = None
    checked_chars: int = 0


class HFSampler(RenderingPolicy):
    """Sample from a transformers causal LM: batched, left-padded, with per-row seeds and LoRA adapters.

    Implements :class:`~gym_tinker.policy.ChatPolicy` (``sampler(conversations, tools=...)``) and
    :class:`~gym_tinker.policy.TokenSampler` (``sampler.generate(prompt_ids, params)``).

    What a :class:`~gym_tinker.policy.Completion` holds:

    * ``token_ids``: the sampled ids, never padding. A completion that ended on an EOS token
      keeps that EOS as its last id (training must see the stop decision; the chat renderer's
      ``close_assistant_turn`` relies on it); its ``text`` does not show it. A completion cut by
      a stop string keeps the ids up to the one that completed the stop string, while ``text``
      ends just before the stop string.
    * ``logprobs``: for each sampled id, its log-probability under the raw model at
      temperature 1 (``log_softmax(logits)``), whatever temperature and top-p drew it. That is
      the policy's own log-probability, the quantity training recomputes for importance ratios.
    * ``finish_reason``: ``"stop"`` (EOS or a stop string) or ``"length"`` (``max_tokens``).

    Seeds: row ``i`` of a call with ``params.seed = s`` draws from its own generator seeded by
    :func:`~executors.sampling.common.row_seed` ``(s, i)``, so the same seed and prompts give
    the same completions, and a row's completion depends neither on the other rows in the
    batch nor on earlier calls (up to float rounding from padding and from reused prefix keys
    and values: about 1e-6 in log-probs, which can flip a draw that falls on a boundary).

    Thread-safe: calls from several threads run one at a time (the server's
    :class:`~executors.server.BatchingEngine` merges concurrent requests into one batch).

    Args:
        model: A model reference for :func:`executors.models.load_model`, or a ``(model,
            tokenizer)`` pair.
        device: Torch device for a model loaded by reference.
        renderer: Chat renderer; default :class:`executors.chat.HFChatRenderer` over the tokenizer.
        dtype: Torch dtype for a model loaded by reference.
        max_batch_size: Most rows run through the model at once (larger batches are split).
        prefix_cache: Keep finished rows' keys and values (per adapter) so that a prompt that
            extends an earlier prompt + completion (a multi-turn episode's next turn) runs only
            its new tokens. Dropped when an adapter loads or the weights change in place.
        prefix_cache_bytes, prefix_cache_entries: Bounds of that cache (LRU eviction).

    Example:
        >>> sampler = HFSampler("tiny-random")
        >>> [c] = sampler.generate([[1, 5, 6]], SamplingParams(max_tokens=4, seed=0))
        >>> len(c.token_ids) == len(c.logprobs) <= 4, c.finish_reason in ("stop", "length")
        (True, True)
        >>> c.token_ids == sampler.generate([[1, 5, 6]], SamplingParams(max_tokens=4, seed=0))[0].token_ids
        True
    """

    def __init__(
        self,
        model: Any,
        device: str = "cpu",
        renderer: ChatRenderer | None = None,
        *,
        dtype: Any = None,
        max_batch_size: int = 64,
        prefix_cache: bool = True,
        prefix_cache_bytes: int = 1 << 30,
        prefix_cache_entries: int = 64,
    ) -> None:
        if isinstance(model, tuple):
            if len(model) != 2:
                raise ValueError(f"Expected a (model, tokenizer) pair, got a tuple of {len(model)}")
            self.model, self.tokenizer = model
        elif isinstance(model, (str, os.PathLike)):
            from executors.models import load_model

            self.model, self.tokenizer = load_model(model, device=device, dtype=dtype)
        else:
            raise TypeError(
                f"Expected a model reference or a (model, tokenizer) pair, got {type(model).__name__}"
            )
        if not isinstance(max_batch_size, int) or max_batch_size < 1:
            raise ValueError(f"Expected `max_batch_size` to be an int >= 1, got {max_batch_size!r}")
        if renderer is None:
            from executors.chat import HFChatRenderer

            renderer = HFChatRenderer(self.tokenizer)
        self.renderer = renderer
        self.max_batch_size = max_batch_size
        self.device = next(self.model.parameters()).device
        config = self.model.config
        self.vocab_size: int = int(config.vocab_size)
        self.max_context: int = int(getattr(config, "max_position_embeddings", 0) or 1 << 30)
        self.eos_ids: frozenset[int] = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        self.pad_id: int = int(pad if pad is not None else min(self.eos_ids, default=0))
        self._state = _state_for(self.model)
        # transformers renamed `past_key_values` to `cache` (5.x); older versions know only the former.
        # A peft PeftModel's forward is `*args, **kwargs`: read the wrapped model's signature.
        inner = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        forward_params = inspect.signature(inner.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward_params else "past_key_values"
        self.forward_batches = 0
        """How many batched decoding loops ran (the server's batching tests read it)."""
        self.prefix_cache: PrefixCache | None = (
            PrefixCache(prefix_cache_bytes, prefix_cache_entries) if prefix_cache else None
        )
        """Keys and values of earlier rows, reused by later prompts that extend them (``None``: off)."""

    def _eos_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        for source in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(source, int):
                ids.add(source)
            elif isinstance(source, (list, tuple)):
                ids.update(int(t) for t in source)
        return frozenset(ids)

    def __repr__(self) -> str:
        name = getattr(self.model.config, "_name_or_path", "") or type(self.model).__name__
        return f"HFSampler({name!r}, device={str(self.device)!r}, adapters={self.adapters()})"

    # --- adapters ---------------------------------------------------------------------------

    def invalidate_cache(self) -> None:
        """Forget every cached prefix: call it after changing the weights in a way that may not show.

        In-place writes normally bump parameter version counters, which the cache checks; fused
        optimizers (``torch.optim.AdamW(fused=True)``, transformers' default) write without
        bumping them, so trainers call this after each optimizer step.
        """
        if self.prefix_cache is not None:
            with self._state.lock:
                self.prefix_cache.clear()

    def adapters(self) -> list[str]:
        """Names of the LoRA adapters loaded on this model, in loading order."""
        return list(self._state.adapters)

    def load_adapter(self, name: str, path: str | os.PathLike[str]) -> None:
        """Load a LoRA adapter saved with peft's ``save_pretrained`` under ``name``.

        The first adapter wraps the model with peft in place; requests without an adapter then
        run with adapters disabled, so the base model's outputs do not change.

        Raises:
            AdapterError: ``name`` is taken or invalid, or ``path`` does not hold a loadable adapter.
        """
        from peft import PeftModel

        if not isinstance(name, str) or not name or name == "base":
            raise AdapterError(f"Expected a non-empty adapter name other than 'base', got {name!r}")
        folder = os.fspath(path)
        if not os.path.isfile(os.path.join(folder, "adapter_config.json")):
            raise AdapterError(
                f"Adapter {name!r}: {folder} has no adapter_config.json (save it with peft's save_pretrained)"
            )
        with self._state.lock:
            if name in self._state.adapters:
                raise AdapterError(
                    f"Adapter name {name!r} is already loaded (from {self._state.adapters[name]})"
                )
            try:
                with warnings.catch_warnings():
                    # peft reads transformers' deprecated `is_gradient_checkpointing`; not ours to fix.
                    warnings.filterwarnings(
                        "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
                    )
                    if self._state.peft_model is None:
                        self._state.peft_model = PeftModel.from_pretrained(
                            self.model, folder, adapter_name=name, is_trainable=False
                        )
                    else:
                        self._state.peft_model.load_adapter(folder, adapter_name=name, is_trainable=False)
            except Exception as err:  # peft raises many types for a foreign or mismatched adapter
                raise AdapterError(
                    f"Adapter {name!r} at {folder} does not load: {type(err).__name__}: {err}"
                ) from err
            self._state.peft_model.eval()
            self._state.adapters[name] = folder
            self._state.loads += 1

    def _check_adapter(self, adapter: str | None) -> None:
        if adapter is not None and adapter not in self._state.adapters:
            raise AdapterError(f"Unknown adapter {adapter!r}; loaded adapters: {self.adapters() or 'none'}")

    # --- generation -------------------------------------------------------------------------

    def generate(
        self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams, *, adapter: str | None = None
    ) -> list[Completion]:
        """Complete each prompt (token ids) with ``params``, through ``adapter`` (``None``: base model).

        Raises:
            TypeError, ValueError: Malformed prompts or params; a prompt plus ``max_tokens``
                longer than the model's context.
            AdapterError: Unknown adapter.
        """
        if not isinstance(params, SamplingParams):
            raise TypeError(f"Expected `params` to be a SamplingParams, got {type(params).__name__}")
        prompts = check_prompt_ids(prompt_ids, vocab_size=self.vocab_size)
        return self.generate_rows(rows_for(prompts, params), adapter=adapter)

    def generate_rows(
        self, rows: Sequence[RowRequest], *, adapter: str | None = None, on_token: TokenCallback | None = None
    ) -> list[Completion]:
        """Complete rows that may each have their own parameters and seed, as one batch.

        ``on_token(row_index, token_id)`` is called after each sampled token (from this thread).
        """
        self._check_adapter(adapter)
        for i, row in enumerate(rows):
            need = len(row.prompt_ids) + row.params.max_tokens
            if need > self.max_context:
                raise ValueError(
                    f"Row {i}: the prompt ({len(row.prompt_ids)} tokens) plus max_tokens "
                    f"({row.params.max_tokens}) is {need} tokens, over the model's context of {self.max_context}"
                )
        import torch

        results: list[Completion] = []
        with self._state.lock, torch.inference_mode():
            if self.prefix_cache is not None:  # entries computed with other weights are wrong
                self.prefix_cache.refresh((self._state.loads, weights_version(self.model)))
            for start in range(0, len(rows), self.max_batch_size):
                chunk = rows[start : start + self.max_batch_size]
                callback = None if on_token is None else _offset_callback(on_token, start)
                results += self._run_with_adapter(chunk, adapter, callback)
        return results

    def _run_with_adapter(
        self, rows: Sequence[RowRequest], adapter: str | None, on_token: TokenCallback | None
    ) -> list[Completion]:
        peft_model = self._state.peft_model
        if peft_model is None:
            return self._decode(self.model, rows, on_token, adapter)
        if adapter is None:
            with peft_model.disable_adapter():
                return self._decode(peft_model, rows, on_token, adapter)
        peft_model.set_adapter(adapter)
        return self._decode(peft_model, rows, on_token, adapter)

    def _decode(
        self, model: Any, requests: Sequence[RowRequest], on_token: TokenCallback | None, adapter: str | None
    ) -> list[Completion]:
        import torch

        self.forward_batches += 1
        device = self.device
        rows = [_Row(req, torch.Generator().manual_seed(req.seed % (1 << 63))) for req in requests]
        prompts = [r.request.prompt_ids for r in rows]
        store = self.prefix_cache
        hits = [Hit(0, None) if store is None else store.lookup(adapter, p) for p in prompts]
        input_ids, mask, positions, cache = assemble_batch(prompts, hits, self.pad_id, device)
        temps = torch.tensor([r.request.params.temperature for r in rows], dtype=torch.float32, device=device)
        top_ps = torch.tensor([r.request.params.top_p for r in rows], dtype=torch.float32, device=device)
        active = list(range(len(rows)))
        while active:
            # The cache is filled in place; finished rows are dropped from it below.
            out = model(
                input_ids=input_ids,
                attention_mask=mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
                **{self._cache_kwarg: cache},
            )
            logits = out.logits[:, -1, :].float()
            tokens, logprobs = _sample(logits, temps, top_ps, [rows[k].generator for k in active])
            keep: list[int] = []
            for pos, (k, token, logprob) in enumerate(zip(active, tokens, logprobs, strict=True)):
                row = rows[k]
                row.tokens.append(token)
                row.logprobs.append(logprob)
                if on_token is not None:
                    on_token(k, token)
                self._check_finished(row)
                if row.finish is None:
                    keep.append(pos)
                elif store is not None:
                    # The cache holds the prompt and every sampled id but the last (never fed back).
                    kv = row_keys_values(cache, mask, pos)
                    if kv is not None:
                        store.store(adapter, (*row.request.prompt_ids, *row.tokens[:-1]), kv)
            if not keep:
                break
            if len(keep) < len(active):
                # Finished rows leave the batch: the rest stop paying for them.
                index = torch.tensor(keep, dtype=torch.long, device=device)
                cache.batch_select_indices(index)
                mask, positions = mask[index], positions[index]
                temps, top_ps = temps[index], top_ps[index]
                active = [active[p] for p in keep]
            input_ids = torch.tensor([[rows[k].tokens[-1]] for k in active], dtype=torch.long, device=device)
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            positions = positions[:, -1:] + 1
        return [self._completion(row, adapter) for row in rows]

    def _check_finished(self, row: _Row) -> None:
        params = row.request.params
        if row.tokens[-1] in self.eos_ids:
            row.finish = "stop"
            return
        if params.stop:
            text = self.tokenizer.decode(row.tokens, skip_special_tokens=True)
            longest = max(len(s) for s in params.stop)
            # Only the newly decoded tail can hold a stop string not seen before.
            at = find_stop(text, params.stop, max(0, row.checked_chars - longest + 1))
            row.checked_chars = len(text)
            if at is not None:
                row.finish, row.text = "stop", text[:at]
                return
        if len(row.tokens) >= params.max_tokens:
            row.finish = "length"

    def _completion(self, row: _Row, adapter: str | None) -> Completion:
        if row.text is None:
            ids = row.tokens[:-1] if row.tokens and row.tokens[-1] in self.eos_ids else row.tokens
            row.text = self.tokenizer.decode(ids, skip_special_tokens=True)
        params = row.request.params
        return Completion(
            row.text,
            token_ids=tuple(row.tokens),
            logprobs=tuple(row.logprobs) if params.logprobs else None,
            finish_reason=row.finish or "length",
            prompt_ids=row.request.prompt_ids,
            metadata={**row.request.metadata, "adapter": adapter, "seed": row.request.seed},
        )


def _offset_callback(callback: TokenCallback, offset: int) -> TokenCallback:
    return lambda row, token: callback(row + offset, token)


def _sample(logits: Any, temps: Any, top_ps: Any, generators: Sequence[Any]) -> tuple[list[int], list[float]]:
    """Draw one token per row; return the tokens and their raw (temperature 1) log-probs."""
    import torch

    logprobs_all = torch.log_softmax(logits, dim=-1)
    greedy = temps <= 0
    tokens = logits.argmax(dim=-1)
    if not bool(greedy.all()):
        probs = torch.softmax(logits / torch.where(greedy, 1.0, temps)[:, None], dim=-1)
        order = None
        if bool((top_ps < 1).any()):
            probs, order = probs.sort(dim=-1, descending=True)
            # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
            before = probs.cumsum(-1) - probs
            probs = probs.masked_fill(before >= top_ps[:, None], 0.0)
        cdf = probs.cumsum(-1)
        # One uniform per row from that row's own CPU generator: inverse-CDF sampling then
        # gives the same draw on any device and whatever the batch around it.
        uniforms = torch.stack([torch.rand((), generator=g) for g in generators]).to(logits.device)
        picks = torch.searchsorted(cdf, (uniforms * cdf[:, -1])[:, None].contiguous(), right=True)
        picks = picks.clamp(max=logits.shape[-1] - 1)
        sampled = picks.squeeze(-1) if order is None else order.gather(1, picks).squeeze(-1)
        tokens = torch.where(greedy, tokens, sampled)
    chosen = logprobs_all.gather(1, tokens[:, None]).squeeze(-1)
    return tokens.tolist(), chosen.tolist()
