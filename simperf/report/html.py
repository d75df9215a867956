"""One self-contained HTML page of sections (text, an altair chart, a table) that renders offline.

Vega, Vega-Lite and vega-embed are inlined once from vl-convert's bundle; each chart's spec is embedded as JSON.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

_STYLE = """
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1280px; color: #222; padding: 0 1em; box-sizing: border-box; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
p.subtitle { color: #555; margin-top: 0; }
/* tables fit the page: headers and text cells wrap, numbers stay on one line, the first column stays in view */
div.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: separate; border-spacing: 0; font-size: 0.8em; margin: 0.8em 0; width: 100%; }
th, td { border-right: 1px solid #ddd; border-bottom: 1px solid #ddd; padding: 3px 6px; text-align: right;
         white-space: nowrap; }
tr > :first-child { border-left: 1px solid #ddd; } thead th { border-top: 1px solid #ddd; }
th { background: #f4f4f4; white-space: normal; vertical-align: bottom; min-width: 3.5em; }
td.text { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 8em; }
th:first-child, td:first-child { position: sticky; left: 0; z-index: 1; background: #fff; }
th:first-child { background: #f4f4f4; text-align: left; }
tr.highlight td { background: #fff4d6; font-weight: 600; }
.chart { margin: 0.8em 0; max-width: 100%; overflow-x: auto; } .chart svg { max-width: 100%; height: auto; }
caption { caption-side: bottom; color: #666; text-align: left; padding-top: 4px; }
"""


@dataclass(frozen=True)
class Section:
    heading: str
    paragraphs: Sequence[str] = ()  # plain text, escaped on output
    chart: Any = None  # an altair chart
    table: pl.DataFrame | None = None
    table_caption: str = ""
    highlight_first_row: bool = False


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}" if abs(value) >= 1000 else str(int(value))
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def table_html(frame: pl.DataFrame, caption: str = "", highlight_first_row: bool = False) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    # text columns wrap and align left; strings that are numbers with a mark ("32+", "≥ 7%") align as numbers
    text_cols = {
        c
        for c, t in frame.schema.items()
        if t == pl.Utf8 and any(v is not None and re.search(r"[A-Za-z]", v) for v in frame[c].to_list())
    }
    body = []
    for i, row in enumerate(frame.iter_rows(named=True)):
        cells = "".join(
            f'<td class="text">{html.escape(format_cell(v))}</td>'
            if c in text_cols
            else f"<td>{html.escape(format_cell(v))}</td>"
            for c, v in row.items()
        )
        cls = ' class="highlight"' if highlight_first_row and i == 0 else ""
        body.append(f"<tr{cls}>{cells}</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    rows = "".join(body)
    return f'<div class="table-wrap"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def _json_in_script(value: Any) -> str:
    # "</" inside inline JSON would let a string value end the script element; "<\\/" is the same JSON string
    return json.dumps(value).replace("</", "<\\/")


def _js_in_script(code: str) -> str:
    # only the closing tag itself is dangerous in code (bare "</" occurs in the bundle's own expressions)
    return re.sub(r"</(script)", r"<\\/\1", code, flags=re.IGNORECASE)


def vega_bundle() -> str:
    try:
        import vl_convert
    except ImportError:
        raise RuntimeError("the HTML report needs vl-convert-python: pip install vl-convert-python") from None
    return vl_convert.javascript_bundle()


def render_page(title: str, sections: Sequence[Section], subtitle: str = "") -> str:
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if subtitle:
        parts.append(f'<p class="subtitle">{html.escape(subtitle)}</p>')
    specs: list[tuple[str, dict]] = []
    for i, section in enumerate(sections):
        parts.append(f"<h2>{html.escape(section.heading)}</h2>")
        parts += [f"<p>{html.escape(p)}</p>" for p in section.paragraphs]
        if section.chart is not None:
            div = f"chart-{i}"
            parts.append(f'<div class="chart" id="{div}"></div>')
            specs.append((div, section.chart.to_dict()))
        if section.table is not None:
            parts.append(table_html(section.table, section.table_caption, section.highlight_first_row))
    embeds = "\n".join(
        f"vegaEmbed('#{div}', {_json_in_script(spec)}, "
        '{"renderer": "svg", "actions": false}).catch(function (e) { '
        f"document.getElementById('{div}').textContent = 'chart failed: ' + e; }});"
        for div, spec in specs
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n"
        f'<script type="text/javascript">\n{_js_in_script(vega_bundle()) if specs else ""}\n</script>\n'
        "</head>\n<body>\n" + "\n".join(parts) + f'\n<script type="text/javascript">\n{embeds}\n</script>\n'
        "</body>\n</html>\n"
    )
