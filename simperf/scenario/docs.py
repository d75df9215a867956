"""docs/scenario.md's reference tables, generated from the pydantic models so they cannot miss a key.

    simperf schema --markdown                       # print the reference
    simperf schema --markdown --update docs/scenario.md   # rewrite the generated block in place

tests/test_docs_drift.py fails when docs/scenario.md lacks a field of the schema, and names this command.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from simperf.scenario.load import model_types
from simperf.scenario.models import Scenario

BEGIN = "<!-- simperf schema --markdown: begin (generated; do not edit by hand) -->"
END = "<!-- simperf schema --markdown: end -->"
REFRESH = "simperf schema --markdown --update docs/scenario.md"


def _literals(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return list(typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return [v for a in typing.get_args(annotation) for v in _literals(a)]
    return []


def _default(info: Any) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    value = info.default_factory() if info.default_factory is not None else info.default
    if value is None:
        return "—"
    if isinstance(value, BaseModel):
        return "see below"
    return f"`{value}`"


def _meaning(name: str, info: Any, path: str) -> str:
    text = (info.description or "").replace("|", "\\|").replace("\n", " ")
    if name == "kind" and not text:
        text = "selects this kind"
    if not text and model_types(info.annotation):
        text = f"the `{path}{'.' if path else ''}{name}` block below"
    allowed = _literals(info.annotation)
    if allowed and not (len(allowed) == 1 and info.default == allowed[0]):
        text += (" — " if text else "") + "one of " + ", ".join(f"`{v}`" for v in allowed)
    return text


SAME_AS = "The same keys as `{}` above."


def _sections(model: type[BaseModel], path: str, out: list[tuple[str, type[BaseModel]]]) -> None:
    out.append((path, model))
    if sum(1 for _, m in out if m is model) > 1:
        return  # documented once, at its first path; later paths refer to it
    for name, info in model.model_fields.items():
        subs = model_types(info.annotation)
        for sub in subs:
            kind = sub.model_fields.get("kind")
            title = f"{path}.{name}" if path else name
            if kind is not None and len(subs) > 1:
                title += f" (kind: {kind.default})"
            _sections(sub, title, out)


def section_path(title: str) -> str:
    """`workload.dataset (kind: random)` -> `workload.dataset`; `(top level)` -> ``."""
    return "" if title == "(top level)" else title.split(" (kind:")[0]


def reference_markdown() -> str:
    """One table per block of the scenario: key, default, meaning (and allowed values)."""
    sections: list[tuple[str, type[BaseModel]]] = []
    _sections(Scenario, "", sections)
    first: dict[type[BaseModel], str] = {}
    lines: list[str] = []
    for path, model in sections:
        lines += [f"### `{path or '(top level)'}`", ""]
        if model in first:
            lines += [SAME_AS.format(first[model]), ""]
            continue
        first[model] = path
        doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        if doc and model is not Scenario:
            lines += [doc, ""]
        lines += ["| key | default | meaning |", "|---|---|---|"]
        prefix = section_path(path)
        lines += [
            f"| `{k}` | {_default(i)} | {_meaning(k, i, prefix)} |" for k, i in model.model_fields.items()
        ]
        lines.append("")
    return "\n".join(lines)


def documented_paths(markdown: str) -> set[str]:
    """Dotted field paths a reference lists (rows of each section, and sections that repeat another's keys)."""
    import re

    rows: dict[str, set[str]] = {}
    aliases: dict[str, str] = {}
    current = None
    for line in markdown.splitlines():
        heading = re.match(r"^### `(.+)`", line)
        if heading:
            current = section_path(heading.group(1))
            rows.setdefault(current, set())
            continue
        same = re.match(r"^The same keys as `(.*)` above\.", line)
        if same and current is not None:
            aliases[current] = section_path(same.group(1))
        row = re.match(r"^\| `([a-z_0-9]+)` \|", line)
        if row and current is not None:
            rows[current].add(row.group(1))
    paths: set[str] = set()

    def expand(prefix: str, source: str, depth: int = 0) -> None:
        for key in rows.get(source, set()):
            full = f"{prefix}.{key}" if prefix else key
            paths.add(full)
            if depth < 8:
                for sub in [s for s in rows if s == (f"{source}.{key}" if source else key)]:
                    expand(full, sub, depth + 1)
                for alias, target in aliases.items():
                    if alias == (f"{source}.{key}" if source else key):
                        expand(full, target, depth + 1)

    expand("", "")
    return paths


def replace_block(text: str, body: str) -> str:
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"needs exactly one {BEGIN!r} and one {END!r} line")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n\n{body}\n{END}{tail}"
