"""Capacity-planning charts (altair): Pareto front, latency vs load, latency CDFs, step-time breakdown.

Each builder takes plain tables and returns an altair chart; `save_chart` writes it as standalone HTML (Vega
libraries inlined, so it opens offline), PNG and SVG through vl-convert. Nothing here runs a simulation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl

# one colour per configuration, stable across the charts of one report: Tableau's ten while they suffice; beyond
# that Kelly's colours of maximum contrast (K. L. Kelly, "Twenty-two colors of maximum contrast", 1965, white
# left out), whose order keeps neighbours far apart (category20 pairs a light and a dark shade of each hue, which
# read as one configuration). Past twenty the colours repeat.
_PALETTE = "tableau10"
_MANY_COLOURS = (
    "#222222", "#f3c300", "#875692", "#f38400", "#a1caf1", "#be0032", "#c2b280", "#848482", "#008856", "#e68fac",
    "#0067a5", "#f99379", "#604e97", "#f6a600", "#b3446c", "#dcd300", "#882d17", "#8db600", "#654522", "#e25822",
)  # fmt: skip
# a five-pointed star as an SVG path in the unit square: Vega's symbol set has no star
_STAR = "M0,-1L0.225,-0.309L0.951,-0.309L0.363,0.118L0.588,0.809L0,0.382L-0.588,0.809L-0.363,0.118L-0.951,-0.309L-0.225,-0.309Z"
_WIDTH = 440
_HEIGHT = 300


@dataclass(frozen=True)
class Threshold:
    """A horizontal SLA line on a latency chart."""

    panel: str  # which metric's panel, e.g. "TTFT"
    value_ms: float
    label: str


def _values(frame: pl.DataFrame) -> alt.Data:
    # inline records, not a DataFrame: keeps the spec self-contained and independent of altair's transformers
    return alt.Data(values=frame.to_dicts())


def _config_scale(domain: Sequence[str]) -> alt.Scale:
    if len(domain) <= 10:
        return alt.Scale(domain=list(domain), scheme=_PALETTE)
    colours = [_MANY_COLOURS[i % len(_MANY_COLOURS)] for i in range(len(domain))]
    return alt.Scale(domain=list(domain), range=colours)


def _color(domain: Sequence[str], title: str = "configuration") -> alt.Color:
    return alt.Color(
        "config_label:N", title=title, scale=_config_scale(domain), legend=alt.Legend(labelLimit=0)
    )


def pareto_chart(
    points: pl.DataFrame,
    front: pl.DataFrame,
    chosen: dict | None = None,
    *,
    x: str = "tokens_per_s_per_user",
    y: str = "output_throughput_per_gpu",
    x_title: str = "output tokens/s per user (1000 / median TPOT)",
    y_title: str = "output throughput per GPU (tokens/s)",
    title: str = "Throughput per GPU vs speed per user",
) -> alt.LayerChart:
    """Every point of a sweep (filled when it meets the SLA), the front as a step line, the chosen point starred.

    `points` needs config_label, x, y, request_rate and a boolean meets_sla column.
    """
    labels = list(dict.fromkeys(points["config_label"].to_list()))
    cols = ["config_label", x, y, "request_rate", "meets_sla"]
    data = points.select(cols).filter(pl.col(x).is_not_nan() & pl.col(y).is_not_nan())
    tooltip = [
        alt.Tooltip("config_label:N", title="configuration"),
        alt.Tooltip("request_rate:Q", title="request rate", format=".3g"),
        alt.Tooltip(f"{x}:Q", title=x, format=".1f"),
        alt.Tooltip(f"{y}:Q", title=y, format=".1f"),
        alt.Tooltip("meets_sla:N", title="meets SLA"),
    ]
    base = alt.Chart(_values(data)).encode(
        x=alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False)),
        y=alt.Y(f"{y}:Q", title=y_title),
    )
    dots = base.mark_point(size=70, strokeWidth=2).encode(
        color=_color(labels),
        fill=alt.condition(
            "datum.meets_sla",
            alt.Fill("config_label:N", scale=_config_scale(labels), legend=None),
            alt.value("white"),
        ),
        shape=alt.Shape(
            "meets_sla:N",
            title="meets SLA",
            scale=alt.Scale(domain=[True, False], range=["circle", "diamond"]),
            legend=None,  # explained in the subtitle: shape legends do not pick up the conditional fill
        ),
        tooltip=tooltip,
    )
    layers: list[alt.Chart] = [dots]
    if front.height:
        line = (
            alt.Chart(_values(front.select([x, y]).sort(x)))
            .mark_line(interpolate="step-before", color="#444", strokeDash=[5, 3], strokeWidth=1.5)
            .encode(x=f"{x}:Q", y=f"{y}:Q")
        )
        layers.insert(0, line)
    if chosen is not None:
        star = pl.DataFrame({x: [chosen[x]], y: [chosen[y]], "text": [f"chosen: {chosen['config_label']}"]})
        mark = alt.Chart(_values(star)).encode(x=f"{x}:Q", y=f"{y}:Q")
        layers.append(mark.mark_point(shape=_STAR, size=500, color="#d62728", filled=True, opacity=0.9))
        layers.append(
            mark.mark_text(align="left", dx=12, dy=-12, fontWeight="bold", color="#d62728").encode(
                text="text:N"
            )
        )
    subtitle = "filled circles meet the SLA, hollow diamonds miss it; dashed: the Pareto front"
    if chosen is not None:
        subtitle += "; star: the chosen configuration at its sustained rate"
    return alt.layer(*layers).properties(
        width=_WIDTH + 120, height=_HEIGHT + 60, title=alt.Title(title, subtitle=subtitle)
    )


def latency_load_chart(
    table: pl.DataFrame,
    *,
    stats: Sequence[str] | Mapping[str, Sequence[str]] = ("p90",),
    thresholds: Iterable[Threshold] = (),
    title: str = "Latency vs load",
) -> alt.HConcatChart:
    """TTFT and TPOT statistics against the request rate, one line per configuration (and statistic).

    `stats` applies to both panels, or maps "TTFT"/"TPOT" to their own. `table` needs config_label,
    request_rate and `<stat>_ttft_ms` / `<stat>_tpot_ms` columns. The load axis is the request rate; a sweep
    over max_concurrency at rate "inf" is drawn against max_concurrency instead.
    """
    labels = list(dict.fromkeys(table["config_label"].to_list()))
    load, load_title = "request_rate", "request rate (req/s)"
    finite = table.filter(pl.col("request_rate").is_finite())
    if finite.height == 0 and "max_concurrency" in table.columns:
        load, load_title = "max_concurrency", "max concurrency (requests)"
        finite = table.filter(pl.col("max_concurrency").is_not_null())
    panels = []
    limits = list(thresholds)
    for metric, column in (("TTFT", "ttft"), ("TPOT", "tpot")):
        panel_stats = list(stats[metric] if isinstance(stats, Mapping) else stats)
        long = pl.concat(
            [
                finite.select(
                    "config_label",
                    pl.col(load).cast(pl.Float64).alias("load"),
                    pl.lit(stat).alias("statistic"),
                    pl.col(f"{stat}_{column}_ms").alias("ms"),
                )
                for stat in panel_stats
            ]
        ).filter(pl.col("ms") > 0)
        encoding = {
            "x": alt.X("load:Q", title=load_title, scale=alt.Scale(type="log", base=2)),
            "color": _color(labels),
            "tooltip": ["config_label:N", "statistic:N", "load:Q", alt.Tooltip("ms:Q", format=".1f")],
        }
        if len(panel_stats) > 1:
            # dashes tell statistics apart; points on the lines would turn the dash legend into dots
            encoding["y"] = alt.Y("ms:Q", title=f"{metric} (ms)", scale=alt.Scale(type="log"))
            encoding["strokeDash"] = alt.StrokeDash(
                "statistic:N",
                title="statistic",
                sort=panel_stats,
                legend=alt.Legend(symbolStrokeColor="#555"),
            )
            lines = alt.Chart(_values(long)).mark_line().encode(**encoding)
        else:
            encoding["y"] = alt.Y(
                "ms:Q", title=f"{panel_stats[0]} {metric} (ms)", scale=alt.Scale(type="log")
            )
            lines = alt.Chart(_values(long)).mark_line(point=True).encode(**encoding)
        layer: alt.Chart | alt.LayerChart = lines
        panel_limits = [t for t in limits if t.panel == metric]
        if panel_limits:
            rules = pl.DataFrame(
                {"ms": [t.value_ms for t in panel_limits], "label": [t.label for t in panel_limits]}
            )
            rule = alt.Chart(_values(rules)).mark_rule(color="#d62728", strokeDash=[2, 2]).encode(y="ms:Q")
            text = (
                alt.Chart(_values(rules))
                .mark_text(align="left", dx=4, dy=-6, color="#d62728")
                .encode(y="ms:Q", text="label:N", x=alt.value(0))
            )
            layer = alt.layer(lines, rule, text)
        panels.append(layer.properties(width=_WIDTH, height=_HEIGHT, title=metric))
    return alt.hconcat(*panels).properties(title=title)


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted values, fraction of values <= each): the empirical CDF's step points."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    v = v[~np.isnan(v)]
    return v, np.arange(1, v.size + 1) / max(v.size, 1)


def cdf_chart(samples: dict[str, dict[str, np.ndarray]], title: str = "Latency CDFs") -> alt.HConcatChart:
    """`samples[config_label][metric]` -> per-request latencies in ms; one panel per metric (TTFT, TPOT)."""
    labels = list(samples)
    metrics = list(dict.fromkeys(m for per in samples.values() for m in per))
    panels = []
    for metric in metrics:
        frames = []
        for label, per in samples.items():
            if metric not in per or len(per[metric]) == 0:
                continue
            x, frac = ecdf(per[metric])
            frames.append(pl.DataFrame({"config_label": label, "ms": x, "fraction": frac}))
        if not frames:
            continue
        data = pl.concat(frames)
        chart = (
            alt.Chart(_values(data))
            .mark_line(interpolate="step-after")
            .encode(
                x=alt.X("ms:Q", title=f"{metric} (ms)", scale=alt.Scale(zero=False)),
                y=alt.Y("fraction:Q", title="fraction of requests", scale=alt.Scale(domain=[0, 1])),
                color=_color(labels),
            )
            .properties(width=_WIDTH, height=_HEIGHT, title=f"{metric} CDF")
        )
        panels.append(chart)
    return alt.hconcat(*panels).properties(title=title)


def step_breakdown_chart(breakdown: pl.DataFrame, title: str = "Step-time breakdown") -> alt.FacetChart:
    """Stacked bars of one representative step per (configuration, phase): time per op kind.

    `breakdown` needs config_label, phase ("prefill" / "decode"), op and ms columns.
    """
    data = breakdown.group_by(["config_label", "phase", "op"]).agg(pl.col("ms").sum())
    order = data.group_by("op").agg(pl.col("ms").sum()).sort("ms", descending=True)["op"].to_list()
    labels = list(dict.fromkeys(breakdown["config_label"].to_list()))
    phases = list(dict.fromkeys(breakdown["phase"].to_list()))
    return (
        alt.Chart(_values(data))
        .mark_bar()
        .encode(
            y=alt.Y("config_label:N", title=None, sort=labels, axis=alt.Axis(labelLimit=0)),
            x=alt.X("ms:Q", title="time in one representative step (ms)", stack="zero"),
            color=alt.Color("op:N", title="op kind", sort=order, scale=_config_scale(order)),
            order=alt.Order("ms:Q", sort="descending"),
            tooltip=["config_label:N", "phase:N", "op:N", alt.Tooltip("ms:Q", format=".3f")],
        )
        .properties(width=_WIDTH + 80)
        .facet(row=alt.Row("phase:N", title=None, sort=phases, header=alt.Header(labelFontWeight="bold")))
        .resolve_scale(x="independent")
        .properties(title=title)
    )


def save_chart(
    chart: alt.TopLevelMixin, stem: Path, formats: Sequence[str] = ("html", "png", "svg")
) -> list[Path]:
    """Write `stem.<format>` for each format; HTML embeds the Vega libraries so it renders offline."""
    require_vl_convert()
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        if fmt == "html":
            chart.save(path, format="html", inline=True)
        elif fmt == "png":
            chart.save(path, format="png", scale_factor=2.0)
        elif fmt == "svg":
            chart.save(path, format="svg")
        else:
            raise ValueError(f"chart format {fmt!r}: allowed values: html, png, svg")
        written.append(path)
    return written


def require_vl_convert() -> None:
    try:
        import vl_convert  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "writing charts needs vl-convert-python (PNG/SVG and offline HTML): pip install vl-convert-python"
        ) from None
