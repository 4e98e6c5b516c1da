"""Chat rendering with a Hugging Face tokenizer's template: tools, token-exact continuations, a fallback template.

:class:`HFChatRenderer` implements :class:`gym_tinker.policy.ChatRenderer`. It renders with
``tokenizer.apply_chat_template`` and, when the model's own template cannot render tools (it
ignores the tool schemas, drops assistant tool calls or fails on ``tool`` messages, as
SmolLM2's does), with the ChatML-with-tools template shipped in ``executors/templates``
(:func:`fallback_chat_template`).

Multi-turn rollouts never re-render what was sampled. After an assistant turn they append:

1. :meth:`HFChatRenderer.close_assistant_turn`: the template's end-of-turn tokens that the
   sampler did not produce. ChatML ends an assistant turn with ``<|im_end|>\\n``; a completion
   that stopped on EOS already ends with ``<|im_end|>``, so only ``\\n`` is added; one cut off
   at ``max_tokens`` gets both.
2. :meth:`HFChatRenderer.render_continuation`: the env's new messages and the next assistant
   prompt, computed as the text that rendering ``history + new_messages`` (with the generation
   prompt) adds after rendering ``history`` alone, tokenized on its own. This requires the
   template to be *prefix-stable* (adding messages never changes how earlier ones render);
   when it is not (Qwen3's template drops earlier reasoning, for example) a
   :class:`TemplateNotPrefixStableError` says where the renderings diverge. The fix is to pass a
   prefix-stable template, e.g. ``HFChatRenderer(tokenizer, template=fallback_chat_template())``
   or one of TRL's ``trl/chat_templates/*_training.jinja``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, Literal

from gym_tinker.policy import Conversation, ToolSchemas

__all__ = [
    "FALLBACK_TEMPLATE_NAME",
    "HFChatRenderer",
    "TemplateNotPrefixStableError",
    "fallback_chat_template",
    "template_renders_tools",
]

FALLBACK_TEMPLATE_NAME = "chatml_tools.jinja"
"""File name of the fallback template inside the ``executors.templates`` package data."""

_SENTINEL = "\u2063gym-tinker-sentinel\u2063"
_PROBE_TOOL = "gym_tinker_probe_tool"
_PROBE_CALL = "gym_tinker_probe_call"
_PROBE_RESULT = "gym_tinker_probe_result"


class TemplateNotPrefixStableError(ValueError):
    """Rendering a conversation with more messages changed how its earlier messages render."""


def fallback_chat_template() -> str:
    """The ChatML-with-tools template shipped with gym-tinker (``executors/templates/chatml_tools.jinja``).

    Tools go in the system turn as JSON schemas inside ``<tools></tools>``; calls are JSON
    inside ``<tool_call></tool_call>``; tool results are ``tool`` turns inside
    ``<tool_response></tool_response>``. Every message renders independently of the ones after
    it, so the template is prefix-stable.

    Example:
        >>> "<tool_call>" in fallback_chat_template()
        True
    """
    return resources.files("executors.templates").joinpath(FALLBACK_TEMPLATE_NAME).read_text(encoding="utf-8")


def _prepare(messages: Conversation) -> list[dict[str, Any]]:
    """Plain dicts for the template; tool-call arguments as dicts (HF templates expect that)."""
    out = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError(f"Expected message #{index} to be a dict with a 'role', got {message!r:.120}")
        item = dict(message)
        item.setdefault("content", "")
        if item.get("tool_calls"):
            calls = []
            for call in item["tool_calls"]:
                call = dict(call)
                function = dict(call.get("function", {}))
                if isinstance(function.get("arguments"), str):
                    # Arguments that are not JSON stay as the model wrote them; templates print strings.
                    with contextlib.suppress(json.JSONDecodeError):
                        function["arguments"] = json.loads(function["arguments"])
                call["function"] = function
                calls.append(call)
            item["tool_calls"] = calls
        out.append(item)
    return out


def _render_text(
    tokenizer: Any,
    template: str | None,
    messages: Conversation,
    tools: ToolSchemas | None,
    add_generation_prompt: bool,
) -> str:
    text = tokenizer.apply_chat_template(
        _prepare(messages),
        tools=[dict(tool) for tool in tools] if tools else None,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        tokenize=False,
    )
    if not isinstance(text, str):
        raise TypeError(f"apply_chat_template(tokenize=False) returned {type(text).__name__}, expected str")
    return text


def template_renders_tools(tokenizer: Any, template: str | None = None) -> bool:
    """Whether ``template`` (default: the tokenizer's own) renders tool schemas, tool calls and tool results.

    A probe conversation is rendered; the template passes only if the schema's name, the
    assistant's call and the tool's result all appear in the text and nothing raises.

    Example:
        >>> from executors.models.tiny import tiny_tokenizer
        >>> template_renders_tools(tiny_tokenizer())
        True
        >>> template_renders_tools(tiny_tokenizer(), "{% for m in messages %}{{ m['content'] }}{% endfor %}")
        False
    """
    schema = {
        "type": "function",
        "function": {
            "name": _PROBE_TOOL,
            "description": "probe",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    call = {"id": "call_0", "type": "function", "function": {"name": _PROBE_CALL, "arguments": "{}"}}
    probe: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": _PROBE_RESULT, "tool_call_id": "call_0", "name": _PROBE_CALL},
    ]
    try:
        text = _render_text(tokenizer, template, probe, [schema], add_generation_prompt=True)
    except Exception:  # any template error (jinja raise_exception, missing keys) means "cannot"
        return False
    return all(marker in text for marker in (_PROBE_TOOL, _PROBE_CALL, _PROBE_RESULT))


class HFChatRenderer:
    """Renders conversations with a Hugging Face tokenizer's chat template (a :class:`~gym_tinker.policy.ChatRenderer`).

    Args:
        tokenizer: A ``transformers`` tokenizer.
        template: A Jinja chat template to use instead of the tokenizer's. When ``None``, the
            tokenizer's own template is used if it renders tools (see
            :func:`template_renders_tools`), else :func:`fallback_chat_template`.

    Attributes:
        template_source: ``"given"``, ``"model"`` or ``"fallback"``: which template is in use.

    Example:
        >>> from executors.models.tiny import tiny_tokenizer
        >>> renderer = HFChatRenderer(tiny_tokenizer())
        >>> history = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
        >>> ids = renderer.render_continuation(history, [{"role": "user", "content": "Sure?"}])
        >>> renderer.decode(ids)
        '<|im_start|>user\\nSure?<|im_end|>\\n<|im_start|>assistant\\n'
    """

    def __init__(self, tokenizer: Any, template: str | None = None):
        if not callable(getattr(tokenizer, "apply_chat_template", None)):
            raise TypeError(
                f"Expected a transformers tokenizer with apply_chat_template, got {type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        self.template_source: Literal["given", "model", "fallback"]
        if template is not None:
            if not isinstance(template, str) or not template.strip():
                raise ValueError(
                    f"Expected `template` to be a non-empty Jinja string or None, got {template!r:.80}"
                )
            self.template, self.template_source = template, "given"
        elif getattr(tokenizer, "chat_template", None) and template_renders_tools(tokenizer):
            self.template, self.template_source = tokenizer.chat_template, "model"
        else:
            self.template, self.template_source = fallback_chat_template(), "fallback"
        self.assistant_suffix_ids: tuple[int, ...] = tuple(self._encode(self._assistant_suffix_text()))
        """Tokens the template puts after an assistant message's content (``<|im_end|>\\n`` in ChatML)."""

    def _assistant_suffix_text(self) -> str:
        probe = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _SENTINEL}]
        text = self.render_text(probe, add_generation_prompt=False)
        position = text.rfind(_SENTINEL)
        return "" if position < 0 else text[position + len(_SENTINEL) :]

    def _encode(self, text: str) -> list[int]:
        # The template writes special tokens (BOS, turn markers) itself, as apply_chat_template does.
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def render_text(
        self, messages: Conversation, *, tools: ToolSchemas | None = None, add_generation_prompt: bool = True
    ) -> str:
        """The template's text for ``messages`` (plus the assistant prompt when ``add_generation_prompt``).

        Example:
            >>> from executors.models.tiny import tiny_tokenizer
            >>> HFChatRenderer(tiny_tokenizer()).render_text([{"role": "user", "content": "Hi"}])
            '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'
        """
        return _render_text(self.tokenizer, self.template, messages, tools, add_generation_prompt)

    def render(
        self, messages: Conversation, *, tools: ToolSchemas | None = None, add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of ``messages`` (plus the assistant prompt when ``add_generation_prompt``).

        Example:
            >>> from executors.models.tiny import tiny_tokenizer
            >>> renderer = HFChatRenderer(tiny_tokenizer())
            >>> ids = renderer.render([{"role": "user", "content": "Hi"}])
            >>> ids[0] == renderer.tokenizer.convert_tokens_to_ids("<|im_start|>")
            True
        """
        return self._encode(
            self.render_text(messages, tools=tools, add_generation_prompt=add_generation_prompt)
        )

    def render_continuation(
        self, history: Conversation, new_messages: Conversation, *, tools: ToolSchemas | None = None
    ) -> list[int]:
        """Token ids to append after ``history`` (ending with an assistant turn) for ``new_messages`` and the next prompt.

        The ids start right after the rendered end of ``history``'s last assistant turn (see
        :meth:`close_assistant_turn` for the end-of-turn tokens themselves) and end with the
        generation prompt.

        Raises:
            ValueError: ``history`` does not end with an assistant message, or ``new_messages`` is empty.
            TemplateNotPrefixStableError: the template renders ``history`` differently once
                ``new_messages`` follow it.
        """
        if not history or history[-1].get("role") != "assistant":
            last = history[-1].get("role") if history else None
            raise ValueError(f"Expected `history` to end with an assistant message, got last role {last!r}")
        if not new_messages:
            raise ValueError("Expected at least one new message to continue with, got none")
        before = self.render_text(history, tools=tools, add_generation_prompt=False)
        after = self.render_text([*history, *new_messages], tools=tools, add_generation_prompt=True)
        if not after.startswith(before):
            at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(after))
            raise TemplateNotPrefixStableError(
                f"The chat template ({self.template_source}) is not prefix-stable: rendering {len(new_messages)} "
                f"more message(s) changes earlier text at character {at}: {before[max(0, at - 40) : at + 40]!r} "
                f"became {after[max(0, at - 40) : at + 40]!r}. Token-exact multi-turn rollouts need a "
                "template that renders each message independently; pass one with "
                "HFChatRenderer(tokenizer, template=fallback_chat_template()) or a TRL '*_training.jinja' template."
            )
        return self._encode(after[len(before) :])

    def close_assistant_turn(self, sampled_ids: Sequence[int]) -> list[int]:
        """The end-of-assistant-turn tokens the sampler did not produce, to append after ``sampled_ids``.

        The longest prefix of :attr:`assistant_suffix_ids` that ``sampled_ids`` already ends with
        is skipped, so a completion that stopped on EOS gets only the rest (ChatML's ``\\n``).

        Example:
            >>> from executors.models.tiny import tiny_tokenizer
            >>> renderer = HFChatRenderer(tiny_tokenizer())
            >>> eos = renderer.tokenizer.eos_token_id
            >>> renderer.decode(renderer.close_assistant_turn([70, eos])), renderer.decode(renderer.close_assistant_turn([70]))
            ('\\n', '<|im_end|>\\n')
        """
        suffix = list(self.assistant_suffix_ids)
        tail = list(sampled_ids[-len(suffix) :]) if suffix else []
        for k in range(min(len(suffix), len(tail)), 0, -1):
            if tail[len(tail) - k :] == suffix[:k]:
                return suffix[k:]
        return suffix

    def decode(self, token_ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """Text of ``token_ids`` (special tokens kept unless ``skip_special_tokens``)."""
        return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=skip_special_tokens))
