"""`simperf calibrate import aiconfigurator` on a careless --package-root: one `error:` line naming the option."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from simperf.cli import app

runner = CliRunner()


def test_a_package_root_that_is_not_a_directory_is_named(tmp_path: Path):
    """A missing path (or a file) was reported as "no data for system 'b200_sxm' under nope; systems published:
    []", as if the package held no such system."""
    for root in (tmp_path / "nope", Path(__file__)):
        args = [
            "calibrate",
            "import",
            "aiconfigurator",
            "--system",
            "b200_sxm",
            "--out",
            str(tmp_path / "imp"),
        ]
        result = runner.invoke(app, [*args, "--package-root", str(root)])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and f"--package-root {root}: not a directory" in lines[0], result.output
        assert not (tmp_path / "imp").exists()
