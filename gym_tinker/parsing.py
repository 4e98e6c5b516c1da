"""Parse model text: tool calls in the common formats, and the final answer (tags, boxed, number).

Both parsers accept any string and never raise: a malformed tool call becomes an error message
for the agent, a missing answer becomes ``None``.
"""

from __future__ import annotations

import ast
import json
import re
from collections import deque
from typing import Any

from gym_tinker.messages import ToolCall

__all__ = [
    "MAX_ERRORS",
    "extract_answer",
    "extract_boxed",
    "has_answer_tags",
    "last_answer_or_box",
    "last_match",
    "last_number",
    "parse_openai_tool_calls",
    "parse_tool_calls",
]

_TOOL_CALL_OPEN = re.compile(r"<\s*tool_call\s*>", re.IGNORECASE)
_TOOL_CALL_CLOSE = re.compile(r"<\s*/\s*tool_call\s*>", re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
# A key that only a tool-call attempt would have: if a broken JSON object contains one of
# these, the agent meant a call, and it gets an error message rather than silence.
_CALL_HINT = re.compile(r"""["'](?:name|arguments|parameters|tool_calls|function)["']\s*:""")
_ARGUMENT_KEYS = ("arguments", "parameters")
# Every key through which an untagged object can be a call (or look like an attempt at one).
_CALL_KEYS = ("name", "arguments", "parameters", "tool_calls", "choices", "function")
_SNIPPET = 120
# At most this many error messages are returned (a flood of broken calls gets a summary line).
MAX_ERRORS = 8
# Inputs longer than this are not tried as Python literals (bounds the work of the repair).
_MAX_LITERAL_REPAIR = 20_000


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."


def _strip_fence(text: str) -> str:
    """Remove a code fence (```json ... ```) around ``text``, if any."""
    text = text.strip()
    if text.startswith("```"):
        newline = text.find("\n")
        text = text[newline + 1 :] if newline >= 0 else text[3:]
    if text.endswith("```"):
        text = text[:-3]
    return text.strip()


def _json_spans(text: str) -> list[tuple[str, bool]]:
    """Top-level ``{...}``/``[...]`` spans of ``text``: ``(span, closed)`` in order.

    Brackets inside JSON strings are skipped. An object never closed runs to the end of the
    text with ``closed=False`` (a generation cut off mid-call).
    """
    spans: list[tuple[str, bool]] = []
    depth = 0
    start = 0
    in_string = False
    escaped = False
    for i, char in enumerate(text):
        if depth == 0:
            if char in "{[":
                depth, start, in_string, escaped = 1, i, False, False
            continue
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                spans.append((text[start : i + 1], True))
    if depth > 0:
        spans.append((text[start:], False))
    return spans


def _strip_trailing_commas(text: str) -> str:
    """Drop commas directly before ``}``/``]`` outside strings (a common model slip)."""
    out: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            out.append(char)
            continue
        if char == '"':
            in_string = True
        elif char == "," and _TRAILING_COMMA.match(text, i):
            continue
        out.append(char)
    return "".join(out)


def _loads(text: str) -> tuple[Any, str | None]:
    """Decode JSON with safe repairs; ``(value, None)`` or ``(None, reason)``."""
    try:
        # strict=False lets raw newlines/tabs inside strings through.
        return json.loads(text, strict=False), None
    except (ValueError, RecursionError) as err:
        reason = str(err) if isinstance(err, json.JSONDecodeError) else f"{type(err).__name__}: {err}"
    repaired = _strip_trailing_commas(text)
    if repaired != text:
        try:
            return json.loads(repaired, strict=False), None
        except (ValueError, RecursionError):
            pass
    if "'" in text and len(text) <= _MAX_LITERAL_REPAIR:
        # Python-style dicts ({'name': 'x', 'arguments': {...}}, True/None): a literal parse, never eval.
        try:
            # The JSON round trip keeps only what JSON could have said (no tuple keys, sets, bytes).
            value = json.loads(json.dumps(ast.literal_eval(text.strip())))
        except Exception:  # literal_eval raises many types on arbitrary text
            value = None
        if isinstance(value, (dict, list)):
            return value, None
    return None, reason


def _decode_arguments(raw: Any, name: str) -> tuple[dict[str, Any] | None, str | None]:
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        raw, reason = _loads(raw)
        if reason is not None:
            return None, f"the arguments of tool call {name!r} are a string that is not valid JSON ({reason})"
    if not isinstance(raw, dict):
        return None, f"the arguments of tool call {name!r} must be a JSON object, got {type(raw).__name__}"
    return raw, None


def _call_from_dict(obj: dict[str, Any], *, tagged: bool) -> tuple[list[ToolCall], list[str]] | None:
    """Turn one decoded object into calls; ``None`` if it is not a tool call (only when untagged)."""
    if "tool_calls" in obj or "choices" in obj or isinstance(obj.get("function"), dict):
        return parse_openai_tool_calls(obj)
    arg_key = next((k for k in _ARGUMENT_KEYS if k in obj), None)
    if not tagged and ("name" not in obj or arg_key is None):
        return None
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return [], [
            f"Malformed tool call: expected a non-empty string 'name', got {_snippet(json.dumps(obj, default=str))}"
        ]
    arguments, error = _decode_arguments(obj.get(arg_key) if arg_key else None, name)
    if error is not None:
        return [], [f"Malformed tool call: {error}"]
    assert arguments is not None
    call_id = obj.get("id")
    return [ToolCall(name.strip(), arguments, id=call_id if isinstance(call_id, str) else "")], []


def _calls_from_value(value: Any, *, tagged: bool) -> tuple[list[ToolCall], list[str]] | None:
    if isinstance(value, dict):
        return _call_from_dict(value, tagged=tagged)
    if isinstance(value, list):
        calls: list[ToolCall] = []
        errors: list[str] = []
        found = False
        for item in value:
            result = _calls_from_value(item, tagged=tagged) if isinstance(item, dict) else None
            if result is None:
                if tagged:
                    errors.append(f"Malformed tool call: expected a JSON object, got {_snippet(repr(item))}")
                continue
            found = True
            calls += result[0]
            errors += result[1]
        return (calls, errors) if found or (tagged and errors) else None
    if tagged:
        return [], [f"Malformed tool call: expected a JSON object, got {_snippet(repr(value))}"]
    return None


def _may_hold_call(span: str) -> bool:
    """Whether an untagged JSON span could decode to a tool call (cheap substring tests)."""
    return any(key in span for key in _CALL_KEYS) or "\\u" in span


def _parse_block(text: str, *, tagged: bool) -> tuple[list[ToolCall], list[str]]:
    calls: list[ToolCall] = []
    errors: list[str] = []
    spans = _json_spans(text)
    if tagged and not spans:
        return [], [f"Malformed tool call: no JSON object inside <tool_call>: {_snippet(text) or '(empty)'}"]
    for span, closed in spans:
        if not tagged and not _may_hold_call(span):
            continue  # prose or data: no key a call needs, so neither a call nor an error
        value, reason = _loads(span)
        if reason is not None:
            if tagged or _CALL_HINT.search(span):
                why = (
                    "the JSON is not closed (missing '}' or ']')"
                    if not closed
                    else f"invalid JSON ({reason})"
                )
                errors.append(f"Malformed tool call: {why}: {_snippet(span)}")
            continue
        result = _calls_from_value(value, tagged=tagged)
        if result is not None:
            calls += result[0]
            errors += result[1]
    return calls, errors


def parse_tool_calls(text: str) -> tuple[list[ToolCall], list[str]]:
    """Find the tool calls in a model's message, whatever common format it used.

    Recognised, in this order of precedence:

    * Hermes/Qwen blocks ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (one or
      more; a final block cut off before ``</tool_call>`` counts too). When these tags are
      present, JSON outside them is ignored.
    * Otherwise, JSON objects anywhere in the text (in code fences or not):
      ``{"name": ..., "arguments": {...}}`` (or ``"parameters"``), lists of them, and OpenAI
      structures (``{"tool_calls": [...]}``, ``{"type": "function", "function": {...}}``, a
      whole chat-completion response).

    Arguments given as a JSON string are decoded. Broken JSON is repaired where that is safe
    (trailing commas, Python-style quotes and literals); otherwise the attempt gives an error
    message saying what is wrong, for the agent to read. JSON that does not look like a tool
    call (prose with braces, data) is ignored.

    Args:
        text: The model's message. Any string; this function never raises.

    Returns:
        ``(calls, errors)``: the calls found, in order, and one message per malformed attempt.

    Example:
        >>> calls, errors = parse_tool_calls(
        ...     'Let me compute. <tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>')
        >>> calls, errors
        ([ToolCall(name='calculator', arguments={'expression': '2+3'}, id='')], [])
        >>> print(parse_tool_calls('<tool_call>{"name": "calculator" "arguments": {}}</tool_call>')[1][0])
        Malformed tool call: invalid JSON (Expecting ',' delimiter: line 1 column 23 (char 22)): {"name": "calculator" "arguments": {}}
    """
    if not isinstance(text, str):
        return [], [f"Malformed tool call: expected text, got {type(text).__name__}"]
    opens = list(_TOOL_CALL_OPEN.finditer(text))
    calls: list[ToolCall] = []
    errors: list[str] = []
    if not opens:
        if not _may_hold_call(text):
            return [], []  # no span can hold a key a call needs: skip finding the spans at all
        calls, errors = _parse_block(text, tagged=False)
        return calls, _cap(errors)
    for k, match in enumerate(opens):
        end_limit = opens[k + 1].start() if k + 1 < len(opens) else len(text)
        close = _TOOL_CALL_CLOSE.search(text, match.end(), end_limit)
        body = text[match.end() : close.start() if close else end_limit]
        body = _strip_fence(body)
        block_calls, block_errors = _parse_block(body, tagged=True)
        calls += block_calls
        errors += block_errors
    return calls, _cap(errors)


def _cap(errors: list[str]) -> list[str]:
    if len(errors) <= MAX_ERRORS:
        return errors
    return [*errors[: MAX_ERRORS - 1], f"... and {len(errors) - MAX_ERRORS + 1} more malformed tool calls"]


def parse_openai_tool_calls(obj: Any) -> tuple[list[ToolCall], list[str]]:
    """Tool calls from an OpenAI-style object (already decoded from JSON).

    Accepts a chat-completion response (``{"choices": [{"message": ...}]}``), a message
    (``{"tool_calls": [...]}``), a list of ``tool_calls`` entries, or one entry
    (``{"id": ..., "type": "function", "function": {"name": ..., "arguments": "<json>"}}``).

    Args:
        obj: The decoded object. Anything; this function never raises.

    Returns:
        ``(calls, errors)`` as in :func:`parse_tool_calls`.

    Example:
        >>> message = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
        ...     "function": {"name": "calculator", "arguments": '{"expression": "6*7"}'}}]}
        >>> parse_openai_tool_calls(message)
        ([ToolCall(name='calculator', arguments={'expression': '6*7'}, id='c1')], [])
    """
    calls: list[ToolCall] = []
    errors: list[str] = []
    if isinstance(obj, list):
        for item in obj:
            item_calls, item_errors = parse_openai_tool_calls(item)
            calls += item_calls
            errors += item_errors
        return calls, errors
    if not isinstance(obj, dict):
        return [], [f"Malformed tool call: expected an object with a 'function', got {_snippet(repr(obj))}"]
    if "choices" in obj and isinstance(obj["choices"], list):
        for choice in obj["choices"]:
            message = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(message, dict) and message.get("tool_calls"):
                c, e = parse_openai_tool_calls(message["tool_calls"])
                calls, errors = calls + c, errors + e
        return calls, errors
    if "tool_calls" in obj:
        entries = obj["tool_calls"]
        if entries is None:
            return [], []
        if not isinstance(entries, list):
            return [], [f"Malformed tool call: 'tool_calls' must be a list, got {type(entries).__name__}"]
        return parse_openai_tool_calls(entries)
    function = obj.get("function")
    if isinstance(function, dict):
        entry = dict(function)
        if "id" in obj:
            entry["id"] = obj["id"]
        result = _call_from_dict(entry, tagged=True)
        return result if result is not None else ([], [])
    result = _call_from_dict(obj, tagged=True)
    return result if result is not None else ([], [])


# --- final answers ----------------------------------------------------------------------------

_ANSWER_OPEN = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
# ASCII digits only: "²".isdigit() is True but it is no digit of an answer. The sign counts only
# when it does not follow a word or digit ("3-5" is not -5).
_NUMBER = re.compile(
    r"(?<![0-9A-Za-z_.)])-?(?:[0-9]+(?:,[0-9]{3}(?![0-9]))*(?:\.[0-9]+)?|\.[0-9]+)(?:/[0-9]+(?:\.[0-9]+)?)?"
)
_NOT_IN_NUMBERS = re.compile(r"[^0-9,./-]")
#: Characters at the end of a text that :func:`last_match` reads first.
_TAIL = 4_096
# At most this many boxes are tried from the end.
_MAX_BOXES_TRIED = 20
_BRACE_RUN = re.compile(r"\{+|\}+")
# The exact tags and the flat box of `last_answer_or_box` (no spaces inside the tags).
_EXACT_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_EXACT_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_FLAT_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` with balanced braces (``None`` if there is none).

    Example:
        >>> extract_boxed(r"so \\boxed{\\frac{1}{2}}.")
        '\\\\frac{1}{2}'
    """
    # A box that stays open to the end keeps every earlier box open past its start too, so each
    # earlier try needs to scan only up to the start of the box tried before it: linear in all.
    limit = len(text)
    for match in list(_BOXED.finditer(text))[-_MAX_BOXES_TRIED:][::-1]:
        content = _balanced(text, match.end(), limit)
        if content is not None:
            return content
        limit = match.start()
    return None


def _balanced(text: str, start: int, limit: int | None = None) -> str | None:
    """Text from ``start`` up to the ``}`` closing an already opened ``{`` before ``limit``; else ``None``."""
    depth = 1
    for run in _BRACE_RUN.finditer(text, start, len(text) if limit is None else limit):
        size = run.end() - run.start()  # a run of one brace repeated: one step for a flood of them
        if text[run.start()] == "{":
            depth += size
        elif size >= depth:
            return text[start : run.start() + depth - 1]
        else:
            depth -= size
    return None


def last_answer_or_box(text: str) -> str | None:
    """Content of the last ``<answer>...</answer>`` or flat ``\\boxed{...}``, in one linear pass.

    The matches are those of ``re.finditer(r"<answer>(.*?)</answer>|\\\\boxed\\{([^{}]*)\\}", text)``
    (tags in any case, a box without inner braces), found without that pattern's rescan from
    every unclosed ``<answer>`` (quadratic on a flood of them). ``None`` when there is no match.

    Example:
        >>> last_answer_or_box("<answer>1</answer> then \\\\boxed{2}"), last_answer_or_box("<ANSWER>3</answer>")
        ('2', '3')
        >>> last_answer_or_box("<answer>" * 5 + "4</answer>"), last_answer_or_box("<answer>5") is None
        ('<answer><answer><answer><answer>4', True)
    """
    last: str | None = None
    pos, end = 0, len(text)
    opener = _EXACT_OPEN.search(text)
    box = _FLAT_BOX.search(text)
    while pos < end:
        if opener is not None and opener.start() < pos:
            opener = _EXACT_OPEN.search(text, pos)
        if box is not None and box.start() < pos:
            box = _FLAT_BOX.search(text, pos)
        if opener is not None and (box is None or opener.start() < box.start()):
            close = _EXACT_CLOSE.search(text, opener.end())
            if close is not None:
                last, pos = text[opener.end() : close.start()], close.end()
                continue
            opener = None  # no closing tag after this one: none after any later one either
        if box is None:
            break
        last, pos = box.group(1), box.end()
    return last


def last_number(text: str) -> str | None:
    """The last number written in ``text`` (ASCII digits; ``1,000``, ``-2.5``, ``3/4`` forms).

    Example:
        >>> last_number("23 + 45 = 68."), last_number("x² and ٣"), last_number("from 3-5")
        ('68', None, '5')
    """
    start = max(0, len(text) - _TAIL)
    # A character that no number holds: matches after it are those of a scan from the start.
    boundary = _NOT_IN_NUMBERS.search(text, start) if start else None
    found = deque(_NUMBER.finditer(text, boundary.end() if boundary else 0), maxlen=1)
    if not found and boundary is not None:
        found = deque(_NUMBER.finditer(text), maxlen=1)
    return found[0].group() if found else None


def last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of ``pattern`` in ``text`` (the last of ``pattern.finditer(text)``), or None.

    Looks in the last few kilobytes first, so a text full of matches costs about as much as its
    tail; otherwise one pass, without a list of every match. Only for patterns that cannot match
    at a position inside another of their matches (a tag that starts with its only ``<``, a run
    behind a lookbehind such as ``(?<![0-9])[0-9]+``): then a scan started anywhere finds the
    same matches from there on as a scan from the start.

    Example:
        >>> last_match(re.compile(r"(?<![0-9])[0-9]+"), "1, 22, 333 and 4444; " * 10_000).group()
        '4444'
        >>> last_match(re.compile(r"<\\s*answer\\s*>"), "no tags") is None
        True
    """
    tail = max(0, len(text) - _TAIL)
    found = deque(pattern.finditer(text, tail), maxlen=1)
    if not found and tail:
        # None starts in the tail: the last match of a scan from the start is the last one.
        found = deque(pattern.finditer(text), maxlen=1)
    return found[0] if found else None


def _answer_tag_content(text: str) -> str | None:
    last = last_match(_ANSWER_OPEN, text)
    if last is None:
        return None
    close = _ANSWER_CLOSE.search(text, last.end())
    # No closing tag: generation was stopped at "</answer>" (a usual stop string), keep the rest.
    return text[last.end() : close.start() if close else len(text)]


def extract_answer(text: str, *, fallback_last_number: bool = True) -> str | None:
    """The final answer in a model's message, leniently.

    In order: the content of the last ``<answer>...</answer>`` (a last ``<answer>`` left
    unclosed runs to the end of the text); else the last ``\\boxed{...}``; else, when
    ``fallback_last_number``, the last number in the text. An answer that is entirely
    ``\\boxed{X}`` gives ``X``. Empty answers and missing ones are ``None``.

    Args:
        text: The model's message; any string (never raises).
        fallback_last_number: Use the last number when there are neither tags nor a box.

    Example:
        >>> extract_answer("I think <answer> 42 </answer>"), extract_answer(r"so \\boxed{6}")
        ('42', '6')
        >>> extract_answer("23 + 45 = 68"), extract_answer("23 + 45 = 68", fallback_last_number=False)
        ('68', None)
        >>> extract_answer("<answer></answer> 7") is None
        True
    """
    if not isinstance(text, str):
        return None
    answer = _answer_tag_content(text)
    if answer is None:
        answer = extract_boxed(text)
    if answer is None:
        return last_number(text) if fallback_last_number else None
    answer = answer.strip()
    box = _BOXED.match(answer)
    if box is not None:
        inner = _balanced(answer, box.end())
        if inner is not None and box.end() + len(inner) + 1 == len(answer):
            answer = inner.strip()
    return answer or None


def has_answer_tags(text: str) -> bool:
    """True when ``text`` has a closed ``<answer>...</answer>`` pair with non-blank content.

    Example:
        >>> has_answer_tags("<answer>5</answer>"), has_answer_tags("<answer> </answer>"), has_answer_tags("5")
        (True, False, False)
    """
    if not isinstance(text, str):
        return False
    last = last_match(_ANSWER_OPEN, text)
    if last is None:
        return False
    close = _ANSWER_CLOSE.search(text, last.end())
    return close is not None and bool(text[last.end() : close.start()].strip())
