"""Write one Markdown page per registered gym_tinker env into ``docs/envs/``, from the code itself.

Each page is built from the env's module docstring (rules, action, observation, reward), its
class docstring (details and constructor arguments, with defaults from the signature), the
registry (:data:`gym_tinker.ENV_ENTRIES`: id and turn limit), the difficulty levels
(:data:`gym_tinker.tasks.DIFFICULTIES`, or the env's own ``DIFFICULTIES``), what ``reset``
returns (system prompt, tools, info keys), and an example transcript made by running the env
with its scripted oracle (:func:`gym_tinker.oracles.oracle_action`) at a fixed seed.

Run it after changing an env: ``python docs/gen_env_pages.py`` rewrites the pages;
``python docs/gen_env_pages.py --check`` only reports pages that differ (exit status 1).
``tests/test_docs_pages.py`` fails while a page differs from what this script writes.

Example:
    >>> import gym_tinker
    >>> page = render_page(gym_tinker.ENV_ENTRIES[1])
    >>> page.splitlines()[0]
    '# Math (`tinker/Math-v0`)'
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import itertools
import re
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gym_tinker.core import TextEnv

__all__ = [
    "SEED",
    "docstring_to_markdown",
    "env_class",
    "page_name",
    "render_page",
    "write_pages",
]

SEED = 0
"""The seed of every example on the pages (transcripts and per-difficulty tasks)."""

PAGES_DIR = Path(__file__).resolve().parent / "envs"
"""Where the pages go: ``docs/envs/<Name>.md``."""

_MAX_TASK_CHARS = 110
_ROLE_LINK = re.compile(r":(?:func|class|data|meth|mod|attr|exc):`~?([^`]+)`")
_DATA_LINK = re.compile(r":data:`~?([A-Za-z_][A-Za-z_0-9.]*)`")
_SECTION = re.compile(r"^([A-Z][A-Za-z ,'/-]*):?$")
_ARG = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z_0-9]*)(?: \(([^)]*)\))?: ?(.*)$")


# --- docstrings to Markdown ------------------------------------------------------------------------


def _inline(text: str, namespace: dict[str, Any] | None = None) -> str:
    """RST inline markup to Markdown: double backticks, roles; ``:data:`` gains the value."""
    namespace = namespace or {}

    def data(match: re.Match[str]) -> str:
        name = match.group(1)
        value = namespace.get(name.rsplit(".", 1)[-1])
        shown = name.rsplit(".", 1)[-1] if match.group(0).startswith(":data:`~") else name
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            return f"`{shown}` (= `{value!r}`)"
        return f"`{shown}`"

    text = _DATA_LINK.sub(data, text)
    text = _ROLE_LINK.sub(
        lambda m: "`" + (m.group(1).rsplit(".", 1)[-1] if "~" in m.group(0) else m.group(1)) + "`", text
    )
    return re.sub(r"``([^`]+?)``", r"`\1`", text)


def _is_table_border(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) <= {"=", " "} and "=" in stripped


def _table_to_markdown(lines: list[str], namespace: dict[str, Any]) -> list[str]:
    """An RST simple table (``====  ====`` borders) as a Markdown table."""
    # A column runs from the start of its `===` run to the start of the next one.
    starts = [m.start() for m in re.finditer(r"=+", lines[0])]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))

    def cells(line: str) -> list[str]:
        return [line[start:stop].strip() for start, stop in bounds]

    body = [line for line in lines if not _is_table_border(line)]
    rows: list[list[str]] = []
    for line in body:
        row = cells(line)
        if rows and not row[0]:  # a continuation line: join it to the row above
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], row, strict=True)]
        else:
            rows.append(row)
    header, *data = rows
    out = [
        "",
        "| " + " | ".join(_inline(cell, namespace) for cell in header) + " |",
        "|" + "---|" * len(header),
    ]
    out += [
        "| " + " | ".join(_inline(cell, namespace).replace("|", "\\|") for cell in row) + " |" for row in data
    ]
    return [*out, ""]


def _block_to_markdown(body: str, namespace: dict[str, Any]) -> list[str]:
    """A dedented docstring block (paragraphs, bullets, simple tables, doctests) as Markdown lines."""
    lines = body.splitlines()
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        # Inline markup may wrap across lines, so it is converted a paragraph run at a time.
        in_bullet = False
        for line in _inline("\n".join(prose), namespace).splitlines():
            stripped = line.strip()
            if stripped.startswith("* "):
                out.append("- " + stripped[2:])
                in_bullet = True
            elif in_bullet and stripped:
                out.append("  " + stripped)
            else:
                out.append(stripped)
                in_bullet = False
        prose.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if _is_table_border(line):
            flush()
            table = [line]
            borders = 1
            index += 1
            while index < len(lines) and borders < 3:
                table.append(lines[index])
                borders += _is_table_border(lines[index])
                index += 1
            out += _table_to_markdown(table, namespace)
            continue
        if line.lstrip().startswith(">>>"):
            flush()
            block = []
            while index < len(lines) and lines[index].strip():
                block.append(lines[index])
                index += 1
            out += ["```python", *textwrap.dedent("\n".join(block)).splitlines(), "```"]
            continue
        prose.append(line)
        index += 1
    flush()
    return out


def _sections(doc: str) -> Iterator[tuple[str, str]]:
    """``(title, dedented body)`` for each ``Title`` line followed by an indented block."""
    lines = doc.splitlines()
    title = ""
    body: list[str] = []
    for line in lines:
        if line and not line[0].isspace() and _SECTION.match(line.strip()):
            if title or any(b.strip() for b in body):
                yield title, textwrap.dedent("\n".join(body)).strip("\n")
            title, body = line.strip().rstrip(":"), []
        else:
            body.append(line)
    if title or any(b.strip() for b in body):
        yield title, textwrap.dedent("\n".join(body)).strip("\n")


def docstring_to_markdown(doc: str, *, level: int = 2, namespace: dict[str, Any] | None = None) -> str:
    """Render a module docstring written in this project's style as Markdown.

    The first line is dropped (pages use it as their title); each unindented ``Title`` line
    followed by an indented block becomes a heading of ``level``; RST simple tables become
    Markdown tables; double backticks and Sphinx roles become code spans (a ``:data:`NAME```
    role also shows the value of ``NAME`` in ``namespace``).

    Example:
        >>> doc = "Summary.\\n\\nReward\\n    ``1.0`` when right, at most :data:`CAP`.\\n"
        >>> print(docstring_to_markdown(doc, namespace={"CAP": 0.5}))
        ## Reward
        <BLANKLINE>
        `1.0` when right, at most `CAP` (= `0.5`).
    """
    namespace = namespace or {}
    rest = doc.strip().split("\n", 1)[1] if "\n" in doc.strip() else ""
    parts: list[str] = []
    for title, body in _sections(rest):
        lines = _block_to_markdown(body, namespace)
        if title:
            parts.append("#" * level + " " + title + "\n\n" + "\n".join(lines).strip("\n"))
        elif any(line.strip() for line in lines):
            parts.append("\n".join(lines).strip("\n"))
    return "\n\n".join(parts)


def _class_doc_parts(cls: type) -> tuple[str, dict[str, str]]:
    """The class docstring's free text (without summary, Args, Example) and its ``Args`` entries."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    lines = doc.splitlines()[1:]
    text: list[str] = []
    args: dict[str, str] = {}
    section = ""
    current = ""
    for line in lines:
        if line and not line[0].isspace() and line.rstrip().endswith(":") and " " not in line.strip()[:-1]:
            section = line.strip()[:-1]
            continue
        if section == "Args":
            match = (
                _ARG.match(line.strip())
                if line.startswith("    ") and not line.startswith("        ")
                else None
            )
            if match:
                current = match.group(1)
                args[current] = match.group(3).strip()
            elif line.strip() and current:
                args[current] += " " + line.strip()
        elif section in ("Example", "Examples"):
            continue
        elif not section:
            text.append(line)
    free = "\n".join(text).strip()
    if free.startswith("See the module docstring"):
        free = ""
    return free, args


# --- the env ------------------------------------------------------------------------------------


def env_class(entry: Any) -> type[TextEnv]:
    """The env class behind a registry entry (``gym_tinker.registration.EnvEntry``).

    Example:
        >>> import gym_tinker
        >>> env_class(gym_tinker.ENV_ENTRIES[0]).__name__
        'ToolUseEnv'
    """
    module_name, class_name = entry.entry_point.split(":")
    return getattr(importlib.import_module(module_name), class_name)  # type: ignore[no-any-return]


def page_name(entry: Any) -> str:
    """The page's file name inside ``docs/envs/``.

    Example:
        >>> import gym_tinker
        >>> page_name(gym_tinker.ENV_ENTRIES[0])
        'ToolUse.md'
    """
    return f"{entry.name}.md"


def _difficulties(cls: type) -> tuple[str, ...]:
    module = sys.modules[cls.__module__]
    own = getattr(module, "DIFFICULTIES", None)
    if own is None:
        from gym_tinker.tasks import DIFFICULTIES

        own = DIFFICULTIES
    return tuple(own)


def _fence(text: str, language: str = "text") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def _code_span(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{ticks}{pad}{text}{pad}{ticks}".replace("|", "\\|")


def _short(text: str, limit: int = _MAX_TASK_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _make(entry: Any, **kwargs: Any) -> Any:
    import gymnasium as gym

    return gym.make(entry.id, **kwargs)


def _oracle_episode(env: Any) -> list[tuple[str, str, float, bool, bool]]:
    """``(observation before, action, reward, terminated, truncated)`` per step, oracle-played."""
    from gym_tinker.oracles import oracle_action

    observation, _ = env.reset(seed=SEED)
    steps = []
    for _ in range(env.unwrapped.max_turns):
        action = oracle_action(env)
        next_observation, reward, terminated, truncated, _ = env.step(action)
        steps.append((observation, action, float(reward), bool(terminated), bool(truncated)))
        observation = next_observation
        if terminated or truncated:
            steps.append((observation, "", 0.0, True, True))
            break
    return steps


def _render_transcript(entry: Any) -> list[str]:
    env = _make(entry)
    try:
        steps = _oracle_episode(env)
    finally:
        env.close()
    out = [
        f'`gym.make("{entry.id}")`, `reset(seed={SEED})`, then each action from '
        "`gym_tinker.oracles.oracle_action(env)` (a scripted agent that reads the hidden task), "
        "until the episode ends.",
        "",
    ]
    total = 0.0
    for turn, (observation, action, reward, terminated, truncated) in enumerate(steps[:-1], start=1):
        role = "reset observation" if turn == 1 else "observation"
        total += reward
        out += [f"**{role}**", "", _fence(observation), "", f"**action {turn}**", "", _fence(action), ""]
        out.append(f"reward `{reward!r}`, terminated `{terminated}`, truncated `{truncated}`")
        out.append("")
    out += [
        "**final observation**",
        "",
        _fence(steps[-1][0]),
        "",
        f"Return: `{total!r}` in {len(steps) - 1} turn(s).",
    ]
    return out


def _turn_limits(entry: Any, cls: type) -> str:
    limits = {}
    for difficulty in _difficulties(cls):
        env = _make(entry, difficulty=difficulty)
        limits[difficulty] = env.unwrapped.max_turns
        env.close()
    if set(limits.values()) == {entry.max_turns}:
        shown = str(entry.max_turns)
    else:
        shown = ", ".join(f"{turns} (`{difficulty}`)" for difficulty, turns in limits.items())
    return (
        f"{shown} (the default of the `max_turns` argument). Finishing the task (an answer, the word "
        "or number found) terminates the episode; reaching the limit first truncates it."
    )


def _render_difficulties(entry: Any, cls: type) -> list[str]:
    from gym_tinker.oracles import oracle_action

    out = [
        "| difficulty | turn limit | task at `seed=0` | oracle's first action |",
        "|---|---|---|---|",
    ]
    for difficulty in _difficulties(cls):
        env = _make(entry, difficulty=difficulty)
        try:
            observation, _ = env.reset(seed=SEED)
            action = oracle_action(env)
            turns = env.unwrapped.max_turns
        finally:
            env.close()
        out.append(
            f"| `{difficulty}` | {turns} | {_code_span(_short(observation))} | {_code_span(_short(action, 70))} |"
        )
    return out


def _render_arguments(cls: type, args_doc: dict[str, str], namespace: dict[str, Any]) -> list[str]:
    signature = inspect.signature(cls)
    out = ["| argument | default | meaning |", "|---|---|---|"]
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = (
            "required"
            if parameter.default is parameter.empty
            else _code_span(_default_repr(parameter.default))
        )
        meaning = _inline(args_doc.get(name, ""), namespace).replace("|", "\\|")
        out.append(f"| `{name}` | {default} | {meaning} |")
    return out


def _default_repr(value: Any) -> str:
    """``repr``, except a dataclass equal to its class's defaults shows as ``Name()``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            if value == type(value)():
                return f"{type(value).__name__}()"
        except (TypeError, ValueError):
            pass
    return repr(value)


def _field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under each field of a (dataclass) class body."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    docs: dict[str, str] = {}
    if not isinstance(body, ast.ClassDef):
        return docs
    for node, after in itertools.pairwise(body.body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _render_sandbox(cls: type) -> list[str]:
    """The sandbox limits an env runs code under, from its ``SandboxLimits`` arguments' defaults."""
    out: list[str] = []
    for name, parameter in inspect.signature(cls).parameters.items():
        value = parameter.default
        if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            continue
        docs = _field_docs(type(value))
        out += [
            "",
            f"Code runs in `gym_tinker.tools.sandbox.run_python` (bubblewrap when installed: no network, "
            f"read-only filesystem, private `/tmp`; plus rlimits) under `{name}`, by default:",
            "",
            "| limit | default | meaning |",
            "|---|---|---|",
        ]
        for field in dataclasses.fields(value):
            meaning = _inline(docs.get(field.name, "")).replace("|", "\\|")
            out.append(f"| `{field.name}` | `{getattr(value, field.name)!r}` | {meaning} |")
    return out


def _render_tools(tools: Sequence[dict[str, Any]]) -> list[str]:
    if not tools:
        return ['None: `info["tools"]` is empty and the agent answers in plain text.']
    out = ["| tool | arguments | what it does |", "|---|---|---|"]
    for tool in tools:
        function = tool.get("function", tool)
        properties = function.get("parameters", {}).get("properties", {})
        arguments = ", ".join(f"`{name}` ({spec.get('type', 'any')})" for name, spec in properties.items())
        description = _inline(function.get("description", "")).replace("|", "\\|")
        out.append(f"| `{function['name']}` | {arguments} | {description} |")
    return out


def render_page(entry: Any) -> str:
    """The Markdown page of one registered env, built from its code and one oracle-played episode.

    Example:
        >>> import gym_tinker
        >>> page = render_page(gym_tinker.ENV_ENTRIES[5])
        >>> "## Example transcript" in page and "| `hard` | 16 |" in page
        True
    """
    cls = env_class(entry)
    module_name = entry.entry_point.split(":")[0]
    module = importlib.import_module(module_name)
    namespace = {**vars(sys.modules[cls.__module__]), **vars(module)}
    free, args_doc = _class_doc_parts(cls)

    env = _make(entry)
    try:
        _, info = env.reset(seed=SEED)
    finally:
        env.close()

    tool_names = ", ".join(f"`{tool.get('function', tool)['name']}`" for tool in info["tools"])
    summary = _inline((module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else "", namespace)
    lines = [
        f"# {entry.name} (`{entry.id}`)",
        "",
        f"<!-- Generated by docs/gen_env_pages.py from {module_name}; edit the code, then run "
        "`python docs/gen_env_pages.py`. -->",
        "",
        f"{cls.description}",
        "",
        "| | |",
        "|---|---|",
        f'| id | `{entry.id}` (`gym.make("{entry.id}")` after `import gym_tinker`) |',
        f"| class | `{module_name}.{cls.__name__}` |",
        f"| turn limit | {_turn_limits(entry, cls)} |",
        f"| difficulties | {', '.join(f'`{d}`' for d in _difficulties(cls))} (`difficulty=`, default `easy`) |",
        f"| tools | {tool_names or 'none'} |",
        "",
        summary,
        "",
        docstring_to_markdown(module.__doc__ or "", namespace=namespace),
        "",
    ]
    if free:
        lines += ["## Details", "", *_block_to_markdown(free, namespace), ""]
    lines += [
        "## Difficulty levels",
        "",
        "What each level changes is described above; this table is produced by running the env "
        f'(`gym.make("{entry.id}", difficulty=...)`, `reset(seed={SEED})`).',
        "",
        *_render_difficulties(entry, cls),
        "",
        "## Constructor arguments",
        "",
        f'Pass them to `gym.make("{entry.id}", ...)` or `{cls.__name__}(...)`. Reward shaping options, '
        "where the env has them, are here and off by default.",
        "",
        *_render_arguments(cls, args_doc, namespace),
        "",
        "## Tools and sandbox",
        "",
        *_render_tools(info["tools"]),
        *_render_sandbox(cls),
        "",
        "## What `reset` returns",
        "",
        f"The first observation (see the transcript below) and an `info` dict with keys "
        f'{", ".join(f"`{k}`" for k in sorted(info))}. The system prompt (`info["system_prompt"]`, '
        "difficulty `easy`):",
        "",
        _fence(info["system_prompt"]),
        "",
        "## Example transcript",
        "",
        *_render_transcript(entry),
        "",
    ]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def write_pages(directory: Path = PAGES_DIR, *, check: bool = False) -> list[Path]:
    """Write (or, with ``check``, only compare) every env page; return the pages that differed.

    Example:
        >>> write_pages(check=True)
        []
    """
    import gym_tinker

    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for entry in gym_tinker.ENV_ENTRIES:
        path = directory / page_name(entry)
        text = render_page(entry)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            changed.append(path)
            if not check:
                path.write_text(text, encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report pages that differ; exit 1 if any")
    parser.add_argument("--out", type=Path, default=PAGES_DIR, help="the folder to write (default docs/envs)")
    options = parser.parse_args(argv)
    changed = write_pages(options.out, check=options.check)
    for path in changed:
        print(("differs: " if options.check else "wrote: ") + str(path))
    return 1 if options.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
