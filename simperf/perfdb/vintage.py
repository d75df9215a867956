"""Choose one data vintage per op among third-party tables collected under several framework versions.

AIConfigurator publishes some tables for several SGLang (or NCCL) versions; simperf imports every one and tags
each row's `source` with its vintage: "third-party:aiconfigurator 0.12.0 (sglang 0.5.14)". A scenario's `serving.sglang_version` selects, per op and
framework, the newest SGLang vintage not newer than that version; when every vintage is newer (a mid-2025 run
against 2026 tables) the oldest one is used and the choice says so (`fallback`). Vintages of other frameworks
(NCCL) do not follow SGLang's numbering: the newest is used. Rows without a vintage (simperf's own measurements)
are never touched. docs/b200.md ("Vintages") states the rule; the report names what was chosen.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from simperf.perfdb.importers.aiconfigurator import version_key

FRAMEWORK_FOLLOWING_SGLANG = "sglang"


@dataclass(frozen=True)
class VintageChoice:
    op: str
    framework: str
    chosen: str  # the framework version whose rows are kept
    available: tuple[str, ...]  # every version on file, oldest first
    fallback: bool  # no vintage was old enough for the requested SGLang version: the oldest is used

    def describe(self) -> str:
        text = f"{self.op}: {self.framework} {self.chosen}"
        if self.fallback:
            text += " (oldest on file; every vintage is newer than the scenario's SGLang)"
        if len(self.available) > 1:
            text += f" of {', '.join(self.available)}"
        return text


VINTAGE_PATTERN = r"\(([A-Za-z0-9_.-]+ [A-Za-z0-9_.+-]+)\)$"


def vintage_of(source: pl.Expr) -> pl.Expr:
    """The "<framework> <version>" a source string ends with in parentheses, else null."""
    return source.str.extract(VINTAGE_PATTERN, 1)


def select_vintages(
    rows: pl.DataFrame, sglang_version: str | None
) -> tuple[pl.DataFrame, list[VintageChoice]]:
    """The rows a lookup may use, and the vintage chosen per (op, framework)."""
    if rows.height == 0:
        return rows, []
    rows = rows.with_columns(vintage=vintage_of(pl.col("source").fill_null("")))
    if rows["vintage"].null_count() == rows.height:
        return rows.drop("vintage"), []
    tagged = rows.filter(pl.col("vintage").is_not_null()).select("op", "vintage").unique()
    choices: list[VintageChoice] = []
    keep = pl.col("vintage").is_null()
    for op, group in sorted(tagged.group_by("op"), key=lambda g: str(g[0][0])):
        by_framework: dict[str, list[str]] = {}
        for vintage in group["vintage"].to_list():
            framework, _, version = str(vintage).partition(" ")
            by_framework.setdefault(framework, []).append(version)
        for framework, versions in sorted(by_framework.items()):
            choice = _choose(str(op[0]), framework, sorted(versions, key=version_key), sglang_version)
            choices.append(choice)
            keep = keep | (
                (pl.col("op") == choice.op) & (pl.col("vintage") == f"{framework} {choice.chosen}")
            )
    return rows.filter(keep).drop("vintage"), choices


def _choose(op: str, framework: str, versions: list[str], sglang_version: str | None) -> VintageChoice:
    if framework != FRAMEWORK_FOLLOWING_SGLANG or sglang_version is None:
        return VintageChoice(op, framework, versions[-1], tuple(versions), False)
    wanted = version_key(sglang_version)
    older = [v for v in versions if version_key(v) <= wanted]
    if older:
        return VintageChoice(op, framework, older[-1], tuple(versions), False)
    return VintageChoice(op, framework, versions[0], tuple(versions), True)
