"""Tables on stdout: rich boxes on a terminal, complete plain text when piped, or JSON / TSV on request.

A rich table squeezed into a pipe's default 80 columns truncates cells ("con…"); a pipe gets every cell in full
instead, in aligned plain columns (`-o tsv` for tab-separated). `-o json` gives the raw values (numbers stay
numbers), one object per row, keyed by column key.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

OUTPUTS = ("text", "json", "tsv")


@dataclass(frozen=True)
class Col:
    key: str  # the JSON key
    header: str  # the text header (with units)
    fmt: Callable[[Any], str] = str
    right: bool = False  # numbers align right


@dataclass
class TableData:
    title: str
    columns: Sequence[Col]
    rows: list[dict[str, Any]] = field(default_factory=list)
    caption: str = ""
    name: str = ""  # key of this table in a JSON object of several tables

    def add(self, **values: Any) -> None:
        self.rows.append(values)

    def cells(self) -> list[list[str]]:
        return [[_cell(c, row.get(c.key)) for c in self.columns] for row in self.rows]

    def json_rows(self) -> list[dict[str, Any]]:
        return [{c.key: _json_value(row.get(c.key)) for c in self.columns} for row in self.rows]


def _cell(col: Col, value: Any) -> str:
    if value is None:
        return "-"
    return col.fmt(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if hasattr(value, "item") and not isinstance(value, list | dict | str):
        return value.item()  # numpy scalars
    return value


def check_output(output: str, allowed: Sequence[str] = OUTPUTS) -> str | None:
    """None when fine, else the one-line message for --output."""
    if output in allowed:
        return None
    return f"--output: got {output!r}; allowed values: {', '.join(allowed)}"


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def stdout_console() -> Console:
    """A console for stdout that never folds or truncates when stdout is not a terminal."""
    if stdout_is_terminal():
        return Console()
    return Console(width=100_000, no_color=True, highlight=False, soft_wrap=True)


def rich_table(table: TableData) -> Table:
    out = Table(title=table.title or None, title_justify="left", caption=table.caption or None)
    for c in table.columns:
        out.add_column(c.header, justify="right" if c.right else "left", overflow="fold")
    for cells in table.cells():
        out.add_row(*cells)
    return out


def plain_lines(table: TableData) -> list[str]:
    """Aligned columns, every cell complete, no box characters (for pipes and files)."""
    headers = [c.header for c in table.columns]
    cells = table.cells()
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if c.right else v.ljust(w)
            for v, w, c in zip(values, widths, table.columns, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [table.title] if table.title else []
    out += [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    if table.caption:
        out.append(table.caption)
    return out


def tsv_lines(table: TableData) -> list[str]:
    def clean(v: str) -> str:
        return v.replace("\t", " ").replace("\n", " ")

    out = [f"# {table.title}"] if table.title else []
    out.append("\t".join(clean(c.header) for c in table.columns))
    out += ["\t".join(clean(v) for v in r) for r in table.cells()]
    return out


def print_tables(
    tables: Sequence[TableData],
    output: str = "text",
    *,
    stream: TextIO | None = None,
    extra: dict | None = None,
) -> None:
    """Write tables in the chosen output. JSON: one table -> a list of row objects (or, with `extra`, an object
    with "rows"); several -> an object keyed by each table's name."""
    stream = stream or sys.stdout
    if output == "json":
        if len(tables) == 1 and not extra:
            data: Any = tables[0].json_rows()
        else:
            data = {t.name or f"table_{i}": t.json_rows() for i, t in enumerate(tables)}
            if len(tables) == 1:
                data = {"rows": tables[0].json_rows()}
            data.update(extra or {})
        stream.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    if output == "tsv":
        stream.write("\n\n".join("\n".join(tsv_lines(t)) for t in tables) + "\n")
        return
    if stream is sys.stdout and stdout_is_terminal():
        console = Console()
        for t in tables:
            console.print(rich_table(t))
        return
    stream.write("\n\n".join("\n".join(plain_lines(t)) for t in tables) + "\n")


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def num(digits: int = 1) -> Callable[[Any], str]:
    return lambda x: f"{x:,.{digits}f}"


def _number_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def frame_table(
    frame: Any, title: str, name: str = "", fmt: dict[str, Callable[[Any], str]] | None = None
) -> TableData:
    """A polars DataFrame as a table: every column, numbers right-aligned, `fmt` per column where given."""
    fmt = fmt or {}
    numeric = {c for c, t in frame.schema.items() if t.is_numeric()}
    columns = [Col(c, c, fmt.get(c, _number_text), c in numeric) for c in frame.columns]
    return TableData(title, columns, list(frame.iter_rows(named=True)), name=name)
