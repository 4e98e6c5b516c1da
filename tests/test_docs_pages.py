"""The docs stay true to the code: one generated page per env, every game named, no broken links."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

import gym_tinker
import multiagent

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FENCED_BLOCK = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def load_generator() -> ModuleType:
    """``docs/gen_env_pages.py`` as a module (``docs/`` is not a package)."""
    name = "gen_env_pages"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DOCS / "gen_env_pages.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def relative_links(markdown: str) -> list[str]:
    """Link targets that point into the repository (no URL scheme, not a bare ``#anchor``)."""
    text = FENCED_BLOCK.sub("", markdown)
    text = CODE_SPAN.sub("", text)
    targets = LINK.findall(text) + REFERENCE_LINK.findall(text)
    return [t for t in targets if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t) and not t.startswith("#")]


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*/*.md"))]


ENV_IDS = [env_id for env_id, _ in gym_tinker.list_envs()]


def test_the_link_finder_sees_links_and_skips_code():
    text = "See [a](docs/a.md#x) and ![b](img.png).\n`[c](no.md)`\n```\n[d](no2.md)\n```\n[e]: ref.md\n[f](https://x.org)"
    assert relative_links(text) == ["docs/a.md#x", "img.png", "ref.md"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_registered_env_has_a_page_linked_from_envs_md(env_id):
    entry = next(e for e in gym_tinker.ENV_ENTRIES if e.id == env_id)
    page = DOCS / "envs" / load_generator().page_name(entry)
    assert page.is_file(), f"{env_id} has no page {page}; run `python docs/gen_env_pages.py`"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {entry.name} (`{env_id}`)")
    for heading in ("## Reward", "## Action", "## Difficulty levels", "## Tools", "## Example transcript"):
        assert heading in text, f"{page.name} lacks {heading!r}"
    assert f"](envs/{page.name})" in (DOCS / "envs.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_each_env_page_is_what_the_generator_writes_now(env_id):
    entry = next(e for e in gym_tinker.ENV_ENTRIES if e.id == env_id)
    generator = load_generator()
    page = DOCS / "envs" / generator.page_name(entry)
    expected = generator.render_page(entry)
    assert page.read_text(encoding="utf-8") == expected, (
        f"{page} is out of date with the code; run `python docs/gen_env_pages.py` and commit the result"
    )


def test_no_page_for_an_env_that_is_not_registered():
    names = {load_generator().page_name(e) for e in gym_tinker.ENV_ENTRIES}
    assert {p.name for p in (DOCS / "envs").glob("*.md")} == names


def test_the_example_transcripts_come_from_a_solved_episode():
    # The pages promise an oracle-played episode: it must actually end solved, not truncated.
    for entry in gym_tinker.ENV_ENTRIES:
        text = (DOCS / "envs" / load_generator().page_name(entry)).read_text(encoding="utf-8")
        transcript = text.split("## Example transcript", 1)[1]
        assert "terminated `True`, truncated `False`" in transcript, entry.id
        assert "Return: `1.0`" in transcript, entry.id


@pytest.mark.parametrize("game", [name for name, _ in multiagent.list_games()])
def test_every_game_is_named_in_games_md(game):
    text = (DOCS / "games.md").read_text(encoding="utf-8")
    assert f"`{game}`" in text, f"docs/games.md does not name {game}"
    assert f"### `{game}`" in text, f"docs/games.md has no section for {game}"


def test_every_bot_is_named_in_games_md():
    from multiagent.bots import BOTS

    text = (DOCS / "games.md").read_text(encoding="utf-8")
    for game, bots in BOTS.items():
        for bot in bots:
            assert f"`{bot}`" in text, f"docs/games.md does not name bot {bot!r} of {game}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(path):
    broken = []
    for target in relative_links(path.read_text(encoding="utf-8")):
        file_part = target.split("#", 1)[0]
        if file_part and not (path.parent / file_part).exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} links to missing files: {broken}"


def test_docs_index_lists_every_top_level_page():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not link {page.name}"


@functools.cache
def _imported_top_packages(package: str) -> frozenset[str]:
    """Top-level packages imported anywhere in ``package`` at module level or in functions."""
    found: set[str] = set()
    for source in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return frozenset(found)


HEAVY = {"torch", "transformers", "trl", "peft", "vllm", "dask", "distributed"}


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("gym_tinker", {"multiagent", "executors", *HEAVY}), ("multiagent", {"executors", *HEAVY})],
)
def test_the_import_rules_in_architecture_md_hold(package, forbidden):
    assert "may import" in (DOCS / "architecture.md").read_text(encoding="utf-8")
    imported = _imported_top_packages(package)
    assert "torch" in _imported_top_packages("executors")  # the scan sees imports inside functions
    assert not imported & forbidden, f"{package} imports {sorted(imported & forbidden)}"


def test_the_generator_docstring_examples_run():
    import doctest

    failures, tried = doctest.testmod(load_generator(), optionflags=doctest.ELLIPSIS)
    assert tried >= 5 and failures == 0
