"""`python -m simperf.accuracy SCENARIOS_DIR --truth CSV`: the accuracy report without the `simperf` entry point."""

from __future__ import annotations

import typer

from simperf.accuracy.run import accuracy_command

if __name__ == "__main__":  # pragma: no cover
    typer.run(accuracy_command)
