"""Charts come out as HTML, PNG and SVG with visible marks; the report page renders in a headless browser."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import numpy as np
import polars as pl
import pytest
from sweepfixtures import BASE, sweep_dict

pytest.importorskip("vl_convert")

from simperf.report.charts import (  # noqa: E402
    Threshold,
    cdf_chart,
    ecdf,
    latency_load_chart,
    pareto_chart,
    save_chart,
    step_breakdown_chart,
)
from simperf.report.html import Section, render_page  # noqa: E402
from simperf.sweep.runner import run_sweep  # noqa: E402
from simperf.sweep.sla import parse_sla  # noqa: E402
from simperf.sweep.spec import parse_sweep  # noqa: E402


def png_ink_fraction(data: bytes) -> float:
    """Share of pixel bytes that are not white, from a PNG's raw IDAT stream (no imaging library needed)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IHDR":
            width = struct.unpack(">I", data[pos + 8 : pos + 12])[0]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8)
    # filtered rows make exact pixels unrecoverable without unfiltering; non-0xFF/non-0 bytes still mean ink
    return float(np.mean((raw != 255) & (raw != 0))) if width else 0.0


def sweep_points() -> pl.DataFrame:
    rows = []
    for label, gpus, speed in (("tp1", 1, 40.0), ("tp2", 2, 60.0)):
        for rate in (1.0, 2.0, 4.0, 8.0):
            rows.append(
                {
                    "point_id": f"{label}{rate}",
                    "config_label": label,
                    "request_rate": rate,
                    "tokens_per_s_per_user": speed / rate**0.3,
                    "output_throughput_per_gpu": 100 * rate / gpus,
                    "meets_sla": rate < 8,
                    **{
                        f"{s}_ttft_ms": (50 + 10 * rate**2) * k
                        for s, k in (("median", 1), ("p90", 1.5), ("p99", 2))
                    },
                    **{
                        f"{s}_tpot_ms": (10 + rate) * k
                        for s, k in (("median", 1), ("p90", 1.2), ("p99", 1.5))
                    },
                }
            )
    return pl.DataFrame(rows)


def all_charts():
    points = sweep_points()
    front = points.filter(pl.col("point_id").is_in(["tp2 1.0", "tp21.0", "tp18.0", "tp28.0"]))
    rng = np.random.default_rng(0)
    breakdown = pl.DataFrame(
        {
            "config_label": ["tp1"] * 4 + ["tp2"] * 4,
            "phase": ["prefill", "prefill", "decode", "decode"] * 2,
            "op": ["gemm", "attn", "gemm", "attn"] * 2,
            "ms": [30.0, 5.0, 8.0, 3.0, 16.0, 3.0, 5.0, 2.0],
        }
    )
    return {
        "pareto": pareto_chart(points, front, points.row(2, named=True)),
        "latency_vs_load": latency_load_chart(points, thresholds=[Threshold("TTFT", 500.0, "SLA")]),
        "latency_cdf": cdf_chart(
            {
                "tp1": {"TTFT": rng.gamma(2, 50, 200), "TPOT": rng.gamma(5, 4, 200)},
                "tp2": {"TTFT": rng.gamma(2, 30, 200)},
            }
        ),
        "step_breakdown": step_breakdown_chart(breakdown),
    }


def test_ecdf_is_a_sorted_step_function_ending_at_one():
    x, frac = ecdf(np.array([3.0, 1.0, np.nan, 2.0]))
    assert x.tolist() == [1.0, 2.0, 3.0] and frac.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_each_chart_is_written_as_html_png_and_svg_with_visible_marks(tmp_path):
    for name, chart in all_charts().items():
        files = save_chart(chart, tmp_path / name)
        assert [f.suffix for f in files] == [".html", ".png", ".svg"]
        html_text, svg = files[0].read_text(), files[2].read_text()
        assert "vegaEmbed" in html_text and "cdn.jsdelivr" not in html_text.split("<body>")[0][-2000:]
        assert svg.startswith("<svg") and svg.count("<path") >= 3, name
        assert png_ink_fraction(files[1].read_bytes()) > 0.005, f"{name}.png looks blank"


def _browser() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def dump_dom(browser: str, page, profile) -> str:
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=15000",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout


def test_report_page_renders_every_chart_offline_in_a_headless_browser(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium: apt-get install -y chromium")
    from simperf.sweep.reporting import CHART_NAMES, build_report

    spec = parse_sweep(sweep_dict({"serving.page_size": [1, 16], "workload.request_rate": [2.0, 8.0]}))
    run = run_sweep(spec, BASE, tmp_path, tmp_path / "t.parquet", executor="serial")
    from simperf.sweep.table import read_table

    table, meta = read_table(run.table_path)
    page = tmp_path / "report.html"
    report = build_report(table, meta, page, target_rate=10.0, sla=parse_sla(["ttft.p90 <= 2s"]), top=2)
    assert report.plan.winner is not None and len(report.rechecks) == 2
    text = page.read_text()
    assert "<script src=" not in text  # everything inline: the page works without network
    dom = dump_dom(browser, page, tmp_path / "profile")
    assert dom.count('class="marks"') == len(CHART_NAMES), "every chart became an SVG"
    assert ">chart failed:" not in dom  # the page's error handler writes this into a chart's div
    assert "Plan for 10 req/s" in dom and "All points" in dom


def test_render_page_escapes_text_and_tables():
    page = render_page(
        "a <b> title",
        [Section("s", ["x < y & z"], table=pl.DataFrame({"c": ["</script>"], "v": [1.5]}))],
    )
    assert "a &lt;b&gt; title" in page and "x &lt; y &amp; z" in page and "&lt;/script&gt;" in page
    assert "vegaEmbed(" not in page  # no charts, no bundle


def test_latency_chart_of_a_concurrency_sweep_uses_concurrency_as_its_load_axis():
    points = sweep_points().with_columns(
        pl.lit(float("inf")).alias("request_rate"),
        pl.col("request_rate").cast(pl.Int64).alias("max_concurrency"),
    )
    spec = latency_load_chart(points).to_dict()
    panel = spec["hconcat"][0]
    assert panel["encoding"]["x"]["title"] == "max concurrency (requests)"
    assert len(panel["data"]["values"]) == points.height


OVERFLOW_PROBE = """<script>
window.addEventListener('load', function () { setTimeout(function () {
  var doc = document.documentElement, out = ['page ' + doc.scrollWidth + ' ' + doc.clientWidth];
  document.querySelectorAll('div.table-wrap, div.chart').forEach(function (el) {
    out.push(el.className.split(' ')[0] + ' ' + el.scrollWidth + ' ' + el.clientWidth);
  });
  var pre = document.createElement('pre'); pre.id = 'overflow-probe'; pre.textContent = out.join(';');
  document.body.appendChild(pre);
}, 1500); });
</script>"""


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_report_fits_a_1280_px_window_without_horizontal_overflow(tmp_path):
    """Wide tables (many configurations with long labels, every column) wrap inside the page; charts scale."""
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium: apt-get install -y chromium")
    from simperf.sweep.reporting import build_report
    from simperf.sweep.table import read_table

    axes = {
        "serving.attention_backend": ["fa3", "flashinfer"],
        "serving.chunked_prefill_size": [2048, 4096, 8192],
        "serving.schedule_policy": ["fcfs", "lpm"],
        "workload.max_concurrency": [2, 8],
    }
    spec = parse_sweep(sweep_dict(axes))
    run = run_sweep(spec, BASE, tmp_path, tmp_path / "t.parquet", executor="serial")
    table, meta = read_table(run.table_path)
    page = tmp_path / "report.html"
    build_report(table, meta, page, target_rate=10.0, sla=parse_sla(["ttft.p90 <= 2s"]), top=5)
    text = page.read_text()
    cut = text.rindex("</body>")
    probed = tmp_path / "probed.html"
    probed.write_text(text[:cut] + OVERFLOW_PROBE + text[cut:])
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=15000"]  # fmt: skip
    dom = subprocess.run([*cmd, "--dump-dom", probed.resolve().as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    probe = dom.split('id="overflow-probe">')[1].split("</pre>")[0].split(";")
    assert len(probe) >= 1 + 3 + 4, probe  # the page, its tables and its charts were measured
    for item in probe:
        what, scroll, client = item.rsplit(" ", 2)
        assert int(scroll) <= int(client), f"{what} overflows: {scroll} px of content in {client} px"
    shot = tmp_path / "report.png"
    subprocess.run([*cmd, "--hide-scrollbars", f"--screenshot={shot}", page.resolve().as_uri()],
                   capture_output=True, timeout=120, check=True)  # fmt: skip
    assert png_size(shot.read_bytes())[0] == 1280 and png_ink_fraction(shot.read_bytes()) > 0.01


def test_more_than_ten_configurations_get_distinct_colours_not_shades_of_one_hue():
    from simperf.report.charts import _config_scale

    labels = [f"config {i}" for i in range(14)]
    colours = _config_scale(labels).to_dict()["range"]
    assert len(colours) == 14 and len(set(colours)) == 14


def test_report_tables_name_units_in_headers_and_leave_out_what_the_label_says(tmp_path):
    from simperf.sweep.reporting import _results_table

    spec = parse_sweep(sweep_dict({"serving.page_size": [1, 16], "workload.request_rate": [2.0, 8.0]}))
    frame = run_sweep(spec, BASE, tmp_path, tmp_path / "t.parquet", executor="serial").frame
    shown = _results_table(frame)
    assert shown.columns[0] == "configuration" and "p90 TTFT (ms)" in shown.columns
    assert not any("_" in c for c in shown.columns)  # no raw column names
    assert "serving.page_size" not in shown.columns  # the configuration label already says page_size=16
    assert "status" not in shown.columns and "reason" not in shown.columns  # every point ran
    assert set(shown["step time measured"].to_list()) <= {f"{p}%" for p in range(101)}
