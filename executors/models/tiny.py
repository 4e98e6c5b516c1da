"""The tiny random test model: a 2-layer Llama with a byte-level BPE tokenizer built in code, no downloads.

Unit tests of samplers, renderers, rollouts and trainers need a real causal LM with a real
tokenizer and chat template, but not a good one. :func:`tiny_random_model` builds both in
milliseconds from a small built-in corpus:

* the tokenizer is a byte-level BPE (any text round-trips through encode/decode) with the
  special tokens ``<|endoftext|>`` (padding, id 0), ``<|im_start|>`` (id 1) and ``<|im_end|>``
  (end of turn and EOS, id 2), and the ChatML-with-tools template shipped with gym-tinker
  (``executors/templates/chatml_tools.jinja``);
* the model is a ``LlamaForCausalLM`` with random weights drawn from a seeded generator (same
  seed, same weights; the global torch RNG is left untouched).

torch and transformers are imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import functools
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

__all__ = ["SPECIAL_TOKENS", "TINY_CORPUS", "save_tiny_random", "tiny_random_model", "tiny_tokenizer"]

SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Padding, start of a chat turn, end of a chat turn (also EOS); ids 0, 1, 2 in that order."""

TINY_CORPUS: tuple[str, ...] = (
    "You are a helpful assistant. Answer the question and put the final answer inside <answer></answer>.",
    "What is 23 + 45? The answer is <answer>68</answer>.",
    "Guess a number between 1 and 100. Higher. Lower. Correct! You found the number in 5 turns.",
    'To call a function, answer with a JSON object: <tool_call>\n{"name": "calculator", '
    '"arguments": {"expression": "12 * 7"}}\n</tool_call>',
    "<tool_response>\n84\n</tool_response> The result of the calculator is 84.",
    "# Tools\n\nYou may call one or more functions. Their signatures are inside <tools></tools>.",
    '{"type": "function", "function": {"name": "search", "description": "Search the documents.", '
    '"parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}',
    "Your move. The board is empty. Legal moves: 0 1 2 3 4 5 6 7 8. Player X wins. It is a draw.",
    "system user assistant tool the a an of to in is it that for on with as by from this you your",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 25 30 40 50 64 99 100 128 256 1000",
    "Wordle: guess the five-letter word. Green means right letter in the right place, yellow wrong place.",
    "Countdown: use the numbers and + - * / to reach the target. def solve(numbers): return target",
)
"""The text the tiny tokenizer's BPE merges are learned from (chat, tool calls, numbers, games)."""

_MIN_VOCAB = 256 + len(SPECIAL_TOKENS)


def _check_positive(name: str, value: Any, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"Expected `{name}` to be an int >= {minimum}, got {value!r}")
    return value


@functools.lru_cache(maxsize=8)
def _tokenizer_json(vocab: int) -> str:
    """The trained tokenizer serialised as JSON (training is deterministic; cached per ``vocab``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TINY_CORPUS, trainer=trainer)
    return str(tokenizer.to_str())


def tiny_tokenizer(*, vocab: int = 512) -> PreTrainedTokenizerFast:
    """The tiny model's tokenizer: byte-level BPE with ChatML special tokens and a tool-aware template.

    Args:
        vocab: Largest vocabulary size (the small corpus may yield fewer merges); at least 259
            (256 bytes plus the 3 special tokens).

    Example:
        >>> tok = tiny_tokenizer()
        >>> tok.eos_token, tok.pad_token_id, tok.decode(tok.encode("héllo <answer>7</answer>"))
        ('<|im_end|>', 0, 'héllo <answer>7</answer>')
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from executors.chat import fallback_chat_template

    _check_positive("vocab", vocab, _MIN_VOCAB)
    backend = Tokenizer.from_str(_tokenizer_json(vocab))
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token="<|im_start|>",
        chat_template=fallback_chat_template(),
        padding_side="left",
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
    )


def tiny_random_model(
    seed: int = 0, *, vocab: int = 512, layers: int = 2, hidden: int = 64
) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """A small random Llama and its locally built tokenizer, for tests. Never downloads.

    Args:
        seed: Seeds the weights; the same seed gives the same weights. The global torch RNG
            is not touched.
        vocab: Largest tokenizer vocabulary (see :func:`tiny_tokenizer`).
        layers: Transformer layers.
        hidden: Hidden size; a multiple of 4 (4 attention heads, 2 key/value heads).

    Returns:
        ``(model, tokenizer)``, the model in eval mode on CPU in float32.

    Example:
        >>> model, tok = tiny_random_model(seed=0)
        >>> model.config.num_hidden_layers, model.config.vocab_size == len(tok)
        (2, True)
        >>> model.config.eos_token_id == tok.eos_token_id == tok.convert_tokens_to_ids("<|im_end|>")
        True
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    _check_positive("seed", seed, 0)
    _check_positive("layers", layers)
    _check_positive("hidden", hidden, 8)
    if hidden % 4:
        raise ValueError(f"Expected `hidden` to be a multiple of 4 (4 attention heads), got {hidden}")
    tokenizer = tiny_tokenizer(vocab=vocab)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        # Larger than Llama's 0.02 so the random next-token distributions are far from uniform
        # (greedy choices are then not decided by float noise).
        initializer_range=0.2,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.eval()
    return model, tokenizer


def save_tiny_random(path: str | PathLike[str], seed: int = 0, **kwargs: Any) -> Path:
    """Save :func:`tiny_random_model` as a normal Hugging Face folder (model and tokenizer).

    ``kwargs`` go to :func:`tiny_random_model`. ``AutoModelForCausalLM.from_pretrained`` and
    ``AutoTokenizer.from_pretrained`` load the folder back, offline.

    Example:
        >>> import tempfile
        >>> folder = save_tiny_random(tempfile.mkdtemp(), seed=1)
        >>> sorted(p.name for p in folder.iterdir() if p.suffix == ".safetensors")
        ['model.safetensors']
    """
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    model, tokenizer = tiny_random_model(seed, **kwargs)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
