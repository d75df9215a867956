"""Which calibration directory a prediction reads, and the refusal of one that cannot back it.

A prediction from a missing or empty directory, or from another GPU's tables, would silently be a roofline
estimate (or another GPU's numbers) labelled as if measured. So a directory is refused unless it exists, holds
tables, has at least one usable (`status == "ok"`) row, and was measured on the scenario's GPU. Predicting from
the roofline alone is allowed, but only when asked for (`simperf predict --roofline-only`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from simperf.hardware.catalog import GpuSpec, gpu_keys
from simperf.perfdb.schema import OP_SPECS

ROOFLINE_HINT = "--roofline-only predicts from datasheet rooflines alone"


def without_roofline_hint(message: str) -> str:
    """A CalibrationError's message for a command that has no --roofline-only (validate times the tables'
    kernels, it cannot run on rooflines): the hint pointed at an option the command does not take."""
    return message.replace(f" ({ROOFLINE_HINT})", "").replace(f", or {ROOFLINE_HINT}", "")


class CalibrationError(ValueError):
    """A calibration directory that cannot back a prediction; names where the directory came from."""


@dataclass(frozen=True)
class CalibrationChoice:
    directory: Path | None
    origin: str  # "--calibration", "calibration_dir", "shipped tables"


def choose_directory(
    override: Path | None, scenario_dir: Path | None, shipped: Path | None, gpu: GpuSpec
) -> CalibrationChoice:
    """The directory a prediction reads, by precedence: the command line, the scenario, the shipped tables."""
    if override is not None:
        return CalibrationChoice(Path(override), "--calibration")
    if scenario_dir is not None:
        return CalibrationChoice(Path(scenario_dir), "calibration_dir")
    if shipped is None:
        raise CalibrationError(
            f"hardware.gpu: no calibration tables ship for {gpu.key}; measure them with `simperf calibrate` and "
            f"pass --calibration DIR, or {ROOFLINE_HINT}"
        )
    return CalibrationChoice(shipped, "shipped tables")


def check_directory(choice: CalibrationChoice) -> None:
    """Before loading: the directory exists and holds tables."""
    directory, where = choice.directory, f"{choice.origin} {choice.directory}"
    if directory is None:
        return
    if not directory.exists():
        raise CalibrationError(f"{where}: no such directory ({ROOFLINE_HINT})")
    if not directory.is_dir():
        raise CalibrationError(f"{where}: not a directory")
    if not any(directory.glob("*.parquet")):
        raise CalibrationError(
            f"{where}: holds no calibration tables (*.parquet); measure them with `simperf calibrate --out "
            f"{directory}` ({ROOFLINE_HINT})"
        )


# every calibration table has had these since the first schema (perfdb/schema.py)
TABLE_CORE_COLUMNS = ("gpu", "status", "time_us")


def check_table_files(directory: Path, label: str = "") -> None:
    """For commands that read a directory as it is (perfdb check/coverage/diff): a directory whose *.parquet
    files are all calibration tables (they have an `op` column), and at least one of them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = f"{label} {directory}".strip()
    if not Path(directory).is_dir():
        raise CalibrationError(f"{where}: not a directory")
    files = sorted(Path(directory).glob("*.parquet"))
    if not files:
        raise CalibrationError(f"{where}: holds no calibration tables (*.parquet)")
    for path in files:
        try:
            names = pq.read_schema(path).names
        except (OSError, pa.ArrowException) as exc:
            raise CalibrationError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None
        if "op" not in names:
            raise CalibrationError(f"{path}: not a calibration table (no 'op' column)")
        # a table with an op column but none of what times it (another tool's export) had failed later with
        # polars' "unable to find column" naming no file
        absent = [name for name in TABLE_CORE_COLUMNS if name not in names]
        if absent:
            # the words of perfdb/db.py check_table_rows, which says the same of a table read past this check
            raise CalibrationError(f"{path}: not a calibration table: no column {', '.join(absent)}")


def check_rows(
    choice: CalibrationChoice, rows: pl.DataFrame, gpu: GpuSpec, gpu_field: str = "hardware.gpu"
) -> None:
    """After loading: the files are calibration tables, some rows are usable, all measured on the scenario's GPU
    (a directory mixing GPUs is refused too: which rows would time which op is then anyone's guess). gpu_field: where
    the GPU is set (a fleet group's own hardware), for the message."""
    where = f"{choice.origin} {choice.directory}"
    tables = rows.filter(pl.col("op").is_in(list(OP_SPECS))) if rows.height else rows
    if tables.height == 0:
        raise CalibrationError(
            f"{where}: its *.parquet files are not calibration tables (no rows with a known op); "
            f"measure them with `simperf calibrate` ({ROOFLINE_HINT})"
        )
    usable = tables.filter(pl.col("status") == "ok")
    if usable.height == 0:
        raise CalibrationError(
            f"{where}: {tables.height} rows and none usable (every one failed or unsupported); recalibrate on "
            f"the GPU ({ROOFLINE_HINT})"
        )
    gpus = sorted({g for g in usable["gpu"].unique().to_list() if g is not None})
    if choice.directory is not None and len(gpus) == 1:
        directory_gpu(choice.directory, gpus)  # rows that contradict the directory's device.json are refused
    if gpus and gpus != [gpu.key]:
        raise CalibrationError(
            f"{where}: tables measured on {', '.join(gpus)}, but {gpu_field} is {gpu.key}; pass that GPU's "
            f"tables with --calibration ({ROOFLINE_HINT})"
        )
    if not gpus and choice.directory is not None:
        check_unlabelled_gpu(where, choice.directory, gpu, gpu_field)


def recorded_gpu(directory: Path) -> tuple[str, str] | None:
    """(GPU, where it is said) for a directory whose rows name none: its device.json (written by `simperf
    calibrate`), else its name where that is a GPU of the catalogue (calibration/<gpu>/); None when neither."""
    record = directory / "device.json"
    if record.is_file():
        try:
            device = json.loads(record.read_text(encoding="utf-8")).get("device") or {}
        except (OSError, ValueError, AttributeError) as exc:
            raise CalibrationError(f"{record}: not a device record ({exc})") from None
        if isinstance(device, dict) and device.get("gpu"):
            return str(device["gpu"]), f"{record.name} says {device['gpu']}"
    if directory.resolve().name in gpu_keys():
        return directory.resolve().name, "the directory's name"
    return None


def directory_gpu(directory: Path, row_gpus: list[str]) -> tuple[str, str] | None:
    """The GPU a calibration directory was measured on, and where that is said: its usable rows' gpu column
    (`row_gpus`, the distinct values), else recorded_gpu (device.json, then the directory's name); None when nothing
    says. One rule for every reader (predict, perfdb check / coverage / diff): rows of several GPUs, or rows that
    contradict the directory's device.json, are refused."""
    if len(row_gpus) > 1:
        raise CalibrationError(
            f"{directory}: tables measured on several GPUs: {', '.join(sorted(row_gpus))}; a calibration directory "
            "holds one GPU's tables"
        )
    recorded = recorded_gpu(Path(directory))
    if row_gpus:
        if recorded is not None and recorded[1].startswith("device.json") and recorded[0] != row_gpus[0]:
            raise CalibrationError(
                f"{directory}: the tables' gpu column says {row_gpus[0]} but {recorded[1]}; correct whichever is "
                "wrong"
            )
        return row_gpus[0], "the tables' gpu column"
    return recorded


def check_unlabelled_gpu(where: str, directory: Path, gpu: GpuSpec, gpu_field: str = "hardware.gpu") -> None:
    """Tables whose gpu column is empty were read for any scenario's GPU: H200 tables, their gpu blanked, priced an
    H100 scenario without a word though their device.json said h200. The directory's own record decides."""
    found = recorded_gpu(directory)
    if found is None:
        raise CalibrationError(
            f"{where}: the tables record no gpu (their gpu column is empty), and neither a device.json nor the "
            f"directory's name says which GPU measured them; fill the gpu column with {gpu.key} if they are "
            f"{gpu.key} timings ({ROOFLINE_HINT})"
        )
    recorded, said = found
    if recorded != gpu.key:
        raise CalibrationError(
            f"{where}: tables measured on {recorded} ({said}; the rows record no gpu), but {gpu_field} is "
            f"{gpu.key}; pass that GPU's tables with --calibration ({ROOFLINE_HINT})"
        )
