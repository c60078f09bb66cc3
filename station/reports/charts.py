"""matplotlib set up for files only (no display on a server), and the figure boilerplate every chart shares.

matplotlib is imported by the first chart, not with station: it takes longer to import than the rest of the CLI, and
most commands draw nothing."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@cache
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def new(width: float, height: float = 4.5, columns: int = 1) -> tuple[Figure, object]:
    return _pyplot().subplots(1, columns, figsize=(width, height), layout="constrained")


def save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path
