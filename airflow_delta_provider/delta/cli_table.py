"""Column-aligned plain-text tables for the CLI, with the standard library only.

:func:`render` lines up cells in columns two spaces apart; a column whose
cells are all numbers (or empty) is right-aligned. ``None`` is an empty cell.
Control characters become spaces so that a cell stays on its line.
:func:`clip` shortens a long cell with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence

ELLIPSIS = "…"
_GAP = "  "


def clip(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters, the last one an ellipsis if cut."""
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def render(rows: Sequence[Sequence[object]], headers: Sequence[str] | None = None) -> list[str]:
    """The lines of a table: ``headers`` (if given) then one line per row, no trailing spaces."""
    ncols = max([len(headers or ())] + [len(row) for row in rows])
    cells = [[*row, *[None] * (ncols - len(row))] for row in rows]
    right = [bool(cells) and all(_is_number(row[c]) or row[c] is None for row in cells) for c in range(ncols)]
    table = ([[*headers, *[""] * (ncols - len(headers))]] if headers is not None else []) + [
        [_text(cell) for cell in row] for row in cells
    ]
    widths = [max(len(row[c]) for row in table) for c in range(ncols)]
    return [
        _GAP.join(cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right)).rstrip()
        for row in table
    ]


def _is_number(cell: object) -> bool:
    return isinstance(cell, (int, float)) and not isinstance(cell, bool)


def _text(cell: object) -> str:
    if cell is None:
        return ""
    text = str(cell).lower() if isinstance(cell, bool) else str(cell)
    return "".join(" " if not ch.isprintable() else ch for ch in text)
