"""Matplotlib figures saved as PNG files whose bytes depend only on what they draw.

Shared by the report's figures and the ranking study's plot: the PNG is written without
the ``Software`` metadata entry (it names the matplotlib version), at one resolution.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

DPI = 100


def save_png(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    return path
