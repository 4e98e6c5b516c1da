"""Tool-call parsing and final-answer extraction: every format, broken input, and fuzzing."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_tinker.messages import ToolCall, assistant_message, function_schema, tool_message
from gym_tinker.parsing import (
    MAX_ERRORS,
    extract_answer,
    extract_boxed,
    has_answer_tags,
    last_number,
    parse_openai_tool_calls,
    parse_tool_calls,
)

CALC = ToolCall("calculator", {"expression": "2+3"})


# --- tool calls: formats ----------------------------------------------------------------------


def test_hermes_block_with_surrounding_text():
    text = 'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+3"}}\n</tool_call>\nDone.'
    assert parse_tool_calls(text) == ([CALC], [])


def test_several_hermes_blocks_keep_order():
    text = (
        '<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call> then '
        '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>'
    )
    calls, errors = parse_tool_calls(text)
    assert [c.name for c in calls] == ["search", "calculator"] and errors == []


def test_unclosed_final_block_counts_as_a_call():
    # Generation stopped at the "</tool_call>" stop string.
    assert parse_tool_calls('<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}') == (
        [CALC],
        [],
    )


def test_tags_are_case_and_space_tolerant():
    text = '< TOOL_CALL >{"name": "calculator", "arguments": {"expression": "2+3"}}</ tool_call >'
    assert parse_tool_calls(text) == ([CALC], [])


def test_code_fence_inside_tags():
    text = (
        '<tool_call>\n```json\n{"name": "calculator", "arguments": {"expression": "2+3"}}\n```\n</tool_call>'
    )
    assert parse_tool_calls(text) == ([CALC], [])


def test_json_outside_tags_is_ignored_when_tags_present():
    text = (
        '{"name": "search", "arguments": {"query": "x"}} '
        '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>'
    )
    assert parse_tool_calls(text) == ([CALC], [])


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "calculator", "arguments": {"expression": "2+3"}}',
        '  \n {"name": "calculator", "arguments": {"expression": "2+3"}}  \n',
        'I will call: {"name": "calculator", "arguments": {"expression": "2+3"}} and wait.',
        '```json\n{"name": "calculator", "arguments": {"expression": "2+3"}}\n```',
        '```\n{"name": "calculator", "parameters": {"expression": "2+3"}}\n```',
        '{"name": "calculator", "arguments": "{\\"expression\\": \\"2+3\\"}"}',
        '[{"name": "calculator", "arguments": {"expression": "2+3"}}]',
    ],
)
def test_bare_json_forms(text):
    assert parse_tool_calls(text) == ([CALC], [])


def test_openai_structures_as_json_text():
    entry = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "calculator", "arguments": '{"expression": "2+3"}'},
    }
    expected = [ToolCall("calculator", {"expression": "2+3"}, id="call_1")]
    assert parse_tool_calls(json.dumps({"role": "assistant", "tool_calls": [entry]})) == (expected, [])
    assert parse_tool_calls(json.dumps(entry)) == (expected, [])
    response = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [entry]}}]}
    assert parse_tool_calls(json.dumps(response)) == (expected, [])


def test_parse_openai_tool_calls_objects():
    entries = [
        {
            "id": "a",
            "type": "function",
            "function": {"name": "calculator", "arguments": '{"expression": "1"}'},
        },
        {"id": "b", "type": "function", "function": {"name": "search", "arguments": {"query": "q"}}},
    ]
    calls, errors = parse_openai_tool_calls({"tool_calls": entries})
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "calculator", {"expression": "1"}),
        ("b", "search", {"query": "q"}),
    ]
    assert errors == []
    assert parse_openai_tool_calls(entries) == (calls, [])
    assert parse_openai_tool_calls({"tool_calls": None}) == ([], [])


def test_parse_openai_tool_calls_bad_objects_give_errors():
    calls, errors = parse_openai_tool_calls({"tool_calls": "nope"})
    assert calls == [] and "must be a list" in errors[0]
    calls, errors = parse_openai_tool_calls([42])
    assert calls == [] and "42" in errors[0]
    calls, errors = parse_openai_tool_calls({"function": {"name": "calc", "arguments": "{broken"}})
    assert calls == [] and "not valid JSON" in errors[0]


def test_round_trip_through_openai_form():
    call = ToolCall("calculator", {"expression": "6*7", "note": "ünï"}, id="c9")
    assert parse_openai_tool_calls(call.to_openai()) == ([call], [])
    assert parse_openai_tool_calls(assistant_message("", [call])) == ([call], [])


# --- tool calls: broken input -----------------------------------------------------------------


def test_trailing_commas_are_repaired():
    text = '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3",},}</tool_call>'
    assert parse_tool_calls(text) == ([CALC], [])


def test_comma_inside_string_is_not_touched_by_repair():
    text = '{"name": "echo", "arguments": {"text": "a,}", "n": [1,],}}'
    assert parse_tool_calls(text) == ([ToolCall("echo", {"text": "a,}", "n": [1]})], [])


def test_python_style_dict_is_repaired_without_eval():
    text = "<tool_call>{'name': 'calculator', 'arguments': {'expression': '2+3'}}</tool_call>"
    assert parse_tool_calls(text) == ([CALC], [])
    # A Python expression is not a literal: it must not be evaluated.
    calls, errors = parse_tool_calls("<tool_call>{'name': __import__('os').getcwd()}</tool_call>")
    assert calls == [] and len(errors) == 1


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>{(1, 2): 'a'}</tool_call>",
        "<tool_call>{'name': 'x', 'arguments': {(1, 2): 'a'}}</tool_call>",
        "<tool_call>{'name': 'x', 'arguments': {'a': {1, 2}}}</tool_call>",
        "<tool_call>{'name': 'x', 'arguments': {'a': b'bytes'}}</tool_call>",
    ],
)
def test_python_literals_json_cannot_express_are_errors(text):
    calls, errors = parse_tool_calls(text)
    assert calls == [] and len(errors) == 1


def test_invalid_json_in_tags_gives_a_clear_error():
    calls, errors = parse_tool_calls('<tool_call>{"name": "calculator" "arguments": {}}</tool_call>')
    assert calls == []
    assert len(errors) == 1 and "invalid JSON" in errors[0] and "delimiter" in errors[0]


def test_unclosed_json_call_attempt_is_reported():
    calls, errors = parse_tool_calls('{"name": "calculator", "arguments": {"expression": "2+3"}')
    assert calls == [] and "not closed" in errors[0]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("<tool_call></tool_call>", "no JSON object"),
        ("<tool_call>calculator(2+3)</tool_call>", "no JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', "'name'"),
        ('<tool_call>{"name": "", "arguments": {}}</tool_call>', "'name'"),
        ('<tool_call>{"name": 3, "arguments": {}}</tool_call>', "'name'"),
        ('{"name": "calc", "arguments": 5}', "must be a JSON object"),
        ('{"name": "calc", "arguments": "not json"}', "not valid JSON"),
        ("<tool_call>[1, 2]</tool_call>", "expected a JSON object"),
    ],
)
def test_near_misses_give_errors(text, fragment):
    calls, errors = parse_tool_calls(text)
    assert calls == []
    assert len(errors) >= 1 and fragment in errors[0]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "The answer is 5.",
        "Sets like {1, 2} and {a: b} are not calls.",
        '{"name": "Bob", "age": 3}',  # data with a name, but no arguments: not a call
        '{"result": 4}',
        "}{][",
        "{" * 3000,
    ],
)
def test_text_without_calls_gives_nothing(text):
    assert parse_tool_calls(text) == ([], [])


def test_tagged_call_without_arguments_gets_empty_arguments():
    assert parse_tool_calls('<tool_call>{"name": "now"}</tool_call>') == ([ToolCall("now", {})], [])


def test_nested_braces_in_arguments():
    args = {
        "code": "def f():\n    return {'a': [1, {2: 3}]}",
        "deep": {"x": {"y": {"z": [1, 2, {"w": "}"}]}}},
    }
    text = f"Calling now: {json.dumps({'name': 'python', 'arguments': args})} <- there"
    assert parse_tool_calls(text) == ([ToolCall("python", args)], [])


def test_raw_newline_inside_string_is_accepted():
    text = '<tool_call>{"name": "python", "arguments": {"code": "print(1)\nprint(2)"}}</tool_call>'
    assert parse_tool_calls(text) == ([ToolCall("python", {"code": "print(1)\nprint(2)"})], [])


def test_errors_are_capped():
    calls, errors = parse_tool_calls("<tool_call>{bad}</tool_call>" * 50)
    assert calls == [] and len(errors) == MAX_ERRORS and "more" in errors[-1]


def test_deeply_nested_json_does_not_raise():
    text = '<tool_call>{"name": "x", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}</tool_call>"
    calls, errors = parse_tool_calls(text)
    assert calls == [] and len(errors) == 1


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_tool_calls_never_raises(text):
    calls, errors = parse_tool_calls(text)
    assert all(isinstance(c, ToolCall) for c in calls) and all(isinstance(e, str) for e in errors)


_fragments = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        '"name"',
        "'name'",
        "'arguments'",
        "b'x'",
        "None",
        ":",
        '"calculator"',
        ",",
        '"arguments"',
        '"',
        "\\",
        "'",
        "```",
        " ",
        "1",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_fragments, max_size=40).map("".join))
def test_parse_tool_calls_never_raises_on_near_misses(text):
    calls, errors = parse_tool_calls(text)
    assert isinstance(calls, list) and isinstance(errors, list)


# --- messages and schemas ---------------------------------------------------------------------


def test_function_schema_validates():
    schema = function_schema("calc", "d", {"type": "object", "properties": {}})
    assert schema == {
        "type": "function",
        "function": {"name": "calc", "description": "d", "parameters": {"type": "object", "properties": {}}},
    }
    with pytest.raises(ValueError, match="tool name"):
        function_schema("bad name", "d", {"type": "object"})
    with pytest.raises(ValueError, match="object"):
        function_schema("calc", "d", {"type": "string"})


def test_tool_message_fields():
    assert tool_message("4") == {"role": "tool", "content": "4"}
    assert tool_message("4", tool_call_id="c", name="calculator")["tool_call_id"] == "c"


# --- answers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>42</answer>", "42"),
        ("First <answer>1</answer>, finally <answer> 2 </answer>", "2"),
        ("<ANSWER>7</ANSWER>", "7"),
        ("thinking... <answer>12", "12"),  # closing tag cut off by a stop string
        ("<answer>\\boxed{6}</answer>", "6"),
        ("<answer>Paris</answer>", "Paris"),
        ("so \\boxed{6}", "6"),
        ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{7} and a broken \\boxed{8", "7"),
        ("23 + 45 = 68", "68"),
        ("It costs $1,250.50 in total.", "1,250.50"),
        ("The result is -3.", "-3"),
        ("from 3-5", "5"),
        ("answer: .5", ".5"),
        ("3/4 of it", "3/4"),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no numbers here",
        "<answer></answer>",
        "<answer>   </answer> 5",
        "\\boxed{}",
        "x² and ٣ and ½",
        "²³",
    ],
)
def test_extract_answer_none_for_empty_or_missing(text):
    assert extract_answer(text) is None


def test_extract_answer_without_number_fallback():
    assert extract_answer("23 + 45 = 68", fallback_last_number=False) is None
    assert extract_answer("<answer>68</answer>", fallback_last_number=False) == "68"


def test_unicode_digits_are_not_numbers():
    assert last_number("٣٤") is None and last_number("x²") is None and last_number("² 4") == "4"


def test_extract_boxed_nested_and_spaced():
    assert extract_boxed("\\boxed { a{b}c }") == " a{b}c "
    assert extract_boxed("none") is None


def test_has_answer_tags():
    assert has_answer_tags("<answer>5</answer>")
    assert not has_answer_tags("<answer>5")
    assert not has_answer_tags("<answer></answer>")
    assert not has_answer_tags("</answer>5<answer>")


@settings(max_examples=300, deadline=None)
@given(st.text(), st.booleans())
def test_extract_answer_never_raises(text, fallback):
    result = extract_answer(text, fallback_last_number=fallback)
    assert result is None or (isinstance(result, str) and result.strip() == result and result)
    assert isinstance(has_answer_tags(text), bool)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-(10**12), 10**12), st.text(alphabet=st.characters(blacklist_categories=["Nd"]), max_size=20)
)
def test_extract_answer_finds_tagged_integer(value, noise):
    assert extract_answer(f"{noise}<answer>{value}</answer>") == str(value)


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>x" + " " * 100_000 + "x</tool_call>",
        "<tool_call>```" + " \t" * 50_000,
        '{"' * 50_000,
        "<answer>" * 50_000,
        "\\boxed{" * 50_000,
        "1," * 50_000,
        "(" * 100_000,
    ],
)
def test_pathological_inputs_stay_fast(text):
    # Parsers see untrusted model output on every step: no quadratic blow-ups.
    start = time.perf_counter()
    parse_tool_calls(text)
    extract_answer(text)
    assert time.perf_counter() - start < 2.0
