"""The scheduler core and the cost model stay readable: short functions of bounded complexity, and every document
the code cites is in the repository."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ("simperf/sim", "simperf/costmodel")
MAX_FUNCTION_LINES = 80
MAX_COMPLEXITY = 15
RUFF = shutil.which("ruff")


def _functions(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def test_no_core_function_is_longer_than_80_lines():
    long = [
        f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} ({fn.end_lineno - fn.lineno + 1} lines)"
        for core in CORE
        for path in sorted((ROOT / core).rglob("*.py"))
        for fn in _functions(path)
        if fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, long


@pytest.mark.skipif(RUFF is None, reason="ruff not installed (pip install -e '.[test]')")
def test_no_core_function_has_cyclomatic_complexity_over_15():
    out = subprocess.run(
        [
            RUFF,
            "check",
            "--select",
            "C901",
            "--config",
            f"lint.mccabe.max-complexity={MAX_COMPLEXITY}",
            "--output-format",
            "concise",
            *CORE,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


# what the code may not cite: the serving-model account lives in docs/serving-model.md
OUTSIDE_REFERENCES = re.compile(
    r"model doc\b|shared/docs|(?<!docs/)sglang-serving-model|\.\./shared/docs", re.IGNORECASE
)
DOC_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]+\.md")


def _code_files():
    for part in ("simperf", "benchmarks"):
        yield from sorted((ROOT / part).rglob("*.py"))


def test_code_cites_no_document_outside_the_repository():
    outside = [
        f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
        for path in _code_files()
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE_REFERENCES.search(line)
    ]
    assert not outside, outside


def test_every_document_the_code_cites_exists():
    cited = {m.group(0).rstrip(".") for path in _code_files() for m in DOC_PATH.finditer(path.read_text())}
    missing = sorted(doc for doc in cited if not (ROOT / doc).is_file())
    assert not missing, missing
