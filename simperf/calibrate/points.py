"""One calibration point: the identity columns of a table row, and the stable key that resume relies on.

A point is a plain dict restricted to the schema's identity columns (op, backend, dtypes, shape columns,
sample, kv_lens). It travels as JSON between the runner and its worker subprocess, and its key is
recomputed from a Parquet row in exactly the same way, so a rerun can tell what is already measured.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from simperf.perfdb.schema import OP_SPECS, SHAPE_COLUMNS, STRING_KEY_COLUMNS

# Columns that identify a point. Measurement and provenance columns are not part of the identity.
IDENTITY_COLUMNS: tuple[str, ...] = STRING_KEY_COLUMNS + SHAPE_COLUMNS + ("sample", "kv_lens")

SAMPLES: tuple[str, ...] = ("grid", "heldout", "ragged")

Point = dict[str, Any]


def make_point(op: str, backend: str, *, sample: str = "grid", **fields: Any) -> Point:
    """Build a point, rejecting columns that are not identity columns (a typo would silently split keys)."""
    if op not in OP_SPECS:
        raise KeyError(f"unknown op {op!r}")
    if sample not in SAMPLES:
        raise ValueError(f"unknown sample {sample!r}")
    unknown = set(fields) - set(IDENTITY_COLUMNS)
    if unknown:
        raise KeyError(f"not identity columns: {sorted(unknown)}")
    point: Point = {name: None for name in IDENTITY_COLUMNS}
    point.update(op=op, backend=backend, sample=sample)
    for name, value in fields.items():
        if value is None:
            continue
        if name in SHAPE_COLUMNS:
            value = int(value)
        elif name == "kv_lens" and not isinstance(value, str):
            value = json.dumps([int(v) for v in value])
        point[name] = value
    return point


def point_key(row: Mapping[str, Any]) -> str:
    """Stable identity of a point or of a table row (extra columns are ignored)."""
    values = []
    for name in IDENTITY_COLUMNS:
        value = row.get(name)
        if name in SHAPE_COLUMNS and value is not None:
            value = int(value)
        values.append(value)
    return json.dumps(values, separators=(",", ":"))


def dedupe(points: Iterable[Point]) -> list[Point]:
    """Drop repeated points, keeping the first occurrence and the order."""
    seen: set[str] = set()
    out: list[Point] = []
    for point in points:
        key = point_key(point)
        if key not in seen:
            seen.add(key)
            out.append(point)
    return out


def op_key_tuple(point: Mapping[str, Any]) -> tuple[Any, ...]:
    """The op's exact-match key (schema OpSpec.key_columns) plus the op: one interpolation surface."""
    spec = OP_SPECS[point["op"]]
    return (point["op"],) + tuple(point.get(c) for c in spec.key_columns)
