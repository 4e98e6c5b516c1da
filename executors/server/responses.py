"""Response bodies of the OpenAI-compatible server: choices, log-probs, tool calls, stream deltas."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from gym_tinker.parsing import parse_tool_calls
from gym_tinker.policy import Completion

__all__ = ["StreamText", "chat_message", "new_id", "token_texts", "usage"]

_TOOL_BLOCK = re.compile(r"<\s*tool_call\s*>.*?(?:<\s*/\s*tool_call\s*>|$)", re.IGNORECASE | re.DOTALL)


def new_id(prefix: str) -> str:
    """A fresh response or tool-call id such as ``chatcmpl-0f3a...``."""
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


def token_texts(tokenizer: Any, token_ids: Sequence[int]) -> list[str]:
    """Each token's own text (special tokens shown), for log-prob listings."""
    return [str(tokenizer.decode([t], skip_special_tokens=False)) for t in token_ids]


def usage(prompt_lengths: Sequence[int], completions: Sequence[Completion]) -> dict[str, int]:
    """The ``usage`` object: prompt tokens (once per prompt) and generated tokens."""
    prompt = sum(prompt_lengths)
    generated = sum(len(c.token_ids) for c in completions)
    return {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}


def chat_message(text: str, parse_tools: bool) -> tuple[dict[str, Any], bool]:
    """The assistant message for ``text``; tool calls are parsed out when ``parse_tools``.

    Returns the message and whether it calls tools. Tagged ``<tool_call>`` blocks are removed
    from ``content``; a message that is only tool calls has ``content`` None, as in OpenAI's API.

    Example:
        >>> msg, called = chat_message('Sure. <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>', True)
        >>> called, msg["content"], msg["tool_calls"][0]["function"]
        (True, 'Sure.', {'name': 'f', 'arguments': '{"x": 1}'})
    """
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if not parse_tools:
        return message, False
    calls, _errors = parse_tool_calls(text)
    if not calls:
        return message, False
    entries = []
    for call in calls:
        entry = call.to_openai()
        entry["id"] = call.id or new_id("call")
        entries.append(entry)
    rest = _TOOL_BLOCK.sub("", text).strip() if _TOOL_BLOCK.search(text) else ""
    message["content"] = rest or None
    message["tool_calls"] = entries
    return message, True


class StreamText:
    """Turns a growing list of sampled tokens into text deltas that are safe to send.

    Text that might still change is held back: a trailing incomplete UTF-8 character (decoded
    as U+FFFD) and anything that could be the start of a stop string.

    Example:
        >>> from executors.models.tiny import tiny_tokenizer
        >>> tok = tiny_tokenizer()
        >>> stream = StreamText(tok, eos_ids={tok.eos_token_id}, stops=("</a>",))
        >>> "".join(stream.push(t) for t in tok.encode("hi there</a> more"))
        'hi there'
    """

    def __init__(self, tokenizer: Any, eos_ids: set[int] | frozenset[int], stops: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids
        self.stops = tuple(s for s in stops if s)
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.tokens: list[int] = []
        self.sent = ""
        self.stopped = False

    def push(self, token: int) -> str:
        """Add a sampled token; return the new text that can be sent now (maybe empty)."""
        self.tokens.append(token)
        if self.stopped or token in self.eos_ids:
            return ""
        text = str(self.tokenizer.decode(self.tokens, skip_special_tokens=True))
        cut = min((at for at in (text.find(s) for s in self.stops) if at >= 0), default=None)
        if cut is not None:
            self.stopped = True
            safe = text[:cut]
        else:
            safe = text.rstrip("\ufffd")
            safe = safe[: max(len(self.sent), len(safe) - self.hold)]
        if not safe.startswith(self.sent):
            return ""
        delta, self.sent = safe[len(self.sent) :], safe
        return delta

    def finish(self, final_text: str) -> str:
        """The rest of ``final_text`` not sent yet."""
        if not final_text.startswith(self.sent):
            return ""
        delta, self.sent = final_text[len(self.sent) :], final_text
        return delta
