"""matplotlib set up for files only (no display on a server), and the figure boilerplate every chart shares."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib import pyplot as plt
from matplotlib.figure import Figure


def new(width: float, height: float = 4.5, columns: int = 1) -> tuple[Figure, object]:
    return plt.subplots(1, columns, figsize=(width, height), layout="constrained")


def save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
