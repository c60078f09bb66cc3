"""Markdown reports from Jinja templates kept beside the code that fills them (station/reports/*.md.j2,
station/tune/report.md.j2): the layout of a report is read in one file, its figures formatted by one filter."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

HERE = Path(__file__).parent


def number(value: float | None, spec: str) -> str:
    """`value` in the format `spec` (e.g. "{:,.0f}"), or "-" where there is none."""
    return "-" if value is None else spec.format(value)


@functools.cache
def _templates(folder: Path) -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=False,  # markdown, not HTML
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["number"] = number
    return environment


def render(template: str, folder: Path = HERE, **context: Any) -> str:
    """The template `template` in `folder`, filled with `context`."""
    return _templates(folder).get_template(template).render(**context)
