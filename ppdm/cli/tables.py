"""Terminal tables that never cut a label.

:func:`print_table` prints a rich table whose cells wrap at spaces. When the table would
not fit the terminal even so (every column at least as wide as its longest word), it
switches to a vertical layout: one block per row, one ``column: value`` line per cell,
so labels such as ``uniform-noise(level=0.1)`` are always printed whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: characters a rich table with a box spends per column (two of padding, one border) and once
_PER_COLUMN = 3
_EXTRA = 1


def _longest_word(text: str) -> int:
    return max((len(w) for w in str(text).split()), default=0)


def min_table_width(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """The narrowest width at which every column shows its longest word whole."""
    widths = [_longest_word(h) for h in headers]
    for row in rows:
        for j, cell in enumerate(row):
            widths[j] = max(widths[j], _longest_word(cell))
    return sum(widths) + _PER_COLUMN * len(widths) + _EXTRA


def print_table(
    console: Any,
    title: str | None,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    right: Sequence[str] = (),
    dim_rows: Sequence[int] = (),
    compact: bool = False,
    styles: dict[int, Sequence[str]] | None = None,
) -> str:
    """Print ``rows`` under ``headers`` on ``console``; returns the layout used
    ("table" or "vertical"). Columns named in ``right`` are right-aligned. ``compact``
    draws no box (one line per row and one for the headings); ``styles`` gives the cells of
    column j a style per row (``{j: [style, ...]}``)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = [[str(c) for c in r] for r in rows]
    styles = styles or {}
    if min_table_width(headers, rows) <= console.width:
        table = (Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                       padding=(0, 1), show_lines=False)
                 if compact else Table(title=title, title_justify="left"))
        for h in headers:
            table.add_column(h, justify="right" if h in right else "left", overflow="fold")
        for i, r in enumerate(rows):
            cells = [Text(c, style=(styles.get(j) or [""] * len(rows))[i] or "") for j, c in enumerate(r)]
            table.add_row(*cells, style="dim" if i in dim_rows else None)
        console.print(table)
        return "table"
    if title:
        console.print(Text(title, style="italic"))
    for i, r in enumerate(rows):
        head = Text(f"{headers[0]}: ", style="bold") + Text(r[0], style="dim" if i in dim_rows else "bold")
        console.print(head)
        for h, c in zip(headers[1:], r[1:], strict=True):
            console.print(Text(f"  {h}: ") + Text(c))
    return "vertical"
