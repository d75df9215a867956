"""`simperf accuracy`: predict every published row a scenario covers and report the error against the measurement.

Inputs: a directory of scenarios with an `index.yaml` that says which truth rows each scenario reproduces (and
which rows are flagged, unpredictable or kernel-level; see scenarios/published/index.yaml), and the truth CSV.
Every truth row ends up in exactly one place of the report: predicted, flagged (predicted, summarised apart), or
not predicted with its reason. Nothing is tuned here: the scenarios carry every setting, the tables every time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console
from rich.table import Table

from simperf import strictjson
from simperf.accuracy import kernels
from simperf.accuracy.diagnose import FAMILIES, StepComposition, decode_composition, prefill_composition
from simperf.accuracy.row_match import row_flags_mismatch, row_model_mismatch
from simperf.accuracy.stats import TARGETS, Summary, ape, summarize_errors, target_family, target_for
from simperf.accuracy.truth import (
    METRICS,
    TruthError,
    TruthRow,
    measured_in_key_units,
    predicted_value,
    read_truth,
    unit_factor,
)
from simperf.hardware.catalog import device_gpu_key
from simperf.strictyaml import error_line, read_error, safe_load

INDEX_FILE = "index.yaml"
TARGET_FAMILIES = ("tpot", "output_throughput", "ttft")
# docs/accuracy.md holds the markdown report between these markers; --update-doc rewrites what lies between
DOC_BEGIN = "<!-- simperf accuracy: begin (generated; do not edit by hand) -->"
DOC_END = "<!-- simperf accuracy: end -->"


class IndexError_(ValueError):
    """An index.yaml that does not describe the scenario directory consistently."""


@dataclass(frozen=True)
class Index:
    scenarios: dict[str, list[str]]  # scenario file (relative to the directory) -> row ids
    flagged: dict[str, str]  # row id -> why it is summarised apart
    unpredictable: dict[str, str]  # row id -> reason
    kernels: list[str]  # kernel-level row ids


@dataclass
class RowResult:
    row: TruthRow
    config: str  # the scenario's name, or the kernel's op
    measured: float  # in the mapped key's unit
    predicted: float
    ape: float
    measured_share: (
        float | None
    )  # share of step time from measured/interpolated tables (None for kernel rows)
    flag: str | None = None  # set when the row is summarised apart
    detail: str = ""


@dataclass
class Unpredicted:
    row: TruthRow
    reason: str


@dataclass
class AccuracyReport:
    rows: list[RowResult] = field(default_factory=list)
    unpredicted: list[Unpredicted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scenario_wall_s: dict[str, float] = field(default_factory=dict)
    # (scenario name, "decode" | "prefill") -> that step's composition
    composition: dict[tuple[str, str], StepComposition] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def core(self) -> list[RowResult]:
        return [r for r in self.rows if r.flag is None]

    def by_metric(self, rows: list[RowResult] | None = None) -> list[Summary]:
        rows = self.core if rows is None else rows
        ordered = sorted(rows, key=lambda r: r.row.metric)
        return summarize_errors(((r.row.metric, r.predicted, r.measured) for r in ordered), target_for)

    def by_source(self, rows: list[RowResult] | None = None) -> list[Summary]:
        rows = self.core if rows is None else rows
        return summarize_errors((r.row.source_label, r.predicted, r.measured) for r in rows)

    def by_target(self) -> list[Summary]:
        """The issue's target families (TPOT, TTFT, output throughput), over all models and per model."""
        items = []
        for family in TARGET_FAMILIES:
            rows = [r for r in self.core if target_family(r.row.metric) == family]
            items += [(f"{family}: all models", r.predicted, r.measured) for r in rows]
            for model in sorted({r.row.model for r in rows}):
                items += [
                    (f"{family}: {model}", r.predicted, r.measured) for r in rows if r.row.model == model
                ]
        return summarize_errors(items, lambda group: TARGETS[group.split(":")[0]])

    def by_source_metric(self) -> list[Summary]:
        return summarize_errors(
            (f"{r.row.source_label} / {r.row.metric}", r.predicted, r.measured)
            for r in sorted(self.core, key=lambda r: (r.row.source_label, r.row.metric))
        )


# ---------------------------------------------------------------------------------------------------- index


def load_index(directory: Path) -> Index:
    path = Path(directory) / INDEX_FILE
    if not path.is_file():
        raise IndexError_(f"{path}: no index (it maps each scenario file to the truth rows it predicts)")
    try:
        # simperf's loader: a scenario listed twice kept its second list of rows without a word
        data = safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise IndexError_(f"{path}: not valid YAML: {error_line(err)}") from None
    except (OSError, UnicodeDecodeError) as err:  # Python's 'utf-8' codec message named no file
        raise IndexError_(f"{path}: cannot read the index: {read_error(err)}") from None
    sections = {"scenarios": dict, "flagged": dict, "unpredictable": dict, "kernels": list}
    if not isinstance(data, dict):
        raise IndexError_(f"{path}: must be a mapping with sections {', '.join(sections)}")
    unknown = set(data) - set(sections)
    if unknown:
        raise IndexError_(f"{path}: unknown section(s) {', '.join(sorted(map(str, unknown)))}")
    # a section of the wrong shape ended in a TypeError or AttributeError, reported as an internal error
    for name, kind in sections.items():
        if data.get(name) is not None and not isinstance(data[name], kind):
            raise IndexError_(f"{path}: {name}: must be a {'mapping' if kind is dict else 'list'}")
    bad = [str(k) for k, v in (data.get("scenarios") or {}).items() if not isinstance(v, list)]
    if bad:
        raise IndexError_(f"{path}: scenarios.{bad[0]}: must be a list of truth row ids")
    scenarios = {str(k): [str(i) for i in v] for k, v in (data.get("scenarios") or {}).items()}
    index = Index(
        scenarios=scenarios,
        flagged={str(k): str(v) for k, v in (data.get("flagged") or {}).items()},
        unpredictable={str(k): str(v) for k, v in (data.get("unpredictable") or {}).items()},
        kernels=[str(i) for i in data.get("kernels") or []],
    )
    problems = [
        f"{name}: no such scenario file" for name in scenarios if not (Path(directory) / name).is_file()
    ]
    placed: dict[str, str] = {}
    for where, ids in [*((f"scenarios.{k}", v) for k, v in scenarios.items())]:
        for i in ids:
            if i in placed:
                problems.append(f"row {i} is in both {placed[i]} and {where}")
            placed[i] = where
    for i in index.kernels:
        if i in placed:
            problems.append(f"row {i} is in both {placed[i]} and kernels")
        placed[i] = "kernels"
    for i in index.unpredictable:
        if i in placed:
            problems.append(f"row {i} is listed unpredictable but also in {placed[i]}")
    for i in index.flagged:
        if i not in placed:
            problems.append(f"flagged row {i} is predicted by no scenario or kernel list")
    if problems:
        raise IndexError_(f"{path}: " + "; ".join(problems))
    return index


# ---------------------------------------------------------------------------------------------------- running


def _gpu_matches(row: TruthRow, gpu: str) -> bool:
    return device_gpu_key(row.gpu) == gpu


def _predict_scenario(path: Path):
    """(Prediction, None) or (None, reason). Imports the pipeline lazily: `simperf accuracy --help` stays fast."""
    from simperf.pipeline import predict
    from simperf.scenario.load import load_scenario

    try:
        return predict(load_scenario(path)), None
    except Exception as e:  # a scenario the simulator refuses is reported per row, not a crash of the report
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return None, f"prediction failed: {first}"


def run_accuracy(
    scenarios_dir: Path, truth: Path, on_scenario: Callable[[str, int], None] | None = None
) -> AccuracyReport:
    """Predict every row the index covers; every truth row lands in `rows` or `unpredicted`.
    on_scenario(name, how many): told before each scenario is predicted (a progress display)."""
    started = time.perf_counter()
    index = load_index(scenarios_dir)
    truth_rows = read_truth(truth)
    by_id = {r.id: r for r in truth_rows}
    _check_counted_once(index, by_id, Path(scenarios_dir) / INDEX_FILE)
    report = AccuracyReport()
    known = set(by_id)
    # a kernels or unpredictable entry of a row the truth file lacks was skipped without a word (a typo'd id)
    listed = [
        *index.scenarios.items(),
        ("kernels", index.kernels),
        ("unpredictable", list(index.unpredictable)),
    ]
    for name, ids in listed:
        for i in ids:
            if i not in known:
                report.warnings.append(f"index: {name} names row {i}, which the truth file does not have")
    covered: set[str] = set()
    named: dict[str, str] = {}  # scenario name -> its file

    for name, ids in index.scenarios.items():
        rows = [by_id[i] for i in ids if i in by_id]
        covered.update(r.id for r in rows)
        if on_scenario is not None:
            on_scenario(name, len(index.scenarios))
        t0 = time.perf_counter()
        prediction, reason = _predict_scenario(Path(scenarios_dir) / name)
        report.scenario_wall_s[name] = time.perf_counter() - t0
        if prediction is not None:
            scenario_name = prediction.scenario.name
            _check_named_once(named, scenario_name, name, Path(scenarios_dir) / INDEX_FILE)
            report.composition[(scenario_name, "prefill")] = prefill_composition(prediction)
            if prediction.stats.decode_iterations:
                report.composition[(scenario_name, "decode")] = decode_composition(prediction)
        for row in rows:
            _add_scenario_row(report, index, name, row, prediction, reason)

    for i in index.kernels:
        if i in by_id:
            covered.add(i)
            _add_kernel_row(report, index, by_id[i])

    for row in truth_rows:
        if row.id in covered:
            continue
        reason = index.unpredictable.get(row.id, "no scenario in index.yaml covers this row")
        report.unpredicted.append(Unpredicted(row, reason))
    report.wall_s = time.perf_counter() - started
    return report


def _check_named_once(named: dict[str, str], scenario_name: str, file: str, path: Path) -> None:
    """The report tells scenarios apart by name (each row's config, the step compositions): two files of one name
    had their rows listed under one config and the later one's step composition replaced the earlier's."""
    if scenario_name in named:
        raise IndexError_(
            f"{path}: scenarios {named[scenario_name]} and {file} are both named {scenario_name!r}, and the report "
            "tells scenarios apart by name; give each its own name (its file's stem)"
        )
    named[scenario_name] = file


def _check_counted_once(index: Index, by_id: dict[str, TruthRow], path: Path) -> None:
    """Two rows of one source and metric for one scenario are one figure twice (a row copied under a new id): its
    error was counted twice in every median and p90."""
    for name, ids in index.scenarios.items():
        seen: dict[tuple[str, str], str] = {}
        for i in ids:
            row = by_id.get(i)
            if row is None:
                continue
            key = (row.source, row.metric)
            if key in seen:
                raise IndexError_(
                    f"{path}: scenarios.{name}: rows {seen[key]} and {i} are both {row.metric} from "
                    f"{row.source_label} for this scenario, and each would count in the summaries; list one"
                )
            seen[key] = i


def _add_scenario_row(report, index: Index, name: str, row: TruthRow, prediction, reason: str | None) -> None:
    if prediction is None:
        report.unpredicted.append(Unpredicted(row, f"{name}: {reason}"))
        return
    scenario = prediction.scenario
    if row.metric not in METRICS or unit_factor(row) is None:
        report.unpredicted.append(Unpredicted(row, f"metric {row.metric!r} in {row.unit!r} is not mapped"))
        return
    if row.n_gpu != scenario.hardware.count or not _gpu_matches(row, scenario.hardware.gpu):
        report.unpredicted.append(
            Unpredicted(
                row,
                f"{name} runs on {scenario.hardware.count}x {scenario.hardware.gpu}, the row on "
                f"{row.n_gpu}x {row.gpu}",
            )
        )
        return
    # a row of another model, weight dtype or launch flags was predicted with this scenario and its error counted
    # in the summary ('Qwen3-8B-FP8' matched a bf16 qwen3-8b by substring; backend_flags were never read)
    mismatch = row_model_mismatch(row, scenario, prediction.serving) or row_flags_mismatch(
        row, scenario, prediction.serving
    )
    if mismatch is not None:
        report.unpredicted.append(Unpredicted(row, f"{name}: {mismatch}"))
        return
    predicted = predicted_value(row, prediction.result, scenario.hardware.count)
    if predicted is None:
        report.unpredicted.append(Unpredicted(row, f"the prediction has no {METRICS[row.metric].key}"))
        return
    measured = measured_in_key_units(row)
    report.rows.append(
        RowResult(
            row=row,
            config=scenario.name,
            measured=measured,
            predicted=predicted,
            ape=ape(predicted, measured),
            measured_share=float(prediction.extra()["measured_share"]),
            flag=index.flagged.get(row.id),
        )
    )


def _add_kernel_row(report: AccuracyReport, index: Index, row: TruthRow) -> None:
    if not kernels.is_flashmla_row(row):
        report.unpredicted.append(Unpredicted(row, "kernel row of a kernel simperf has no check for"))
        return
    db, why = kernels.open_db(row.gpu)
    if db is None:
        report.unpredicted.append(Unpredicted(row, why))
        return
    try:
        kp = kernels.predict_kernel(row, db)
    except ValueError as e:
        report.unpredicted.append(Unpredicted(row, str(e)))
        return
    if row.unit != "us":
        report.unpredicted.append(Unpredicted(row, f"kernel time in {row.unit!r}, expected us"))
        return
    flag = index.flagged.get(row.id)
    if not kp.calibrated:
        flag = "; ".join(x for x in (flag, f"shape not calibrated: {kp.source} estimate") if x)
    shape = kernels.parse_shape(row)
    report.rows.append(
        RowResult(
            row=row,
            config=f"flashmla decode b={shape.batch} q={shape.q_len} kv={shape.kv_len} h={shape.num_heads}",
            measured=row.value,
            predicted=kp.us,
            ape=ape(kp.us, row.value),
            measured_share=1.0 if kp.source in ("measured", "interpolated") else 0.0,
            flag=flag,
            detail=f"{kp.source}: {kp.detail}",
        )
    )


# ---------------------------------------------------------------------------------------------------- output


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float) -> str:
    return f"{x:,.2f}" if abs(x) < 1000 else f"{x:,.0f}"


def _row_cells(r: RowResult) -> list[str]:
    return [
        r.row.id + (" *" if r.flag else ""),
        r.config,
        r.row.metric,
        f"{_num(r.measured)} {METRICS[r.row.metric].unit if r.row.metric in METRICS else r.row.unit}",
        _num(r.predicted),
        _pct(r.ape),
        _pct(r.measured_share),
    ]


_ROW_HEAD = ["id", "config", "metric", "measured", "predicted", "APE", "step time measured"]
_SUM_HEAD = ["", "n", "median APE", "p90 APE", "mean APE", "median signed", "target (median)"]


def _summary_cells(s: Summary) -> list[str]:
    target = (
        "-" if s.target is None else f"<= {100 * s.target:.0f}% " + ("met" if s.meets_target else "MISSED")
    )
    return [
        s.group,
        str(s.n),
        _pct(s.median_ape),
        _pct(s.p90_ape),
        _pct(s.mean_ape),
        f"{100 * s.median_signed:+.1f}%",
        target,
    ]


def _sections(report: AccuracyReport) -> list[tuple[str, list[str], list[list[str]]]]:
    flagged = [r for r in report.rows if r.flag]
    sections = [
        ("Published rows: predicted vs measured (* = flagged, summarised apart)", _ROW_HEAD, []),
        ("Error by metric (unflagged rows)", ["metric", *_SUM_HEAD[1:]], []),
        ("Error by source (unflagged rows)", ["source", *_SUM_HEAD[1:]], []),
        ("Error by source and metric (unflagged rows)", ["source / metric", *_SUM_HEAD[1:]], []),
        (
            "Against the targets (median APE; unflagged rows, by metric family and model)",
            ["family", *_SUM_HEAD[1:]],
            [],
        ),
    ]
    sections[0][2].extend(_row_cells(r) for r in report.rows)
    sections[1][2].extend(_summary_cells(s) for s in report.by_metric())
    sections[2][2].extend(_summary_cells(s) for s in report.by_source())
    sections[3][2].extend(_summary_cells(s) for s in report.by_source_metric())
    sections[4][2].extend(_summary_cells(s) for s in report.by_target())
    shown = ("collectives", "moe", "attention", "gemm")
    for what, title, size in (
        (
            "decode",
            "Representative decode step per scenario (mean batch and KV; op families)",
            "batch (bucket)",
        ),
        (
            "prefill",
            "Representative prefill step per scenario (one request of the mean extend size)",
            "tokens",
        ),
    ):
        steps = [(name, c) for (name, kind), c in report.composition.items() if kind == what]
        if not steps:
            continue
        head = ["config", size, "step ms", *(f"{f} share" for f in FAMILIES), "extrapolated/roofline"]
        head += [f"{f} / its roofline" for f in shown]
        rows = [
            [
                name,
                f"{c.batch} ({c.padded_batch})" if what == "decode" else str(c.batch),
                f"{c.step_ms:.2f}",
                *(_pct(c.share[f]) for f in FAMILIES),
                _pct(c.extrapolated_share),
                *(f"{c.vs_roofline[f]:.1f}x" if f in c.vs_roofline else "-" for f in shown),
            ]
            for name, c in steps
        ]
        sections.append((title, head, rows))
    if flagged:
        sections.append(
            (
                "Flagged rows (why they are summarised apart)",
                ["id", "APE", "why"],
                [[r.row.id, _pct(r.ape), r.flag or ""] for r in flagged],
            )
        )
    sections.append(
        (
            "Rows not predicted",
            ["id", "metric", "reason"],
            [[u.row.id, u.row.metric, u.reason] for u in report.unpredicted],
        )
    )
    return sections


def print_text(report: AccuracyReport, console: Console) -> None:
    for title, head, rows in _sections(report):
        table = Table(*head, title=title, title_justify="left")
        for cells in rows:
            table.add_row(*cells)
        console.print(table)
    for w in report.warnings:
        console.print(f"warning: {w}", highlight=False)
    console.print(
        f"{len(report.rows)} rows predicted ({len(report.core)} unflagged), {len(report.unpredicted)} not "
        f"predicted; {len(report.scenario_wall_s)} scenarios in {report.wall_s:.1f} s",
        highlight=False,
    )


def markdown(report: AccuracyReport) -> str:
    """The same tables as GitHub markdown (docs/accuracy.md embeds this output)."""
    out: list[str] = []
    for title, head, rows in _sections(report):
        out += [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in rows]
        out.append("")
    out += [f"warning: {w}" for w in report.warnings]
    out.append(
        f"{len(report.rows)} rows predicted ({len(report.core)} unflagged), {len(report.unpredicted)} not "
        f"predicted; {len(report.scenario_wall_s)} scenarios."
    )
    return "\n".join(out) + "\n"


def check_generated_block(path: Path, begin: str = DOC_BEGIN, end: str = DOC_END) -> str:
    """The file's text, if it has both markers once and can be rewritten (checked before any prediction)."""
    from simperf.output_paths import check_output_file

    check_output_file(path, "--update-doc")
    if not Path(path).is_file():
        raise ValueError(f"--update-doc {path}: no such file")
    text = Path(path).read_text()
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{path}: needs exactly one {begin!r} and one {end!r} line")
    return text


def replace_generated_block(path: Path, body: str, begin: str = DOC_BEGIN, end: str = DOC_END) -> None:
    """Put `body` between the begin and end markers in the file at `path` (both must be there once)."""
    text = check_generated_block(path, begin, end)
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    Path(path).write_text(f"{head}{begin}\n\n{body}\n{end}{tail}")


def generated_block(path: Path, begin: str = DOC_BEGIN, end: str = DOC_END) -> str:
    """What lies between the markers (as replace_generated_block wrote it)."""
    text = Path(path).read_text()
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def report_json(report: AccuracyReport) -> str:
    def row(r: RowResult) -> dict:
        return {
            "id": r.row.id,
            "source": r.row.source,
            "config": r.config,
            "launch_flags": r.row.config,
            "metric": r.row.metric,
            "key": METRICS[r.row.metric].key if r.row.metric in METRICS else None,
            "measured": r.measured,
            "predicted": r.predicted,
            "ape": r.ape,
            "measured_share": r.measured_share,
            "flag": r.flag,
            "detail": r.detail,
        }

    data = {
        "rows": [row(r) for r in report.rows],
        "by_metric": [s.as_dict() for s in report.by_metric()],
        "by_source": [s.as_dict() for s in report.by_source()],
        "by_source_metric": [s.as_dict() for s in report.by_source_metric()],
        "not_predicted": [
            {"id": u.row.id, "metric": u.row.metric, "reason": u.reason} for u in report.unpredicted
        ],
        "warnings": report.warnings,
        "scenario_wall_s": report.scenario_wall_s,
        "step_composition": [
            {
                "config": name,
                "step": kind,
                "batch": c.batch,
                "padded_batch": c.padded_batch,
                "kv_mean": c.kv_mean,
                "step_ms": c.step_ms,
                "share": c.share,
                "extrapolated_share": c.extrapolated_share,
                "vs_roofline": c.vs_roofline,
            }
            for (name, kind), c in report.composition.items()
        ],
        "wall_s": report.wall_s,
    }
    return strictjson.dumps(data, indent=2)


def _first_reasons(report: AccuracyReport, shown: int = 3) -> str:
    reasons = [f"{u.row.id}: {u.reason}" for u in report.unpredicted[:shown]]
    more = len(report.unpredicted) - shown
    return "; ".join(reasons + ([f"{more} more"] if more > 0 else [])) or "the index names none of its rows"


def accuracy_command(
    scenarios_dir: Annotated[
        Path,
        typer.Argument(
            help="a ground-truth corpus (index.parquet), or a directory of scenarios with an index.yaml"
        ),
    ],
    truth: Annotated[
        Path | None,
        typer.Option(
            "--truth", help="published-runs CSV (one row per configuration and metric); scenarios only"
        ),
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json | markdown")] = "text",
    update_doc: Annotated[
        Path | None,
        typer.Option(help="also rewrite the generated block of this markdown file (e.g. docs/accuracy.md)"),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
) -> int:
    """Predict published runs and print predicted vs measured, with median and p90 error per metric and source."""
    from simperf.cli_errors import fail

    if output not in ("text", "json", "markdown"):
        fail(f"--output: got {output!r}; allowed values: text, json, markdown")
    # a missing path or a file was named as a directory whose index.yaml is missing ('nope/index.yaml: no index')
    if not Path(scenarios_dir).exists():
        fail(f"{scenarios_dir}: no such directory (a ground-truth corpus, or a directory of scenarios)")
    if not Path(scenarios_dir).is_dir():
        fail(
            f"{scenarios_dir}: not a directory (a ground-truth corpus, or a directory of scenarios with an index.yaml)"
        )
    if (Path(scenarios_dir) / "index.parquet").exists():
        from simperf.accuracy.corpus_cli import corpus_accuracy

        if truth is not None:  # a corpus carries its own measurements: --truth was read by nothing
            fail(f"--truth: {scenarios_dir} is a ground-truth corpus, measured by its own runs; --truth is for "
                 "a directory of scenarios")  # fmt: skip

        return corpus_accuracy(scenarios_dir, output, update_doc, Console(stderr=True), quiet)
    if truth is None:
        fail(f"{scenarios_dir}: a scenario directory needs --truth (the published-runs CSV)")
    if update_doc is not None:
        try:
            check_generated_block(update_doc)  # before minutes of predictions, not after
        except ValueError as e:
            fail(str(e))
    from simperf.progress import bar

    try:
        with bar("accuracy", None, quiet=quiet) as progress:
            started: list[str] = []

            def on_scenario(name: str, total: int) -> None:
                progress.set_total(total, len(started))  # the scenarios before this one are done
                started.append(name)
                progress.advance(0, status=name)

            report = run_accuracy(scenarios_dir, truth, on_scenario)
            progress.set_total(len(started), len(started))
    except (IndexError_, TruthError) as e:
        fail(str(e))
    if not report.rows:  # empty tables and exit 0 read as an accuracy report with nothing wrong
        fail(f"--truth {truth}: no row could be predicted ({_first_reasons(report)})")
    if update_doc is not None:
        try:
            replace_generated_block(update_doc, markdown(report))
        except ValueError as e:
            fail(str(e))
    if output == "json":
        sys.stdout.write(report_json(report) + "\n")
    elif output == "markdown":
        sys.stdout.write(markdown(report))
    else:
        from simperf.report.tables import stdout_console

        # pipes and CI logs are not terminals: the console is as wide as the tables, so nothing is cut
        print_text(report, stdout_console())
    return 0
