"""The README and docs/ name only commands and options that exist, and render every table whole; every invoke task
documents every option; the README stays short enough to read in five minutes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

import tasks
from station import paths

PAGES = [paths.ROOT / "README.md", *sorted((paths.ROOT / "docs").glob("*.md"))]
# `invoke TASK` and what follows it on the line, up to the end of a code span, a table cell or a sentence.
MENTION = re.compile(r"invoke ([a-z][a-z-]*)([^`|\n]*)")
OPTION = re.compile(r"(?<![\w-])--([a-z][a-z-]*)")
TASKS = {name: tasks.ns.tasks[name] for name in tasks.ns.task_names}
# Read once: invoke hands each option its help text the first time it builds the arguments.
ARGUMENTS = {name: task.get_arguments() for name, task in TASKS.items()}


def mentions(page: Path) -> list[tuple[str, str]]:
    return MENTION.findall(page.read_text())


def options(name: str) -> set[str]:
    names = set()
    for argument in ARGUMENTS[name]:
        name = argument.names[0]
        names.add(name)
        if argument.kind is bool:
            names.add(f"no-{name}")
    return names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_command_a_page_names_exists_with_its_options(page: Path) -> None:
    found = mentions(page)
    wrong = []
    for name, rest in found:
        if name not in TASKS:
            wrong.append(f"invoke {name}: no such task")
            continue
        wrong += [f"invoke {name} --{flag}: no such option" for flag in OPTION.findall(rest)
                  if flag not in options(name)]  # fmt: skip
    assert not wrong, "\n".join(wrong)


def test_the_pages_mention_commands_at_all() -> None:
    assert sum(len(mentions(page)) for page in PAGES) > 30


README_BYTES = 14_000  # the quickstart, what you can do, Cline and GPU hosts; the depth is in docs/


def test_the_readme_is_short_and_starts_with_the_quickstart() -> None:
    readme = (paths.ROOT / "README.md").read_text()
    assert len(readme.encode()) <= README_BYTES
    assert next(line for line in readme.splitlines() if line.startswith("## ")) == "## Quickstart"


def table_rows(page: Path) -> list[tuple[int, list[str]]]:
    """Every table row of a page as GitHub renders it (markdown-it, GFM tables): its header's cell count, and its
    cells' text. A row that ends early renders with empty cells; an unescaped pipe in a code span splits it."""
    rows, header, cells = [], 0, None
    for token in MarkdownIt("commonmark").enable("table").parse(page.read_text()):
        if token.type == "tr_open":
            cells = []
        elif token.type == "inline" and cells is not None:
            cells.append(token.content)
        elif token.type == "tr_close":
            header = header or len(cells)
            rows.append((header, cells))
            cells = None
        elif token.type == "table_close":
            header = 0
    return rows


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_table_renders_a_full_cell_under_each_column(page: Path) -> None:
    broken = [" | ".join(cells) for columns, cells in table_rows(page) if len(cells) != columns or not all(cells)]
    assert not broken, "\n".join(broken)


def test_a_row_cut_short_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("| Command | What it does |\n|---|---|\n| `invoke tune [--traffic latest\\| Search flags |\n")
    assert [cells for _, cells in table_rows(page)][1][1] == ""


def test_every_page_the_readme_links_exists() -> None:
    readme = (paths.ROOT / "README.md").read_text()
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (paths.ROOT / link).is_file(), link


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_has_a_docstring_and_help_for_every_option(name: str) -> None:
    assert TASKS[name].__doc__ and TASKS[name].__doc__.strip()
    undocumented = [argument.names[0] for argument in ARGUMENTS[name] if not argument.help]
    assert not undocumented, f"invoke {name}: no help for {undocumented}"
