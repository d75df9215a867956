"""NVIDIA AIConfigurator's published per-op tables -> simperf calibration tables, labelled third-party.

AIConfigurator (`aiconfigurator-core` on PyPI, Apache-2.0) ships, per system (e.g. `b200_sxm`), Parquet tables of
op latencies measured by its collectors inside a serving framework:
`systems/data/<system>/<family>/<framework>/<framework version>/<table>.parquet`. This module reads those files
directly (it never imports the package) and maps each table onto simperf's schema and conventions
(docs/perfdb.md): attention kv_len per request including the new token, MoE m = tokens before routing, collective
message_bytes = the whole tensor, num_heads = heads per rank. What each table means was read from the collectors'
public source; docs/calibration.md ("Third-party tables") lists the mapping and its assumptions.

Rows get `source = "third-party:aiconfigurator <version>"`, `timing_method = "third-party"`, `status = "ok"`,
`sample = "grid"`; the perf database labels answers on their grid points `third_party`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl
import yaml

import simperf
from simperf.hardware.catalog import get_gpu
from simperf.perfdb import vocabulary
from simperf.perfdb.importers.aiconfigurator_tables import (
    SOURCE_TABLES,
    AIConfiguratorImportError,
    SourceTable,
)
from simperf.perfdb.importers.frames import write_frame
from simperf.perfdb.schema import OP_SPECS

TOOL = "aiconfigurator"
PACKAGE = "aiconfigurator_core"
DISTRIBUTION = "aiconfigurator-core"

# AIConfigurator system name -> simperf hardware catalogue key.
SYSTEM_GPUS: dict[str, str] = {"b200_sxm": "b200", "h200_sxm": "h200", "h100_sxm": "h100"}

# Published but not imported, and why (docs/calibration.md repeats this).
NOT_IMPORTED: dict[str, str] = {
    "sparse_attention/*/dsa_*_module_perf": "module-level DSA timings (indexer + sparse attention + projections "
    "in one number); simperf prices those as separate ops, so importing them would double count",
    "attention/*/*_attention_perf": "GQA/MHA attention for dense models; not needed by the MLA scenarios yet",
    "mla/*/wideep_*": "wide-EP module timings (projections included)",
}


@dataclass(frozen=True)
class ImportedTable:
    source_file: str  # relative to systems/data/<system>/
    framework_version: str
    ops: dict[str, int]  # op -> rows written
    dropped: dict[str, int]


@dataclass
class ImportReport:
    tool: str
    tool_version: str
    system: str
    gpu: str
    out: str
    tables: list[ImportedTable] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # source tables this system does not publish
    files: dict[str, int] = field(default_factory=dict)  # written file -> rows
    not_imported: dict[str, str] = field(
        default_factory=lambda: dict(NOT_IMPORTED)
    )  # tables skipped, and why

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


# ---- locating the package data and choosing versions -------------------------------------------------------------


def package_root() -> Path:
    """The installed aiconfigurator_core directory, found without importing it (it is an optional extra)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise AIConfiguratorImportError(
            f"{DISTRIBUTION} is not installed: pip install 'simperf[aiconfigurator]' (or pass --package-root "
            "to an unpacked copy)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def package_version(root: Path) -> str:
    """The version of the package data at `root`: the dist-info directory next to it (an installed or unpacked
    wheel), else a VERSION file in it (the test fixture), else the installed distribution's metadata."""
    for info in sorted(root.parent.glob(f"{PACKAGE}-*.dist-info")):
        return info.name[len(PACKAGE) + 1 : -len(".dist-info")]
    version_file = root / "VERSION"
    if version_file.is_file():
        return version_file.read_text(encoding="utf-8").strip()
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        pass
    raise AIConfiguratorImportError(f"cannot tell the {DISTRIBUTION} version of {root}; pass tool_version")


def version_key(version: str) -> tuple:
    """Sort key of framework versions like 0.5.14, 0.5.6.post2, 1.3.0rc20: release numbers first, then
    pre-releases (rc, dev) below the release and post-releases above it."""
    release = tuple(
        int(p) for p in re.findall(r"\d+", version.split("rc")[0].split("dev")[0].split("post")[0])
    )
    match = re.search(r"(rc|dev|post)(\d+)", version)
    if match is None:
        return (release, 1, 0)
    tag, number = match.group(1), int(match.group(2))
    return (release, 2 if tag == "post" else 0, number)


def newest_version_with(directory: Path, file: str) -> Path | None:
    """The newest version directory under `directory` that holds `file` (reuse-only versions hold none)."""
    found = versions_with(directory, file)
    return found[-1] if found else None


def versions_with(directory: Path, file: str) -> list[Path]:
    """Every version directory under `directory` that holds `file`, oldest first (reuse-only versions hold
    none): each is one data vintage of the table."""
    if not directory.is_dir():
        return []
    candidates = [d for d in directory.iterdir() if d.is_dir() and (d / file).is_file()]
    return sorted(candidates, key=lambda d: version_key(d.name))


def system_sm(root: Path, system: str) -> str | None:
    """Compute capability from the system's YAML (sm_version: 100 -> "10.0")."""
    path = root / "systems" / f"{system}.yaml"
    if not path.is_file():
        return None
    spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    sm = (spec.get("gpu") or {}).get("sm_version")
    return f"{int(sm) // 10}.{int(sm) % 10}" if sm is not None else None


# ---- the import ----------------------------------------------------------------------------------------------------


def import_system(
    system: str,
    out: Path,
    root: Path | None = None,
    tool_version: str | None = None,
    gpu: str | None = None,
) -> ImportReport:
    """Convert every supported table of one AIConfigurator system into `out/aiconfigurator_<op>.parquet`
    and write `out/aiconfigurator_import.json` recording what came from where."""
    if root is not None and not Path(root).is_dir():  # was "no data for system ...; systems published: []"
        raise AIConfiguratorImportError(
            f"--package-root {root}: not a directory (an unpacked aiconfigurator_core)"
        )
    root = Path(root) if root is not None else package_root()
    data = root / "systems" / "data" / system
    if not data.is_dir():
        known = sorted(p.name for p in (root / "systems" / "data").glob("*") if p.is_dir())
        raise AIConfiguratorImportError(
            f"no data for system {system!r} under {root}; systems published: {known}"
        )
    gpu_key = _gpu_key(system, gpu, Path(out))
    version = tool_version or package_version(root)
    report = ImportReport(TOOL, version, system, gpu_key, str(out))
    sm = system_sm(root, system)

    by_op: dict[str, list[pl.DataFrame]] = {}
    for table in SOURCE_TABLES:
        vintages = versions_with(data / table.family / table.framework, table.file)
        if not vintages:
            report.missing.append(f"{table.family}/{table.framework}/*/{table.file}")
        for directory in vintages:
            frame = _import_vintage(table, directory, version, gpu_key, sm, data, report)
            for op in sorted(set(frame["op"].to_list())):
                by_op.setdefault(op, []).append(frame.filter(pl.col("op") == op))

    out = Path(out)
    for op, frames in sorted(by_op.items()):
        path = write_frame(pl.concat(frames, how="diagonal"), out / f"{TOOL}_{op}.parquet")
        report.files[path.name] = sum(f.height for f in frames)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{TOOL}_import.json").write_text(report.to_json() + "\n", encoding="utf-8")
    return report


def _gpu_key(system: str, gpu: str | None, out: Path) -> str:
    """The GPU the tables are labelled with: the system's, or --gpu for a system simperf does not map. --gpu naming
    another GPU than the system's relabelled its timings silently; an --out holding another GPU's tables was
    turned into a directory of two GPUs."""
    from simperf.perfdb.check import resolve_gpu

    known = SYSTEM_GPUS.get(system)
    if gpu is not None and known is not None and gpu != known:
        raise AIConfiguratorImportError(
            f"--gpu {gpu}: system {system!r} is a {known}; its timings are {known}'s"
        )
    gpu_key = gpu or known
    if gpu_key is None:
        raise AIConfiguratorImportError(
            f"system {system!r} has no simperf GPU key; pass --gpu (known: {SYSTEM_GPUS})"
        )
    try:
        get_gpu(gpu_key)
    except ValueError as exc:
        raise AIConfiguratorImportError(f"--gpu: {exc}") from None
    try:
        theirs = resolve_gpu(out).key if any(out.glob("*.parquet")) else gpu_key
    except ValueError as exc:
        raise AIConfiguratorImportError(f"--out {out}: {exc}") from None
    if theirs != gpu_key:
        raise AIConfiguratorImportError(
            f"--out {out}: holds {theirs} tables; import {system!r} ({gpu_key}) into a directory of its own GPU"
        )
    return gpu_key


def _import_vintage(
    table: SourceTable,
    directory: Path,
    version: str,
    gpu_key: str,
    sm: str | None,
    data: Path,
    report: ImportReport,
) -> pl.DataFrame:
    """One published version of one table, in simperf's schema, every row tagged with its vintage."""
    raw = pl.read_parquet(directory / table.file)
    converted = table.convert(raw)
    dropped = dict(converted.dropped)
    gpu_name = raw["device"].drop_nulls().first() if "device" in raw.columns else None
    frame = (
        _known_keys(converted.frame, dropped)
        .filter(pl.col("time_us") > 0)
        .with_columns(
            status=pl.lit("ok"),
            sample=pl.lit("grid"),
            timing_method=pl.lit("third-party"),
            # the vintage rides in the source: "third-party:aiconfigurator 0.12.0 (sglang 0.5.14)" (perfdb/vintage.py)
            source=pl.lit(f"third-party:{TOOL} {version} ({table.framework} {directory.name})"),
            gpu=pl.lit(gpu_key),
            gpu_name=pl.lit(gpu_name),
            sm=pl.lit(sm),
            simperf_version=pl.lit(getattr(simperf, "__version__", None)),
        )
    )
    relative = str((directory / table.file).relative_to(data))
    ops = {str(op): int(n) for op, n in frame.group_by("op").len().iter_rows()}
    report.tables.append(ImportedTable(relative, directory.name, ops, dropped))
    return frame


def _known_keys(frame: pl.DataFrame, dropped: dict[str, int]) -> pl.DataFrame:
    """The rows whose key values simperf knows (perfdb/vocabulary.py); the others are left out, counted by value. A
    name AIConfigurator passes through unmapped (a new MoE dtype or routing) made a table that PerfDB.load refuses."""
    keep = pl.Series([True] * frame.height)
    for op in frame["op"].unique().to_list():
        of_op = frame["op"] == op
        for column in OP_SPECS[op].key_columns:
            if column not in vocabulary.VOCABULARY_COLUMNS or column not in frame.columns:
                continue
            for value in frame.filter(of_op)[column].drop_nulls().unique().to_list():
                if not vocabulary.allowed(op, column, value):
                    bad = (of_op & (frame[column] == value)).fill_null(False)
                    reason = f"{op} {column} {value!r}: not a value simperf knows (perfdb/vocabulary.py)"
                    dropped[reason] = dropped.get(reason, 0) + int(bad.sum())
                    keep = keep & ~bad
    return frame.filter(keep)
