"""The bad-input tests' one check: a refused command exits 2 with exactly one `error:` line (shared by the
test_*_bad_input.py files)."""

from __future__ import annotations

from typer.testing import CliRunner

from simperf.cli import app

runner = CliRunner()


def one_error_line(args: list[str]) -> str:
    """The single `error:` line `simperf ARGS` prints on its way out with code 2 (the test fails otherwise)."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]
